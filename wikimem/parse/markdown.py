"""Markdown structure via markdown-it-py's token stream (CommonMark + tables) with small inline
rules for Obsidian syntax: ``[[wikilinks]]``, ``![[embeds]]`` and ``#tags``.

Working from tokens (not regexes over raw text) is what keeps links inside code spans and fenced
blocks from counting. Only the rules we need are enabled, and the stock per-character ``text``
rule is replaced with a regex one: together about 3x faster on typical notes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

from ..model import Block, BlockSpan, Heading, Link, Tag

# Characters that may start an inline construct we handle; everything else is plain text.
_TEXT_RUN = re.compile(r"[^\n\\`\[\]!#]+")
_TAG = re.compile(r"#([^\s!-,.:-@\[-^`{-~]+)")  # any char but whitespace and ASCII punctuation...
_TAG_CHARS = re.compile(r"[\w/\-]+")  # ...of which we keep letters, digits, _ - / (any script)
# A block id ends a line after a space, or straight after an embed (``![[image.png]]^block-id``).
_BLOCK_ID = re.compile(r"(?:^|\s|\]\])\^([A-Za-z0-9-]+)[ \t]*$")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _text_rule(state: StateInline, silent: bool) -> bool:
    m = _TEXT_RUN.match(state.src, state.pos, state.posMax)
    if not m:
        return False
    if not silent:
        state.pending += m.group(0)
    state.pos = m.end()
    return True


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    embed = src.startswith("![[", pos)
    if not embed and not src.startswith("[[", pos):
        return False
    start = pos + (3 if embed else 2)
    end = src.find("]]", start, state.posMax)
    if end < 0:
        return False
    inner = src[start:end]
    if "\n" in inner or not inner.strip() or "[[" in inner:
        return False
    if not silent:
        token = state.push("wikilink", "", 0)
        token.content = inner
        token.info = "embed" if embed else "wikilink"
    state.pos = end + 2
    return True


def _tag_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if src[pos] != "#":
        return False
    if pos > 0 and not src[pos - 1].isspace():
        return False
    m = _TAG.match(src, pos, state.posMax)
    if not m:
        return False
    name = _TAG_CHARS.match(m.group(1))
    if not name:
        return False
    value = name.group(0).rstrip("/")
    if not value or value.replace("/", "").isdigit():
        return False
    if not silent:
        token = state.push("hashtag", "", 0)
        token.content = value
    state.pos = pos + 1 + len(name.group(0))
    return True


class _NoLog:
    """markdown-it's block rules log every attempt at DEBUG; at ~150 calls a note that is a
    measurable share of parse time, and the messages are of no use to wikimem users."""

    @staticmethod
    def debug(*args, **kwargs) -> None:
        return None


def _silence_markdown_it_debug() -> None:
    import importlib
    for name in ("blockquote", "code", "fence", "heading", "hr", "lheading", "list", "paragraph", "table",
                 "html_block"):
        try:
            module = importlib.import_module(f"markdown_it.rules_block.{name}")
        except ImportError:  # pragma: no cover - layout of a future markdown-it
            continue
        if hasattr(module, "LOGGER"):
            module.LOGGER = _NoLog()


@lru_cache(maxsize=1)
def markdown() -> MarkdownIt:
    md = MarkdownIt("zero").enable([
        "fence", "code", "heading", "lheading", "table", "blockquote", "list", "hr", "html_block",
        "backticks", "link", "escape", "newline",
    ])
    md.inline.ruler.at("text", _text_rule)
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    md.inline.ruler.before("link", "hashtag", _tag_rule)
    # The inline pass runs in analyse(), only on inline tokens that can hold a link or a tag.
    md.core.ruler.disable(["inline", "text_join"])
    _silence_markdown_it_debug()
    return md


@dataclass(frozen=True)
class Structure:
    headings: tuple[Heading, ...]
    links: tuple[Link, ...]
    tags: tuple[Tag, ...]
    blocks: tuple[Block, ...]
    spans: tuple[BlockSpan, ...]


def parse_wikilink(inner: str, kind: str, line: int) -> Link:
    """``Page#H1#H2|shown`` -> Link. A trailing backslash before ``|`` (``[[A\\|B]]`` in tables) is dropped."""
    display = None
    if "|" in inner:
        inner, display = inner.split("|", 1)
        inner = inner.rstrip("\\")
    target, _, anchor = inner.partition("#")
    heading: tuple[str, ...] = ()
    block = None
    if anchor:
        if anchor.startswith("^"):
            block = anchor[1:].strip()
        else:
            heading = tuple(h.strip() for h in anchor.split("#") if h.strip())
    return Link(target=target.strip(), kind=kind, line=line, display=display, heading=heading, block=block)


