"""Search arguments checked at the boundary, and the typed ``Filters`` made from them (the stores
turn a ``Filters`` into their own query: ``stores/filters.py``)."""
from __future__ import annotations

import datetime as dt
from typing import Collection, Sequence

from ..errors import UsageError
from ..stores.filters import Filters

MODES = ("hybrid", "lexical", "vector")


def check_args(query: str, mode: str, limit: int, since: str | None, until: str | None) -> None:
    if not query or not query.strip():
        raise UsageError("empty query: say what to look for")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:  # bytes a terminal sent in another encoding, or "\ud800" from JSON
        raise UsageError("the query is not valid Unicode text (is the terminal set to UTF-8?)") from None
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r} (choose {', '.join(MODES)})")
    for name, value in (("since", since), ("until", until)):
        if value:
            try:
                if len(value) != 10:
                    raise ValueError
                dt.date.fromisoformat(value)
            except ValueError:
                raise UsageError(f"--{name} wants a real date as YYYY-MM-DD, got {value!r}") from None
    if limit < 1:
        raise UsageError("limit must be at least 1")


def make_filters(folder=None, type=None, tags: Sequence[str] | None = None, since=None, until=None,
                 include_superseded: bool = False, paths: Collection[str] | None = None,
                 include_meta: bool = False, as_of: str | None = None) -> Filters:
    """``as_of``: YYYY-MM-DD[THH:MM[:SS]] as a person typed it (checked here); a page superseded
    since counts as current then, so superseded pages are not hidden by default."""
    when = None
    if as_of:
        from .timeline import as_of_moment
        when = as_of_moment(as_of)
    return Filters(_folder(folder), type, tuple(t for t in (_tag(t) for t in tags or ()) if t), since, until,
                   include_superseded or bool(when),
                   None if paths is None else frozenset(paths), include_meta, as_of=when)


def _folder(folder: str | None) -> str | None:
    """A folder as a user types it: ``./commands``, ``commands/``, ``commands\\common``; the vault's
    top (``.``, ``./``, ``/``) is no filter."""
    if not folder:
        return folder
    text = folder.strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    text = text.strip("/")
    return None if text in ("", ".") else text


def _tag(tag: str) -> str:
    """``#cli``, ``cli/`` (a parent as Obsidian's tag pane shows it), spaces around: ``cli``."""
    return tag.strip().lstrip("#").strip().rstrip("/")
