"""The one writer path: every note wikimem writes goes through ``write_page``.

Order matters and is the point of this module: refuse raw/ and escaping paths, scan for secrets
(an error-severity finding writes nothing), look for very similar active pages (supersede
candidates), write atomically with a conflict check, log the write in ``log.md``, then bring the
cache up to date for that page. The write is the commitment: a failure after it (log, cache) is
reported as a warning in the result, never as an exception that would hide a write that happened.
"""
from __future__ import annotations

import contextlib
import contextvars
import datetime as _dt
import logging
import re
import threading
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from ..errors import ConflictError, NoteReadError, UsageError, WikimemError
from ..model import Page
from ..parse import frontmatter as fm
from ..parse import parse_page
from ..vault.files import NOTE_SUFFIXES, ensure_cache_folder
from . import secrets
from .names import check_name

if TYPE_CHECKING:
    from ..core import Context

log = logging.getLogger(__name__)

LOG_FILE = "log.md"
INDEX_FILE = "index.md"
INDEX_SECTIONS = {"entity": "Entities", "concept": "Concepts", "comparison": "Comparisons", "query": "Queries",
                  "source": "Sources", "memory": "Memories", "note": "Notes"}


@dataclass(frozen=True)
class WriteResult:
    """What a write did. ``similar``: active pages of the same type whose content is very similar
    to what was written, as (path, similarity), most similar first: supersede candidates."""

    path: str
    sha256: str
    created: bool
    warnings: list[str] = field(default_factory=list)
    similar: list[tuple[str, float]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"path": self.path, "sha256": self.sha256, "created": self.created, "warnings": list(self.warnings),
                "similar": [{"path": p, "similarity": round(s, 4)} for p, s in self.similar]}


def _norm_rel(rel: str) -> str:
    rel = rel.replace("\\", "/")
    while rel.startswith("./"):
        rel = rel[2:]
    return rel


def _check_target(ctx: Context, rel: str) -> None:
    ctx.files.refuse_raw(rel)  # by spelling in any case, or through a symlinked folder
    ctx.files.abspath(rel)  # PathEscapeError for .., absolute paths and symlinks out of the vault
    if not rel.lower().endswith(NOTE_SUFFIXES):
        raise UsageError(f"{rel}: wikimem only writes Markdown notes (.md)")


def write_page(ctx: Context, rel: str, text: str, *, expected_sha256: str | None = None,
               reason: str | None = "write", check_similar: bool = True, as_is: bool = False) -> WriteResult:
    """Create (``expected_sha256=None``) or replace a note; see the module docstring for the steps.
    ``reason``: the log.md line's text. None marks a step of a larger operation (the two frontmatter
    edits of a supersede, a lint fix) that logs itself once and brings the cache up to date once
    at its end: no line and no cache update here. ``as_is``: ``text`` already has the
    line endings it keeps (a frontmatter edit of a CRLF note changes only the frontmatter's bytes)."""
    rel = _norm_rel(rel)
    _check_target(ctx, rel)
    # a secret in the name would sit in the manifest and log.md; one in the reason would go to
    # log.md (and a log line refused for it left the write unlogged): both refuse the write
    check_name(rel)
    if reason is not None:
        secrets.check(reason, "the reason")
    warnings = [secrets.warning_text(rel, f) for f in secrets.check(text, rel)]
    newline, bom = "\n", False
    if expected_sha256 is not None:
        note = ctx.files.read_note(rel)
        if note.sha256 != expected_sha256:
            raise ConflictError(f"{rel}: file changed on disk since it was read; not overwriting "
                                "(re-read it and apply the change again)")
        newline, bom = note.newline, note.bom
    elif ctx.files.abspath(rel).exists():  # fail before the similarity search, not after it
        raise ConflictError(f"{rel}: file already exists; refusing to overwrite it (pass the sha256 you read)")
    similar: list[tuple[str, float]] = []
    if check_similar:
        similar = _similar(ctx, rel, text, warnings)
    sha = ctx.files.write_note(rel, text, expected_sha256=expected_sha256, newline=newline, bom=bom, as_is=as_is)
    log.info("wrote %s (%s)", rel, reason or "unlogged step")
    if reason is not None:
        try:
            append_log(ctx, reason, rel)
        except (WikimemError, OSError) as exc:  # the note is written: say what was not, never fail the write
            warnings.append(f"{LOG_FILE} not updated: {exc}")
    budget = WRITE_EMBED_BUDGET_S if len(text) <= INLINE_EMBED_CHARS else 0.0
    warning = refresh_cache(ctx, [rel, LOG_FILE], embed_budget=budget) if reason is not None else None
    if warning:
        warnings.append(warning)
    return WriteResult(rel, sha, expected_sha256 is None, warnings, similar)


