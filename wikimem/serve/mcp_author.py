"""MCP middleware for ``wikimem serve``: a tool call made with a token writes log.md lines with the
token's name as their author (the HTTP layer put the token in the request's ASGI scope)."""
from __future__ import annotations

from typing import Any


class AuthorFromRequest:
    async def __call__(self, ctx: Any, call_next):
        from ..knowledge.writer import AUTHOR
        request = getattr(ctx, "request", None)
        scope = getattr(request, "scope", None) or {}
        token = scope.get("wikimem.token")
        if token is None or ctx.method != "tools/call":
            return await call_next(ctx)
        reset = AUTHOR.set(token.name)
        try:
            return await call_next(ctx)
        finally:
            AUTHOR.reset(reset)
