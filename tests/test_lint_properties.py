"""Lint never crashes on arbitrary Markdown and YAML, and the frontmatter checker agrees with
jsonschema (a test-only dependency) on the repository's page schemas."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikimem.api import open_vault
from wikimem.lint import fields

SCHEMA_DIR = Path(__file__).parent.parent / "schema"

_PIECES = st.sampled_from([
    "# H", "## Sub: part?", "### `code()`", "[[A]]", "[[A#H]]", "[[A#^b]]", "[[#Sub part]]", "![[x.png|30]]",
    "![[img.png]]^blk", "[[A\\|B]]", "[t](A.md#H)", "#tag", "#Tag/Sub", " ^blk", "```", "~~~", "`[[code]]`",
    "| a | b |", "|---|---|", "> [!note]", "- item", "---", "tags: [a, B]", "supersedes: \"[[A]]\"",
    "status: superseded", "title: [", "key: {", "sources: [\"[[raw/x.md]]\"]", "wikimem: {ignore: [WM1]}",
    "created: 2024-02-30", "aliases: [A, 2024]", "sk-" + "a" * 40, "[[", "]]", "\t", "中文分词", "",
])
_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=20)), max_size=25).map("\n".join)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=_TEXT, b=_TEXT, front=_TEXT, schema=_TEXT)
def test_lint_never_crashes(tmp_path_factory, a, b, front, schema):
    root = tmp_path_factory.mktemp("v")
    (root / "concepts").mkdir()
    (root / "concepts" / "A.md").write_text(f"---\n{front}\n---\n{a}", encoding="utf-8")
    (root / "B.md").write_text(b, encoding="utf-8")
    (root / "SCHEMA.md").write_text(schema, encoding="utf-8")
    (root / "index.md").write_text(b + "\n" + a, encoding="utf-8")
    v = open_vault(root, embedder="none")
    try:
        from wikimem.errors import ConfigError
        try:
            report = v.lint()
        except ConfigError:
            return  # a malformed lint: block in SCHEMA.md is a config error by design
        json.dumps(report.to_dict())
        for f in report.findings:
            assert f.line >= 1 and f.column >= 1 and f.severity in ("info", "warning", "error")
            assert f.path in report_paths(root)
    finally:
        v.close()
        shutil.rmtree(root, ignore_errors=True)


def report_paths(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


_VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-2, 2, allow_nan=False),
                                 st.sampled_from(["", "x", "[[A]]", "2026-01-02", "active", "superseded", "draft",
                                                  "entity", "bogus"])),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                   max_size=2), max_leaves=6)
_KEYS = st.sampled_from(["title", "type", "tags", "aliases", "created", "updated", "sources", "supersedes",
                         "superseded_by", "status", "compares", "confidence", "question", "other"])


@pytest.mark.parametrize("page_type", ["common", "entity", "comparison", "memory", "query", "source", "note"])
@settings(max_examples=60, deadline=None)
@given(doc=st.dictionaries(_KEYS, _VALUES, max_size=5))
def test_field_checker_agrees_with_jsonschema(page_type, doc):
    jsonschema = pytest.importorskip("jsonschema")
    from referencing import Registry, Resource
    schemas = {p.name: json.loads(p.read_text()) for p in SCHEMA_DIR.glob("page-*.json")}
    registry = Registry().with_resources(
        [(name, Resource.from_contents(s)) for name, s in schemas.items()]
        + [(s["$id"], Resource.from_contents(s)) for s in schemas.values()])
    schema = schemas[f"page-{page_type}.json"]
    doc = {k: v for k, v in doc.items() if v is not None}  # lint reads an empty YAML value as "not set"
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    assert validator.is_valid(doc) == (not list(fields.errors(doc, schema)))
    if page_type != "common":  # what lint runs: only the keys a page has, same verdict
        assert validator.is_valid(doc) == (not list(fields.page_errors(doc, page_type)))
