"""A note as Obsidian shows it, in HTML for the web page: ``[[wikilinks]]``, embeds of notes,
headings and blocks drawn inline (``![[Note]]``, ``![[Note#Heading]]``, ``![[Note#^block]]``),
attachments (``![[logo.png|200]]``, ``![x](attachments/logo.png)``) served by the page's own
``/file/`` route, relative Markdown links to notes, and the rules of ``mdrules`` (callouts,
highlights, tasks, footnotes, math as text).

What the page may show is decided by a ``Site``: it resolves a link as Obsidian does and reads an
embedded note through the same rules as a page read (no dot folders, nothing ``.wikimemignore``
hides), so an embed never shows what its own page would refuse. Embeds are cut at ``MAX_DEPTH``
and where they would repeat one already open (a cycle), and past ``MAX_EMBEDS`` in one page.
"""
from __future__ import annotations

import re
import textwrap
from typing import Any, Protocol
from urllib.parse import quote, unquote

from . import mdrules
from .mdrules import esc

MAX_DEPTH = 3
MAX_EMBEDS = 40  # notes drawn inline in one page: fan-out times depth could otherwise be millions
IMAGE = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".bmp", ".ico", ".svg")
AUDIO = (".mp3", ".wav", ".m4a", ".ogg", ".oga", ".flac", ".3gp", ".webm")
VIDEO = (".mp4", ".ogv", ".mov", ".mkv")
NOTE = (".md", ".markdown")
_WIKILINK = re.compile(r"!?\[\[([^\[\]\n|]*?)(?:\|([^\[\]\n]*?))?\]\]")
_SIZE = re.compile(r"^\s*(\d{1,5})(?:\s*x\s*(\d{1,5}))?\s*$")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_BLOCK_ID = re.compile(r"[ \t]\^([A-Za-z0-9-]+)[ \t]*$", re.M)
_LONE_ID = re.compile(r"^\s*\^([A-Za-z0-9-]+)\s*$")


class Site(Protocol):
    """What rendering needs of the served vault."""
    vault: str  # the served vault's name (in URLs)

    def resolve(self, target: str, source: str, relative: bool = False) -> str | None: ...

    def read(self, path: str) -> tuple[str, str]:
        """(title, text) of a note, or a WikimemError when a page read would refuse it."""


def slug(text: str) -> str:
    return re.sub(r"[^\w]+", "-", text.strip().lower()).strip("-") or "section"


def page_url(vault: str, path: str, heading: str | None = None) -> str:
    url = f"/v/{quote(vault, safe='')}/page/{quote(path, safe='/')}"
    return url + ("#" + quote(slug(heading), safe="") if heading else "")


def file_url(vault: str, path: str) -> str:
    return f"/v/{quote(vault, safe='')}/file/{quote(path, safe='/')}"


def is_note(path: str) -> bool:
    return path.lower().endswith(NOTE)


def strip_frontmatter(text: str) -> str:
    """A note's text without its frontmatter block."""
    text = text.replace("\r\n", "\n")
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            after = text.find("\n", end + 4)
            return text[after + 1:] if after != -1 else ""
    return text


def hide_block_ids(text: str) -> str:
    """Obsidian hides a ``^block-id`` at the end of a line, and a line holding only one."""
    return _BLOCK_ID.sub("", "\n".join("" if _LONE_ID.match(line) else line for line in text.split("\n")))


# -- the renderer ---------------------------------------------------------------------------------------
def _wikilink_rule(state, silent: bool) -> bool:
    if not state.src.startswith(("[[", "![["), state.pos):
        return False
    found = _WIKILINK.match(state.src, state.pos)
    if not found:
        return False
    if not silent:
        token = state.push("wikilink", "", 0)
        target = found.group(1).rstrip("\\")  # [[A\|B]] in a table: the backslash escapes the pipe
        token.meta = {"target": target, "alias": found.group(2), "embed": found.group(0).startswith("!")}
    state.pos = found.end()
    return True


def _lone_embeds(state) -> None:
    """A paragraph holding only a note embed: the embed's box stands in for the paragraph (a <div>
    may not sit inside a <p>)."""
    tokens = state.tokens
    for i in range(1, len(tokens) - 1):
        tok = tokens[i]
        if tok.type != "inline" or tokens[i - 1].type != "paragraph_open" or not tok.children:
            continue
        kids = [c for c in tok.children if not (c.type in ("softbreak", "text") and not c.content.strip())]
        if len(kids) == 1 and kids[0].type == "wikilink" and kids[0].meta["embed"] \
                and not kids[0].meta["target"].lower().endswith(IMAGE + AUDIO + VIDEO):
            tokens[i - 1].hidden = tokens[i + 1].hidden = True