def update_frontmatter(ctx: Context, rel: str, changes: Mapping[str, Any], expected_sha256: str | None = None,
                       reason: str | None = None) -> Page:
    """Change frontmatter keys of one note through ``write_page``; every other byte stays as it
    is (both fences, the body, its line endings), a no-op change writes nothing.

    ``expected_sha256``: the hash the caller saw (default: the hash read now); a file changed
    meanwhile raises ConflictError. ``reason``: a log.md line (None: the caller logs the operation)."""
    rel = _norm_rel(rel)
    note = ctx.files.read_note(rel)
    if expected_sha256 is not None and expected_sha256 != note.sha256:
        raise ConflictError(f"{rel}: file changed on disk since it was read; not overwriting")
    if note.text.startswith("---\r") and not note.text.startswith("---\r\n"):
        raise WikimemError(f"{rel}: written with old Mac line endings (CR only); convert it to LF or CRLF "
                           "before wikimem edits its frontmatter")
    front, _body = fm.parse(note.text.replace("\r\n", "\n"))
    if front.error:
        raise WikimemError(f"{rel}: {front.error}; fix the frontmatter before wikimem edits it")
    new_raw = fm.update(front.raw, front.data, changes)
    if new_raw == (front.raw or ""):
        return ctx.parse_file(rel)  # nothing changes: nothing is written
    new_text = fm.replace_raw(note.text, front.end_line if front.raw is not None else 0, new_raw, note.newline)
    result = write_page(ctx, rel, new_text, expected_sha256=note.sha256, reason=reason, check_similar=False,
                        as_is=True)
    for warning in result.warnings:
        log.warning("%s", warning)
    return ctx.parse_file(rel)


def _similar(ctx: Context, rel: str, text: str, warnings: list[str]) -> list[tuple[str, float]]:
    from .similarity import supersede_candidates
    try:
        return supersede_candidates(ctx, rel, text)
    except WikimemError as exc:  # similarity is advice: never stop a write for it
        warnings.append(f"similar pages not checked: {exc}")
        return []


WRITE_EMBED_BUDGET_S = 1.0  # a write embeds its page's vectors for at most this long, then returns
# a longer page is not embedded inline: one second embeds a few dozen of its hundreds of chunks, so
# the write would wait for nothing it could finish (the watcher or the next build embeds it)
INLINE_EMBED_CHARS = 64 * 1024


def refresh_cache(ctx, paths: list[str], embed_budget: float = WRITE_EMBED_BUDGET_S) -> str | None:
    """Update the cache for ``paths`` (waiting a few seconds for another writer). Returns a
    warning instead of raising: the vault is the truth and the write already happened.

    A write returns once the file and its lexical index are committed: vectors follow behind, as in
    watch mode (an agent's 1 MiB ``write_page`` waited for its embedding and never answered). A
    watcher following the vault embeds them; without one, this embeds the written pages' vectors
    for at most ``WRITE_EMBED_BUDGET_S`` (a memory or a query page is done in that time) and the
    next build or watcher takes the rest, and any backlog of other pages."""
    from ..index.background import embed_pending
    from ..stores.sidefiles import watcher_pid
    from ..index.update import update
    paths = sorted(set(paths))
    try:
        update(ctx, paths=paths, embed=False, wait=5.0)
    except Exception as exc:  # noqa: BLE001 - the cache is disposable; the user reruns `wikimem index`
        log.debug("cache update failed", exc_info=True)
        return f"cache not updated ({exc}); run `wikimem index` to bring search up to date"
    if embed_budget <= 0 or ctx.settings.embedder == "none" or watcher_pid(ctx.root) is not None:
        return None
    try:
        # background=False: the caller waits for these vectors (EmbedGate), so they must not wait out the
        # quiet gap after a search, as a watcher's backlog does: remember searches first, and each
        # remember waited 0.5 s for its own query to go quiet (0.56 s a fact with the fake embedder).
        # only_first: the written pages' vectors, not a backlog of others (up to the whole budget)
        embed_pending(ctx, max_seconds=embed_budget, first=set(paths), background=False, only_first=True)
    except Exception:  # noqa: BLE001 - vectors are a cache; they follow with the next build
        log.debug("vectors for %s left for later", paths, exc_info=True)
    return None


# -- log.md ------------------------------------------------------------------------------------
def _template(name: str) -> str:
    return resources.files("wikimem.vault_template").joinpath(name).read_text(encoding="utf-8")


_THREAD_LOCK = threading.Lock()


