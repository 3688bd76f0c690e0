"""Versions: ``supersede`` links an old page to its replacement, ``history`` shows a whole chain.

The newer page's frontmatter ``supersedes: "[[old]]"`` is authoritative (design §2); the old page
gets ``status: superseded`` and ``superseded_by`` so default search hides it as soon as the cache
is refreshed. A supersede that would close a cycle, fork a chain (an old page superseded twice)
or touch raw/ is refused before anything is written, so chains stay simple and acyclic.
"""
from __future__ import annotations

import datetime as _dt
import difflib
import heapq
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..errors import PageNotFoundError, ReadOnlyError, UsageError, WikimemError  # noqa: F401 (PageNotFoundError: re-exported)
from ..model import Page
from ..parse import frontmatter as fm
from ..parse.names import find_page
from ..vault.files import is_raw_path
from .writer import LOG_FILE, append_log, created_notice, missing_scaffold, refresh_cache, update_frontmatter, write_page

if TYPE_CHECKING:
    from ..core import Context

log = logging.getLogger(__name__)


class VersionChainError(WikimemError):
    """A supersede that would break the chain rules (a cycle, or a page superseded twice)."""


@dataclass(frozen=True)
class SupersedeResult:
    old: str
    new: str
    changed: bool  # False: NEW already superseded OLD (nothing written)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new, "changed": self.changed, "warnings": list(self.warnings)}


@dataclass(frozen=True)
class Version:
    path: str
    title: str
    status: str
    date: str | None  # created, else updated, else the file's modification date
    supersedes: tuple[str, ...]  # resolved paths
    valid_from: str | None = None  # search/timeline.py: when this version was true
    valid_until: str | None = None
    commits: tuple = ()  # vault/git.py Commit, newest first, when the vault is a git repository

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "title": self.title, "status": self.status, "date": self.date,
                "supersedes": list(self.supersedes), "valid_from": self.valid_from, "valid_until": self.valid_until,
                "commits": [c.to_dict() for c in self.commits]}


@dataclass(frozen=True)
class Change:
    """What changed from ``old`` to the page that supersedes it."""

    old: str
    new: str
    sections_added: tuple[str, ...]
    sections_removed: tuple[str, ...]
    lines_added: int
    lines_removed: int

    def to_dict(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new, "sections_added": list(self.sections_added),
                "sections_removed": list(self.sections_removed), "lines_added": self.lines_added,
                "lines_removed": self.lines_removed, "lines_changed": self.lines_added + self.lines_removed}


@dataclass(frozen=True)
class History:
    page: str
    versions: tuple[Version, ...]  # oldest to newest
    changes: tuple[Change, ...]
    as_of: str | None = None  # the moment asked about (timeline.moment), if any
    valid_then: tuple[str, ...] = ()  # the versions valid at ``as_of``
    git: bool = False  # whether the vault is in a git repository (commits were looked for)

    @property
    def current(self) -> str:
        return self.versions[-1].path

    def to_dict(self) -> dict[str, Any]:
        out = {"page": self.page, "current": self.current, "versions": [v.to_dict() for v in self.versions],
               "changes": [c.to_dict() for c in self.changes], "git": self.git}
        if self.as_of:
            out.update(as_of=self.as_of, valid_then=list(self.valid_then))
        return out


# -- reading the chains -----------------------------------------------------------------------
def all_pages(ctx: Context) -> Mapping[str, Page]:
    """Every page with links resolved, served from the cache (brought up to date first); parsed
    from the vault only when the cache cannot serve them."""
    from ..index.update import current_pages
    try:
        return current_pages(ctx)
    except WikimemError:
        log.debug("cache pages unavailable; parsing the vault", exc_info=True)
    return ctx.load().pages


def supersedes_of(page: Page) -> tuple[str, ...]:
    """Resolved paths this page supersedes (unresolved targets are lint's business)."""
    return tuple(sorted({l.resolved for l in page.links
                         if l.kind == "frontmatter" and l.key == "supersedes" and l.resolved and l.resolved != page.path}))


def supersede_edges(pages: Mapping[str, Page]) -> dict[str, tuple[str, ...]]:
    """new -> the old pages it supersedes."""
    return {p: s for p, page in pages.items() if (s := supersedes_of(page))}


