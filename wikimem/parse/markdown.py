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
        # append_pending buffers; ``state.pending += text`` rebuilt the whole pending string on
        # every run of text, quadratic in a paragraph broken up by many special characters
        append = getattr(state, "append_pending", None)  # markdown-it-py >= 4
        if append is not None:
            append(m.group(0))
        else:  # pragma: no cover - markdown-it-py 3
            state.pending += m.group(0)
    state.pos = m.end()
    return True


def _next(state: StateInline, needle: str, start: int) -> int:
    """``state.src.find(needle, start, state.posMax)``, remembered per inline run: every ``[[`` of
    a note used to search to its end for a ``]]`` that never came (40k openers: 7.8 s). The first
    occurrence found from an earlier start is still the first from a later one up to it, so each
    needle's search moves forward only. Kept in ``state.cache`` (markdown-it's own per-run memo,
    keyed by int positions) under a string key."""
    key = ("wikimem-next", needle, state.posMax)  # a link's text is parsed with a closer end
    cache = state.cache
    hit = cache.get(key)  # type: ignore[call-overload]
    if hit is not None and hit[0] <= start and (hit[1] < 0 or hit[1] >= start):
        return hit[1]
    found = state.src.find(needle, start, state.posMax)
    cache[key] = (start, found)  # type: ignore[index]
    return found


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    embed = src.startswith("![[", pos)
    if not embed and not src.startswith("[[", pos):
        return False
    start = pos + (3 if embed else 2)
    end = _next(state, "]]", start)
    if end < 0:
        return False
    newline, opener = _next(state, "\n", start), _next(state, "[[", start)
    if 0 <= newline < end or 0 <= opener <= end - 2:  # a line break or another [[ inside
        return False
    inner = src[start:end]
    if not inner.strip():
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


_LABELS = "wikimem-labels"


def _link_label(state: StateInline, start: int, disableNested: bool = False) -> int:  # noqa: N803
    """markdown-it's ``parseLinkLabel`` (the end of the ``[label]`` opened at ``start``, or -1),
    remembered per start: the stock one walks to the end of the paragraph from every ``[`` that
    is never closed, so a run of them was quadratic (50k ``[``: 6 s). The walk is the stock one,
    but a nested ``[label]`` whose end is already known is stepped over in one move, and one that
    is known not to close ends this walk too (its level never comes back down)."""
    memo = state.cache.get(_LABELS)  # type: ignore[call-overload]
    if memo is None:
        memo = state.cache[_LABELS] = {}  # type: ignore[index]
    key = (start, disableNested, state.posMax)
    if key in memo:
        return memo[key]
    old_pos, src, pos_max = state.pos, state.src, state.posMax
    skip = state.md.inline.skipToken
    state.pos = start + 1
    level, label_end = 1, -1
    while state.pos < pos_max:
        marker = src[state.pos]
        if marker == "]":
            level -= 1
            if level == 0:
                label_end = state.pos
                break
        prev = state.pos
        skip(state)
        if marker == "[":
            if prev == state.pos - 1:  # a text "[", not part of a token
                inner = memo.get((prev, disableNested, pos_max))
                if inner is None:
                    level += 1
                elif inner < 0:  # never closed (or holds a link): neither is this one
                    break
                else:
                    state.pos = inner + 1
            elif disableNested:
                break
    state.pos = old_pos
    memo[key] = label_end
    return label_end


class _Helpers:
    """markdown-it's helpers for our parser only, with the remembered label walk."""

    def __init__(self, base):
        self.parseLinkDestination = base.parseLinkDestination
        self.parseLinkTitle = base.parseLinkTitle
        self.parseLinkLabel = _link_label


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
    md.helpers = _Helpers(md.helpers)  # type: ignore[assignment]
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
    path, _, anchor = href.partition("#")  # split before decoding: "C%23.md" names the file "C#.md"
    path, anchor = unquote(path), unquote(anchor)
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
