"""Checks in front of every write an agent asks for, before the writer path is called.

The writer (``Vault.write_page``) already refuses raw/, paths outside the vault, secrets and
conflicting writes; these checks add what only matters for text coming from an agent: a size
bound, notes only (``.md``), frontmatter that parses, and the ``expected_sha256``/``force`` rule.
"""
from __future__ import annotations

import re

from ..errors import ConflictError, UsageError
from ..knowledge.names import check_name
from ..parse import frontmatter as fm
from ..vault.files import rel_parts

MAX_WRITE_BYTES = 1024 * 1024  # 1 MiB: far above any note, far below anything that hurts


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")  # file:///x, http://..., obsidian://...


# What Obsidian refuses in a file name (: * ? " < > | and the path separators) or what cuts a
# [[link]] to it (# heading, ^ block, | shown text, [ ] the brackets): a new note is never named so.
LINK_BREAKERS = frozenset('|#^?:"<>[]*')


def check_note_path(ctx, rel: str) -> str:
    """A vault-relative ``.md`` path outside raw/, or an error saying why not. Refused too, each
    with its reason: names no one would see (a hidden file or folder: never indexed, hidden in
    Obsidian), control characters (a newline or tab in a name), a URL taken for a path (``file:``
    would have become a folder) and raw/ spelled in another case (on a case-insensitive volume
    ``RAW/x.md`` is ``raw/x.md``), and what ``knowledge.names.check_name`` refuses for every door
    (bidi controls, a leading ``~``, a secret in the name)."""
    rel = (rel or "").strip().replace("\\", "/")
    check_name(rel)  # control and bidi characters, a leading ~, a secret in the name
    if _SCHEME.match(rel):
        raise UsageError(f"{rel}: looks like a URL; give a path inside the vault, such as concepts/Page.md")
    ctx.files.abspath(rel)  # PathEscapeError for "..", absolute paths, symlinks out of the vault
    parts = rel_parts(rel)  # "./log.md" is log.md
    ctx.files.refuse_raw(rel)  # by spelling, any case, or a symlink
    if not rel.lower().endswith(".md"):
        raise UsageError(f"{rel}: only Markdown notes (.md) can be written")
    if any(part.startswith(".") for part in parts[:-1]):
        raise UsageError(f"{rel}: folders starting with a dot (.obsidian, .git, .wikimem) are not part of the "
                         "wiki; agents cannot write there")
    if not parts or parts[-1].startswith(".") or not parts[-1][:-3].strip(" ."):
        raise UsageError(f"{rel}: a note needs a name (a name starting with a dot is hidden: never indexed, "
                         "not shown in Obsidian)")
    if not ctx.files.abspath(rel).exists():
        bad = sorted({ch for part in parts for ch in part if ch in LINK_BREAKERS})
        if bad:
            raise UsageError(f"{rel}: a new note's name cannot hold {' '.join(bad)} (Obsidian refuses these in file "
                             "names, or a [[link]] to the note would break there); rename it without them")
    if "/".join(parts).lower() == "log.md":
        raise UsageError("log.md is append-only: wikimem adds an entry for every write; agents cannot replace it")
    return rel


def check_size(what: str, text: str, max_bytes: int = MAX_WRITE_BYTES, limit: str | None = None) -> None:
    """``limit``: how the error names the bound (default: the limit for what one call writes)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise UsageError(f"{what}: {size} bytes, over {limit or f'the {max_bytes}-byte limit for one write'}")
    if "\x00" in text:
        raise UsageError(f"{what}: contains NUL bytes; notes are text")


def check_content(rel: str, content: str, max_bytes: int = MAX_WRITE_BYTES, limit: str | None = None) -> None:
    check_size(rel, content, max_bytes, limit)
    front, _body = fm.parse(content.replace("\r\n", "\n"))
    if front.error:
        raise UsageError(f"{rel}: invalid frontmatter ({front.error}); fix the YAML between the --- lines")


def expected_hash(ctx, rel: str, expected_sha256: str | None, force: bool) -> str | None:
    """The hash to hand the writer: the caller's, the current one when ``force``, None to create.

    Replacing an existing page needs the sha256 the agent read (``read_page``) so an edit made in
    the meantime is never overwritten; ``force`` skips that check on purpose."""
    path = ctx.files.abspath(rel)
    if not path.exists():
        if expected_sha256 and not force:
            raise ConflictError(f"{rel}: the page was deleted since it was read; not writing")
        return None
    if force:
        return ctx.files.read_note(rel).sha256
    if not expected_sha256:
        raise ConflictError(f"{rel}: the page exists; read it first (read_page) and pass its sha256 as "
                            "expected_sha256, or set force to overwrite it")
    return expected_sha256