def _reachable(start: str, edges: Mapping[str, tuple[str, ...]]) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _norm(rel: str) -> str:
    rel = rel.replace("\\", "/").strip()
    while rel.startswith("./"):
        rel = rel[2:]
    return rel


def _find(ctx, pages: Mapping[str, Page], rel: str, role: str) -> str:
    """The page a person named (a path, a file name, a title or an alias: parse/names.py)."""
    rel = _norm(rel)
    if rel in pages:
        return rel
    if rel + ".md" in pages:
        return rel + ".md"
    if not rel.startswith("[["):
        ctx.files.abspath(rel)  # PathEscapeError first: never say "not found" for an escaping path
    return find_page(rel, {p: (page.title, page.aliases) for p, page in pages.items()},
                     what=f"{role} page" if role else "page")


def find_named(ctx, pages: Mapping[str, Page], name: str) -> str:
    """The page a person named: a path (with or without .md), a file name, a title or an alias."""
    return _find(ctx, pages, name, "")


UNLINKABLE = "|#^[]"  # characters a wikilink target cannot hold


def _link_name(path: str, pages: Mapping[str, Page]) -> str:
    """The shortest unambiguous wikilink target: the basename, or the path when names clash."""
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    clashes = [p for p in pages if p.rsplit("/", 1)[-1].rsplit(".", 1)[0].casefold() == stem.casefold()]
    return stem if clashes == [path] else path.rsplit(".", 1)[0]


# -- supersede --------------------------------------------------------------------------------
def now() -> str:
    """The moment a supersede is recorded (``superseded_on``): local time to the second, as
    ``remember`` dates a memory's ``created``, so a fact updated twice in a day keeps its order."""
    return _dt.datetime.now().replace(microsecond=0).isoformat()


def supersede_most_similar(ctx, new: str, similar: Sequence[tuple[str, float]]) -> str:
    """``--supersede`` on a write (query write-back, ingest): the most similar active page of the
    same type the writer's conflict check found is marked replaced by ``new``. Returns what was
    done, as a notice; a refusal (a cycle, raw/) is reported the same way, never raised: the
    write itself already happened."""
    if not similar:
        return "no similar page to supersede"
    old, similarity = similar[0]
    try:
        supersede(ctx, old, new)
    except WikimemError as exc:
        return f"{old} not superseded: {exc}"
    return f"{new} supersedes {old} (similarity {similarity:.2f})"


def _check_unchanged(ctx: Context, name: str, expected: str) -> None:
    """``name`` (a path, with or without .md) still has the sha256 the caller read."""
    from ..errors import ConflictError
    from ..parse.names import clean_name
    rel = clean_name(name)
    if not rel.lower().endswith(".md") and ctx.files.abspath(rel + ".md").exists():
        rel += ".md"
    if ctx.files.read_note(rel).sha256 != expected:
        raise ConflictError(f"{rel} changed since it was read (sha256 differs); read it again, then supersede")


