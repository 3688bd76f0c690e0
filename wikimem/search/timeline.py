"""When each page was true: validity read from the vault, for ``--as-of`` and version chains.

A page is valid from its ``created`` date, else its ``asked`` date (a query page), else the first
line of log.md that wrote it, else the first git commit that added it (whichever of the two is
earlier), else the moment it superseded an older page, else the start of time; until it was
superseded. The end comes from, in order:

1. the old page's frontmatter ``superseded_on`` (``supersede`` writes it beside ``superseded_by``),
   or the successor's ``created`` when that is earlier (it was current from then: one version at a time);
2. the dated ``supersede · OLD → NEW`` line ``log.md`` holds for a supersede made before that key
   existed;
3. the ``created`` date of the page that superseded it;
4. nothing: a superseded page with no date anywhere stays open-ended (``status`` counts them), and
   an as-of search shows it beside its successor rather than guess.

Every date that decides a result is in a note (frontmatter, log.md), never only in the cache: the
cache only holds them as the last build read them. Moments compare as text in one form,
``YYYY-MM-DDTHH:MM:SS`` (a time zone, if written, is dropped: notes are dated in local time); a
bare date asked for means the end of that day, one written in a note the start of it, so a fact
superseded on 1 March is the old one "as of 28 February" and the new one "as of 1 March".
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..errors import UsageError

LOG_PAGE = "log.md"
_LOG_SUPERSEDE = re.compile(r"^\s*-\s*(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}:\d{2}(?::\d{2})?))?\s*·\s*supersede\s*·\s*"
                            r"(.+?)\s*→\s*(.+?)\s*(?:·\s*by\s.*)?$")
_LOG_WRITE = re.compile(r"^\s*-\s*(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}:\d{2}))?\s*·\s*[^·]+?\s*·\s*(.+?)\s*(?:·\s*by\s.*)?$")
_MOMENT = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?)?")


def moment(value: Any, end_of_day: bool = False) -> str | None:
    """A date or date-time as ``YYYY-MM-DDTHH:MM:SS`` (None when it is not one). A bare date is its
    first second, or with ``end_of_day`` its last."""
    if value is None:
        return None
    m = _MOMENT.match(str(value).strip())
    if not m:
        return None
    day, hh, mm, ss = m.groups()
    try:
        dt.date.fromisoformat(day)
    except ValueError:
        return None
    if hh is None:
        return f"{day}T23:59:59" if end_of_day else f"{day}T00:00:00"
    if int(hh) > 23 or int(mm) > 59 or int(ss or 0) > 59:
        return None
    return f"{day}T{hh}:{mm}:{ss or '00'}"


def as_of_moment(value: str) -> str:
    """``--as-of`` as a moment: YYYY-MM-DD (the end of that day) or YYYY-MM-DDTHH:MM[:SS]."""
    found = moment(value, end_of_day=True) if value else None
    if found is None or len(str(value).strip()) not in (10, 16, 19):
        raise UsageError(f"--as-of wants a date as YYYY-MM-DD (or YYYY-MM-DDTHH:MM), got {value!r}")
    return found


@dataclass(frozen=True)
class Validity:
    """When ``path`` was true. ``until_from`` says where the end came from: "frontmatter", "log",
    "successor", or "" when the page is current, or superseded with no date anywhere ("open")."""

    path: str
    valid_from: str | None
    valid_until: str | None
    until_from: str = ""
    supersedes: tuple[str, ...] = ()
    superseded_by: tuple[str, ...] = ()
    superseded: bool = False

    def valid_at(self, when: str) -> bool:
        if self.valid_from is not None and self.valid_from > when:
            return False
        return self.valid_until is None or when < self.valid_until

    def to_dict(self) -> dict[str, Any]:
        return {"valid_from": self.valid_from, "valid_until": self.valid_until,
                "until_from": self.until_from or None, "supersedes": list(self.supersedes),
                "superseded_by": list(self.superseded_by)}


@dataclass
class Timeline:
    """Every note's validity, and the version chains the supersedes links make."""

    pages: dict[str, Validity] = field(default_factory=dict)

    def valid_on(self, when: str) -> set[str]:
        return {p for p, v in self.pages.items() if v.valid_at(when)}

    def chain(self, path: str) -> list[str]:
        """The version chain ``path`` is in, oldest first (by start, then path); [path] alone when
        it is in none."""
        seen, todo = {path}, [path]
        while todo:
            v = self.pages.get(todo.pop())
            if v is None:
                continue
            for other in (*v.supersedes, *v.superseded_by):
                if other not in seen and other in self.pages:
                    seen.add(other)
                    todo.append(other)
        return sorted(seen, key=lambda p: (self.pages[p].valid_from or "" if p in self.pages else "", p))

    def version_of(self, path: str) -> dict[str, Any] | None:
        """How ``path`` sits in its chain (None when it is in none): position, size, newest, dates."""
        v = self.pages.get(path)
        if v is None or not (v.supersedes or v.superseded_by):
            return None
        chain = self.chain(path)
        current = [p for p in chain if not self.pages[p].superseded]
        return {"version": chain.index(path) + 1, "of": len(chain), "chain": chain,
                "current": current[-1] if current else chain[-1], **v.to_dict()}

    def counts(self) -> dict[str, int]:
        """Superseded pages by where their end date came from ("open": none found)."""
        out = {"frontmatter": 0, "log": 0, "successor": 0, "open": 0}
        for v in self.pages.values():
            if v.superseded:
                out[v.until_from or "open"] += 1
        return out


