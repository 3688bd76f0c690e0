"""Who may ask what: the ASGI middleware in front of every route of ``wikimem serve``.

In order: the ``Host`` header and any ``Origin`` must name this server (DNS rebinding: a web page
on another site resolving its own name to 127.0.0.1 must not reach the vault); the request body is
bounded (413); a token is required where the server requires one (401), from ``Authorization:
Bearer`` or, for the web page's GETs only, its HttpOnly cookie; each token has its own rate limit
(429 with ``Retry-After``). The token found is put in the ASGI scope (``wikimem.token``) for the
routes to check its vault and scope, and for log.md's author.
"""
from __future__ import annotations

import hmac
import json
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError
from .tokens import Token, TokenStore

COOKIE = "wikimem_token"
OPEN_PATHS = ("/health", "/login", "/logout", "/favicon.ico")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


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
    """A token bucket per token name: ``rate`` requests a second, bursts of ``burst``."""

    def __init__(self, rate: float, burst: int):
        self.rate, self.burst = rate, burst
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """0 when allowed, else the seconds until the next request would be."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            level, last = self._buckets.get(key, (float(self.burst), now))
            level = min(float(self.burst), level + (now - last) * self.rate)
            if level >= 1.0:
                self._buckets[key] = (level - 1.0, now)
                return 0.0
            self._buckets[key] = (level, now)
            return (1.0 - level) / self.rate


class Guard:
    def __init__(self, app, *, store: TokenStore, require_token: bool, allowed_hosts: set[str],
                 max_body: int, limiter: RateLimiter, local: dict[str, str] | None = None):
        self.app = app
        self.local = local or {}  # scope -> this process's secret for bridged local `wikimem mcp`
        self.store = store
        self.require_token = require_token
        self.allowed_hosts = {h.lower() for h in allowed_hosts}
        self.max_body = max_body
        self.limiter = limiter

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        path = scope.get("path", "/")
        refusal = self._origin_problem(headers)
        if refusal:
            return await _reply(send, 403, {"error": refusal, "code": "forbidden_origin"})
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                return await _reply(send, 400, {"error": "Content-Length is not a number", "code": "bad_request"})
            if int(length) > self.max_body:
                return await _reply(send, 413, {"error": f"request body of {length} bytes is over the "
                                                f"{self.max_body}-byte limit", "code": "too_large"})
        if not path.startswith(OPEN_PATHS):
            try:
                who, problem = self._caller(headers, scope)
            except ConfigError as exc:  # the token file is broken: no one is let in, and the reply says why
                return await _reply(send, 503, {"error": str(exc), "code": "token_file"}, {"Retry-After": "5"})
            if problem:
                extra = {"WWW-Authenticate": 'Bearer realm="wikimem"'}
                if _wants_html(headers, scope):  # the web page: to the login form, not a JSON error
                    return await _redirect(send, "/login")
                return await _reply(send, 401, {"error": problem, "code": "unauthorized"}, extra)
            scope["wikimem.token"] = who
            wait = self.limiter.take(who.name) if who.name else 0.0
            if wait > 0:
                return await _reply(send, 429, {"error": f"too many requests for token {who.name!r}; slow down",
                                                "code": "rate_limited"}, {"Retry-After": str(max(1, round(wait + 0.5)))})
        await self.app(scope, _bounded(receive, self.max_body, send), send)

    def _origin_problem(self, headers: dict[str, str]) -> str | None:
        host = headers.get("host", "")
        if host.lower() not in self.allowed_hosts and _hostname(host) not in self.allowed_hosts:
            return f"Host {host!r} is not this server's (DNS rebinding?); start serve with --allow-host {_hostname(host)} if it is"
        origin = headers.get("origin")
        if origin and origin != "null":
            parts = urlsplit(origin)
            netloc = (parts.netloc or "").lower()
            if netloc != host.lower() and netloc not in self.allowed_hosts:
                return f"Origin {origin!r} is not this server's"
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
            if self.require_token:
                return None, "this server needs a token: send 'Authorization: Bearer TOKEN' (`wikimem token add`)"
            return Anonymous(), None
        for scope, secret in self.local.items():
            if hmac.compare_digest(secret, presented):
                return Local(scope), None
        token: Token | None = self.store.check(presented)
        if token is None:
            return None, "unknown or revoked token"
        return token, None


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
