"""``wikimem serve``: one warm process for every client of one or more vaults.

    /health                              liveness (no token)
    /openapi.json                        the JSON API's OpenAPI document
    /v1/vaults                           the vaults the caller's token sees
    /v1/vaults/{name}/search?q=...       and the other operations (operations.OPERATIONS)
    /mcp/{name}  (/mcp: the only vault)  MCP over streamable HTTP, the stdio server's tools
    /, /v/{name}/..., /login             the web page (web.py)

Starlette and uvicorn (both already brought by the MCP SDK) do the HTTP; ``guard.Guard`` decides
who may ask; every operation is a call into the vault's ``mcp.tools.Tools`` in a worker thread.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import parse_qs

from .. import __version__
from .guard import COOKIE, BodyTooLarge, Guard, RateLimiter
from .hosts import VaultHost
from .operations import (
    OPERATIONS,
    ApiError,
    Operation,
    api_error,
    body_arguments,
    hide_paths,
    openapi,
    query_arguments,
    validate,
)
from .tokens import TokenStore

log = logging.getLogger(__name__)

DEFAULT_PORT = 8765
READ_THREADS = int(os.environ.get("WIKIMEM_SERVE_READ_THREADS", "") or 0) or 2 * (os.cpu_count() or 2)
DEFAULT_MAX_BODY = 4 * 1024 * 1024  # 4 MiB: a 1 MiB note (the write limit) as JSON, with room to spare


@dataclass
class ServeConfig:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    require_token: bool = False
    allowed_hosts: set[str] = field(default_factory=set)
    max_body: int = DEFAULT_MAX_BODY
    rate: float = 20.0  # requests a second per token
    burst: int = 60
    # per client address, for logins and requests without a valid token (a guesser gets 429s)
    stranger_rate: float = 1.0
    stranger_burst: int = 20


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None):
    from starlette.responses import Response
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8")
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _error(exc: BaseException, roots: dict[str, Any] | None = None):
    """``exc`` as a JSON answer; ``roots`` (the served vaults' folders by name): the caller is a
    teammate's token, who is told no path of this machine (the log keeps the whole message)."""
    error = api_error(exc)
    if error.status >= 500 and error.status not in (503, 507):
        log.error("request failed: %s", error.message)
    if roots is not None:
        if error.status >= 500:
            log.warning("answered %s: %s", error.status, error.message)
        error = hide_paths(error, roots)
    return _json(error.body(), error.status, error.headers)


class Server:
    """The served vaults, the token store and the ASGI app over them."""

    def __init__(self, hosts: dict[str, VaultHost], store: TokenStore, config: ServeConfig):
        import secrets
        self.hosts = hosts
        self.store = store
        self.config = config
        # bearer secrets for a local `wikimem mcp` bridged to this process (cli/forward.py hands them,
        # over the owner-only socket, to this user's processes only); new at every start
        self.local = {"read": secrets.token_urlsafe(32), "write": secrets.token_urlsafe(32)}

    def mcp_endpoint(self, name: str) -> dict[str, str]:
        """Where a local `wikimem mcp` of vault ``name`` may bridge to: the loopback URL and secrets."""
        host = "127.0.0.1" if self.config.host in ("0.0.0.0", "::", "[::]") else self.config.host
        return {"url": f"http://{_url_host(host)}:{self.config.port}/mcp/{name}", **self.local}

    def _limiter(self, writes: bool):
        """Reads run at most ``READ_THREADS`` at a time (the rest wait their turn, holding no thread):
        Python runs one thread at a time, and twenty searches sharing it each took twenty times as
        long while a write waiting behind them got a twentieth of the time it needs. Writes have
        their own threads (one at a time per vault anyway, under the writer lock)."""
        import anyio
        if not hasattr(self, "_limiters"):
            self._limiters = {False: anyio.CapacityLimiter(READ_THREADS), True: anyio.CapacityLimiter(8)}
        return self._limiters[writes]

    # -- who sees what ------------------------------------------------------------------------
    def host_for(self, scope, name: str, write: bool) -> VaultHost:
        who = scope["wikimem.token"]
        host = self.hosts.get(name)
        sees, may = who.allows(name, write) if host is not None else (False, False)
        if host is None or not sees:  # another vault's token: 404, the names are not revealed
            raise ApiError(404, f"no vault named {name!r} here", "not_found")
        if not may:
            raise ApiError(403, f"token {who.name!r} may only read vault {name!r}", "forbidden")
        problem = host.problem()
        if problem:
            raise ApiError(503, problem, "vault_gone")
        return host

    def hidden_from(self, scope) -> dict[str, Any] | None:
        """The served vaults' folders when the caller holds a teammate's token (not this machine's
        user: no token on loopback, or a bridged local `wikimem mcp`), to keep out of what it is told."""
        from .guard import Anonymous, Local
        if isinstance(scope.get("wikimem.token"), (Anonymous, Local)):
            return None
        return {name: host.root for name, host in self.hosts.items()}

    def visible(self, scope) -> list[VaultHost]:
        who = scope["wikimem.token"]
        return [h for name, h in self.hosts.items() if who.allows(name, False)[0]]

    # -- the JSON API ---------------------------------------------------------------------------
    async def operation(self, request, op: Operation):
        import anyio

        from ..knowledge.writer import AUTHOR
        from ..mcp.server import _when_unlocked
        from ..mcp.tools import plain
        host, args = None, {}
        try:
            host = self.host_for(request.scope, request.path_params["name"], op.writes)
            if op.http == "GET":
                args = query_arguments(op, request.query_params.multi_items())
            else:
                args = body_arguments(op, await _read_json(request))
            args = validate(op, args)
            fn = getattr(host.tools, op.method)
            author = getattr(request.scope["wikimem.token"], "name", "") or None

            def call():
                reset = AUTHOR.set(author)
                try:
                    return plain(fn(**args) if op.writes else _when_unlocked(fn, (), args))
                finally:
                    AUTHOR.reset(reset)
            return _json(await anyio.to_thread.run_sync(call, limiter=self._limiter(op.writes)))
        except ApiError as exc:
            return _error(exc, self.hidden_from(request.scope))
        except Exception as exc:  # noqa: BLE001 - every failure is a JSON answer, never a traceback
            error = api_error(exc)
            if error.status == 500:  # a bug: its traceback goes to the server's log, not to the client
                log.error("%s %s failed", op.http, op.path, exc_info=True)
            if error.status == 409 and host is not None and args.get("path"):
                error.extra["current_sha256"] = _current_sha(host, args["path"])
            return _error(error, self.hidden_from(request.scope))

    async def vaults(self, request):
        from .guard import Anonymous, Local
        local = isinstance(request.scope["wikimem.token"], (Anonymous, Local))
        states = [h.state() for h in self.visible(request.scope)]
        if not local:  # a teammate's token: the vault's name and state, not where it lives on this machine
            for state in states:
                state.pop("root", None)
                if "problem" in state:
                    state["problem"] = "the vault folder is gone or unreadable"
        return _json({"vaults": states})

    async def health(self, request):
        """200 while every vault can serve; 503 (with Retry-After) when one cannot (its folder gone,
        its database down), so a load balancer sends its clients elsewhere. Per vault: database
        reachable, watcher alive and its backlog, the last build (names only, no paths)."""
        import asyncio
        states = [await asyncio.to_thread(h.health) for h in self.hosts.values()]
        gone = sum(1 for h in self.hosts.values() if h.problem())
        down = sum(1 for s in states if not s["ok"])
        for s in states:
            s.pop("problem", None)
            if "database" in s:
                s["database"].pop("error", None) if s["database"]["ok"] else None
        body = {"ok": down == 0, "version": __version__, "vaults": len(self.hosts), "gone": gone,
                "unavailable": down, "per_vault": states}
        if down:
            response = _json(body, 503)
            response.headers["Retry-After"] = "5"
            return response
        return _json(body)

    async def openapi(self, request):
        return _json(openapi("wikimem", __version__))

    # -- MCP over streamable HTTP -------------------------------------------------------------------
    async def mcp(self, scope, receive, send):
        rest = scope["path"][len("/mcp"):].strip("/")
        if not rest:
            seen = self.visible(scope)
            if len(self.hosts) != 1 or not seen:
                raise ApiError(404, "name the vault: /mcp/NAME (GET /v1/vaults lists them)", "not_found")
            rest = seen[0].name
        if "/" in rest:
            raise ApiError(404, f"no such path {scope['path']!r}", "not_found")
        who = scope["wikimem.token"]
        host = self.host_for(scope, rest, write=False)
        _server, app = host.mcp_server("write" if who.allows(rest, True)[1] else "read")
        await app({**scope, "path": "/", "raw_path": b"/", "root_path": ""}, receive, send)

    # -- the web page ---------------------------------------------------------------------------------
    async def web(self, request):
        from .site import respond
        return await respond(self, request)

    async def attachment(self, request):
        from .site import attachment
        return await attachment(self, request)

    async def login(self, request):
        from starlette.responses import HTMLResponse, RedirectResponse

        from . import web
        headers = {"Content-Security-Policy": web.CSP, "Cache-Control": "no-store"}
        if request.method == "GET":
            return HTMLResponse(web.login_page(), headers=headers)
        try:
            form = parse_qs((await request.body()).decode("utf-8"), max_num_fields=4)
        except (ValueError, UnicodeDecodeError, BodyTooLarge):
            form = {}
        token = (form.get("token") or [""])[0].strip()
        if not token or self.store.check(token) is None:
            return HTMLResponse(web.login_page("unknown or revoked token"), status_code=401, headers=headers)
        response = RedirectResponse("/", 303)
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/",
                            secure=request.url.scheme == "https", max_age=30 * 86400)
        return response

    async def logout(self, request):
        from starlette.responses import RedirectResponse
        response = RedirectResponse("/login", 303)
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return response

    # -- assembly ---------------------------------------------------------------------------------------
    def app(self):
        from starlette.applications import Starlette
        from starlette.exceptions import HTTPException
        from starlette.routing import Route

        routes = [Route("/health", self.health), Route("/openapi.json", self.openapi), Route("/v1/vaults", self.vaults),
                  Route("/", self.web), Route("/v/{name}/", self.web), Route("/v/{name}/page/{path:path}", self.web),
                  Route("/login", self.login, methods=["GET", "POST"]), Route("/logout", self.logout)]
        routes += [Route("/v/{name}/file/{file:path}", self.attachment), Route("/v/{name}/folder/{folder:path}", self.web),
                   Route("/v/{name}/tag/{tag:path}", self.web)]  # the web page's attachments and browsing
        for op in OPERATIONS:
            routes.append(Route(f"/v1/vaults/{{name}}{op.path}", _bind(self.operation, op), methods=[op.http],
                                name=f"{op.http.lower()}_{op.method}"))

        async def not_found(request, exc: HTTPException):
            return _json({"error": f"{exc.detail}: {request.method} {request.url.path}", "code": "not_found"
                          if exc.status_code == 404 else "bad_method"}, exc.status_code)

        starlette = Starlette(routes=routes, lifespan=self.lifespan,
                              exception_handlers={HTTPException: not_found})
        server = self

        async def root(scope, receive, send):
            if scope["type"] == "http" and (scope["path"] == "/mcp" or scope["path"].startswith("/mcp/")):
                try:
                    return await server.mcp(scope, receive, send)
                except ApiError as exc:
                    roots = server.hidden_from(scope)
                    return await _send_error(send, hide_paths(exc, roots) if roots is not None else exc)
            try:
                await starlette(scope, receive, send)
            except BodyTooLarge as exc:
                await _send_error(send, ApiError(413, str(exc), "too_large"))

        return Guard(root, store=self.store, require_token=self.config.require_token,
                     allowed_hosts=self.allowed_hosts(), max_body=self.config.max_body,
                     limiter=RateLimiter(self.config.rate, self.config.burst), local=self.local,
                     served=set(self.hosts), strangers=RateLimiter(self.config.stranger_rate, self.config.stranger_burst))

    def allowed_hosts(self) -> set[str]:
        """The Host names a request may carry: loopback's, the bound address, --allow-host, and on a
        bind beyond loopback this machine's own names and addresses (what teammates type)."""
        from .guard import is_loopback
        port = self.config.port
        names = {"localhost", "127.0.0.1", "[::1]", self.config.host, *self.config.allowed_hosts}
        if not is_loopback(self.config.host):
            names |= _own_names()
        names = {f"[{n}]" if ":" in n and not n.startswith("[") else n for n in names}
        return names | {f"{n}:{port}" for n in names}

    @contextlib.asynccontextmanager
    async def lifespan(self, _app):
        async with contextlib.AsyncExitStack() as stack:
            for host in self.hosts.values():
                for scope in ("read", "write"):
                    server, _ = host.mcp_server(scope)
                    await stack.enter_async_context(server.session_manager.run())
            yield


