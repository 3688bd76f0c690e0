"""Page frontmatter checked against the JSON Schemas in the repository's ``schema/`` folder.

jsonschema is a test-only dependency, and the schemas use a small part of the standard (type,
enum, pattern, oneOf, items, required, minLength, minimum, maximum, allOf, a sibling ``$ref``),
so this module interprets exactly that part; ``tests/test_lint_fields.py`` checks it agrees with
jsonschema on the same documents. The schemas ship inside the package as ``wikimem.schema`` (the
repository's ``schema/`` folder); where they are missing, WM204 says so in a notice and WM202
uses only SCHEMA.md's ``required`` option.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

_TYPES = {"string": str, "array": list, "object": dict, "boolean": bool}


def _schema_dir() -> Path | None:
    try:
        from importlib.resources import files
        installed = Path(str(files("wikimem.schema")))
    except (ImportError, TypeError):  # not installed as a package (a bare source tree on sys.path)
        installed = None
    for folder in (installed, Path(__file__).resolve().parents[2] / "schema"):
        if folder is not None and (folder / "page-common.json").is_file():
            return folder
    return None


@lru_cache(maxsize=None)
def load(name: str) -> dict[str, Any] | None:
    """A schema by file name (``page-entity.json``), or None when the schemas are not installed."""
    folder = _schema_dir()
    if folder is None or not folder.joinpath(name).is_file():
        return None
    return json.loads(folder.joinpath(name).read_text(encoding="utf-8"))


def page_schema(page_type: str) -> dict[str, Any] | None:
    return load(f"page-{page_type}.json") or load("page-common.json")


def _is_type(value: Any, name: str) -> bool:
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "null":
        return value is None
    return isinstance(value, _TYPES[name])


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:60] + "…"


def errors(value: Any, schema: dict[str, Any], where: str = "") -> Iterator[tuple[str, str]]:
    """(field path, message) for every way ``value`` breaks ``schema``; ``required`` misses have
    the message prefix ``missing``."""
    if "$ref" in schema:
        ref = load(schema["$ref"])
        if ref is not None:
            yield from errors(value, ref, where)
    for sub in schema.get("allOf", ()):
        yield from errors(value, sub, where)
    for key in ("oneOf", "anyOf"):
        if key in schema:
            passing = sum(1 for sub in schema[key] if not any(errors(value, sub, where)))
            if passing == 0 or (key == "oneOf" and passing > 1):
                kinds = " or ".join(sorted({str(s.get("type", "value")) for s in schema[key]}))
                yield where, f"{_show(value)} is not a valid {kinds}"
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(value, n) for n in names):
            yield where, f"{_show(value)} is not a {' or '.join(names)}"
            return
    if "enum" in schema and value not in schema["enum"]:
        yield where, f"{_show(value)} is not one of {', '.join(map(str, schema['enum']))}"
    if isinstance(value, str):
        if "pattern" in schema and not re.search(schema["pattern"], value):
            yield where, f"{_show(value)} does not match {schema['pattern']}"
        if len(value) < schema.get("minLength", 0):
            yield where, "is empty"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            yield where, f"{value} is below {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            yield where, f"{value} is above {schema['maximum']}"
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            yield from errors(item, schema["items"], f"{where}[{i}]")
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value or value[key] is None:
                yield key, "missing"
        for key, sub in schema.get("properties", {}).items():
            if key in value and value[key] is not None:
                yield from errors(value[key], sub, f"{where}.{key}" if where else key)


@lru_cache(maxsize=None)
def _flat(page_type: str) -> tuple[dict[str, list[dict]], tuple[str, ...]] | None:
    """A page schema's top level flattened (allOf and $ref merged): property -> its sub-schemas,
    and the required keys; lets ``page_errors`` visit only the keys a page has."""
    root = page_schema(page_type)
    if root is None:
        return None
    props: dict[str, list[dict]] = {}
    required: list[str] = []

    def visit(schema: dict) -> None:
        if "$ref" in schema and load(schema["$ref"]) is not None:
            visit(load(schema["$ref"]))
        for sub in schema.get("allOf", ()):
            visit(sub)
        for key, sub in schema.get("properties", {}).items():
            props.setdefault(key, []).append(sub)
        required.extend(k for k in schema.get("required", ()) if k not in required)
    visit(root)
    return props, tuple(required)


def page_errors(data, page_type: str) -> Iterator[tuple[str, str]]:
    """``errors(data, page_schema(page_type))`` for a frontmatter mapping, visiting only its keys
    (the page schemas are objects of optional properties joined by allOf / $ref)."""
    flat = _flat(page_type)
    if flat is None:
        return
    props, required = flat
    for key in required:
        if data.get(key) is None:
            yield key, "missing"
    for key, value in data.items():
        if value is None or key not in props:
            continue
        for sub in props[key]:
            yield from errors(value, sub, key)