def parse_markdown_href(href: str, line: int, display: str | None) -> Link | None:
    """Internal Markdown links ``[x](Page.md#Heading)``; URLs and pure anchors are not page links."""
    if not href or _SCHEME.match(href) or href.startswith("//"):
        return None
    path, _, anchor = unquote(href).partition("#")
    if not path:
        if not anchor:
            return None
    heading: tuple[str, ...] = ()
    block = None
    if anchor.startswith("^"):
        block = anchor[1:]
    elif anchor:
        heading = tuple(h for h in anchor.split("#") if h)
    path = path.lstrip("./") if path.startswith("./") else path
    return Link(target=path, kind="markdown", line=line, display=display, heading=heading, block=block)


def _block_kind(token) -> str:
    t = token.type
    return {
        "paragraph_open": "paragraph", "fence": "fence", "code_block": "code", "table_open": "table",
        "blockquote_open": "blockquote", "bullet_list_open": "list", "ordered_list_open": "list",
        "hr": "hr", "html_block": "html", "heading_open": "heading",
    }.get(t, "other")


def analyse(body: str, line_offset: int = 0) -> Structure:
    """Parse an LF body; lines in the result are file lines (``line_offset`` = body start)."""
    md = markdown()
    env: dict = {}
    tokens = md.parse(body, env)
    headings: list[Heading] = []
    links: list[Link] = []
    tags: list[Tag] = []
    blocks: list[Block] = []
    spans: list[BlockSpan] = []
    depth = 0
    open_block: tuple[str, int, int] | None = None
    items: list[int] = []
    n = len(tokens)
    i = 0
    while i < n:
        tok = tokens[i]
        ttype = tok.type
        if depth == 0 and tok.map is not None and tok.level == 0:
            kind = _block_kind(tok)
            if kind == "heading":
                text = tokens[i + 1].content.strip() if i + 1 < n else ""
                level = int(tok.tag[1])
                spans.append(BlockSpan("heading", tok.map[0], tok.map[1], level, text))
                headings.append(Heading(level, text, tok.map[0] + line_offset))
            elif tok.nesting == 1:
                if kind == "blockquote" and i + 2 < n and tokens[i + 2].content.lstrip().startswith("[!"):
                    kind = "callout"
                open_block = (kind, tok.map[0], tok.map[1])
                items = []
            else:
                spans.append(BlockSpan(kind, tok.map[0], tok.map[1]))
        if ttype == "list_item_open" and depth == 1 and open_block and open_block[0] == "list":
            items.append(tok.map[0])
        depth += tok.nesting
        if depth == 0 and tok.nesting == -1 and open_block is not None:
            kind, s, e = open_block
            spans.append(BlockSpan(kind, s, e, items=tuple(items)))
            open_block = None
        if ttype == "inline":
            content = tok.content
            if "[" in content or "#" in content or "^" in content:
                base = (tok.map[0] if tok.map else 0) + line_offset
                children: list = []
                md.inline.parse(content, md, env, children)
                _collect_inline(content, children, base, links, tags, blocks)
        i += 1
    return Structure(tuple(headings), tuple(links), tuple(tags), tuple(blocks), tuple(spans))


def _collect_inline(content: str, children: list, base: int, links: list[Link], tags: list[Tag],
                    blocks: list[Block]) -> None:
    line = base
    for j, child in enumerate(children):
        ctype = child.type
        if ctype == "softbreak" or ctype == "hardbreak":
            line += 1
        elif ctype == "wikilink":
            links.append(parse_wikilink(child.content, child.info, line))
        elif ctype == "hashtag":
            tags.append(Tag(child.content.lower(), line, "inline"))
        elif ctype == "link_open":
            href = child.attrs.get("href", "")
            shown = children[j + 1].content if j + 1 < len(children) and children[j + 1].type == "text" else None
            link = parse_markdown_href(str(href), line, shown)
            if link is not None:
                links.append(link)
    if "^" in content:
        for k, line_text in enumerate(content.split("\n")):
            m = _BLOCK_ID.search(line_text)
            if m:
                blocks.append(Block(m.group(1), base + k))