def _bind(fn: Callable, op: Operation):
    async def endpoint(request):
        return await fn(request, op)
    endpoint.__name__ = op.method
    return endpoint


async def _read_json(request) -> Any:
    try:
        raw = await request.body()
    except BodyTooLarge as exc:
        raise ApiError(413, str(exc), "too_large") from None
    if not raw.strip():
        return {}
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ApiError(400, "the request body is not UTF-8", "bad_request") from None
    except RecursionError:
        raise ApiError(400, "the request body is nested too deeply", "bad_request") from None
    except ValueError as exc:
        raise ApiError(400, f"malformed JSON: {exc}", "bad_request") from None


async def _send_error(send, error: ApiError) -> None:
    from .guard import _reply
    await _reply(send, error.status, error.body(), error.headers)


def _current_sha(host: VaultHost, path: Any) -> str | None:
    try:
        from ..agent.pages import note_path
        return host.vault.files.read_note(note_path(host.vault.ctx, str(path))).sha256
    except Exception:  # noqa: BLE001 - gone or unreadable: no current hash to give
        return None


def start_hosts(pairs, *, watch: bool = True, **overrides: Any) -> dict[str, VaultHost]:
    """Open and take each vault (its watcher first: a vault another process watches or serves is
    refused, naming that process); on any failure the ones taken are let go."""
    hosts: dict[str, VaultHost] = {}
    try:
        for name, root in pairs:
            host = VaultHost(name, root, watch=watch, **overrides)
            hosts[name] = host
            host.start()
    except BaseException:
        for host in hosts.values():
            host.stop()
        raise
    return hosts


