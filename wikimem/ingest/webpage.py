"""A web page's own text, without the site around it, before html2text turns it into Markdown.

A saved page carries the site's chrome: skip links, the header with the site name and menu, the
navigation, sidebars, the footer. Converted, they become ``[Home](/)`` lines above and below the
article, a site name as its first heading, and words that have nothing to do with the source. So:
the page's ``<main>`` (or its top-level ``<article>``\\ s) is kept when it has one; ``<nav>`` and
elements with role navigation / banner / contentinfo / search are dropped anywhere; ``<header>``,
``<footer>`` and ``<aside>`` are dropped when they belong to the page, not to an article or section
(HTML's own rule for when a header is the page's banner); skip links go. Only the standard library
is used: the page is read into a small tree (lenient about unclosed tags) and written back out.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
CHROME_ROLES = frozenset({"navigation", "banner", "contentinfo", "search"})
PAGE_CHROME = frozenset({"header", "footer", "aside"})  # chrome unless inside one of SECTIONING
SECTIONING = frozenset({"article", "section", "main"})
DROPPED = frozenset({"nav", "script", "style", "noscript", "template", "button", "dialog"})
_SKIP_TEXT = re.compile(r"^\s*(skip|jump)\s+to\b", re.I)


@dataclass
class Node:
    tag: str
    attrs: list[tuple[str, str | None]] = field(default_factory=list)
    children: list["Node | str"] = field(default_factory=list)

    def attr(self, name: str) -> str:
        return next((v or "" for k, v in self.attrs if k == name), "")

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.root = Node("#root")
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs)
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, attrs))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):  # close up to the matching open tag, if any
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(html.escape(data, quote=False) if self.stack[-1].tag not in
                                       ("script", "style") else data)

    def handle_entityref(self, name):
        self.stack[-1].children.append(f"&{name};")

    def handle_charref(self, name):
        self.stack[-1].children.append(f"&#{name};")


def _parse(page: str) -> Node:
    builder = _TreeBuilder()
    builder.feed(page)
    builder.close()
    return builder.root


def _is_chrome(node: Node, inside_section: bool) -> bool:
    if node.tag in DROPPED or node.attr("role").strip().lower() in CHROME_ROLES:
        return True
    if node.tag in PAGE_CHROME and not inside_section:
        return True
    if node.attr("aria-hidden").strip().lower() == "true" or any(k == "hidden" for k, _ in node.attrs):
        return True  # not shown to a reader
    if node.tag == "a" and node.attr("href").startswith("#"):
        classes = node.attr("class").lower()
        return "skip" in classes or bool(_SKIP_TEXT.match(html.unescape(node.text())))
    return False


def _strip(node: Node, inside_section: bool = False) -> Node:
    inside = inside_section or node.tag in SECTIONING
    kept: list[Node | str] = []
    for child in node.children:
        if isinstance(child, str):
            kept.append(child)
        elif not _is_chrome(child, inside):
            kept.append(_strip(child, inside))
    return Node(node.tag, node.attrs, kept)


def _find(node: Node, want) -> list[Node]:
    """The outermost descendants for which ``want(node)`` holds, in document order."""
    found: list[Node] = []
    for child in node.children:
        if isinstance(child, Node):
            if want(child):
                found.append(child)
            else:
                found.extend(_find(child, want))
    return found


def _serialise(node: Node) -> str:
    if node.tag == "#root":
        return "".join(c if isinstance(c, str) else _serialise(c) for c in node.children)
    attrs = "".join(f' {k}="{html.escape(v, quote=True)}"' if v is not None else f" {k}" for k, v in node.attrs)
    if node.tag in VOID:
        return f"<{node.tag}{attrs}>"
    inner = "".join(c if isinstance(c, str) else _serialise(c) for c in node.children)
    return f"<{node.tag}{attrs}>{inner}</{node.tag}>"


def _has_text(nodes: list[Node]) -> bool:
    return any(n.text().strip() for n in nodes)


def page_content(page: str) -> str:
    """The HTML of the page's own content: its main element or articles, chrome removed."""
    tree = _strip(_parse(page))
    main = _find(tree, lambda n: n.tag == "main" or n.attr("role").strip().lower() == "main")
    if not _has_text(main):
        main = _find(tree, lambda n: n.tag == "article")
    if _has_text(main):
        return "".join(_serialise(n) for n in main)
    return _serialise(tree)
