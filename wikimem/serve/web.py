"""The web page of ``wikimem serve``, for teammates who do not run Obsidian: search (the same
operators), hits with their heading and passage, pages rendered from Markdown with working
``[[wikilinks]]``, backlinks, related pages and recent changes.

Server-rendered HTML with no script at all. A note is untrusted input: Markdown is rendered with
raw HTML off (a ``<script>`` or ``<img onerror>`` in a note is shown as text), every value that
reaches the page is escaped, every URL is built by quoting, and the Content-Security-Policy allows
no script, so even a mistake here would run nothing.
"""
from __future__ import annotations

import html
import re
from typing import Any, Callable
from urllib.parse import quote, urlencode

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
       "base-uri 'none'; frame-ancestors 'none'")
STYLE = """
body{font:16px/1.5 system-ui,sans-serif;max-width:52rem;margin:1.5rem auto;padding:0 1rem;color:#222}
a{color:#2457a6;text-decoration:none}a:hover{text-decoration:underline}
header{display:flex;gap:1rem;align-items:center;border-bottom:1px solid #ddd;padding-bottom:.6rem;margin-bottom:1rem}
header form{flex:1;display:flex;gap:.4rem}header input[type=search]{flex:1;font-size:1rem;padding:.35rem .5rem}
.hit{margin:0 0 1.1rem}.hit .where{color:#666;font-size:.85rem}.hit p{margin:.2rem 0}
.missing{color:#a33;border-bottom:1px dashed #a33}.meta{color:#666;font-size:.85rem}
aside{border-top:1px solid #ddd;margin-top:2rem;padding-top:.5rem}aside li{margin:.15rem 0}
pre{background:#f5f5f5;padding:.6rem;overflow:auto}code{background:#f5f5f5;padding:0 .2rem}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2rem .4rem}
.error{color:#a33}
"""


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def page_url(vault: str, path: str, heading: str | None = None) -> str:
    url = f"/v/{quote(vault, safe='')}/page/{quote(path, safe='/')}"
    return url + ("#" + quote(slug(heading), safe="") if heading else "")


def search_url(vault: str, query: str) -> str:
    return f"/v/{quote(vault, safe='')}/?{urlencode({'q': query})}"


def slug(text: str) -> str:
    return re.sub(r"[^\w]+", "-", text.strip().lower()).strip("-") or "section"


def layout(title: str, body: str, vault: str | None = None, query: str = "", signed_in: bool = False) -> str:
    box = ""
    if vault is not None:
        box = (f'<form action="/v/{esc(quote(vault, safe=""))}/" method="get" role="search">'
               f'<input type="search" name="q" value="{esc(query)}" placeholder="Search {esc(vault)} '
               f'(tag:x path:dir &quot;phrase&quot; -word)" autofocus aria-label="search">'
               f'<button type="submit">Search</button></form>')
    out = '<a href="/logout">sign out</a>' if signed_in else ""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f'<title>{esc(title)} · wikimem</title><style>{STYLE}</style></head><body>'
            f'<header><a href="/"><b>wikimem</b></a>{box}{out}</header><main>{body}</main></body></html>')


# -- Markdown with wikilinks ------------------------------------------------------------------------
_WIKILINK = re.compile(r"!?\[\[([^\[\]\n|]*?)(?:\|([^\[\]\n]*?))?\]\]")


def markdown_renderer():
    """markdown-it (CommonMark + tables + strikethrough) with raw HTML off and a ``[[wikilink]]``
    inline rule; headings get ids so ``[[Page#Heading]]`` lands on its section."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(["table", "strikethrough"])

    def wikilink(state, silent):
        if not state.src.startswith(("[[", "![["), state.pos):
            return False
        found = _WIKILINK.match(state.src, state.pos)
        if not found:
            return False
        if not silent:
            token = state.push("wikilink", "", 0)
            token.meta = {"target": found.group(1), "alias": found.group(2)}
        state.pos = found.end()
        return True

    md.inline.ruler.before("link", "wikilink", wikilink)

    def heading_open(self, tokens, idx, options, env):
        inline = tokens[idx + 1] if idx + 1 < len(tokens) else None
        if inline is not None and inline.type == "inline":
            tokens[idx].attrSet("id", slug(inline.content))
        return self.renderToken(tokens, idx, options, env)

    def render_wikilink(self, tokens, idx, options, env):
        target, alias = tokens[idx].meta["target"], tokens[idx].meta["alias"]
        name, _, heading = target.partition("#")
        shown = alias or (name if heading.startswith("^") else target.replace("#", " › "))
        resolve: Callable[[str], str | None] = env.get("resolve", lambda _n: None)
        path = env.get("self_path") if not name else resolve(name)
        if path is None:
            return f'<span class="missing" title="no such page">{esc(shown)}</span>'
        return f'<a class="wikilink" href="{esc(page_url(env["vault"], path, heading.split("#")[-1] or None))}">{esc(shown)}</a>'

    def link_open(self, tokens, idx, options, env):  # Markdown links: no javascript: or data: URLs
        href = tokens[idx].attrGet("href") or ""
        if re.match(r"^\s*(javascript|data|vbscript):", href, re.I):
            tokens[idx].attrSet("href", "#")
        return self.renderToken(tokens, idx, options, env)

    md.add_render_rule("heading_open", heading_open)
    md.add_render_rule("wikilink", render_wikilink)
    md.add_render_rule("link_open", link_open)
    return md


_MD = None


def render_markdown(text: str, vault: str, self_path: str, resolve: Callable[[str], str | None]) -> str:
    global _MD
    if _MD is None:
        _MD = markdown_renderer()
    return _MD.render(text, {"vault": vault, "self_path": self_path, "resolve": resolve})


def _body(text: str) -> str:
    """A note's text without its frontmatter block."""
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            after = text.find("\n", end + 4)
            return text[after + 1:] if after != -1 else ""
    return text


