"""The web page of ``wikimem serve``, for teammates who do not run Obsidian: search (the same
operators), hits with their heading and passage as plain text, notes drawn as Obsidian draws them
(``render``: embeds, attachments, callouts, highlights, tasks, footnotes), backlinks, related pages,
what replaced a superseded page, a home page (the vault's ``Home.md``/``index.md``, else its folder
tree), folder and tag pages, and recent changes.

Server-rendered HTML with no script at all. A note is untrusted input: Markdown is rendered with
raw HTML off (a ``<script>`` or ``<img onerror>`` in a note is shown as text), every value that
reaches the page is escaped, every URL is built by quoting, and the Content-Security-Policy allows
no script, so even a mistake here would run nothing.
"""
from __future__ import annotations

import html
from typing import Any, Callable
from urllib.parse import quote, urlencode

from .render import hide_block_ids, page_url, plain_links, plain_text, render_note, slug, strip_frontmatter

__all__ = ["CSP", "body_of", "layout", "page_url", "plain_links", "plain_text", "render_markdown", "slug"]

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; media-src 'self'; form-action 'self'; "
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
.error{color:#a33}img{max-width:100%;height:auto}mark{background:#fff3a3;padding:0 .1rem}
.superseded{background:#fff4e5;border:1px solid #f0b46c;padding:.5rem .8rem;border-radius:4px}
.embed{border-left:3px solid #8aa4d6;background:#f7f9fc;margin:1rem 0;padding:.3rem .9rem .3rem 1rem}
.embed-title{font-size:.85rem;color:#666}.embed-cut{font-style:italic}
.callout{border-left:4px solid var(--c);background:var(--bg);border-radius:4px;margin:1rem 0;padding:.5rem .9rem}
.callout-title{font-weight:600;color:var(--c)}details.callout>summary{cursor:pointer}
.callout-content>:first-child{margin-top:.3rem}.callout-content>:last-child{margin-bottom:.2rem}
.callout-note{--c:#2f6fd6;--bg:#e8f0fd}.callout-abstract{--c:#0a8f9c;--bg:#e3f6f7}.callout-tip{--c:#0b8a5b;--bg:#e2f6ee}
.callout-success{--c:#2d8a2d;--bg:#e6f5e6}.callout-question{--c:#b07a00;--bg:#fdf3dc}
.callout-warning{--c:#c75f00;--bg:#fdeedf}.callout-danger{--c:#c92a2a;--bg:#fde5e5}
.callout-example{--c:#7048c4;--bg:#efe9fb}.callout-quote{--c:#666;--bg:#f1f1f1}
li.task{list-style:none;margin-left:-1.3rem}li.task.done{color:#777;text-decoration:line-through}
.math{font-family:ui-monospace,monospace;background:#f5f5f5;padding:0 .2rem}.math-block{display:block;padding:.5rem;white-space:pre-wrap}
.footnotes{font-size:.9rem;color:#444}blockquote{border-left:3px solid #ccc;margin:1rem 0;padding:0 1rem;color:#555}.tree li{margin:.1rem 0}.count{color:#888;font-size:.85rem}
"""


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def search_url(vault: str, query: str) -> str:
    return f"/v/{quote(vault, safe='')}/?{urlencode({'q': query})}"


def folder_url(vault: str, folder: str) -> str:
    return f"/v/{quote(vault, safe='')}/folder/{quote(folder, safe='/')}"


def tag_url(vault: str, tag: str) -> str:
    return f"/v/{quote(vault, safe='')}/tag/{quote(tag, safe='/')}"


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


def render_markdown(text: str, vault: str, self_path: str, resolve: Callable[[str], str | None]) -> str:
    """``text`` as HTML with links resolved by ``resolve(name)`` (no embedded notes drawn): for
    callers without a served vault; the web page itself renders through ``render.render_note``."""
    class _Names:
        def __init__(self):
            self.vault = vault

        def resolve(self, target, source, relative=False):
            return source if not target.strip() else resolve(target)

        def read(self, path):
            from ..errors import UsageError
            raise UsageError("no notes to embed")
    return render_note(text, _Names(), self_path)


def body_of(text: str) -> str:
    """What the page shows of a note: no frontmatter, no ``^block-id`` markers (Obsidian hides them)."""
    return hide_block_ids(strip_frontmatter(text))


# -- the pages -------------------------------------------------------------------------------------
def vaults_page(vaults: list[dict[str, Any]], signed_in: bool) -> str:
    items = "".join(f'<li><a href="/v/{esc(quote(v["name"], safe=""))}/">{esc(v["name"])}</a> '
                    f'<span class="meta">{esc(v["state"])}</span></li>' for v in vaults)
    return layout("vaults", f"<h1>Vaults</h1><ul>{items or '<li>none you may see</li>'}</ul>", signed_in=signed_in)


def _recent(vault: str, recent: dict[str, Any]) -> str:
    rows = []
    for change in recent.get("changes", [])[:30]:
        path = change.get("path", "")
        summary = change.get("summary") or ""
        summary = "" if summary.strip().lower() == str(change.get("kind", "")).lower() else summary
        rows.append(f'<li><a href="{esc(page_url(vault, path))}">{esc(change.get("title") or path)}</a> '
                    f'<span class="meta">{esc(change.get("kind", ""))} · '
                    f'{esc(str(change.get("when", "")).replace("T", " "))}</span>'
                    f'{"<br>" + esc(summary) if summary else ""}</li>')
    return f'<h2>Recent changes</h2><ul id="recent">{"".join(rows) or "<li>nothing lately</li>"}</ul>'


def _tree(vault: str, folders: dict[str, int]) -> str:
    """Folders (two levels, as taxonomy counts them) with their note counts, nested."""
    top: dict[str, list[str]] = {}
    for folder in folders:
        if folder != ".":
            top.setdefault(folder.split("/")[0], []).append(folder)
    items = []
    if folders.get("."):
        items.append(f'<li><a href="{esc(folder_url(vault, ""))}">(top level)</a> '
                     f'<span class="count">{folders["."]}</span></li>')
    for name in sorted(top):
        subs = "".join(f'<li><a href="{esc(folder_url(vault, f))}">{esc(f.split("/", 1)[1])}</a> '
                       f'<span class="count">{folders[f]}</span></li>' for f in sorted(top[name]) if f != name)
        items.append(f'<li><a href="{esc(folder_url(vault, name))}">{esc(name)}</a> '
                     f'<span class="count">{folders.get(name, 0)}</span>{"<ul>" + subs + "</ul>" if subs else ""}</li>')
    return f'<ul class="tree" id="folders">{"".join(items) or "<li>no notes yet</li>"}</ul>'


def _tags(vault: str, tags: dict[str, int], limit: int = 60) -> str:
    shown = list(tags.items())[:limit]
    return ('<p id="tags">' + " · ".join(f'<a href="{esc(tag_url(vault, t))}">#{esc(t)}</a> '
                                         f'<span class="count">{n}</span>' for t, n in shown) + "</p>") if shown else ""


def home_page(vault: str, view: dict[str, Any], signed_in: bool) -> str:
    """The vault's Home.md / index.md when it has one, else its folder tree; then tags and recent changes."""
    taxonomy = view.get("taxonomy") or {}
    browse = (f'<h2>Folders</h2>{_tree(vault, taxonomy.get("folders") or {})}'
              f'{"<h2>Tags</h2>" + _tags(vault, taxonomy["tags"]) if taxonomy.get("tags") else ""}')
    home = view.get("home")
    if home:
        body = (f'<p class="meta">{esc(vault)} · <a href="{esc(page_url(vault, home["path"]))}">{esc(home["path"])}</a>'
                f'</p>{_title_unless_h1(home["title"], home["html"])}<article id="content">{home["html"]}</article>'
                f'<aside>{browse}{_recent(vault, view.get("recent") or {})}</aside>')
    else:
        body = (f'<h1>{esc(vault)}</h1><p class="meta">{_pages(taxonomy.get("notes", 0))}</p>{browse}'
                f'{_recent(vault, view.get("recent") or {})}')
    return layout(vault, body, vault, signed_in=signed_in)


def _pages(n) -> str:
    """"1 page", "12 pages"."""
    return f"{esc(n)} page" + ("" if n == 1 else "s")


def _page_list(vault: str, pages: list[dict[str, Any]]) -> str:
    return "".join(f'<li><a href="{esc(page_url(vault, p["path"]))}">{esc(p.get("title") or p["path"])}</a>'
                   f'{" <span class=meta>" + esc(p["status"]) + "</span>" if p.get("status") not in (None, "active") else ""}'
                   f'</li>' for p in pages)


def folder_page(vault: str, view: dict[str, Any], signed_in: bool) -> str:
    folder = view["folder"]
    crumbs = ['<a href="/v/' + esc(quote(vault, safe="")) + '/">' + esc(vault) + "</a>"]
    parts = folder.split("/") if folder else []
    for i, part in enumerate(parts):
        crumbs.append(f'<a href="{esc(folder_url(vault, "/".join(parts[:i + 1])))}">{esc(part)}</a>')
    subs = "".join(f'<li><a href="{esc(folder_url(vault, f))}">{esc(f.rsplit("/", 1)[-1])}/</a> '
                   f'<span class="count">{n}</span></li>' for f, n in view["subfolders"])
    more = (f'<p class="meta">{view["shown"]} of {view["total"]} notes listed</p>'
            if view["total"] > view["shown"] else "")
    body = (f'<p class="meta">{" / ".join(crumbs)}</p><h1>{esc(folder or "(top level)")}</h1>'
            f'<p class="meta">{_pages(view["total"])}</p>{more}'
            f'{"<h2>Folders</h2><ul class=tree id=subfolders>" + subs + "</ul>" if subs else ""}'
            f'<h2>Pages</h2><ul id="pages">{_page_list(vault, view["pages"]) or "<li>none here</li>"}</ul>')
    return layout(folder or vault, body, vault, signed_in=signed_in)


def tag_page(vault: str, view: dict[str, Any], signed_in: bool) -> str:
    more = f'<p class="meta">{len(view["pages"])} of {view["total"]} listed</p>' if view["total"] > len(view["pages"]) else ""
    body = (f'<h1>#{esc(view["tag"])}</h1><p class="meta">{_pages(view["total"])} '
            f'· <a href="{esc(search_url(vault, "tag:" + view["tag"]))}">search within</a></p>{more}'
            f'<ul id="pages">{_page_list(vault, view["pages"]) or "<li>no page has this tag</li>"}</ul>')
    return layout("#" + view["tag"], body, vault, signed_in=signed_in)


def results_page(vault: str, query: str, result: dict[str, Any], signed_in: bool) -> str:
    hits = []
    for i, hit in enumerate(result.get("hits", []), 1):
        heading = hit.get("heading")
        where = hit["path"] + (f" › {heading}" if heading else "")
        anchor = heading.split(" > ")[-1] if heading else None
        hits.append(f'<div class="hit"><a class="hit-title" href="{esc(page_url(vault, hit["path"], anchor))}">'
                    f'{i}. {esc(hit.get("title") or hit["path"])}</a><div class="where">{esc(where)}</div>'
                    f'<p>{esc(plain_text(hit.get("excerpt", "")))}</p></div>')
    notes = "".join(f'<p class="meta">{esc(n)}</p>' for n in result.get("notices", []))
    body = (f'<h1>Search: {esc(query)}</h1>{notes}'
            f'<div id="hits">{"".join(hits) or "<p>no results</p>"}</div>')
    return layout(f"search {query}", body, vault, query, signed_in=signed_in)


def _title_unless_h1(title: str, rendered: str) -> str:
    """The page's title as its heading, unless its text already opens with that H1."""
    if rendered.lstrip().startswith("<h1") and f">{esc(title)}</h1>" in rendered.split("\n", 1)[0]:
        return ""
    return f'<h1 class="page-title">{esc(title)}</h1>'


def note_page(vault: str, view: dict[str, Any], signed_in: bool) -> str:
    page, rendered = view["page"], view["html"]
    backlinks = "".join(f'<li><a href="{esc(page_url(vault, b["path"]))}">{esc(b.get("title") or b["path"])}</a></li>'
                        for b in page.get("backlinks") or [])
    near = "".join(f'<li><a href="{esc(page_url(vault, r["path"]))}">{esc(r.get("title") or r["path"])}</a></li>'
                   for r in view.get("related") or [])
    folder = page["path"].rsplit("/", 1)[0] if "/" in page["path"] else ""
    meta = (f'<p class="meta"><a href="{esc(folder_url(vault, folder))}">{esc(folder or "(top level)")}</a> / '
            f'{esc(page["path"].rsplit("/", 1)[-1])} · {esc(page.get("type") or "note")}')
    if page.get("status") and page["status"] != "active":
        meta += f' · {esc(page["status"])}'
    tags = " ".join(f'<a href="{esc(tag_url(vault, t))}">#{esc(t)}</a>' for t in page.get("tags") or [])
    meta += (f" · {tags}" if tags else "") + f' · <a href="{esc(view["obsidian"])}">open in Obsidian</a></p>'
    replaced = view.get("replaced")
    banner = (f'<p class="superseded" id="superseded">Superseded: this page was replaced by '
              f'<a href="{esc(page_url(vault, replaced["path"]))}">{esc(replaced["title"])}</a>.</p>') if replaced else ""
    title = page.get("title") or page["path"]
    body = (f'{meta}{banner}{_title_unless_h1(title, rendered)}<article id="content">{rendered}</article>'
            f'<aside><h3>Backlinks</h3><ul id="backlinks">{backlinks or "<li>none</li>"}</ul>'
            f'<h3>Related</h3><ul id="related">{near or "<li>none</li>"}</ul></aside>')
    return layout(title, body, vault, signed_in=signed_in)


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
