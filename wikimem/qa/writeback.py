"""Filing an answer back as ``queries/<question>.md`` so knowledge accumulates.

The page's frontmatter says what was asked and when, how it was answered, and which chunks it
cites, each with the sha256 of the chunk's text at the time (``"[[page#heading]] sha256:<hex>"``),
so a later change to a cited chunk shows. The same or a near-identical question updates the
earlier page instead of adding another: most of its terms shared with an earlier wording, or
mostly the same citations and a fair share of its terms (a page's title and aliases count as one
name, so "RRF" and "reciprocal rank fusion" match). The first wording stays the title, later ones
are kept in ``also_asked``. Unknown frontmatter keys a person added to the page are kept.
"""
from __future__ import annotations

import datetime as _dt
import json
import logging
import re
from dataclasses import replace
from typing import Any

import yaml

from ..errors import ConflictError, NoteReadError, WikimemError
from ..index.analysis import terms
from ..parse import frontmatter as fm
from .extractive import FRAMING
from ..vault.files import fit_name
from .answer import QUERY_FOLDER, Answer, chunk_hash

log = logging.getLogger(__name__)

SAME_QUESTION = 0.6  # term overlap (Jaccard) above which two questions are one
SAME_SOURCES_QUESTION = 0.25  # ...or this much when the two answers cite mostly the same chunks
SAME_SOURCES = 0.5  # "mostly": Jaccard of the two sets of cited chunks
_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f]+')
_HASHED = re.compile(r"^\s*(\[\[[^\]]+\]\])(?:\s+sha256:([0-9a-f]+))?\s*$")


def slug(question: str) -> str:
    name = " ".join(_UNSAFE.sub(" ", question).split()).strip(" .!?？。")
    if len(name) > 80:
        name = name[:80].rsplit(" ", 1)[0] if " " in name[:80] else name[:80]
    return fit_name(name).strip(" .") or "query"


def _words(question: str) -> str:
    return " ".join(re.findall(r"\w+", question.casefold()))


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def source_entries(answer: Answer) -> list[str]:
    return [f"{c.link} sha256:{c.chunk_sha256}" for c in answer.citations]


def parse_source(entry: Any) -> tuple[str, str | None] | None:
    """``"[[page#h]] sha256:<hex>"`` -> (link, hex); the form the linter reads back."""
    m = _HASHED.match(str(entry)) if isinstance(entry, str) else None
    return (m.group(1), m.group(2)) if m else None


def _existing(vault) -> list[tuple[str, Any, dict]]:
    """(path, note, frontmatter) of every query page."""
    folder = vault.root / QUERY_FOLDER
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.rglob("*.md")):
        rel = path.relative_to(vault.root).as_posix()
        try:
            note = vault.files.read_note(rel)
        except (NoteReadError, WikimemError):
            continue
        front, _ = fm.parse(note.text.replace("\r\n", "\n"))
        if front.error or front.data.get("type", "query") != "query":
            continue
        out.append((rel, note, dict(front.data)))
    return out


def _names(vault) -> list[tuple[str, set[str]]]:
    """(a page's title or alias, the terms of all its names): the vault's own synonyms."""
    try:
        rows = vault.cache.db.execute("SELECT title, aliases FROM files WHERE aliases IS NOT NULL AND "
                                      "aliases NOT IN ('', '[]')").fetchall()
    except Exception:  # noqa: BLE001 - no cache: no synonyms
        return []
    out = []
    for title, aliases in rows:
        try:
            names = [str(title)] + [str(a) for a in json.loads(aliases or "[]")]
        except (ValueError, TypeError):
            continue
        every = set().union(*(terms(n) for n in names))
        out.extend((n, every) for n in names if n.strip())
    return out


def question_terms(question: str, names: list[tuple[str, set[str]]]) -> set[str]:
    """The question's content terms, with every name of a page it mentions ("RRF" brings in
    "reciprocal rank fusion" when a page has that alias), framing words left out."""
    found = set(terms(question))
    low = question.casefold()
    for name, every in names:
        if re.search(rf"(?<!\w){re.escape(name.casefold())}(?!\w)", low):
            found |= every
    return (found - FRAMING) or found


def _listed(value) -> list:
    """A frontmatter list as a list; a hand-edited value of another shape (``also_asked: 5``) as
    none, rather than a crash of every later query (lint reports the shape)."""
    return value if isinstance(value, list) else []


def find_same(vault, answer: Answer):
    """The query page this question repeats, or None."""
    names = _names(vault)
    mine = question_terms(answer.question, names)
    links = {c.link for c in answer.citations}
    best, best_score = None, 0.0
    for rel, note, data in _existing(vault):
        asked = [data.get("question")] + _listed(data.get("also_asked"))
        overlap = max((_jaccard(mine, question_terms(str(q), names)) for q in asked if q), default=0.0)
        theirs = {p[0] for p in map(parse_source, _listed(data.get("sources"))) if p}
        shared = _jaccard(links, theirs)
        if overlap >= SAME_QUESTION or (shared >= SAME_SOURCES and overlap >= SAME_SOURCES_QUESTION):
            score = overlap + shared
            if score > best_score:
                best, best_score = (rel, note, data), score
    return best


