"""YAML frontmatter: split, parse safely, and update without disturbing what we did not change.

Updates edit only the lines of the keys that change (new keys go at the end), so unknown keys,
key order, comments and quoting style survive a write.
"""
from __future__ import annotations

import base64
import datetime as _dt
import math
import re
from typing import Any, Mapping

import yaml

from ..errors import UsageError
from ..model import Frontmatter

try:  # libyaml is 5-10x faster; fall back to the pure-Python loader where it is missing
    _BaseLoader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _BaseLoader = yaml.SafeLoader

MAX_DEPTH = 40  # nesting deeper than this is not a note's metadata (and would recurse without end)
MAX_NODES = 20_000  # values after expanding YAML aliases: a "billion laughs" alias bomb stops here


class _Loader(_BaseLoader):  # type: ignore[misc,valid-type]
    """The safe loader, except that a timestamp no calendar has (``2024-02-30``) stays the string
    it was written as instead of raising; the page parser then reports it as a bad date."""


def _timestamp(loader: Any, node: Any) -> Any:
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except (ValueError, OverflowError):
        return node.value


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)


class FrontmatterTooComplex(ValueError):
    """Frontmatter that refers to itself (``a: &a [*a]``), nests too deep or expands too far."""

_FENCE = re.compile(r"^---[ \t]*$")
_CLOSE = re.compile(r"^(---|\.\.\.)[ \t]*$")
_TOP_KEY = re.compile(r"^([^\s#][^:]*?)\s*:(\s|$)")


def split(text: str) -> tuple[str | None, str, int]:
    """Split LF text into (frontmatter raw or None, body, body start line)."""
    if not text.startswith("---"):
        return None, text, 0
    first_nl = text.find("\n")
    if first_nl < 0 or not _FENCE.match(text[:first_nl]):
        return None, text, 0
    pos = first_nl + 1
    line_no = 1
    while pos <= len(text):
        nl = text.find("\n", pos)
        line = text[pos:] if nl < 0 else text[pos:nl]
        if _CLOSE.match(line):
            raw = text[first_nl + 1:pos]
            body = "" if nl < 0 else text[nl + 1:]
            return raw, body, line_no + 1
        if nl < 0:
            break
        pos = nl + 1
        line_no += 1
    return None, text, 0  # no closing fence: not frontmatter (Obsidian agrees)


def normalise(value: Any) -> Any:
    """Turn YAML values into plain JSON data (recursively) so pages compare, serialise and survive
    the manifest unchanged: dates/datetimes -> ISO strings, sets -> sorted lists, ``!!binary`` ->
    its base64 text, NaN and infinities -> their YAML text, keys -> strings. Raises FrontmatterTooComplex on a self-referencing anchor,
    nesting deeper than MAX_DEPTH or more than MAX_NODES values (alias bombs share objects, so
    the loader stays small while a naive walk would expand them exponentially)."""
    budget = [MAX_NODES]

    def walk(v: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise FrontmatterTooComplex(f"frontmatter has more than {MAX_NODES} values (keys, list items, and what "
                                        "YAML aliases expand to)")
        if depth > MAX_DEPTH:
            raise FrontmatterTooComplex(f"frontmatter nests deeper than {MAX_DEPTH} levels "
                                        "or refers to itself (a YAML anchor inside its own value)")
        if isinstance(v, (_dt.datetime, _dt.date)):
            return v.isoformat()
        if isinstance(v, dict):
            return {_key(k): walk(x, depth + 1) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x, depth + 1) for x in v]
        if isinstance(v, (set, frozenset)):
            return sorted((walk(x, depth + 1) for x in v), key=repr)
        if isinstance(v, (bytes, bytearray)):
            return base64.b64encode(bytes(v)).decode("ascii")
        if isinstance(v, float) and not math.isfinite(v):
            return ".nan" if v != v else (".inf" if v > 0 else "-.inf")  # as written: JSON has no NaN
        if v is None or isinstance(v, (str, bool, int, float)):
            return v
        return str(v)

    def _key(k: Any) -> str:
        return k.isoformat() if isinstance(k, (_dt.datetime, _dt.date)) else str(k)

    return walk(value, 0)


def parse(text: str) -> tuple[Frontmatter, str]:
    """Parse LF text into (Frontmatter, body). Malformed YAML keeps the body and records an error."""
    raw, body, body_line = split(text)
    if raw is None:
        return Frontmatter(end_line=0), text
    try:
        data = yaml.load(raw, Loader=_Loader) if raw.strip() else {}
        if data is not None and not isinstance(data, dict):
            return Frontmatter(raw=raw, data={}, error="frontmatter is not a key: value mapping",
                               end_line=body_line), body
        data = normalise(data or {})
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return Frontmatter(raw=raw, data={}, error=f"malformed YAML frontmatter{where}: {problem}",
                           end_line=body_line), body
    except FrontmatterTooComplex as exc:
        return Frontmatter(raw=raw, data={}, error=f"frontmatter ignored: {exc}", end_line=body_line), body
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        # values the YAML library itself cannot build (an int of 5,000 digits, ...): one note's
        # problem, never the vault's
        return Frontmatter(raw=raw, data={}, error=f"frontmatter cannot be read: {type(exc).__name__}: "
                           f"{str(exc)[:200]}", end_line=body_line), body
    return Frontmatter(raw=raw, data=data, end_line=body_line), body