def _heading_open(self, tokens, idx, options, env):
    inline = tokens[idx + 1] if idx + 1 < len(tokens) else None
    if inline is not None and inline.type == "inline":
        tokens[idx].attrSet("id", env.get("prefix", "") + slug(inline.content))
    return self.renderToken(tokens, idx, options, env)


def _render_wikilink(self, tokens, idx, options, env):
    meta = tokens[idx].meta
    target, alias = meta["target"], meta["alias"]
    name, _, anchor = target.partition("#")
    site: Site = env["site"]
    path = env["path"] if not name.strip() else site.resolve(name, env["path"])
    if meta["embed"]:
        return embed(self, env, path, name, anchor, alias)
    shown = alias or (name if anchor.startswith("^") else target.replace("#", " › "))
    if path is None:
        return f'<span class="missing" title="no such page">{esc(shown)}</span>'
    if not is_note(path):
        return f'<a class="wikilink file" href="{esc(file_url(site.vault, path))}">{esc(shown)}</a>'
    heading = anchor.split("#")[-1] if anchor and not anchor.startswith("^") else None
    return f'<a class="wikilink" href="{esc(page_url(site.vault, path, heading))}">{esc(shown)}</a>'


def _local(href: str) -> str | None:
    """A Markdown link's vault path (``Other%20Note.md``, ``./attachments/x.png``), or None for a URL."""
    if not href or _SCHEME.match(href) or href.startswith(("//", "#")):
        return None
    path = unquote(href.partition("#")[0])
    return path[2:] if path.startswith("./") else path


def _link_open(self, tokens, idx, options, env):
    token = tokens[idx]
    href = token.attrGet("href") or ""
    if re.match(r"^\s*(javascript|data|vbscript|file):", href, re.I):
        token.attrSet("href", "#")
    elif (local := _local(href)) is not None:
        site: Site = env["site"]
        path = site.resolve(local, env["path"], relative=True)
        anchor = unquote(href.partition("#")[2]) or None
        if path is not None:
            token.attrSet("href", page_url(site.vault, path, anchor) if is_note(path) else file_url(site.vault, path))
    return self.renderToken(tokens, idx, options, env)


def _image(self, tokens, idx, options, env):
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    src = token.attrGet("src") or ""
    alt, width, height = _sized(alt)
    local = _local(src)
    if local is None:  # a remote image is not fetched (the CSP allows none): its link instead
        if re.match(r"^\s*https?:", src, re.I):
            return f'<a class="external-image" href="{esc(src)}">{esc(alt or src)}</a>'
        if re.match(r"^data:image/(png|gif|jpeg|webp);", src, re.I):  # what markdown-it lets through
            return f'<img src="{esc(src)}" alt="{esc(alt)}">'
        return f'<span class="missing">{esc(alt or src)}</span>'
    site: Site = env["site"]
    path = site.resolve(local, env["path"], relative=True)
    if path is None:
        return f'<span class="missing" title="no such file">{esc(alt or local)}</span>'
    return media(site.vault, path, alt, width, height)


def _sized(text: str | None) -> tuple[str, str | None, str | None]:
    """Obsidian's ``alt|200`` / ``alt|200x100`` (or just ``200``) -> (alt, width, height)."""
    text = text or ""
    head, sep, tail = text.rpartition("|")
    found = _SIZE.match(tail if sep else text)
    if not found:
        return text, None, None
    return (head if sep else ""), found.group(1), found.group(2)


def media(vault: str, path: str, alt: str, width: str | None = None, height: str | None = None) -> str:
    """An attachment drawn as Obsidian draws it: an image, a player, or a link for the rest."""
    url = esc(file_url(vault, path))
    name = path.rsplit("/", 1)[-1]
    size = (f' width="{width}"' if width else "") + (f' height="{height}"' if height else "")
    low = path.lower()
    if low.endswith(IMAGE):
        return f'<img class="embed-image" src="{url}" alt="{esc(alt or name)}"{size} loading="lazy">'
    if low.endswith(AUDIO):
        return f'<audio class="embed-audio" controls preload="metadata" src="{url}" title="{esc(name)}"></audio>'
    if low.endswith(VIDEO):
        return f'<video class="embed-video" controls preload="metadata" src="{url}"{size}></video>'
    return f'<a class="embed-file" href="{url}">{esc(alt or name)}</a>'


