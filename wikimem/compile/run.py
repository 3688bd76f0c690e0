"""``wikimem compile``: sources into entity and concept pages (design §10).

One pass: read every source under raw/ (sources.py), find the pages it speaks about and the new
names that reach SCHEMA.md's threshold (names.py), plan each page's section (extract.py, or the
model's claims through the gates of gate.py), hold back what contradicts a page's own text
(contradict.py) and write what changed (write.py). Every source is read each time (the
extractive pass is cheap and the threshold counts across all sources), but only a page whose
section or citations changed is written: compile twice and nothing changes, change one source and
only the sections that cite it (or now should) are rewritten. ``sources``: compile only the pages
these sources speak about.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from ..errors import UsageError, WikimemError
from ..parse import frontmatter as fm
from ..parse import generated
from . import extract
from .contradict import Contradiction, verified
from .names import Subject, existing_subjects, min_references, new_subjects
from .sources import Source, is_source, page_sentences, read_sources, with_status
from .write import new_page, update_page

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PageResult:
    path: str
    title: str
    kind: str
    status: str  # created | updated | unchanged | failed (dry run: would-create | would-update)
    sentences: int
    sources: tuple[str, ...]
    notice: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "title": self.title, "kind": self.kind, "status": self.status,
                "sentences": self.sentences, "sources": list(self.sources), "notice": self.notice}


@dataclass
class CompileReport:
    mode: str = "extractive"
    dry_run: bool = False
    sources: list[Source] = field(default_factory=list)
    pages: list[PageResult] = field(default_factory=list)
    contradictions: list[Contradiction] = field(default_factory=list)
    dropped_contradictions: int = 0  # findings whose quotes were not where they said
    dropped_claims: list[str] = field(default_factory=list)  # llm claims no gate let through, and why
    notices: list[str] = field(default_factory=list)

    @property
    def changed(self) -> list[PageResult]:
        return [p for p in self.pages if p.status not in ("unchanged", "failed")]

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "dry_run": self.dry_run, "sources": [s.to_dict() for s in self.sources],
                "pages": [p.to_dict() for p in self.pages], "created": sum(p.status.endswith("create") or
                                                                           p.status == "created" for p in self.pages),
                "updated": sum(p.status in ("updated", "would-update") for p in self.pages),
                "contradictions": [c.to_dict() for c in self.contradictions],
                "dropped_contradictions": self.dropped_contradictions,
                "dropped_claims": list(self.dropped_claims), "notices": list(self.notices)}


def _resolve_sources(ctx, names: Iterable[str], pages: dict, sources: list[Source]) -> set[str]:
    """SOURCE arguments -> raw/ paths: a raw path (with or without .md), a sources/ page, a title."""
    by_page = {s.page: s.path for s in sources if s.page}
    known = {s.path for s in sources}
    out = set()
    for name in names:
        n = str(name).strip().replace("\\", "/").removeprefix("./")
        if n.startswith(str(ctx.root) + "/"):
            n = n[len(str(ctx.root)) + 1:]
        for cand in (n, n + ".md"):
            if cand in known:
                out.add(cand)
                break
            if cand in by_page:
                out.add(by_page[cand])
                break
        else:
            hits = [s.path for s in sources if n.casefold() in (s.title.casefold(), (s.page or "").casefold())]
            if not hits:
                raise UsageError(f"{name}: not a source of this vault (name a file under raw/ or its sources/ page)")
            out.update(hits)
    return out


def _read(ctx, path: str) -> str:
    return ctx.files.read_note(path).text.replace("\r\n", "\n")


def own_sentences(page) -> list[tuple[str, int]]:
    """(sentence, file line) of what a page says outside its live compiled section."""
    found = generated.find(page.body, extract.SECTION)
    live = found is not None and not found.edited
    return page_sentences(page, (found.start, found.end) if live else None)


def _linkable(sources: list[Source], report: CompileReport, wanted: set[str] | None) -> list[Source]:
    """The sources a page can cite: a raw/ file whose name holds | # ^ [ or ] cannot be a [[wikilink]]
    (Obsidian reads | as the shown text, # as a heading, ^ as a block, and refuses such names itself);
    citing ``[[raw/articles/C# and Git]]`` wrote a broken link and tracked the source as never compiled.
    Such a source is left out, and the report says so and how to mend it."""
    from ..knowledge.versions import UNLINKABLE
    out = []
    for source in sources:
        bad = sorted(set(source.path) & set(UNLINKABLE))
        if not bad:
            out.append(source)
        elif wanted is None or source.path in wanted:
            report.notices.append(f"{source.path}: not compiled: a file name holding {' '.join(bad)} cannot be a "
                                  "[[wikilink]] (Obsidian reads | as shown text, # as a heading, ^ as a block); "
                                  "rename it (raw/ files are yours to rename)")
    return out


def _page_context(pages: dict, subject: Subject):
    """(the page's own sentences outside its compiled section, the section's cited sources)."""
    page = pages.get(subject.path)
    if page is None:
        return [], set()
    found = generated.find(page.body, extract.SECTION)
    cited = set()
    if found is not None:
        import re
        cited = {m + ".md" for m in re.findall(r"\[\[(raw/[^\]#|]+)", found.content)}
    return own_sentences(page), cited


def compile_vault(ctx, sources: Iterable[str] = (), *, dry_run: bool = False, llm: dict | None = None,
                  only_pages: Iterable[str] | None = None) -> CompileReport:
    from ..index.update import current_pages
    from ..llm import DEFAULT_URLS
    if llm and llm.get("kind") not in DEFAULT_URLS:
        raise UsageError(f"unknown llm {llm.get('kind')!r} (known: {', '.join(DEFAULT_URLS)})")
    if llm and not llm.get("model"):
        raise UsageError(f"--llm {llm['kind']} needs a model (--llm-model)")
    pages = current_pages(ctx, refresh=True)
    all_sources = with_status(read_sources(pages, ctx.chunks), pages)
    named = list(sources)
    wanted = _resolve_sources(ctx, named, pages, all_sources) if named else None
    report = CompileReport(mode=(llm or {}).get("kind") or "extractive", dry_run=dry_run,
                           sources=[s for s in all_sources if wanted is None or s.path in wanted])
    all_sources = _linkable(all_sources, report, wanted)
    existing = existing_subjects(pages)
    need = min_references(ctx.schema().thresholds)
    subjects = existing + new_subjects(all_sources, existing, pages, need)
    only = None if only_pages is None else set(only_pages)
    indexed: list[tuple[str, str, str, str]] = []  # new pages for index.md, added in one edit at the end
    for subject in subjects:
        if only is not None and subject.path not in only:
            continue
        own, cited = _page_context(pages, subject)
        p = extract.plan(subject, all_sources, own)
        if wanted is not None and not (p.cited | cited) & wanted:
            continue
        if not subject.existing and len(p.cited) < need:
            continue  # a new page needs the threshold's sources in what it would say, not only in names
        if not p.by_source and not cited and only is None:
            continue  # a page no source speaks of, never compiled: nothing to write
        report.contradictions += p.held
        if llm and p.by_source:
            from .gate import llm_plan
            p, dropped, notice, found, bad = llm_plan(ctx, p, llm, pages)
            report.dropped_claims += dropped
            report.contradictions += found
            report.dropped_contradictions += bad
            if notice:
                report.notices.append(f"{subject.path}: {notice}")
        report.pages.append(_write(ctx, subject, p, dry_run, indexed))
    _finish(ctx, report, indexed)
    report.contradictions, dropped = verified(report.contradictions, lambda x: _read(ctx, x))
    report.dropped_contradictions += dropped
    return report


def _finish(ctx, report: CompileReport, indexed: list) -> None:
    """After the pages: index.md's lines for the new ones, then the cache brought up to date once
    (a write per page would bring it up to date per page: most of a large compile's time)."""
    from ..knowledge.writer import INDEX_FILE, LOG_FILE, add_many_to_index, refresh_cache
    written = [p.path for p in report.pages if p.status in ("created", "updated")]
    if not written:
        return
    if indexed:
        try:
            add_many_to_index(ctx, indexed)
        except WikimemError as exc:
            report.notices.append(f"index.md not updated: {exc}")
    warning = refresh_cache(ctx, written + [LOG_FILE, INDEX_FILE])
    if warning:
        report.notices.append(warning)


def _write(ctx, subject: Subject, p: extract.Plan, dry_run: bool, indexed: list) -> PageResult:
    """One page through the writer (atomic, conflict-checked, secret-scanned) and its log.md line;
    the cache follows in ``_finish``."""
    from ..knowledge.writer import write_page
    content = extract.render(p)
    entries = extract.entries(p)
    n = len(p.sentences) if p.claims is None else len(p.claims)
    cited = tuple(sorted(p.cited))
    result = PageResult(subject.path, subject.title, subject.kind, "unchanged", n, cited)
    try:
        if not subject.existing:
            if dry_run:
                return replace(result, status="would-create")
            text = new_page(subject.title, subject.kind, content, entries, subject.names[1:])
            write_page(ctx, subject.path, text, reason=None, check_similar=False)
            first = p.sentences[0].text if p.sentences else ""
            indexed.append((subject.path, subject.title, subject.kind,
                            first if len(first) <= 100 else first[:100].rsplit(" ", 1)[0] + "…"))
            return replace(result, status="created", notice=_logged(ctx, "compile", subject.path))
        note = ctx.files.read_note(subject.path)
        composed = update_page(note.text, content, entries)
        if composed.text is None:
            return replace(result, notice=composed.notice)
        if dry_run:
            return replace(result, status="would-update", notice=composed.notice)
        write_page(ctx, subject.path, composed.text, expected_sha256=note.sha256, reason=None, check_similar=False)
        logged = _logged(ctx, "compile (updated)", subject.path)
        return replace(result, status="updated", notice="; ".join(n for n in (composed.notice, logged) if n) or None)
    except WikimemError as exc:
        return replace(result, status="failed", notice=str(exc))


def _logged(ctx, operation: str, path: str) -> str | None:
    """The page's log.md line; a failure is said, never raised (the page is written)."""
    from ..knowledge.writer import LOG_FILE, append_log
    try:
        append_log(ctx, operation, path)
    except (WikimemError, OSError) as exc:
        return f"{LOG_FILE} not updated: {exc}"
    return None


def contradictions(ctx, paths: Iterable[str] | None = None) -> tuple[list[Contradiction], int]:
    """The contradictions a compile would hold back now, checked to quote both texts: what ``review``
    and lint show. ``paths``: only these pages."""
    report = compile_vault(ctx, dry_run=True, only_pages=paths)
    return report.contradictions, report.dropped_contradictions


def is_compiled(text: str) -> bool:
    _, body = fm.parse(text.replace("\r\n", "\n"))
    return generated.find(body, extract.SECTION) is not None


__all__ = ["CompileReport", "PageResult", "compile_vault", "contradictions", "is_compiled", "is_source"]