def log_supersedes(log_text: str | None) -> dict[tuple[str, str], str]:
    """(old, new) as log.md names them -> the moment of that supersede (the last one logged)."""
    out: dict[tuple[str, str], str] = {}
    for line in (log_text or "").splitlines():
        m = _LOG_SUPERSEDE.match(line)
        if m:
            day, clock, old, new = m.groups()
            out[(old.strip(), new.strip())] = f"{day}T{clock}:00"[:19] if clock and len(clock) == 5 else \
                (f"{day}T{clock}" if clock else f"{day}T00:00:00")
    return out


def log_writes(log_text: str | None) -> dict[str, str]:
    """Path -> the moment of the first log.md line whose subject is that path (a write: query,
    remember, ingest, write...): evidence the page existed by then."""
    out: dict[str, str] = {}
    for line in (log_text or "").splitlines():
        m = _LOG_WRITE.match(line)
        if m:
            day, clock, detail = m.groups()
            out.setdefault(detail.strip(), f"{day}T{clock}:00" if clock else f"{day}T00:00:00")
    return out


def build_timeline(facts: Iterable[tuple], supersedes: Iterable[tuple[str, str]],
                   log_text: str | None = None, first_added: Callable[[], dict[str, str]] | None = None) -> Timeline:
    """``facts``: (path, created, status, superseded_on[, asked]) per note (``Manifest.validity_facts``);
    ``supersedes``: (new, old) resolved pairs (the graph's supersedes edges); ``first_added``: asked
    only when some page has no date of its own, for path -> the git commit that added it."""
    rows: dict[str, tuple[str | None, bool, str | None]] = {}
    undated: list[str] = []
    for path, created, status, on, *more in facts:
        start = moment(created) or (moment(more[0]) if more else None)
        if start is None:
            undated.append(path)
        rows[path] = (start, str(status or "") == "superseded", moment(on))
    if undated:  # evidence outside the page: log.md's first line for it, the commit that added it
        logged_at = log_writes(log_text)
        added = (first_added() if first_added is not None else None) or {}
        for path in undated:
            found = [m for m in (logged_at.get(path), moment(added.get(path))) if m]
            if found:
                rows[path] = (min(found), *rows[path][1:])
    older: dict[str, list[str]] = {}
    newer: dict[str, list[str]] = {}
    for new, old in supersedes:
        if new in rows and old in rows and new != old:
            older.setdefault(new, []).append(old)
            newer.setdefault(old, []).append(new)
    logged = log_supersedes(log_text)
    ends: dict[str, tuple[str | None, str]] = {}
    for path, (created, superseded, on) in rows.items():
        successors = sorted(newer.get(path, ()))
        # a successor dated before the supersede was recorded (written, then linked later) was the
        # current version from its own date: the old one ends there, or a date between the two
        # would hold both versions at once
        born = min((rows[s][0] for s in successors if rows[s][0] and (created is None or rows[s][0] >= created)),
                   default=None)
        if not superseded and not successors:
            ends[path] = (None, "")
        elif on and born and born < on:
            ends[path] = (born, "successor")
        elif on:
            ends[path] = (on, "frontmatter")
        elif (when := next((logged[(path, s)] for s in successors if (path, s) in logged), None)):
            ends[path] = (when, "log")
        elif (when := min((rows[s][0] for s in successors if rows[s][0]), default=None)):
            ends[path] = (when, "successor")
        else:
            ends[path] = (None, "")
    pages = {}
    for path, (created, superseded, _on) in rows.items():
        start = created
        if start is None:  # valid from the moment it replaced an older page, when that is known
            start = min((ends[o][0] for o in older.get(path, ()) if ends[o][0]), default=None)
        until, source = ends[path]
        pages[path] = Validity(path, start, until, source, tuple(sorted(older.get(path, ()))),
                               tuple(sorted(newer.get(path, ()))), superseded or bool(newer.get(path)))
    return Timeline(pages)


def timeline(cache) -> Timeline:
    """The vault's timeline as the cache's last build holds it, kept until the cache changes."""
    manifest = cache.manifest
    meta = manifest.meta()
    key = (cache.state_key(), meta.get("generation"), meta.get("created"))
    kept = cache.runtime.kept("timeline", key)
    if kept is None:
        edges = [(src, dst) for src, dst, _ in manifest.page_edges(("supersedes",))]
        root = cache.dir.parent

        def first_added() -> dict[str, str]:
            from ..vault.git import first_added as added
            return added(root)
        kept = build_timeline(manifest.validity_facts(), edges, manifest.page_body(LOG_PAGE), first_added)
        cache.runtime.keep("timeline", key, kept)
    return kept

