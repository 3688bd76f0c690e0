"""The MCP server: ``wikimem mcp VAULT`` over stdio, for Claude Code, Cursor, Codex and any client.

Thin by design: every tool is one call into ``wikimem.api.Vault`` and returns plain JSON. The
server keeps the vault open (warm cache, embedder loaded in the background), writes nothing to
stdout but protocol (logs go to stderr), turns every failure into an MCP tool error with a
readable message, serialises writes, and with ``read_only`` does not even list the write tools.
Tools whose API is not in this build (``Vault`` lacks the method) are simply not offered.

- ``tools.py``: the tools, one method each, arguments described;
- ``schemas.py``: argument types and the result types the output schemas are made from;
- ``server.py``: registration on the SDK (lean schemas), errors, the first-build gate, middleware;
- ``resources.py``: pages as resources, the wiki's workflows as prompts;
- ``stdio.py``, ``protocol.py``, ``checks.py``: ``wikimem mcp``'s stdio server without the SDK (whose
  import took most of its start-up), answering as the SDK server does from ``listing.json``, which
  ``listing.py`` generates from the SDK server (``python -m wikimem.mcp.listing``).

Names are imported on first use, so ``from wikimem.mcp import serve`` imports neither the SDK nor pydantic.
"""
from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "add_resources_and_prompts": "resources", "page_resource_text": "resources",
    "Tools": "tools", "plain": "tools",
    **{name: "server" for name in ("DESTRUCTIVE", "INSTRUCTIONS", "SPECS", "FirstBuildGate", "HandshakeDone",
                                   "RejectUnknownArguments", "available", "build_server", "lean_schema",
                                   "make_tool", "serve")},
}

__all__ = ["DESTRUCTIVE", "INSTRUCTIONS", "SPECS", "FirstBuildGate", "HandshakeDone", "RejectUnknownArguments",
           "Tools", "add_resources_and_prompts", "available", "build_server", "lean_schema", "make_tool",
           "page_resource_text", "plain", "serve"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