@contextlib.contextmanager
def _edit_lock(ctx) -> Iterator[None]:
    """Serialise read-modify-write of shared notes (log.md, index.md) between threads and
    processes: the conflict check alone has a window between its check and the rename, and two
    appends racing through it would lose a line. The lock file lives in the cache folder."""
    with _THREAD_LOCK:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: the conflict check and one retry remain
            yield
            return
        folder = ctx.root / ".wikimem"
        try:
            ensure_cache_folder(folder)
            fh = open(folder / "notes.lock", "a+b")
        except OSError as exc:
            # no lock file (a read-only or full cache folder): the edit still happens, guarded by the
            # thread lock and the conflict check with its retry. Failing here left the note written,
            # the command exiting 1 and log.md without its line, and a retry wrote a -2.md duplicate.
            log.warning("cannot use %s (%s); editing without the cross-process lock", folder / "notes.lock", exc)
            yield
            return
        with fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _edit_note(ctx, rel: str, edit: Callable[[str], str | None]) -> bool:
    """Read ``rel`` (or its vault template when missing), apply ``edit`` to the LF text and write
    it back conflict-checked under ``_edit_lock``; a change by a program that does not take the
    lock (an editor) is retried once. ``edit`` returning None means no change. Returns whether
    anything was written."""
    with _edit_lock(ctx):
        return _edit_note_locked(ctx, rel, edit)


def _edit_note_locked(ctx, rel: str, edit: Callable[[str], str | None]) -> bool:
    for attempt in (1, 2):
        try:
            note = ctx.files.read_note(rel)
            text, sha, newline, bom = note.text.replace("\r\n", "\n"), note.sha256, note.newline, note.bom
        except NoteReadError as exc:
            if exc.kind != "unreadable" or ctx.files.abspath(rel).exists():
                raise
            text, sha, newline, bom = _template(rel), None, "\n", False
        new = edit(text)
        if new is None:
            return False
        try:
            ctx.files.write_note(rel, new, expected_sha256=sha, newline=newline, bom=bom)
            return True
        except ConflictError:
            if attempt == 2:
                raise
            log.info("%s changed while being updated; retrying once", rel)
    return False  # pragma: no cover


LOG_FIELD_MAX = 200  # characters of one field of a log line (an agent's reason: a 2 MiB one wrote a 2 MiB line)
_LOG_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029\x85]")


def _log_field(text: str) -> str:
    """One line, bounded, control characters escaped: a newline in an agent's reason forged log
    entries and headings."""
    one = " ".join(str(text).split())
    one = _LOG_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", one)
    return one if len(one) <= LOG_FIELD_MAX else one[:LOG_FIELD_MAX - 1] + "…"


# Who a write is made for, when a server makes it for someone else (``wikimem serve`` sets the
# token's name): log.md's line ends with "· by NAME". A context variable, so each request's thread
# (and nothing else) carries its own.
AUTHOR: contextvars.ContextVar[str | None] = contextvars.ContextVar("wikimem_author", default=None)


def log_line(operation: str, detail: str, now: _dt.datetime | None = None) -> str:
    now = now or _dt.datetime.now()
    author = AUTHOR.get()
    by = f" · by {_log_field(author)}" if author else ""
    return f"- {now:%Y-%m-%d %H:%M} · {_log_field(operation)} · {_log_field(detail)}{by}"


def missing_scaffold(ctx, *names: str) -> list[str]:
    """Which of the vault files and folders wikimem keeps (``log.md``, ``index.md``, and ``names``
    such as ``queries/``) are not there yet: a plain folder of notes has none of them."""
    out = []
    for name in (LOG_FILE, INDEX_FILE, *names):
        try:
            if not ctx.files.abspath(name.rstrip("/")).exists():
                out.append(name)
        except WikimemError:
            continue
    return out


def created_notice(ctx, missing: list[str]) -> str | None:
    """What of ``missing`` (``missing_scaffold`` before a write) the write made, said to the user:
    a vault that had no log.md learns that wikimem now keeps one, and why."""
    made = [name for name in missing if ctx.files.abspath(name.rstrip("/")).exists()]
    if not made:
        return None
    return (f"this vault had no {', '.join(made)}: created {'them' if len(made) > 1 else 'it'} "
            "(wikimem logs each write in log.md, lists pages in index.md and files answers in queries/)")


def append_log(ctx, operation: str, detail: str) -> str:
    """Append one dated line to log.md (created from the vault template when missing)."""
    line = log_line(operation, detail)
    secrets.check(line, LOG_FILE)

    def add(text: str) -> str:
        if text and not text.endswith("\n"):
            text += "\n"
        return text + line + "\n"

    _edit_note(ctx, LOG_FILE, add)
    return line


