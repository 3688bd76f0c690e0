"""The web page's routes: what each URL under ``/`` and ``/v/NAME/`` reads from the vault, and
which page of ``web`` shows it. Home (``Home.md`` or ``index.md`` when the vault has one, else the
folder tree with page counts), a folder, a tag, search results, a note, an attachment.

Reads go through the vault's ``Tools`` (the MCP tools' calls, with their path rules); a note's
embeds and links through ``VaultSite``, which resolves names as Obsidian does and reads an
embedded note under the same rules as a page read.
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from . import web
from .render import render_note

log = logging.getLogger(__name__)

HOME_NAMES = ("Home.md", "home.md", "index.md", "Index.md")
MAX_LISTED = 2000  # notes listed on a folder or tag page
_RESOLVERS: dict[int, tuple[Any, Any]] = {}  # id(vault) -> (the manifest's links token, Resolver)
_LOCK = threading.Lock()


class VaultSite:
    """``render.Site`` over a served vault: links resolved against the last build's file list."""

    def __init__(self, host):
        self.vault = host.name
        self.ctx = host.vault.ctx
        self._resolver = _resolver(host.vault)
        self._titles: dict[str, str] = {}

    def resolve(self, target: str, source: str, relative: bool = False) -> str | None:
        target = target.strip()
        if not target:
            return source
        if self._resolver is None:
            return None
        return self._resolver.lookup(target, source, relative)[0]

    def read(self, path: str) -> tuple[str, str]:
        from ..agent.pages import note_path
        from ..knowledge.names import refuse_unreadable
        from ..parse import parse_page
        rel = note_path(self.ctx, path)
        refuse_unreadable(self.ctx, rel)  # a hidden or ignored note is not drawn in another one either
        note = self.ctx.files.read_note(rel)
        return parse_page(rel, note.text).title, note.text

    def title(self, path: str) -> str:
        if path not in self._titles:
            rows = []
            try:
                rows = self.ctx.cache.manifest.pages_by_path([path])
            except Exception:  # noqa: BLE001 - no cache: the path is the title
                pass
            self._titles[path] = (rows[0][1] if rows and rows[0][1] else path.rsplit("/", 1)[-1].removesuffix(".md"))
        return self._titles[path]


def _resolver(vault):
    """The vault's link resolver, rebuilt only when a build changed the file set or a page."""
    from ..parse import Resolver
    try:
        manifest = vault.ctx.cache.manifest
        meta = manifest.meta()
        key = (meta.get("links_token"), meta.get("generation"))
        with _LOCK:
            kept = _RESOLVERS.get(id(vault))
            if kept is not None and kept[0] == key and key[0] is not None:
                return kept[1]
        resolver = Resolver(manifest.file_paths(), {}, aliases=manifest.aliases())
    except Exception:  # noqa: BLE001 - no cache yet: links show as missing until the first build
        log.debug("no manifest for link resolution", exc_info=True)
        return None
    with _LOCK:
        _RESOLVERS[id(vault)] = (key, resolver)
    return resolver


# -- the views (each runs in a worker thread) ------------------------------------------------------------
def page_view(host, path: str) -> dict[str, Any]:
    page = host.tools.read_page(path, backlinks=True)
    rel = page["path"]
    site = VaultSite(host)
    related: list[dict[str, Any]] = []
    try:
        related = host.tools.related(rel, limit=8).get("related", [])
    except Exception:  # noqa: BLE001 - no vectors yet: no related list
        pass
    versions = page.get("versions") or {}
    replaced = None
    if versions.get("superseded_by"):
        current = versions.get("current") or versions["superseded_by"][-1]
        replaced = {"path": current, "title": site.title(current)}
    return {"page": page, "html": render_note(page["content"], site, rel), "related": related,
            "obsidian": web.obsidian_url(host.root.name, rel), "replaced": replaced}


def home_view(host) -> dict[str, Any]:
    from ..mcp.tools import plain
    site = VaultSite(host)
    home = None
    for name in HOME_NAMES:
        try:
            title, text = site.read(name)
        except Exception:  # noqa: BLE001 - no such note (or one a read refuses): the next name
            continue
        home = {"path": name, "title": title, "html": render_note(text, site, name)}
        break
    taxonomy = host.tools.taxonomy()
    recent = plain(host.tools.recent("30d", limit=30))
    return {"home": home, "taxonomy": taxonomy, "recent": recent}


