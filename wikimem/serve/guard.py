"""Who may ask what: the ASGI middleware in front of every route of ``wikimem serve``.

In order: the ``Host`` header must name this server (DNS rebinding: a web page on another site
resolving its own name to 127.0.0.1 must not reach the vault) and an ``Origin``, when sent, must be
exactly this server's ``scheme://host:port`` (``null``, another port or another scheme is a foreign
page); an API POST must say ``Content-Type: application/json`` (415; a form or ``text/plain`` is
what a foreign page can send without asking first); a login must come from this server's own form
(its ``Origin``: login CSRF); the request body is bounded (413); a token is required where the
server requires one (401), from ``Authorization: Bearer`` or, for the web page's GETs only, its
HttpOnly cookie. Whether one is required is decided again on every request: a token added for a
served vault while the server runs makes every later request need one (and it stays so until the
server restarts: revoking the last token must not open the server). Each token has its own rate
limit, and so has each client address for what it asks without a valid token and for its logins
(429 with ``Retry-After``). The token found is put in the ASGI scope (``wikimem.token``) for the
routes to check its vault and scope, and for log.md's author.
"""
from __future__ import annotations

import hmac
import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio

from ..errors import ConfigError, DatabaseUnavailable
from .tokens import Token, TokenStore

log = logging.getLogger(__name__)

COOKIE = "wikimem_token"
OPEN_PATHS = ("/health", "/login", "/logout", "/favicon.ico")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")
JSON_PATHS = ("/v1/", "/mcp")  # where a POST's body must be JSON, said so
DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Local:
    """A `wikimem mcp` of this machine's user bridged through this process's socket: no token of the
    store, one of the process's two local secrets (read or write); no log.md author, as over stdio."""

    scope: str
    name: str = ""
    vault: str = "*"

    def allows(self, vault: str, write: bool) -> tuple[bool, bool]:
        return True, self.scope == "write" or not write


@dataclass(frozen=True)
class Anonymous:
    """The caller on a server that needs no token (a loopback bind without tokens): may do anything."""

    name: str = ""
    vault: str = "*"
    scope: str = "write"

    def allows(self, vault: str, write: bool) -> tuple[bool, bool]:
        return True, True