def supersede(ctx: Context, old: str, new: str, *, old_sha256: str | None = None,
              new_sha256: str | None = None) -> SupersedeResult:
    """Mark ``old`` as replaced by ``new`` (see the module docstring for what is refused).
    ``old_sha256``/``new_sha256``: what the caller read; a page changed since is a ConflictError."""
    for name, expected in ((old, old_sha256), (new, new_sha256)):
        if expected is not None:
            _check_unchanged(ctx, name, expected)
    for rel in (old, new):
        if is_raw_path(_norm(rel)) or ctx.files.in_raw(_norm(rel)):
            raise ReadOnlyError(f"{_norm(rel)}: raw/ sources are immutable and cannot take part in a supersede "
                                "(supersede the wiki page made from the source instead)")
    pages = all_pages(ctx)
    old, new = _find(ctx, pages, old, "old"), _find(ctx, pages, new, "new")
    if old == new:
        raise UsageError(f"a page cannot supersede itself: {old}")
    edges = supersede_edges(pages)
    if old in edges.get(new, ()):
        return SupersedeResult(old, new, False, ["already recorded; nothing written"])
    if new in _reachable(old, edges):
        raise VersionChainError(f"refusing a cycle: {old} already (directly or through older versions) supersedes {new}")
    other = sorted(p for p, olds in edges.items() if old in olds)
    if other:
        raise VersionChainError(f"{old} is already superseded by {other[0]}; supersede {other[0]} with {new} instead")
    newer = sorted(p for p, olds in edges.items() if new in olds)
    if newer:
        raise VersionChainError(f"{new} is itself superseded by {newer[0]}; name the newest version as NEW")

    for rel in (old, new):
        unlinkable = sorted(set(rel) & set(UNLINKABLE))
        if unlinkable:  # Obsidian cannot link to such a name: the chain would not resolve
            raise UsageError(f"{rel}: a name holding {' '.join(unlinkable)} cannot be a [[wikilink]] (Obsidian reads "
                             "| as the shown text, # as a heading, ^ as a block); rename the page first "
                             "(MCP move_page updates the links to it)")
    new_page = pages[new]
    missing = missing_scaffold(ctx)
    old_link = f"[[{_link_name(old, pages)}]]"
    existing = fm.as_list(new_page.frontmatter.get("supersedes"))
    value: Any = old_link if not existing else [*existing, old_link]
    new_note = ctx.files.read_note(new)
    old_note = ctx.files.read_note(old)
    update_frontmatter(ctx, new, {"supersedes": value}, expected_sha256=new_note.sha256)
    try:
        update_frontmatter(ctx, old, {"status": "superseded", "superseded_by": f"[[{_link_name(new, pages)}]]",
                                      "superseded_on": now()}, expected_sha256=old_note.sha256)
    except (WikimemError, OSError):  # a refusal, or the disk (full, read-only): NEW goes back as it was
        _undo(ctx, new, new_note)
        raise
    warnings = []
    try:
        append_log(ctx, "supersede", f"{old} → {new}")
    except WikimemError as exc:
        warnings.append(f"{LOG_FILE} not updated: {exc}")
    warning = refresh_cache(ctx, [old, new, LOG_FILE])
    if warning:
        warnings.append(warning)
    made = created_notice(ctx, missing)
    if made:
        warnings.append(made)
    return SupersedeResult(old, new, True, warnings)


def restore(ctx: Context, old: str) -> SupersedeResult:
    """Undo a supersede: ``old`` is active again (``status`` and ``superseded_by`` removed) and the
    page(s) that superseded it no longer list it in ``supersedes``; both through the writer, with one
    log.md line. For a memory a newer fact replaced by mistake (``remember`` judged an update where
    the two were facts of their own): nothing was deleted, so nothing is lost by undoing it."""
    pages = all_pages(ctx)
    old = _find(ctx, pages, old, "superseded")
    newer = sorted(p for p, olds in supersede_edges(pages).items() if old in olds)
    page = pages[old]
    if not newer and str(page.frontmatter.get("status") or "") != "superseded":
        return SupersedeResult(old, "", False, ["not superseded; nothing to restore"])
    for rel in newer:
        kept = [v for v in fm.as_list(pages[rel].frontmatter.get("supersedes"))
                if _resolved_name(ctx, pages, str(v)) != old]
        update_frontmatter(ctx, rel, {"supersedes": (kept[0] if len(kept) == 1 else kept) if kept else None})
    update_frontmatter(ctx, old, {"status": None, "superseded_by": None, "superseded_on": None})
    warnings = []
    try:
        append_log(ctx, "restore", f"{old} (no longer superseded by {', '.join(newer) or 'anything'})")
    except WikimemError as exc:
        warnings.append(f"{LOG_FILE} not updated: {exc}")
    warning = refresh_cache(ctx, [old, *newer, LOG_FILE])
    if warning:
        warnings.append(warning)
    return SupersedeResult(old, ", ".join(newer), True, warnings)


def _resolved_name(ctx, pages: Mapping[str, Page], value: str) -> str | None:
    name = value.strip().removeprefix("[[").removesuffix("]]").split("|", 1)[0].split("#", 1)[0].strip()
    try:
        return _find(ctx, pages, name, "")
    except WikimemError:
        return None


def _undo(ctx, rel: str, before) -> None:
    """Put NEW back as it was when OLD could not be written, so no half-made supersede remains."""
    try:
        current = ctx.files.read_note(rel)
        write_page(ctx, rel, before.text, expected_sha256=current.sha256, reason=None, check_similar=False)
    except (WikimemError, OSError) as exc:  # pragma: no cover - reported, the user fixes it by hand
        log.error("could not undo the supersedes key in %s: %s", rel, exc)