def plan(vaults: list[str], named: list[str], config: ServeConfig, store: TokenStore | None = None):
    """Check what ``serve`` was asked before anything is opened -> (vault pairs, store, config):
    a non-loopback bind needs a token for a served vault; a token for a served vault makes tokens
    required (else anyone who can reach the port could do what the token holder can't)."""
    from ..errors import UsageError
    from .guard import is_loopback
    from .hosts import parse_vault_specs
    pairs = parse_vault_specs(vaults, named)
    if store is None:  # the database's tokens when the vaults are on the PostgreSQL store, else the file
        from ..config import load_settings
        from .tokens import store_for
        store = store_for([load_settings(root) for _, root in pairs])
    names = {name for name, _ in pairs}
    tokens = [t for t in store.tokens() if t.vault == "*" or t.vault in names]
    if not is_loopback(config.host) and not tokens:
        raise UsageError(f"refusing to listen on {config.host} without a token: anyone who reaches the port could "
                         f"read and write the vault. Add one (`wikimem token add NAME --vault {sorted(names)[0]}`) "
                         "or bind to 127.0.0.1")
    if tokens:
        config.require_token = True
    _port_free(config.host, config.port)
    return pairs, store, config


def _port_free(host: str, port: int) -> None:
    """A port already taken is said before any vault is opened (uvicorn would say it after)."""
    import socket

    from ..errors import UsageError
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror} (another wikimem serve? choose "
                             "another with --port)") from None