def embed(renderer, env: dict[str, Any], path: str | None, name: str, anchor: str, alias: str | None) -> str:
    """``![[...]]``: an attachment, or the note / heading / block drawn inline in its own box."""
    site: Site = env["site"]
    shown = alias or (name + (" › " + anchor.lstrip("^") if anchor else ""))
    if path is None:
        return f'<span class="missing embed-missing" title="no such page or file">{esc(shown)}</span>'
    if not is_note(path):
        alt, width, height = _sized(alias)
        return media(site.vault, path, alt, width, height)
    key = (path, anchor.strip().lower())
    link = page_url(site.vault, path, anchor if anchor and not anchor.startswith("^") else None)
    counter = env.setdefault("counter", [0])
    why = ("embeds itself" if key in env.get("open", ()) else "embedded too deep" if env.get("depth", 0) >= MAX_DEPTH
           else "too many embeds in one page" if counter[0] >= MAX_EMBEDS else None)
    if why:
        return f'<a class="embed-cut" href="{esc(link)}" title="{why}: not drawn">{esc(shown)}</a>'
    try:
        title, text = site.read(path)
        part = excerpt(text, anchor)
    except Exception as exc:  # noqa: BLE001 - a refused, gone or broken embed is a note in the page, never a 500
        from ..errors import WikimemError
        if not isinstance(exc, (WikimemError, OSError, ValueError)):
            raise
        return f'<span class="missing embed-missing" title="not shown">{esc(shown)}</span>'
    counter[0] += 1
    inner_env = {"site": site, "path": path, "depth": env.get("depth", 0) + 1, "open": env.get("open", ()) + (key,),
                 "prefix": f"e{counter[0]}-", "counter": counter}
    body = renderer.md_render(hide_block_ids(part), inner_env)
    label = title + (" › " + anchor.lstrip("^") if anchor and not anchor.startswith("^") else "")
    return (f'<div class="embed" data-path="{esc(path)}"><div class="embed-title"><a href="{esc(link)}">'
            f'{esc(label)}</a></div><div class="embed-body">{body}</div></div>')


def excerpt(text: str, anchor: str) -> str:
    """The part of a note an embed shows: all of its body, one heading's section, or one block."""
    body = strip_frontmatter(text)
    if not anchor.strip():
        return body
    if anchor.startswith("^"):
        return block_text(body, anchor[1:].strip())
    from ..agent.pages import section_span
    from ..parse import parse_page
    from ..parse.resolve import norm_heading
    page = parse_page("embed.md", body)
    lines = body.split("\n")
    if "#" not in anchor.strip("#"):  # one heading: matched as Obsidian does ("What is it" finds "What is it?")
        wanted = norm_heading(anchor)
        anchor = next((h.text for h in page.headings if norm_heading(h.text) == wanted), anchor)
    start, end, _chain = section_span(lines, page.headings, anchor)  # UsageError: no such heading
    return "\n".join(lines[start:end])


def block_text(body: str, block_id: str) -> str:
    """The lines of the block marked ``^block_id``: its list item (with the items under it), its
    paragraph, or for an id on a line of its own, the block just before it."""
    from ..errors import UsageError
    lines = body.split("\n")
    marker = re.compile(r"(?:^|\s|\]\])\^" + re.escape(block_id) + r"[ \t]*$")
    at = next((i for i, line in enumerate(lines) if marker.search(line)), None)
    if at is None:
        raise UsageError(f"no block ^{block_id}")
    tokens = markdown().parse(body, {"site": None, "path": ""})
    spans = [t for t in tokens if t.map and t.nesting >= 0 and t.type != "inline"]  # openers and leaf blocks
    items = [t for t in spans if t.type == "list_item_open" and t.map[0] <= at < t.map[1]]
    if items:
        start, end = items[-1].map  # the innermost item
    else:
        tops = [t for t in spans if t.level == 0 and t.map]
        here = next((t for t in tops if t.map[0] <= at < t.map[1]), None)
        if here is None or _LONE_ID.match(lines[at]):
            before = [t for t in tops if t.map[1] <= at and not _LONE_ID.match(lines[t.map[0]])]
            here = before[-1] if before else here
        if here is None:
            raise UsageError(f"no block ^{block_id}")
        start, end = here.map
    return textwrap.dedent("\n".join(lines[start:end]))


_MD = None


