"""Stale compiled pages and the review loop: ``wikimem review`` (``--refresh``), lint WM408, ``status``.

A compiled page (a query page, a source page, any page with ``sources``) stands on what it cites.
It is stale when that moved since it was written:

- a ``sources`` entry recorded with ``sha256:<hex>`` whose hash is now neither the text of a chunk
  of the cited page (what ``query`` records) nor the cited file's bytes (what ``ingest`` records
  for a raw/ file): the cited text changed, or the file did;
- a cited page that no longer exists;
- a cited page that was superseded: the page stands on an old version.

For a changed citation the review shows what changed: the sentences the answer quoted from it
(the text before each ``[[link]]`` in the answer, which is the old text an extractive answer
copied) that the page no longer holds, each beside the nearest sentence it holds now. Nothing
here reads an old copy from the cache: the vault is the truth, and the answer itself is the record
of what was cited.

``refresh`` asks a stale query page's question again through ``query``'s write-back (which rewrites
only the marked answer section, so a person's lines stay) and says which answer sentences went
and which came.
"""
from __future__ import annotations

import difflib
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..errors import UsageError, WikimemError
from ..stores.failures import driver_errors
from ..parse import frontmatter as fm
from ..parse import generated
from .answer import chunk_hash
from .writeback import parse_source

log = logging.getLogger(__name__)

_LINK = re.compile(r"(\[\[[^\]]+\]\])")
KINDS = ("text-changed", "file-changed", "missing", "superseded")


@dataclass(frozen=True)
class Changed:
    """One sentence the page quoted that its source no longer holds, and the nearest one it holds."""

    old: str
    new: str | None  # None: nothing near it is left
    diff: tuple[str, ...] = ()  # word-level: "-word" / "+word" runs

    def to_dict(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new, "diff": list(self.diff)}


@dataclass(frozen=True)
class Reason:
    kind: str  # KINDS
    link: str  # the sources entry's link, as written
    path: str | None  # the cited page or file, when it resolves
    detail: str
    changed: tuple[Changed, ...] = ()
    successor: str | None = None  # "superseded": the current version

    def to_dict(self) -> dict[str, Any]:
        out = {"kind": self.kind, "link": self.link, "path": self.path, "detail": self.detail,
               "changed": [c.to_dict() for c in self.changed]}
        if self.successor:
            out["successor"] = self.successor
        return out


@dataclass(frozen=True)
class StalePage:
    path: str
    title: str
    type: str
    reasons: tuple[Reason, ...]
    question: str | None = None  # a query page's question (what --refresh asks again)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "title": self.title, "type": self.type, "question": self.question,
                "reasons": [r.to_dict() for r in self.reasons]}


@dataclass(frozen=True)
class Refreshed:
    path: str
    written: str | None  # the page the new answer went to (None: not refreshed)
    status: str  # refreshed | unchanged | skipped | failed
    detail: str
    removed: tuple[str, ...] = ()  # answer sentences that went
    added: tuple[str, ...] = ()  # and those that came

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "written": self.written, "status": self.status, "detail": self.detail,
                "removed": list(self.removed), "added": list(self.added)}


@dataclass
class Review:
    stale: list[StalePage] = field(default_factory=list)
    checked: int = 0  # pages with sources looked at
    refreshed: list[Refreshed] = field(default_factory=list)
    # sources that disagree with a page, which `compile` held back (wikimem.compile.contradict)
    contradictions: list = field(default_factory=list)
    dropped_contradictions: int = 0  # findings whose quotes were not where they said: not shown

    def to_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "stale": [s.to_dict() for s in self.stale],
                "refreshed": [r.to_dict() for r in self.refreshed],
                "contradictions": [c.to_dict() for c in self.contradictions],
                "dropped_contradictions": self.dropped_contradictions}


# -- reading what a page cites --------------------------------------------------------------------
def _entries(value: Any) -> list[tuple[str, str | None]]:
    """(link, recorded sha256 or None) of each ``sources`` entry in the form write-back records
    (``writeback.parse_source``); a hash outside 8–64 hex digits is not one."""
    out = []
    for entry in value if isinstance(value, list) else [value] if isinstance(value, str) else []:
        parsed = parse_source(entry)
        if parsed and (parsed[1] is None or 8 <= len(parsed[1]) <= 64):
            out.append(parsed)
    return out