# -- the pages -------------------------------------------------------------------------------------
def vaults_page(vaults: list[dict[str, Any]], signed_in: bool) -> str:
    items = "".join(f'<li><a href="/v/{esc(quote(v["name"], safe=""))}/">{esc(v["name"])}</a> '
                    f'<span class="meta">{esc(v["state"])}</span></li>' for v in vaults)
    return layout("vaults", f"<h1>Vaults</h1><ul>{items or '<li>none you may see</li>'}</ul>", signed_in=signed_in)


def home_page(vault: str, recent: dict[str, Any], signed_in: bool) -> str:
    rows = []
    for change in recent.get("changes", [])[:30]:
        path = change.get("path", "")
        summary = change.get("summary") or ""
        summary = "" if summary.strip().lower() == str(change.get("kind", "")).lower() else summary
        rows.append(f'<li><a href="{esc(page_url(vault, path))}">{esc(change.get("title") or path)}</a> '
                    f'<span class="meta">{esc(change.get("kind", ""))} · '
                    f'{esc(str(change.get("when", "")).replace("T", " "))}</span>'
                    f'{"<br>" + esc(summary) if summary else ""}</li>')
    body = f'<h1>{esc(vault)}</h1><h2>Recent changes</h2><ul id="recent">{"".join(rows) or "<li>nothing lately</li>"}</ul>'
    return layout(vault, body, vault, signed_in=signed_in)


def plain_links(text: str) -> str:
    """An excerpt as a reader sees it: ``[[Page#^id|shown]]`` as "shown", ``[[Page#H]]`` as "Page › H"."""
    def shown(found: re.Match) -> str:
        if found.group(2):
            return found.group(2)
        name, _, anchor = found.group(1).partition("#")
        return name + (f" › {anchor}" if anchor and not anchor.startswith("^") else "")
    return _WIKILINK.sub(shown, text)


def results_page(vault: str, query: str, result: dict[str, Any], signed_in: bool) -> str:
    hits = []
    for i, hit in enumerate(result.get("hits", []), 1):
        heading = hit.get("heading")
        where = hit["path"] + (f" › {heading}" if heading else "")
        anchor = heading.split(" > ")[-1] if heading else None
        hits.append(f'<div class="hit"><a class="hit-title" href="{esc(page_url(vault, hit["path"], anchor))}">'
                    f'{i}. {esc(hit.get("title") or hit["path"])}</a><div class="where">{esc(where)}</div>'
                    f'<p>{esc(plain_links(hit.get("excerpt", "")))}</p></div>')
    notes = "".join(f'<p class="meta">{esc(n)}</p>' for n in result.get("notices", []))
    body = (f'<h1>Search: {esc(query)}</h1>{notes}'
            f'<div id="hits">{"".join(hits) or "<p>no results</p>"}</div>')
    return layout(f"search {query}", body, vault, query, signed_in=signed_in)


def note_page(vault: str, page: dict[str, Any], rendered: str, related: list[dict[str, Any]], obsidian: str,
              signed_in: bool) -> str:
    backlinks = "".join(f'<li><a href="{esc(page_url(vault, b["path"]))}">{esc(b.get("title") or b["path"])}</a></li>'
                        for b in page.get("backlinks") or [])
    near = "".join(f'<li><a href="{esc(page_url(vault, r["path"]))}">{esc(r.get("title") or r["path"])}</a></li>'
                   for r in related)
    meta = f'<p class="meta">{esc(page["path"])} · {esc(page.get("type") or "note")}'
    if page.get("status") and page["status"] != "active":
        meta += f' · {esc(page["status"])}'
    meta += f' · <a href="{esc(obsidian)}">open in Obsidian</a></p>'
    body = (f'{meta}<article id="content">{rendered}</article>'
            f'<aside><h3>Backlinks</h3><ul id="backlinks">{backlinks or "<li>none</li>"}</ul>'
            f'<h3>Related</h3><ul id="related">{near or "<li>none</li>"}</ul></aside>')
    return layout(page.get("title") or page["path"], body, vault, signed_in=signed_in)


def login_page(problem: str = "") -> str:
    err = f'<p class="error">{esc(problem)}</p>' if problem else ""
    body = (f'<h1>Sign in</h1>{err}<form method="post" action="/login">'
            f'<label>Token <input type="password" name="token" autocomplete="current-password" required></label> '
            f'<button type="submit">Sign in</button></form>'
            f'<p class="meta">A token comes from <code>wikimem token add NAME --vault VAULT</code>; '
            f'it is kept in an HttpOnly cookie.</p>')
    return layout("sign in", body)


def error_page(status: int, message: str, vault: str | None = None) -> str:
    return layout(f"error {status}", f'<h1>{status}</h1><p class="error">{esc(message)}</p>', vault)


def obsidian_url(root_name: str, path: str) -> str:
    stem = path[:-3] if path.lower().endswith(".md") else path
    return f"obsidian://open?{urlencode({'vault': root_name, 'file': stem}, quote_via=quote)}"


_BLOCK_ID = re.compile(r"[ \t]\^([A-Za-z0-9-]+)[ \t]*$", re.M)


def body_of(text: str) -> str:
    """What the page shows of a note: no frontmatter, no ``^block-id`` markers (Obsidian hides them)."""
    return _BLOCK_ID.sub("", _body(text.replace("\r\n", "\n")))