def markdown():
    """markdown-it (CommonMark, tables, strikethrough) with raw HTML off, Obsidian's syntax added."""
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt
        md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
        md.enable(["table", "strikethrough"])
        md.inline.ruler.before("link", "wikilink", _wikilink_rule)
        mdrules.install(md)
        md.core.ruler.push("wm_lone_embeds", _lone_embeds)
        md.renderer.md_render = md.render
        for name, fn in (("heading_open", _heading_open), ("wikilink", _render_wikilink),
                         ("link_open", _link_open), ("image", _image)):
            md.add_render_rule(name, fn)
        _MD = md
    return _MD


def render_note(text: str, site: Site, path: str) -> str:
    """A note's body (no frontmatter, block ids hidden) as HTML."""
    return markdown().render(hide_block_ids(strip_frontmatter(text)), {"site": site, "path": path, "depth": 0,
                                                                       "open": ((path, ""),)})


def plain_text(excerpt_md: str) -> str:
    """A search hit's excerpt as a reader sees it: no ``##``, no table pipes, no ``**``; links as
    their shown text (``[[Page#^id|shown]]`` as "shown", ``[[Page#H]]`` as "Page › H"). Search gives
    excerpts on one line (a table's rows run together), so a one-line excerpt is cleaned of block
    syntax by pattern before its inline Markdown is read."""
    env = {"site": None, "path": ""}
    if "\n" in excerpt_md.strip():
        parts: list[str] = []
        for tok in markdown().parse(excerpt_md, env):
            if tok.type == "inline":
                parts.append("".join(_child_text(c) for c in tok.children or []))
            elif tok.type in ("fence", "code_block", "math_block"):
                parts.append(tok.content)
    else:
        inline = markdown().parseInline(_flat_clean(plain_links(excerpt_md)), env)
        parts = ["".join(_child_text(c) for c in (inline[0].children if inline else []) or [])]
    return re.sub(r"\s+", " ", " ".join(p.strip() for p in parts if p.strip())).strip()


_FLAT = ((re.compile(r"\|?[ \t]*:?-{3,}:?[ \t]*(?=\|)"), ""),  # a table's delimiter row
         (re.compile(r"[ \t]*(?:\|[ \t]*)+"), " · "),  # cell separators
         (re.compile(r"(^|\s)#{1,6}(?=\s)"), r"\1"),  # heading marks
         (re.compile(r"(^|\s)>(?=\s)"), r"\1"),  # quote marks
         (re.compile(r"\[![^\]\s]+\][+-]?"), ""),  # a callout's type
         (re.compile(r"(^|\s)(?:[-*+]|\d{1,3}[.)])[ \t]+\[[xX]\](?=\s)"), r"\1☑"),
         (re.compile(r"(^|\s)(?:[-*+]|\d{1,3}[.)])[ \t]+\[ \](?=\s)"), r"\1☐"),
         (re.compile(r"(^|\s)[-*+](?=\s)"), r"\1"))  # list marks


_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")


def _flat_clean(text: str) -> str:
    """Block syntax out of a one-line excerpt, outside inline code: a command's ``[-C|--directory]``
    is not a table's cell separator."""
    out, at = [], 0
    for code in (*_CODE_SPAN.finditer(text), None):
        prose = text[at:code.start() if code else len(text)]
        for pattern, repl in _FLAT:
            prose = pattern.sub(repl, prose)
        out.append(prose)
        if code:
            out.append(code.group(0))
            at = code.end()
    return "".join(out).strip(" ·")


def _child_text(tok) -> str:
    if tok.type in ("text", "code_inline", "math_inline"):
        return tok.content
    if tok.type in ("softbreak", "hardbreak"):
        return " "
    if tok.type == "wikilink":
        meta = tok.meta
        if meta["alias"]:
            return meta["alias"]
        name, _, anchor = meta["target"].partition("#")
        return name + (f" › {anchor}" if anchor and not anchor.startswith("^") else "")
    if tok.type == "image":
        return "".join(_child_text(c) for c in tok.children or [])
    if tok.type == "task_box":
        return "☑ " if tok.meta["checked"] else "☐ "
    if tok.type == "footnote_ref":
        return f"[{tok.meta['n']}]"
    return ""


def plain_links(text: str) -> str:
    """``[[Page#^id|shown]]`` as "shown", ``[[Page#H]]`` as "Page › H" (text stays as it is)."""
    def shown(found: re.Match) -> str:
        if found.group(2):
            return found.group(2)
        name, _, anchor = found.group(1).partition("#")
        return name + (f" › {anchor}" if anchor and not anchor.startswith("^") else "")
    return _WIKILINK.sub(shown, text)

