"""Recent changes: what happened in the vault lately, newest first (basic-memory's
``recent_activity``, for people and agents coming back to a vault).

Two sources, both already there: the manifest (every page's file time, its frontmatter
``created``/``updated`` dates and its status) and log.md (what wikimem itself wrote: queries,
memories, ingests, supersedes, fixes, agent edits). A page is listed once, with its most recent
change: written by wikimem (the log line), superseded, created (its ``created`` date falls in the
window) or edited (its file changed in the window). Nothing is parsed but log.md; at 10k notes
this reads one table and one file. A page created with a preserved old file time (a copy) shows
when its file time falls in the window, as an edit would.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from ..errors import NoteReadError, UsageError
from ..index.update import refresh_lexical
from ..model import META_PAGES

if TYPE_CHECKING:
    from ..core import Context

LOG_LINE = re.compile(r"^- (\d{4}-\d{2}-\d{2} \d{2}:\d{2}) · (.+?) · (.*)$")
_SPAN = re.compile(r"^\s*(\d+)\s*(m|min|h|d|w)\s*$", re.IGNORECASE)
_UNIT_S = {"m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
DEFAULT_SINCE = "7d"
DEFAULT_LIMIT = 50


@dataclass(frozen=True)
class Change:
    path: str
    title: str
    type: str
    when: str  # ISO 8601, local time, to the minute
    kind: str  # written | superseded | created | edited
    summary: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "title": self.title, "type": self.type, "when": self.when, "kind": self.kind,
                "summary": self.summary}


@dataclass(frozen=True)
class RecentReport:
    since: str
    changes: tuple[Change, ...]
    total: int  # changes in the window before ``limit``
    notices: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"since": self.since, "total": self.total, "changes": [c.to_dict() for c in self.changes],
                "notices": list(self.notices)}


def parse_since(text: str | None, now: dt.datetime) -> dt.datetime:
    """``7d``, ``12h``, ``30m``, ``2w`` back from now, or a date / date-time (``2026-11-30``,
    ``2026-11-30T08:00``). Anything else is a UsageError naming the forms."""
    text = (text or DEFAULT_SINCE).strip()
    m = _SPAN.match(text)
    if m:
        try:
            return now - dt.timedelta(seconds=int(m.group(1)) * _UNIT_S[m.group(2).lower()])
        except OverflowError:  # 99999999d: before the year 1
            raise UsageError(f"--since {text!r} reaches back before the year 1; give a shorter span "
                             "or a date such as 2020-01-01") from None
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--since {text!r}: give a span such as 7d, 12h, 30m, 2w, or a date such as 2026-11-30")


def _log_entries(ctx: "Context") -> list[tuple[dt.datetime, str, str]]:
    try:
        text = ctx.files.read_note("log.md").text
    except NoteReadError:
        return []
    out = []
    for line in text.splitlines():
        m = LOG_LINE.match(line)
        if m:
            try:
                out.append((dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M"), m.group(2), m.group(3)))
            except ValueError:
                continue
    return out


def _paths_named(detail: str, known) -> list[str]:
    """The pages a log line's detail names: ``a.md``, ``a.md -> b.md``, ``old → new``, ``a.md: fix (WM304)``."""
    found = []
    for part in re.split(r"\s+(?:→|->)\s+|: ", detail):
        part = part.strip()
        for candidate in (part, part.split(" (", 1)[0]):
            if candidate in known and candidate not in found:
                found.append(candidate)
                break
    return found


def _date(value: Any) -> dt.datetime | None:
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(str(value)[:19])
    except ValueError:
        return None


def recent(ctx: "Context", since: str | None = None, *, types: Iterable[str] | None = None,
           limit: int = DEFAULT_LIMIT, now: dt.datetime | None = None, refresh: bool = True) -> RecentReport:
    """Pages created, edited, superseded or written by wikimem since ``since``, newest first.
    ``refresh``: bring the cache up to date first when no watcher does (an incremental scan)."""
    if limit < 1:
        raise UsageError(f"--limit must be 1 or more, not {limit}")
    now = now or dt.datetime.now()
    start = parse_since(since, now)
    wanted = {t.strip() for t in types or () if t.strip()} or None
    if refresh:
        refresh_lexical(ctx, unless_watched=True)
    manifest = ctx.cache.manifest
    pages: dict[str, tuple[str, str, str]] = {}
    modified: dict[str, dt.datetime] = {}
    floor_ns = int((start - dt.timedelta(days=1)).timestamp() * 1e9)  # a day's slack: times are to the minute
    for path, title, type_, status, mtime_ns in manifest.page_mtimes():
        if path in META_PAGES or path == "SCHEMA.md" or (wanted is not None and (type_ or "note") not in wanted):
            continue
        pages[path] = (title or path.rsplit("/", 1)[-1].removesuffix(".md"), type_ or "note", status or "active")
        if mtime_ns >= floor_ns:
            # to the minute, as log.md: a file wikimem wrote has the log's time and keeps the log's words
            modified[path] = dt.datetime.fromtimestamp(mtime_ns / 1e9).replace(second=0, microsecond=0)
    best: dict[str, tuple[dt.datetime, str, str]] = {}

    def offer(path: str, when: dt.datetime, kind: str, summary: str) -> None:
        if when >= start and (path not in best or when > best[path][0]):
            best[path] = (when, kind, summary)

    for when, operation, detail in _log_entries(ctx):
        if when >= start:
            for path in _paths_named(detail, pages.keys()):
                kind = "superseded" if operation == "supersede" else "written"
                offer(path, when, kind, f"wikimem: {operation}" + (f" ({detail})" if kind == "superseded" else ""))
    for path, when in modified.items():
        offer(path, when, "edited", "edited")
    ordered = sorted(best.items(), key=lambda item: (-item[1][0].timestamp(), item[0]))
    shown = [(path, *entry) for path, entry in ordered[:limit]]
    dates = {path: (_date(created), _date(updated)) for path, (created, updated) in
             manifest.page_dates([path for path, _, kind, _ in shown if kind == "edited"]).items()}
    changes = []
    for path, when, kind, summary in shown:
        title, type_, status = pages[path]
        if kind == "edited":
            kind, summary = _edit_kind(when, start, type_, status, *dates.get(path, (None, None)))
        changes.append(Change(path, title, type_, when.isoformat(timespec="minutes"), kind, summary))
    return RecentReport(start.isoformat(timespec="minutes"), tuple(changes), len(best))


def _edit_kind(when: dt.datetime, start: dt.datetime, type_: str, status: str, created: dt.datetime | None,
               updated: dt.datetime | None) -> tuple[str, str]:
    """A file that changed in the window: created (its ``created`` date is the day it was last
    written) or edited, with what the frontmatter adds."""
    if created is not None and created.date() == when.date():
        return "created", f"created ({type_})"
    summary = "edited" + (f", marked updated {updated.date()}" if updated and updated.date() >= start.date() else "")
    return "edited", summary + ("; now superseded" if status == "superseded" else "")
