"""WM1xx: links that do not lead where they say (missing page, heading, block, attachment, raw/
source) or could lead to more than one page."""
from __future__ import annotations

import unicodedata

from ...vault.files import is_raw_path
from ..context import is_note_target
from ..registry import rule


# A raw/ note is a source: someone else's document kept as it came (an article's ``[Home](/)``, a
# clipped note's ``[[Their Page]]``, a chat's pasted links). Its links belong to its own site or vault
# and can never resolve here, and raw/ is never edited, so they are not checked. What wikimem itself
# writes into a raw/ note is: the frontmatter keys below (the HTML/PDF original a text note was
# made from, the earlier part of a continued session).
RAW_OWN_KEYS = ("derived_from", "continues")


def _body_links(ctx, skip_index: bool = True):
    """(page, link) for every link written in a note (index.md's are WM403's; a raw/ source's own
    links are not checked, only the ``RAW_OWN_KEYS`` links wikimem wrote into it)."""
    for path in sorted(ctx.pages):
        if skip_index and path == "index.md":
            continue
        page = ctx.pages[path]
        raw = is_raw_path(path)
        for link in page.links:
            if raw and not (link.kind == "frontmatter" and link.key in RAW_OWN_KEYS):
                continue
            yield page, link



def _broken_anchors(ctx, block: bool):
    """Links whose page exists but whose heading (or block id) does not."""
    for page, link in _body_links(ctx, skip_index=False):
        if link.resolved and link.anchor_ok is False and bool(link.block) == block:
            what = f"block '^{link.block}'" if block else f"heading '{'#'.join(link.heading)}'"
            yield ctx.finding(page.path, ctx.link_line(page, link),
                              f"{what} not found in [[{link.target or page.title}]] ({link.resolved})")


@rule("WM101", "broken-link", severity="error")
def broken_link(ctx):
    """A link to a page that does not exist. Example: ``See [[No Such Page]].`` when no note is
    called "No Such Page" (by path, file name or alias)."""
    for page, link in _body_links(ctx):
        if link.resolved or not link.target or link.key == "supersedes":
            continue  # supersedes targets are WM301's
        if is_raw_path(link.target) or not is_note_target(link.target):
            continue  # WM105 / WM106
        yield ctx.finding(page.path, ctx.link_line(page, link), f"link to missing page [[{link.target}]]")


@rule("WM102", "broken-heading-link", severity="warning")
def broken_heading(ctx):
    """A link to a heading the target page does not have. Example: ``[[BM25#Variants]]`` when
    BM25.md has no heading "Variants" (headings compare as Obsidian does: case and punctuation
    ignored)."""
    yield from _broken_anchors(ctx, block=False)


@rule("WM103", "broken-block-link", severity="warning")
def broken_block(ctx):
    """A link to a block id the target page does not have. Example: ``[[BM25#^k1]]`` when no
    paragraph of BM25.md ends with ``^k1``."""
    yield from _broken_anchors(ctx, block=True)


@rule("WM104", "ambiguous-link", severity="warning")
def ambiguous_link(ctx):
    """A link whose name matches two or more pages equally well. Example: ``[[Notes]]`` with both
    a/Notes.md and b/Notes.md; Obsidian picks one, the reader cannot tell which. Also two files with
    one name in two Unicode forms (NFC and NFD ``Café.md``: one file on macOS, two on Linux)."""
    for page, link in _body_links(ctx, skip_index=False):
        if len(link.candidates) > 1:
            if len({unicodedata.normalize("NFC", c) for c in link.candidates}) == 1:  # NFC and NFD twins
                shown = ", ".join(ascii(c)[1:-1] for c in link.candidates)
                yield ctx.finding(page.path, ctx.link_line(page, link),
                                  f"[[{link.target}]] is ambiguous: {len(link.candidates)} files have this name in "
                                  f"different Unicode forms ({shown}; macOS would keep one); resolved to the one "
                                  "spelled as the link is; rename or remove the other")
                continue
            yield ctx.finding(page.path, ctx.link_line(page, link),
                              f"[[{link.target}]] is ambiguous: {', '.join(link.candidates)} "
                              f"(resolved to {link.resolved}); write the path")


@rule("WM105", "missing-raw-source", severity="error")
def missing_raw(ctx):
    """A link into raw/ (a source, often in ``sources:``) to a file that does not exist.
    Example: ``sources: ["[[raw/articles/gone.md]]"]``."""
    for page, link in _body_links(ctx, skip_index=False):
        if not link.resolved and is_raw_path(link.target.lstrip("/")):
            yield ctx.finding(page.path, ctx.link_line(page, link), f"raw source [[{link.target}]] does not exist")


@rule("WM106", "missing-attachment", severity="error")
def missing_attachment(ctx):
    """An embed or link to an attachment (image, PDF...) that is not in the vault. Example:
    ``![[diagram.png|300]]`` with no diagram.png anywhere."""
    for page, link in _body_links(ctx, skip_index=False):
        if link.resolved or not link.target or is_raw_path(link.target.lstrip("/")):
            continue
        if not is_note_target(link.target):
            yield ctx.finding(page.path, ctx.link_line(page, link), f"attachment '{link.target}' not found")