def as_list(value: Any) -> list[str]:
    """Frontmatter fields that may be a string, a list or a comma string -> list of strings."""
    if value is None:
        return []
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")] if "," in value and "[[" not in value else [value.strip()]
        return [p for p in parts if p]
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if v is not None and str(v).strip()]
    return [str(value)]


def _dump_key(key: str, value: Any) -> str:
    return yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True, default_flow_style=False,
                         width=10_000)


def _top_key(line: str) -> str | None:
    """What ``_TOP_KEY.match(line).group(1)`` is, in linear time: the lazy ``[^:]*?`` before
    ``\\s*:`` retried the whitespace run at every step (a 80k-character line without a colon: 12 s
    for each edit of the frontmatter). A key ends at the first colon, followed by a space or the
    end of the line (the first character is the key's whatever it is)."""
    if not line or line[0] == "#" or line[0].isspace():
        return None
    colon = line.find(":", 1)  # the first character may be anything else, a colon too
    if colon < 0:
        return None
    if colon + 1 < len(line) and not line[colon + 1].isspace():
        return None
    return line[:colon].rstrip()


def _key_spans(raw: str) -> dict[str, tuple[int, int]]:
    """Line spans [start, end) of each top-level key in the frontmatter text."""
    lines = raw.split("\n")
    spans: dict[str, tuple[int, int]] = {}
    current: str | None = None
    start = 0
    def close(end: int) -> tuple[int, int]:
        # blank lines and column-0 comments before the next key belong to no key: an edit of the
        # key above keeps them ("# reviewed by X" under "status: draft")
        while end > start + 1 and (lines[end - 1] == "" or lines[end - 1].startswith("#")):
            end -= 1
        return start, end

    for i, line in enumerate(lines):
        key = _top_key(line) if line and not line[0].isspace() and not line.startswith("- ") else None
        if key is not None:
            if current is not None:
                spans[current] = close(i)
            current = key.strip().strip("'\"")
            start = i
    if current is not None:
        spans[current] = close(len(lines))
    return spans


def update(raw: str | None, data: Mapping[str, Any], changes: Mapping[str, Any]) -> str:
    """Return new frontmatter text with ``changes`` applied (value None deletes a key).

    Only the changed keys' lines are rewritten (a key set to its current value is no change); a
    change that cannot be made line-wise is refused (UsageError), never made by re-dumping.
    """
    changes = {k: v for k, v in changes.items()
               if not ((k in data and data[k] == v) or (v is None and k not in data))}
    if not changes:
        return raw or ""
    if raw is None or not raw.strip():
        merged = {k: v for k, v in changes.items() if v is not None}
        return "".join(_dump_key(k, v) for k, v in merged.items())
    spans = _key_spans(raw)
    keys = {str(k) for k in data}
    for key in changes:
        # The line scan and YAML can disagree about a key (``on:`` reads as True, ``007:`` as 7, a
        # quoted or multi-line key): a changed key must be found as itself by both, else the note
        # is refused. Re-dumping the whole block instead would rename such keys, retype dates and
        # drop comments: the rest of the frontmatter must stay as the user wrote it.
        if (key in spans) != (key in keys):
            raise UsageError(f"frontmatter key {key!r} cannot be edited line by line here (YAML reads the "
                             "keys differently from how they are written); edit it by hand")
    lines = raw.split("\n")
    trailing_nl = raw.endswith("\n")
    if trailing_nl:
        lines = lines[:-1]
    # edit from the bottom so earlier spans stay valid
    edits = sorted(((spans[k], k) for k in changes if k in spans), reverse=True)
    for (s, e), key in edits:
        value = changes[key]
        new = [] if value is None else _dump_key(key, value).rstrip("\n").split("\n")
        lines[s:e] = new
    for key, value in changes.items():
        if key not in spans and value is not None:
            lines.extend(_dump_key(key, value).rstrip("\n").split("\n"))
    result = "\n".join(lines) + ("\n" if lines else "")
    # The line scan can miss a key YAML sees (a quoted 'a:b', text after a lone CR or U+2028) and
    # count it as part of the key above, which the edit would then drop: the result must read back
    # as exactly the old data with the changes, or nothing is written.
    wanted = {**data, **{k: v for k, v in changes.items() if v is not None}}
    for key in [k for k, v in changes.items() if v is None]:
        wanted.pop(key, None)
    try:
        got = normalise(yaml.load(result, Loader=_Loader) or {}) if result.strip() else {}
    except (yaml.YAMLError, ValueError, TypeError, FrontmatterTooComplex):
        got = None
    if got != normalise(wanted):
        raise UsageError("this frontmatter cannot be edited line by line without changing other keys "
                         "(YAML reads its lines differently from how they look); edit it by hand")
    return result


def replace_raw(original: str, body_line: int, new_raw: str, newline: str) -> str:
    """``original`` (the note as read, any line endings) with its frontmatter lines replaced by
    ``new_raw`` (LF text, written with ``newline``); both fences and every body byte are kept as
    they were. ``body_line``: where ``split`` found the body (0: no frontmatter, one is added)."""
    block = new_raw.replace("\n", newline)
    if not body_line:
        return f"---{newline}{block}---{newline}{original}"
    lines = re.split(r"(?<=\n)", original)  # each line with its own ending: \n or \r\n
    return lines[0] + block + "".join(lines[body_line - 1:])


def compose(fm_raw: str | None, body: str) -> str:
    """Frontmatter text + body -> full LF note text."""
    if fm_raw is None:
        return body
    if fm_raw and not fm_raw.endswith("\n"):
        fm_raw += "\n"
    return f"---\n{fm_raw}---\n{body}"
