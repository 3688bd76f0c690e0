"""Tool arguments and results checked against their JSON schemas, as the SDK checked them with pydantic.

The stdio server (stdio.py) does not import the SDK or pydantic, so it checks what the SDK's pydantic
models checked, from the schemas those models published (listing.json):

- ``check_arguments``: a ``tools/call``'s arguments, with pydantic's lax coercions ("5" is the integer 5,
  "yes" is true, 3.0 is 3), which clients rely on; the error text is wikimem's own, one line naming
  each wrong argument ("invalid arguments: top_k must be an integer (got 'many')"), not pydantic's
  (its wording is no part of the protocol: tests compare the two servers' answers as parsed JSON, the
  error texts only for being there). Before that, as the SDK does, a JSON text given for an argument
  that is not a plain string is parsed (an agent sending ``tags: '["a"]'``).
- ``result_problem``: why a structured result does not match its tool's output schema, or None (the SDK
  validated each typed result; a mismatch is an error result, never a wrong answer sent as fine).

Only the schema forms wikimem's tools use are known (``unsupported`` names any other, and the listing's
generator refuses it, so a new argument type cannot slip through unchecked).
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

INT_TEXT = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*(?:\.0+)?")
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})
_KEYWORDS = frozenset({"type", "properties", "required", "items", "anyOf", "enum", "default", "minimum", "maximum",
                       "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "additionalProperties"})
_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object", "null"})


class _Invalid(Exception):
    def __init__(self, kind: str, message: str):
        self.kind, self.message = kind, message


def shown(value: Any) -> str:
    """A given value in an error: its repr, cut in the middle past 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:30] + "..." + text[-27:]