def _listing(host, **filters: Any) -> tuple[list[dict[str, Any]], int]:
    pages: list[dict[str, Any]] = []
    total, offset = 0, 0
    while len(pages) < MAX_LISTED:
        got = host.tools.list_pages(offset=offset, limit=500, **filters)
        pages += got["pages"]
        total = got["total"]
        if got.get("next_offset") is None:
            break
        offset = got["next_offset"]
    return pages, total


def folder_view(host, folder: str) -> dict[str, Any]:
    from ..errors import PageNotFoundError
    folder = folder.strip().strip("/")
    pages, total = _listing(host, folder=folder or None)
    prefix = folder + "/" if folder else ""
    direct = [p for p in pages if "/" not in p["path"][len(prefix):]]
    subfolders: dict[str, int] = {}
    for p in pages:
        rest = p["path"][len(prefix):]
        if "/" in rest:
            sub = prefix + rest.split("/", 1)[0]
            subfolders[sub] = subfolders.get(sub, 0) + 1
    if folder and not pages:
        raise PageNotFoundError(f"no notes in folder {folder!r}")
    return {"folder": folder, "pages": direct, "subfolders": sorted(subfolders.items()), "total": total,
            "shown": len(pages)}


def tag_view(host, tag: str) -> dict[str, Any]:
    pages, total = _listing(host, tag=tag)
    return {"tag": tag.strip().lstrip("#"), "pages": pages, "total": total}


# -- the route ------------------------------------------------------------------------------------------------
HEADERS = {"Content-Security-Policy": web.CSP, "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
           "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}


async def respond(server, request):
    """Every GET of the web page: ``/``, ``/v/NAME/`` (home or ``?q=`` search), ``/v/NAME/page/P``,
    ``/v/NAME/folder/F``, ``/v/NAME/tag/T``. An error is an HTML page with its status, never a traceback."""
    import anyio
    from starlette.responses import HTMLResponse, RedirectResponse

    from .operations import api_error, hide_paths
    signed_in = bool(getattr(request.scope["wikimem.token"], "name", ""))
    params = request.path_params
    name = params.get("name")

    def answer(body: str):
        return HTMLResponse(body, headers=HEADERS)
    try:
        if name is None:
            seen = server.visible(request.scope)
            if len(seen) == 1:
                return RedirectResponse(f"/v/{seen[0].name}/", 303)
            return answer(web.vaults_page([h.state() for h in seen], signed_in))
        host = server.host_for(request.scope, name, write=False)
        run = anyio.to_thread.run_sync
        if "path" in params:
            view = await run(lambda: page_view(host, params["path"]))
            return answer(web.note_page(name, view, signed_in))
        if "folder" in params:
            view = await run(lambda: folder_view(host, params["folder"]))
            return answer(web.folder_page(name, view, signed_in))
        if "tag" in params:
            view = await run(lambda: tag_view(host, params["tag"]))
            return answer(web.tag_page(name, view, signed_in))
        query = request.query_params.get("q", "").strip()
        if query:
            result = await run(lambda: host.tools.search(query, top_k=20))
            return answer(web.results_page(name, query, result, signed_in))
        return answer(web.home_page(name, await run(lambda: home_view(host)), signed_in))
    except Exception as exc:  # noqa: BLE001 - an error page, never a traceback
        error = api_error(exc)
        roots = server.hidden_from(request.scope)
        error = hide_paths(error, roots) if roots is not None else error  # no server path to a teammate
        known = name if error.code != "not_found" else None  # a missing page keeps its vault's search box
        return HTMLResponse(web.error_page(error.status, error.message, known), status_code=error.status,
                            headers={**HEADERS, **error.headers})  # a database outage: 503 with Retry-After


async def attachment(server, request):
    """``/v/NAME/file/PATH``: an attachment, read-only; a refusal is a JSON error like the API's."""
    from . import files
    from .operations import ApiError, api_error, hide_paths
    try:
        host = server.host_for(request.scope, request.path_params["name"], write=False)
        return await files.respond(host, request.path_params["file"])
    except files.NotServed as exc:
        error = ApiError(404, str(exc), "not_found")
    except Exception as exc:  # noqa: BLE001 - a JSON error, never a traceback
        error = api_error(exc)
    roots = server.hidden_from(request.scope)
    if roots is not None:
        error = hide_paths(error, roots)
    from .app import _error
    return _error(error)