def _body(answer: Answer, title: str) -> str:
    lines = [f"# {title}", ""]
    if answer.flags:
        lines += ["> [!warning] Unverified parts of this answer"] + [f"> - {f}" for f in answer.flags] + [""]
    lines += [answer.text, "", "## Sources", ""]
    for c in answer.citations:
        where = " › ".join(x for x in (c.title, c.heading or (f"^{c.block}" if c.block else None)) if x)
        lines.append(f"- {c.link} — {where}")
    return "\n".join(lines) + "\n"


def write_back(vault, answer: Answer, supersede: bool = False) -> Answer:
    """Create or update the query page. Two processes filing the same question at once: the
    loser's conflict-checked write is refused, and it retries once as an update of the winner's page.
    An answer quoting a secret from a note is still given, but not filed (the writer refuses it)."""
    from ..knowledge.secrets import SecretError

    try:
        try:
            written = _write_back(vault, answer)
        except ConflictError:
            log.info("query page changed while being written; retrying once")
            written = _write_back(vault, answer)
    except SecretError as exc:
        return replace(answer, notices=answer.notices + (f"no query page was written: {exc}",))
    if supersede and written.page:
        from ..knowledge.versions import supersede_most_similar

        done = supersede_most_similar(vault, written.page, written.similar)
        written = replace(written, notices=written.notices + (done,))
    return written


def _write_back(vault, answer: Answer) -> Answer:
    now = _dt.datetime.now().astimezone().replace(microsecond=0).isoformat()
    same = find_same(vault, answer)
    changes: dict[str, Any] = {"updated": now, "answer_mode": answer.mode, "sources": source_entries(answer)}
    if answer.flags:
        changes["flags"] = list(answer.flags)
    if same is None:
        rel = f"{QUERY_FOLDER}/{slug(answer.question)}.md"
        n = 2
        while vault.files.abspath(rel).exists():  # a page of that name that is not this question
            rel = f"{QUERY_FOLDER}/{slug(answer.question)} {n}.md"
            n += 1
        front = {"title": answer.question, "type": "query", "question": answer.question, "asked": now, **changes}
        text = "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10_000) + "---\n" \
            + _body(answer, answer.question)
        result = vault.write_page(rel, text, reason="query")
        status = "created"
    else:
        rel, note, data = same
        asked = [str(data.get("question") or "")] + [str(q) for q in _listed(data.get("also_asked"))]
        if _words(answer.question) not in {_words(q) for q in asked}:  # a new wording, not a new spelling
            changes["also_asked"] = [q for q in asked[1:] if q] + [answer.question]
        if not answer.flags and "flags" in data:
            changes["flags"] = None
        front, _ = fm.parse(note.text.replace("\r\n", "\n"))
        raw = fm.update(front.raw, front.data, changes)
        title = str(data.get("title") or data.get("question") or answer.question)
        text = fm.compose(raw, _body(answer, title))
        result = vault.write_page(rel, text, expected_sha256=note.sha256, reason="query (updated)")
        status = "updated"
    notices = list(answer.notices) + list(result.warnings)
    summary = re.sub(r"\s*\[\[[^\]]*\]\]", "", answer.text.split("\n")[0])
    summary = summary if len(summary) <= 100 else summary[:100].rsplit(" ", 1)[0] + "…"
    try:
        if vault.add_to_index(rel, summary):
            from ..knowledge.writer import refresh_cache

            warn = refresh_cache(vault, ["index.md"])
            if warn:
                notices.append(warn)
    except WikimemError as exc:
        notices.append(f"index.md not updated: {exc}")
    return replace(answer, page=rel, page_status=status, notices=tuple(notices), similar=tuple(result.similar))


def check_sources(vault, rel: str) -> list[tuple[str, str]]:
    """For each cited chunk of query page ``rel``: ``(link, status)`` with status ``ok`` (a chunk
    of the cited page still has that exact text), ``changed`` (the page is there, that text is
    not: the answer may be stale) or ``missing`` (the page is gone). For the linter."""

    front, _ = fm.parse(vault.files.read_note(rel).text.replace("\r\n", "\n"))
    hashes_by_page: dict[str, set[str] | None] = {}
    out = []
    for entry in front.data.get("sources") or []:
        parsed = parse_source(entry)
        if parsed is None or parsed[1] is None:
            continue
        link, digest = parsed
        target = link[2:-2].split("|")[0].split("#")[0]
        path = target if target.lower().endswith(".md") else target + ".md"
        if path not in hashes_by_page:
            try:
                page = vault.parse_file(path)
                hashes_by_page[path] = {chunk_hash(c.text) for c in vault.chunks(page)}
            except WikimemError:
                hashes_by_page[path] = None
        known = hashes_by_page[path]
        out.append((link, "missing" if known is None else "ok" if digest in known else "changed"))
    return out