# -- history ----------------------------------------------------------------------------------
def _date(ctx, page: Page) -> str | None:
    if page.created or page.updated:
        return (page.created or page.updated)[:10]
    try:
        mtime = ctx.files.abspath(page.path).stat().st_mtime
    except OSError:
        return None
    return _dt.datetime.fromtimestamp(mtime).date().isoformat()


def _sections(page: Page) -> list[str]:
    return [h.text for h in page.headings]


def diff_pages(old: Page, new: Page) -> Change:
    before, after = _sections(old), _sections(new)
    added = tuple(s for s in after if s not in before)
    removed = tuple(s for s in before if s not in after)
    plus = minus = 0
    for line in difflib.unified_diff(old.body.splitlines(), new.body.splitlines(), lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            plus += 1
        elif line.startswith("-") and not line.startswith("---"):
            minus += 1
    return Change(old.path, new.path, added, removed, plus, minus)


def order_chain(members: set[str], edges: Mapping[str, tuple[str, ...]], key) -> list[str]:
    """Oldest first: a page comes after everything it supersedes (Kahn's algorithm, ties by key).
    A heap of the pages whose older versions are all placed: n log n (sorting every page at each
    step made ``history`` of a 10,000-page chain take 57 s)."""
    older = {m: [o for o in edges.get(m, ()) if o in members] for m in members}
    newer: dict[str, list[str]] = {}
    waiting = {m: len(set(olds)) for m, olds in older.items()}
    for m, olds in older.items():
        for o in set(olds):
            newer.setdefault(o, []).append(m)
    ready = [(key(m), m) for m in members if not waiting[m]]
    heapq.heapify(ready)
    done: list[str] = []
    placed: set[str] = set()
    rest: list[tuple[Any, str]] = []  # a cycle written by hand: the rest placed by key
    next_rest = 0
    while len(done) < len(members):
        if not ready:
            if not rest:
                rest = sorted((key(m), m) for m in members)
            while rest[next_rest][1] in placed:
                next_rest += 1
            ready = [rest[next_rest]]
        _, m = heapq.heappop(ready)
        if m in placed:
            continue
        done.append(m)
        placed.add(m)
        for n in newer.get(m, ()):
            waiting[n] -= 1
            if waiting[n] == 0 and n not in placed:
                heapq.heappush(ready, (key(n), n))
    return done


def history(ctx, page: str, as_of: str | None = None, commits: bool = True) -> History:
    """The whole chain ``page`` belongs to, oldest to newest, with what changed at each step, when
    each version was valid (and, ``as_of``, which one was then), and, when the vault is in a git
    repository and ``commits``, each version's commits."""
    from ..search.timeline import as_of_moment, timeline
    from ..vault import git
    when = as_of_moment(as_of) if as_of else None
    pages = all_pages(ctx)
    rel = _find(ctx, pages, page, "")
    edges = supersede_edges(pages)
    both: dict[str, set[str]] = {}
    for new, olds in edges.items():
        for o in olds:
            if o in pages:
                both.setdefault(new, set()).add(o)
                both.setdefault(o, set()).add(new)
    members = _reachable(rel, {k: tuple(s) for k, s in both.items()})
    dates = {m: _date(ctx, pages[m]) for m in members}
    chain = order_chain(members, edges, key=lambda m: (dates[m] or "", m))
    try:
        valid = timeline(ctx.cache).pages
    except WikimemError:  # no cache to read: the chain without dates of validity
        valid = {}
    prefix = git.repository_prefix(ctx.root) if commits else None
    versions = tuple(Version(m, pages[m].title, pages[m].status, dates[m], supersedes_of(pages[m]),
                             valid[m].valid_from if m in valid else None, valid[m].valid_until if m in valid else None,
                             tuple(git.page_commits(ctx.root, m, prefix=prefix)) if prefix is not None else ())
                     for m in chain)
    changes = tuple(diff_pages(pages[o], pages[n]) for n in chain for o in supersedes_of(pages[n]) if o in members)
    then = tuple(m for m in chain if when and m in valid and valid[m].valid_at(when))
    return History(rel, versions, changes, when, then, prefix is not None)



def apply_supersede(ctx, result) -> SupersedeResult | None:
    """The most similar page a write reported (``WriteResult.similar``) is superseded by the page
    written: what ``--supersede`` does after a write-back."""
    if not result.similar:
        return None
    old = result.similar[0][0]
    return supersede(ctx, old, result.path)