def _target(link: str) -> str:
    return link[2:-2].split("|", 1)[0].split("#", 1)[0].strip()


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[*_`]+", "", text).split()).casefold()


def _sentences(text: str) -> list[str]:
    """The source's sentences as an extractive answer quotes them (wrapped lines joined, list items
    and table rows on their own)."""
    from .extractive import sentences
    return [p.text for p in sentences(text) if len(p.text.strip()) > 1]


def quoted(body: str) -> dict[str, list[str]]:
    """link -> the answer sentences that cite it, from a query page's marked answer section (the
    text before each ``[[link]]``, back to the previous link or paragraph)."""
    section = generated.find(body, "answer")
    text = section.content if section is not None else body
    text = text.split("\n## Sources", 1)[0]
    out: dict[str, list[str]] = {}
    for paragraph in re.split(r"\n\s*\n", text):
        parts = _LINK.split(paragraph)
        for said, link in zip(parts[0::2], parts[1::2]):
            said = said.strip().lstrip(">-* ").strip()
            if said:
                out.setdefault(link, []).append(said)
    return out


def _word_diff(old: str, new: str) -> tuple[str, ...]:
    a, b = old.split(), new.split()
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op in ("delete", "replace"):
            out.append("-" + " ".join(a[i1:i2]))
        if op in ("insert", "replace"):
            out.append("+" + " ".join(b[j1:j2]))
    return tuple(out)


def _changed_sentences(said: list[str], now: str) -> tuple[Changed, ...]:
    """The quoted sentences ``now`` (the cited page's text) no longer holds, each with its nearest."""
    held = _norm(now)
    current = _sentences(now)
    out = []
    for sentence in said:
        if _norm(sentence) in held:
            continue
        best, score = None, 0.0
        for candidate in current:
            ratio = difflib.SequenceMatcher(a=_norm(sentence), b=_norm(candidate), autojunk=False).ratio()
            if ratio > score:
                best, score = candidate, ratio
        near = best if score >= 0.5 else None
        out.append(Changed(sentence, near, _word_diff(sentence, near) if near else ()))
    return tuple(out)


# -- finding stale pages ----------------------------------------------------------------------------
def stale_pages(ctx, paths: Iterable[str] | None = None, refresh: bool = True) -> tuple[list[StalePage], int]:
    """(the stale pages, how many pages with sources were checked), by path. ``paths``: only these.
    ``refresh``: bring the cache up to date first (when this process may write it)."""
    from ..index.update import refresh_lexical
    from ..search.timeline import timeline
    if refresh:
        refresh_lexical(ctx)
    cache = ctx.cache
    manifest = cache.manifest
    wanted = None if paths is None else set(paths)
    citing = []
    for path, _title, _tags, data in manifest.note_facts(True):
        if wanted is not None and path not in wanted:
            continue
        try:
            front = json.loads(data) if data else {}
        except ValueError:
            continue
        if isinstance(front, dict) and front.get("sources") and str(front.get("status") or "") != "superseded":
            citing.append(path)
    pages = cache.pages(sorted(citing))
    versions = timeline(cache)
    files = manifest.file_states()
    hashes: dict[str, set[str]] = {}
    texts: dict[str, str] = {}
    out = []
    for path in sorted(pages):
        page = pages[path]
        resolved = {l.target.strip(): l.resolved for l in page.links if l.key == "sources"}
        said = None
        reasons = []
        for link, digest in _entries(page.frontmatter.get("sources")):
            target = _target(link)
            cited = resolved.get(target)
            if cited is None or cited not in files:
                reasons.append(Reason("missing", link, None, f"{link} no longer resolves to a page or file"))
                continue
            v = versions.pages.get(cited)
            if v is not None and v.superseded:
                now = versions.version_of(cited) or {}
                successor = now.get("current") if now.get("current") != cited else None
                reasons.append(Reason("superseded", link, cited, f"{cited} was superseded"
                                      + (f" by {successor}" if successor else ""), successor=successor))
            if not digest:
                continue
            if cited not in hashes:
                chunk_texts = manifest.chunk_texts(cited)
                hashes[cited] = {chunk_hash(t) for t in chunk_texts} | {str(files[cited][3])}
                texts[cited] = "\n".join(chunk_texts)
            if not any(h.startswith(digest) for h in hashes[cited]):
                if files[cited][4] and page.type != "source":  # a cited note's text (a source page records files)
                    if said is None:
                        said = quoted(page.body)
                    changed = _changed_sentences(said.get(link, []), texts[cited])
                    detail = (f"{len(changed)} quoted sentence{'s' if len(changed) != 1 else ''} changed in {cited}"
                              if changed else f"the cited text of {cited} changed (the sentences quoted from it are "
                                              "still there)")
                    reasons.append(Reason("text-changed", link, cited, detail, changed))
                else:
                    reasons.append(Reason("file-changed", link, cited, f"{cited} changed since it was cited "
                                          f"(sha256 {str(files[cited][3])[:12]}, recorded {digest[:12]})"))
        if reasons:
            question = page.frontmatter.get("question") if page.type == "query" else None
            out.append(StalePage(path, page.title, page.type, tuple(reasons),
                                 str(question or page.title) if page.type == "query" else None))
    return out, len(pages)


def review(ctx, paths: Iterable[str] | None = None, contradictions: Callable[..., tuple[list, int]] | None = None
           ) -> Review:
    """The pages whose evidence moved (``stale_pages``), for ``paths`` or the whole vault, and what
    ``contradictions(ctx, paths)`` finds (the facade passes compile's: the contradictions it held
    back for a person; compile sits above this module, so it is handed in, not imported)."""
    paths = None if paths is None else list(paths)
    for rel in paths or ():
        ctx.files.abspath(rel)  # PathEscapeError for "..", absolute paths, symlinks out: as every other route
    stale, checked = stale_pages(ctx, paths)
    found, dropped = contradictions(ctx, paths) if contradictions is not None else ([], 0)
    return Review(stale, checked, contradictions=found, dropped_contradictions=dropped)


# -- refreshing -----------------------------------------------------------------------------------
def refresh(ctx, pages: Iterable[str] = (), every: bool = False,
            recompile: Callable[[Any, str], "Refreshed | None"] | None = None, **ask_options: Any) -> Review:
    """Ask each named stale query page's question again (``every``: all stale query pages) and file
    the answer through the usual write-back; a stale entity or concept page is handed to
    ``recompile(ctx, path)`` (the facade passes compile's: None when the page has no compiled
    section, else what compiling it again did; only its marked section is rewritten). A page that
    is not stale, or neither, is reported as skipped, never rewritten."""
    from .query import ask
    names = list(pages)
    if not names and not every:
        raise UsageError("name the pages to refresh, or --all")
    stale, checked = stale_pages(ctx)  # brings the cache up to date: the names are resolved against it
    wanted = None
    if not every:
        from ..index.update import current_pages
        from ..knowledge.versions import find_named
        pages = current_pages(ctx, refresh=False)
        wanted = [find_named(ctx, pages, n) for n in names]
    by_path = {s.path: s for s in stale}
    report = Review(stale, checked)
    for path in (sorted(by_path) if wanted is None else wanted):
        page = by_path.get(path)
        if page is None:
            report.refreshed.append(Refreshed(path, None, "skipped", "not stale: nothing it cites changed"))
            continue
        if page.type in ("entity", "concept") and recompile is not None:
            done = recompile(ctx, path)
            if done is not None:
                report.refreshed.append(done)
                continue
        if page.type != "query" or not page.question:
            report.refreshed.append(Refreshed(path, None, "skipped", f"a {page.type} page is not re-answered: "
                                              "review it by hand (its reasons are listed)"))
            continue
        before = _answer_sentences(ctx, path)
        try:
            answer = ask(ctx, page.question, write=True, **ask_options)
        except WikimemError as exc:
            report.refreshed.append(Refreshed(path, None, "failed", str(exc)))
            continue
        if not answer.page:
            why = "; ".join(answer.notices) or "no answer"
            report.refreshed.append(Refreshed(path, None, "failed", f"no new answer was filed ({why})"))
            continue
        after = _answer_sentences(ctx, answer.page)
        removed = tuple(s for s in before if s not in after)
        added = tuple(s for s in after if s not in before)
        status = "refreshed" if removed or added else "unchanged"
        where = "" if answer.page == path else f" (filed as {answer.page})"
        detail = (f"{len(removed)} answer sentence{'s' if len(removed) != 1 else ''} went, {len(added)} came{where}"
                  if status == "refreshed" else f"the answer reads as before; its sources were re-recorded{where}")
        report.refreshed.append(Refreshed(path, answer.page, status, detail, removed, added))
    if report.refreshed:  # what is still stale after the new answers
        report.stale, report.checked = stale_pages(ctx)
    return report


def _answer_sentences(ctx, path: str) -> list[str]:
    try:
        note = ctx.files.read_note(path)
    except (WikimemError, OSError):
        return []
    _, body = fm.parse(note.text.replace("\r\n", "\n"))
    return [s for sentences in quoted(body).values() for s in sentences]


def time_status(ctx) -> dict[str, Any]:
    """``status``'s lines about time, from the cache as it is: how many pages are stale (``wikimem
    review``), and where superseded pages' end dates come from (frontmatter ``superseded_on``,
    log.md, the successor's ``created``, or none: open-ended, shown beside their successor by an
    as-of search). Empty when the cache cannot be read (status says why elsewhere)."""
    from ..search.timeline import timeline
    if ctx.cache.manifest_problem() is not None:  # nothing to read (and status must not make a manifest)
        return {}
    try:
        stale = len(stale_pages(ctx, refresh=False)[0])
        dates = timeline(ctx.cache).counts()
    except (WikimemError, OSError, *driver_errors()) as exc:
        log.debug("time status unavailable: %s", exc)
        return {}
    return {"stale_pages": stale, "superseded_dated_by": dates}