def is_loopback(host: str) -> bool:
    import ipaddress
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class RateLimiter:
    """A token bucket per key (a token's name, a client's address): ``rate`` requests a second,
    bursts of ``burst``. At most ``keys`` buckets are kept: past that, the full ones (a key idle for
    ``burst / rate`` seconds, whose bucket is as if new) are forgotten, so a flood of addresses
    costs no memory."""

    def __init__(self, rate: float, burst: int, keys: int = 10_000):
        self.rate, self.burst, self.keys = rate, burst, keys
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """0 when allowed, else the seconds until the next request would be."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            if len(self._buckets) >= self.keys and key not in self._buckets:
                self._forget_full(now)
            level, last = self._buckets.get(key, (float(self.burst), now))
            level = min(float(self.burst), level + (now - last) * self.rate)
            if level >= 1.0:
                self._buckets[key] = (level - 1.0, now)
                return 0.0
            self._buckets[key] = (level, now)
            return (1.0 - level) / self.rate

    def _forget_full(self, now: float) -> None:
        full = [k for k, (level, last) in self._buckets.items() if level + (now - last) * self.rate >= self.burst]
        for key in full:
            del self._buckets[key]
        if len(self._buckets) >= self.keys:  # none full: the oldest half goes (they refill by then anyway)
            for key in sorted(self._buckets, key=lambda k: self._buckets[k][1])[: self.keys // 2]:
                del self._buckets[key]


class Guard:
    def __init__(self, app, *, store: TokenStore, require_token: bool, allowed_hosts: set[str],
                 max_body: int, limiter: RateLimiter, local: dict[str, str] | None = None,
                 served: set[str] | None = None, strangers: RateLimiter | None = None):
        self.app = app
        self.local = local or {}  # scope -> this process's secret for bridged local `wikimem mcp`
        self.store = store
        self.require_token = require_token
        self.served = set(served or ())  # the served vaults' names: a token for one of them makes tokens required
        self.allowed_hosts = {h.lower() for h in allowed_hosts}
        self.max_body = max_body
        self.limiter = limiter
        # per client address: logins, and requests without a valid token (a guesser, a scanner)
        self.strangers = strangers or RateLimiter(1.0, 20)

    def requires_token(self) -> bool:
        """Whether a request needs a token now: as serve started, or since a token for a served vault
        was added (the token file is re-read when it changes). Once required, required until the
        server restarts: revoking the last token must not let everyone in."""
        if not self.require_token and any(t.vault == "*" or t.vault in self.served for t in self.store.tokens()):
            self.require_token = True
            log.warning("a token for a served vault was added: every request now needs one")
        return self.require_token

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        path = scope.get("path", "/")
        method = scope.get("method", "GET")
        refusal = self._origin_problem(headers, scope)
        if refusal:
            return await _reply(send, 403, {"error": refusal, "code": "forbidden_origin"})
        if method == "POST" and path.startswith(JSON_PATHS) and _media_type(headers) != "application/json":
            return await _reply(send, 415, {"error": "a POST to the API must be sent as Content-Type: application/json "
                                            f"(this one: {headers.get('content-type', 'none')!r})",
                                            "code": "unsupported_media_type"})
        if method == "POST" and path == "/login":
            if "origin" not in headers:  # a browser sends it with every form; one sent from elsewhere is refused above
                return await _reply(send, 403, {"error": "a login must come from this server's sign-in page "
                                                "(no Origin header)", "code": "forbidden_origin"})
            wait = self.strangers.take(_address(scope))
            if wait > 0:
                return await _too_many(send, "too many logins from this address; wait", wait)
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                return await _reply(send, 400, {"error": "Content-Length is not a number", "code": "bad_request"})
            if int(length) > self.max_body:
                return await _reply(send, 413, {"error": f"request body of {length} bytes is over the "
                                                f"{self.max_body}-byte limit", "code": "too_large"})
        if not path.startswith(OPEN_PATHS):
            try:
                if self.store.blocking:  # a question to the database: off the event loop, so a slow or dead
                    who, problem = await anyio.to_thread.run_sync(self._caller, headers, scope)  # one stalls no one
                else:
                    who, problem = self._caller(headers, scope)
            except DatabaseUnavailable as exc:  # the tokens' database is down: no one is let in, for now
                log.error("%s", exc)
                lasting = _lasting(exc)
                if lasting:  # waiting does not mend it: no Retry-After, and what to fix (the log has the detail)
                    return await _reply(send, 503, {"error": f"the server cannot check tokens: {lasting}; no one is "
                                                    "let in until its owner fixes it (the server's log says how)",
                                                    "code": "token_store"})
                return await _reply(send, 503, {"error": "the server cannot check tokens now (its database does not "
                                                "answer); try again shortly", "code": "database_unavailable"},
                                    {"Retry-After": "2"})
            except ConfigError as exc:  # the token file is broken: no one is let in; its path stays in the log
                log.error("%s", exc)
                return await _reply(send, 503, {"error": "the server's token file is not valid: no one is let in "
                                                "until its owner fixes it (the server's log says where)",
                                                "code": "token_file"}, {"Retry-After": "5"})
            if problem:
                wait = self.strangers.take(_address(scope))
                if wait > 0:
                    return await _too_many(send, "too many requests without a valid token from this address; wait", wait)
                extra = {"WWW-Authenticate": 'Bearer realm="wikimem"'}
                if _wants_html(headers, scope):  # the web page: to the login form, not a JSON error
                    return await _redirect(send, "/login")
                return await _reply(send, 401, {"error": problem, "code": "unauthorized"}, extra)
            scope["wikimem.token"] = who
            wait = self.limiter.take(who.name) if who.name else 0.0
            if wait > 0:
                return await _too_many(send, f"too many requests for token {who.name!r}; slow down", wait)
        await self.app(scope, _bounded(receive, self.max_body, send), send)

    def _origin_problem(self, headers: dict[str, str], scope) -> str | None:
        host = headers.get("host", "")
        if host.lower() not in self.allowed_hosts and _hostname(host) not in self.allowed_hosts:
            return f"Host {host!r} is not this server's (DNS rebinding?); start serve with --allow-host {_hostname(host)} if it is"
        origin = headers.get("origin")
        if origin is not None:
            scheme = str(scope.get("scheme") or "http").lower()
            if not same_origin(origin, scheme, host):
                return f"Origin {origin!r} is not this server's ({scheme}://{host}): a page of another site may not use it"
        return None

    def _caller(self, headers: dict[str, str], scope) -> tuple[Any, str | None]:
        auth = headers.get("authorization", "")
        presented = None
        if auth:
            kind, _, value = auth.partition(" ")
            if kind.lower() != "bearer" or not value.strip():
                return None, "Authorization must be 'Bearer TOKEN'"
            presented = value.strip()
        elif scope.get("method") in ("GET", "HEAD") and not scope.get("path", "").startswith(("/v1/", "/mcp")):
            presented = _cookie(headers.get("cookie", ""), COOKIE)
        if presented is None:
            if self.requires_token():
                return None, "this server needs a token: send 'Authorization: Bearer TOKEN' (`wikimem token add`)"
            return Anonymous(), None
        for scope, secret in self.local.items():
            if hmac.compare_digest(secret, presented):
                return Local(scope), None
        token: Token | None = self.store.check(presented)
        if token is None:
            return None, "unknown or revoked token"
        return token, None


def _lasting(exc: DatabaseUnavailable) -> str | None:
    """What is wrong with the tokens' database that no retry mends, in a few words for a client
    (no role, table or GRANT: those stay in the server's log), or None for a database that is down."""
    from ..stores.pg import NewerSchema
    from ..stores.pg_grants import MissingGrant
    from ..stores.pg_tokens import TokenTableDamaged
    if isinstance(exc, MissingGrant):
        return "its database role lacks a grant on the token table"
    if isinstance(exc, NewerSchema):
        return "the token table was written by a newer wikimem than this server's"
    if isinstance(exc, TokenTableDamaged):
        return "the token table is not as wikimem made it"
    return None


def same_origin(origin: str, scheme: str, host: str) -> bool:
    """Whether ``origin`` (a request's Origin header) is exactly ``scheme://host`` (the Host header,
    its port or the scheme's default): ``null`` (a sandboxed frame, a file), another scheme and
    another port are other origins, as a browser counts them."""
    if origin.strip().lower() == "null":
        return False
    try:
        parts = urlsplit(origin.strip())
        theirs = (parts.scheme.lower(), (parts.hostname or "").lower(), parts.port or DEFAULT_PORTS.get(parts.scheme.lower()))
    except ValueError:  # a port that is not a number
        return False
    if parts.path not in ("", "/") or parts.query or parts.username is not None or not theirs[1]:
        return False
    name, port = _split_host(host)
    return theirs == (scheme, name, port or DEFAULT_PORTS.get(scheme))


def _split_host(host: str) -> tuple[str, int | None]:
    """A Host header as (name without brackets, port or None)."""
    host = host.strip().lower()
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif host.count(":") == 1:
        name, port = host.split(":")
    else:
        name, port = host, ""
    return name, int(port) if port.isdigit() else None


def _media_type(headers: dict[str, str]) -> str:
    return headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _address(scope) -> str:
    """The key of a client's address limit: its IPv4 address, or its IPv6 /64 (one host's share)."""
    client = scope.get("client")
    if not client:
        return "local"
    address = str(client[0])
    if ":" in address:
        import ipaddress
        try:
            ip = ipaddress.IPv6Address(address.split("%", 1)[0])
        except ValueError:
            return address
        if ip.ipv4_mapped is not None:  # a dual-stack socket's IPv4 client
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return address


async def _too_many(send, message: str, wait: float) -> None:
    await _reply(send, 429, {"error": message, "code": "rate_limited"}, {"Retry-After": str(max(1, round(wait + 0.5)))})


def _hostname(host: str) -> str:
    host = host.lower()
    if host.startswith("["):
        return host.split("]")[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name and value:
            return value
    return None


def _wants_html(headers: dict[str, str], scope) -> bool:
    path = scope.get("path", "")
    return scope.get("method") == "GET" and "text/html" in headers.get("accept", "") and not path.startswith(("/v1/", "/mcp"))


def _bounded(receive, limit: int, send):
    """``receive`` that stops a body (chunked, with no Content-Length) past ``limit`` bytes."""
    seen = 0

    async def wrapped():
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise BodyTooLarge(limit)
        return message
    return wrapped


class BodyTooLarge(Exception):
    def __init__(self, limit: int):
        super().__init__(f"request body over the {limit}-byte limit")
        self.limit = limit


async def _reply(send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


async def _redirect(send, where: str) -> None:
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", where.encode()), (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})