# -- index.md ----------------------------------------------------------------------------------
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")


def _link_for(rel: str, title: str) -> str:
    stem = rel.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    if title.strip().casefold() == stem.casefold():
        return f"[[{stem}]]"
    return f"[[{rel.rsplit('.', 1)[0]}|{title}]]"


def _already_linked(index_text: str, rel: str, title: str) -> bool:
    page = parse_page(INDEX_FILE, index_text, "")
    no_ext = rel.rsplit(".", 1)[0]
    names = {rel.casefold(), no_ext.casefold(), no_ext.rsplit("/", 1)[-1].casefold()}
    for link in page.links:
        target = link.target.strip().replace("\\", "/").casefold()
        if target in names or target.removesuffix(".md") in names:
            return True
    return False


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _in_fence(lines: list[str]) -> list[bool]:
    """For each line, whether it lies inside a fenced code block (the fences included)."""
    out, opener = [], None
    for line in lines:
        m = _FENCE.match(line)
        if opener is None:
            if m:
                opener = m.group(1)
            out.append(opener is not None)
        else:
            out.append(True)
            if m and m.group(1)[0] == opener[0] and len(m.group(1)) >= len(opener) and not line.strip()[len(m.group(1)):]:
                opener = None
    return out


def insert_in_section(text: str, section: str, line: str) -> str:
    """Put ``line`` after the last list item of ``## section`` (the section is created at the
    end when missing)."""
    lines = text.split("\n")
    fenced = _in_fence(lines)  # a heading inside a code block is text, not a section
    start = None
    for i, l in enumerate(lines):
        m = None if fenced[i] else _HEADING.match(l)
        if m and len(m.group(1)) == 2 and m.group(2).strip().casefold() == section.casefold():
            start = i
            break
    if start is None:
        while lines and lines[-1] == "":
            lines.pop()
        return "\n".join(lines + ["", f"## {section}", "", line]) + "\n"
    end = len(lines)
    for j in range(start + 1, len(lines)):
        m = None if fenced[j] else _HEADING.match(lines[j])
        if m and len(m.group(1)) <= 2:
            end = j
            break
    items = [j for j in range(start + 1, end) if not fenced[j] and lines[j].lstrip().startswith(("- ", "* "))]
    if items:
        lines.insert(items[-1] + 1, line)
    else:  # empty section (or prose only): heading, blank, [prose, blank,] item, blank, next heading
        body = "\n".join(lines[start + 1:end]).strip("\n")
        block = [""] + (body.split("\n") + [""] if body else []) + [line] + ([""] if end < len(lines) else [])
        lines[start + 1:end] = block
    return "\n".join(lines)


def add_many_to_index(ctx, entries: list[tuple[str, str, str, str]]) -> int:
    """``add_to_index`` for many new pages in one edit of index.md (a compile creating dozens of
    pages): ``entries`` are (path, title, type, summary). The caller brings the cache up to date.
    Returns how many lines were added."""
    lines = []
    for rel, title, page_type, summary in entries:
        summary = " ".join(summary.split())
        line = f"- {_link_for(_norm_rel(rel), title)}" + (f" — {summary}" if summary else "")
        secrets.check(line, INDEX_FILE)
        lines.append((_norm_rel(rel), title, INDEX_SECTIONS.get(page_type, "Notes"), line))
    added = 0

    def add(text: str) -> str | None:
        nonlocal added
        added = 0
        for rel, title, section, line in lines:
            if not _already_linked(text, rel, title):
                text = insert_in_section(text, section, line)
                added += 1
        return text if added else None

    _edit_note(ctx, INDEX_FILE, add)
    return added


def add_to_index(ctx, rel: str, summary: str = "") -> bool:
    """Add ``- [[Title]] — summary`` for ``rel`` under its type's section of index.md. Idempotent:
    a page already linked anywhere in index.md is left alone. Returns whether a line was added."""
    rel = _norm_rel(rel)
    page = ctx.parse_file(rel)
    section = INDEX_SECTIONS.get(page.type, "Notes")
    summary = " ".join(summary.split())
    line = f"- {_link_for(rel, page.title)}" + (f" — {summary}" if summary else "")
    secrets.check(line, INDEX_FILE)

    def add(text: str) -> str | None:
        if _already_linked(text, rel, page.title):
            return None
        return insert_in_section(text, section, line)

    added = _edit_note(ctx, INDEX_FILE, add)
    if added:  # wikimem's own write leaves its cache current (status listed index.md as stale)
        warning = refresh_cache(ctx, [INDEX_FILE])
        if warning:
            log.warning("%s", warning)
    return added