def run(pairs, store: TokenStore, config: ServeConfig, *, watch: bool = True,
        announce: Callable[[dict[str, Any]], None] | None = None, on_open: Callable[[Any], Any] | None = None,
        **overrides: Any) -> None:
    """Serve until SIGINT/SIGTERM (uvicorn finishes the requests in flight; every write is atomic,
    so a stop mid-write leaves the old file or the new one, never half of one). ``on_open(vault,
    mcp_endpoint)`` for each vault once it is held; what it returns is ``stop()``ped at the end."""
    from .stopping import sigterm_unwinds
    with sigterm_unwinds() as stopped:
        _serve(pairs, store, config, watch=watch, announce=announce, on_open=on_open, overrides=overrides)
    if stopped():  # cleaned up: now end as SIGTERM asked (a supervisor sees the signal, not an error)
        import signal
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)


def _serve(pairs, store: TokenStore, config: ServeConfig, *, watch: bool, announce, on_open, overrides) -> None:
    import uvicorn

    hosts = start_hosts(pairs, watch=watch, **overrides)
    server = Server(hosts, store, config)
    forwards: list[Any] = []
    try:
        forwards = [on_open(h.vault, server.mcp_endpoint(name)) for name, h in hosts.items()] \
            if on_open is not None else []
        if announce is not None:
            shown = config.host
            if config.host in ("0.0.0.0", "::", "[::]"):  # every address: the name teammates would type
                import socket
                shown = socket.gethostname() or config.host
            announce({"url": f"http://{_url_host(shown)}:{config.port}/", "tokens": config.require_token,
                      "vaults": {name: str(h.root) for name, h in hosts.items()}})
        uvicorn.run(server.app(), host=config.host, port=config.port, log_level="warning",
                    timeout_graceful_shutdown=10, lifespan="on", access_log=False)
    finally:
        for forward in forwards:
            forward.stop()
        for host in hosts.values():
            host.stop()


def _own_names() -> set[str]:
    import socket
    names: set[str] = set()
    try:
        for name in {socket.gethostname(), socket.getfqdn()}:
            names.add(name.lower())
            for info in socket.getaddrinfo(name, None):
                names.add(str(info[4][0]))
    except OSError:
        pass
    return names


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
