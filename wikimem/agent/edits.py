"""Partial edits for agents: change a page without re-sending all of it, move it with the links
that point at it, delete it to ``.trash/`` (issue 28 item 6).

Every operation is compare-and-swap checked against the sha256 the agent read (``read_page``),
goes through the one writer path (secret scan, atomic write, a log.md line, the cache updated),
and refuses rather than guesses: a find-and-replace that finds another count than expected, a
heading that is not there, a target name that exists.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ConflictError, UsageError
from ..index.update import current_pages
from ..knowledge.writer import write_page
from ..parse import frontmatter as fm
from ..parse import parse_page
from ..vault import trash
from .guards import check_content, check_note_path, check_size
from .pages import existing_page, section_span
from .relink import relink

OPERATIONS = ("append", "prepend", "replace_section", "find_replace")


@dataclass(frozen=True)
class EditResult:
    path: str
    sha256: str
    operation: str
    replaced: int = 0  # find_replace: occurrences replaced
    links_updated: list[str] = field(default_factory=list)  # move: pages whose links now point at the new path
    moved_to: str | None = None  # delete: where in .trash/ it went; move: the new path
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "operation": self.operation, "replaced": self.replaced,
                "links_updated": list(self.links_updated), "moved_to": self.moved_to, "warnings": list(self.warnings)}


def _read(ctx, rel: str, expected_sha256: str | None):
    if not expected_sha256:
        raise ConflictError(f"{rel}: pass the sha256 read_page gave as expected_sha256")
    note = ctx.files.read_note(rel)
    if note.sha256 != expected_sha256:
        raise ConflictError(f"{rel}: the page changed since it was read (sha256 differs); read it again")
    return note


def _ensure_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def edited_text(text: str, operation: str, content: str = "", heading: str | None = None,
                find: str | None = None, expected_count: int = 1) -> tuple[str, int]:
    """``text`` (LF) after ``operation``, and how many occurrences a find_replace replaced."""
    if operation not in OPERATIONS:
        raise UsageError(f"unknown operation {operation!r} (choose {', '.join(OPERATIONS)})")
    if operation == "append":
        return _ensure_newline(text) + _ensure_newline(content), 0
    if operation == "prepend":  # after the frontmatter: it stays the first thing in the note
        front, body = fm.parse(text)
        head = text[: len(text) - len(body)] if front.raw is not None else ""
        return head + _ensure_newline(content) + body, 0
    if operation == "replace_section":
        if not heading:
            raise UsageError("replace_section needs the heading whose section is replaced")
        lines = text.split("\n")
        page = parse_page("x.md", text)
        start, end, _ = section_span(lines, page.headings, heading)
        new = lines[: start + 1] + _ensure_newline(content).rstrip("\n").split("\n") + ([""] if end < len(lines) else [])
        return "\n".join(new + lines[end:]), 0
    if not find:
        raise UsageError("find_replace needs the text to find")
    found = text.count(find)
    if found != expected_count:
        raise ConflictError(f"found {found} occurrence(s) of the text, expected {expected_count}; nothing changed "
                            "(read the page again, or give expected_count)")
    return text.replace(find, content), found


def edit_page(ctx, rel: str, operation: str, *, expected_sha256: str | None, content: str = "",
              heading: str | None = None, find: str | None = None, expected_count: int = 1,
              reason: str = "agent edit") -> EditResult:
    rel = check_note_path(ctx, existing_page(ctx, rel))
    note = _read(ctx, rel, expected_sha256)
    check_size(f"{rel}: the {operation} content", content)  # the limit is on what one call writes
    text, replaced = edited_text(note.text.replace("\r\n", "\n"), operation, content, heading, find, expected_count)
    check_content(rel, text, max_bytes=ctx.files.max_bytes,
                  limit=f"the {ctx.files.max_bytes}-byte limit of a note wikimem indexes (max_file_bytes)")
    # no similarity check: an edit reports none (EditResult has no `similar`), and under a server's
    # load the check (a search, then embedding the page and its look-alikes) was most of an edit's time
    result = write_page(ctx, rel, text, expected_sha256=expected_sha256, reason=f"{reason} ({operation})",
                        check_similar=False)
    return EditResult(rel, result.sha256, operation, replaced, warnings=list(result.warnings))


def delete_page(ctx, rel: str, *, expected_sha256: str | None, reason: str = "agent delete") -> EditResult:
    """Move the page to ``.trash/`` (recoverable, as Obsidian does); links to it are left as they
    are (lint reports them)."""
    from ..knowledge.writer import LOG_FILE, append_log, refresh_cache
    rel = check_note_path(ctx, existing_page(ctx, rel))
    if not expected_sha256:
        raise ConflictError(f"{rel}: pass the sha256 read_page gave as expected_sha256")
    gone = trash.move_to_trash(ctx.files, rel, expected_sha256)
    warnings = []
    try:
        append_log(ctx, reason, f"{rel} -> {gone}")
    except Exception as exc:  # noqa: BLE001 - the delete happened; say what did not
        warnings.append(f"log.md not updated: {exc}")
    warning = refresh_cache(ctx, [rel, LOG_FILE])
    if warning:
        warnings.append(warning)
    return EditResult(rel, expected_sha256, "delete", moved_to=gone, warnings=warnings)


def move_page(ctx, old: str, new: str, *, expected_sha256: str | None, reason: str = "agent move") -> EditResult:
    """Rename ``old`` to ``new`` and update the links that point at it, each referring page
    through the writer (compare-and-swap on what was read, logged)."""
    from ..knowledge.writer import LOG_FILE, append_log, refresh_cache
    old = check_note_path(ctx, existing_page(ctx, old))
    new = check_note_path(ctx, new)
    if old == new:
        raise UsageError("the new path is the old one")
    if not expected_sha256:
        raise ConflictError(f"{old}: pass the sha256 read_page gave as expected_sha256")
    _read(ctx, old, expected_sha256)  # a note that is not UTF-8 text (NoteReadError) is refused before anything moves
    pages = current_pages(ctx)  # resolved links, from the cache brought up to date
    referrers = sorted(p for p, page in pages.items() if any(l.resolved == old for l in page.links))
    trash.rename_note(ctx.files, old, new, expected_sha256)
    warnings: list[str] = []
    try:
        append_log(ctx, reason, f"{old} -> {new}")
    except Exception as exc:  # noqa: BLE001 - the move happened; say what did not
        warnings.append(f"log.md not updated: {exc}")
    refresh = refresh_cache(ctx, [old, new, LOG_FILE])
    if refresh:
        warnings.append(refresh)
    note_paths = sorted(set(pages) - {old} | {new})
    updated = []
    for was in referrers:
        rel = new if was == old else was  # the moved page's own links to itself by name
        try:
            note = ctx.files.read_note(rel)
            text = note.text.replace("\r\n", "\n")
            page = parse_page(rel, text, note.sha256)
            changed = relink(text, pages[was].links, old, new, note_paths, page.body_line)
            if changed != text:
                result = write_page(ctx, rel, changed, expected_sha256=note.sha256, reason=f"links to {new}",
                                          check_similar=False)
                warnings.extend(result.warnings)
                updated.append(rel)
        except Exception as exc:  # noqa: BLE001 - the move stands; a page whose links could not be updated is named
            warnings.append(f"{rel}: links to {old} not updated ({exc}); lint lists them")
    sha = ctx.files.read_note(new).sha256
    return EditResult(new, sha, "move", links_updated=updated, moved_to=new, warnings=warnings)