def _number(value: float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() and abs(value) < 1e16 else str(value)


def _scalar(schema: dict[str, Any], value: Any) -> Any:
    """``value`` as pydantic's lax mode makes it of the schema's type, or _Invalid."""
    kind = schema.get("type")
    if "enum" in schema:
        options = schema["enum"]
        if any(type(value) is type(o) and value == o for o in options):
            return value
        names = [repr(o) for o in options]
        expected = names[0] if len(names) == 1 else f"one of {', '.join(names)}"
        raise _Invalid("literal_error", f"must be {expected}")
    if kind == "string":
        if isinstance(value, str):
            return value
        raise _Invalid("string_type", "must be a string")
    if kind == "integer":
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise _Invalid("finite_number", "must be a finite number")
            if value.is_integer():
                return int(value)
            raise _Invalid("int_from_float", "must be a whole number")
        if isinstance(value, str):
            text = value.strip()
            if INT_TEXT.fullmatch(text):
                return int(text.partition(".")[0])
            raise _Invalid("int_parsing", "must be an integer")
        raise _Invalid("int_type", "must be an integer")
    if kind == "number":
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                raise _Invalid("float_parsing", "must be a number") \
                    from None
        raise _Invalid("float_type", "must be a number")
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            if value in (0, 1):
                return bool(value)
            raise _Invalid("bool_parsing", "must be true or false")
        if isinstance(value, float) and value in (0.0, 1.0):
            return bool(value)
        if isinstance(value, str):
            if value.lower() in _TRUE:
                return True
            if value.lower() in _FALSE:
                return False
            raise _Invalid("bool_parsing", "must be true or false")
        raise _Invalid("bool_type", "must be true or false")
    if kind == "object":
        if isinstance(value, dict):
            return value
        raise _Invalid("dict_type", "must be an object")
    raise AssertionError(f"unsupported schema {schema}")  # the generator refuses such schemas


def _bounds(schema: dict[str, Any], value: Any) -> None:
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            n = schema["maxLength"]
            raise _Invalid("string_too_long", f"must be at most {n} character{'' if n == 1 else 's'} long")
        if "minLength" in schema and len(value) < schema["minLength"]:
            n = schema["minLength"]
            raise _Invalid("string_too_short", f"must be at least {n} character{'' if n == 1 else 's'} long")
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    for key, kind, words, holds in (  # in pydantic's order; NaN holds for none
            ("maximum", "less_than_equal", "less than or equal to", lambda v, b: v <= b),
            ("exclusiveMaximum", "less_than", "less than", lambda v, b: v < b),
            ("minimum", "greater_than_equal", "greater than or equal to", lambda v, b: v >= b),
            ("exclusiveMinimum", "greater_than", "greater than", lambda v, b: v > b)):
        if key in schema and not holds(value, schema[key]):
            raise _Invalid(kind, f"must be {words} {_number(schema[key])}")


def _validate(schema: dict[str, Any], value: Any, loc: tuple, errors: list) -> Any:
    options = schema.get("anyOf")
    if options is not None:  # only "T or null" (Optional[T]) is used: None, else T's own errors
        (inner,) = [o for o in options if o != {"type": "null"}]
        return None if value is None else _validate(inner, value, loc, errors)
    try:
        if schema.get("type") == "array":
            if not isinstance(value, (list, tuple)):
                raise _Invalid("list_type", "must be a list")
            items = schema.get("items", {})
            return [_validate(items, item, (*loc, i), errors) for i, item in enumerate(value)]
        checked = _scalar(schema, value)
        _bounds(schema, checked)
        return checked
    except _Invalid as bad:
        errors.append((loc, bad.kind, bad.message, value))
        return None


def _pre_parse(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """The SDK's ``pre_parse_json``: a string given for an argument that is not a plain string, and
    that is JSON for a list, an object, true/false or null, stands for that value."""
    out = dict(arguments)
    for name, value in arguments.items():
        field = schema["properties"].get(name)
        if field is None or not isinstance(value, str) or (field.get("type") == "string" and "enum" not in field):
            continue
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            continue
        if not isinstance(parsed, (str, int, float)):
            out[name] = parsed
    return out


def check_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """(the arguments as the tool receives them, None), or ({}, the error text) when they do not fit
    ``schema`` (the arguments model's JSON schema)."""
    given = _pre_parse(schema, arguments)
    errors: list = []
    out: dict[str, Any] = {}
    required = set(schema.get("required", ()))
    for name, field in schema["properties"].items():
        if name in given:
            value = _validate(field, given[name], (name,), errors)
            out[name] = value
        elif name in required:
            errors.append(((name,), "missing", "is required", given))
    if not errors:
        return out, None
    wrong = [f"{'.'.join(str(part) for part in loc)} {message}" + ("" if kind == "missing" else f" (got {shown(value)})")
             for loc, kind, message, value in errors]
    return {}, "invalid arguments: " + "; ".join(wrong)


def result_problem(schema: dict[str, Any], value: Any, where: str = "result") -> str | None:
    """Why ``value`` does not match an output schema (lax, as pydantic validated a TypedDict result:
    keys the schema does not list are allowed), or None when it does."""
    kinds = schema.get("type")
    if isinstance(kinds, list):  # ["object", "null"]: an optional field's value
        if value is None and "null" in kinds:
            return None
        schema = {**schema, "type": next(k for k in kinds if k != "null")}
    options = schema.get("anyOf")
    if options is not None:
        problems = [result_problem(o, value, where) for o in options]
        return None if None in problems else problems[0]
    if schema.get("type") == "object" and "properties" in schema:
        if not isinstance(value, dict):
            return f"{where}: not an object"
        for key in schema.get("required", ()):
            if key not in value:
                return f"{where}.{key}: missing"
        for key, sub in schema["properties"].items():
            if key in value:
                problem = result_problem(sub, value[key], f"{where}.{key}")
                if problem:
                    return problem
        return None
    if schema.get("type") == "array":
        if not isinstance(value, (list, tuple)):
            return f"{where}: not a list"
        for i, item in enumerate(value):
            problem = result_problem(schema.get("items", {}), item, f"{where}[{i}]")
            if problem:
                return problem
        return None
    if "type" not in schema and "enum" not in schema:
        return None  # Any
    try:
        _scalar(schema, value)
    except _Invalid as bad:
        return f"{where}: {bad.message}"
    return None


def unsupported(schema: Any, path: str = "schema") -> list[str]:
    """The parts of a schema these checks do not know (the listing generator refuses any)."""
    if not isinstance(schema, dict):
        return [f"{path}: not an object"]
    found = [f"{path}.{key}" for key in schema if key not in _KEYWORDS and key not in ("title", "description")]
    kinds = schema.get("type")
    for kind in kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []:
        if kind not in _TYPES:
            found.append(f"{path}.type={kind}")
    if "anyOf" in schema:
        options = schema["anyOf"]
        if len(options) != 2 or {"type": "null"} not in options:
            found.append(f"{path}.anyOf (only Optional[T] is known)")
        found += [p for o in options for p in unsupported(o, f"{path}.anyOf")]
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            found += unsupported(schema[key], f"{path}.{key}")
    for name, sub in (schema.get("properties") or {}).items():
        found += unsupported(sub, f"{path}.{name}")
    return found
