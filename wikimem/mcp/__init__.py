"""The MCP server: ``wikimem mcp VAULT`` over stdio, for Claude Code, Cursor, Codex and any client.

Thin by design: every tool is one call into ``wikimem.api.Vault`` and returns plain JSON. The
server keeps the vault open (warm cache, embedder loaded in the background), writes nothing to
stdout but protocol (logs go to stderr), turns every failure into an MCP tool error with a
readable message, serialises writes, and with ``read_only`` does not even list the write tools.
Tools whose API is not in this build (``Vault`` lacks the method) are simply not offered.

- ``tools.py``: the tools, one method each, arguments described;
- ``schemas.py``: argument types and the result types the output schemas are made from;
- ``server.py``: registration (lean schemas), errors, the first-build gate, middleware, ``serve``;
- ``resources.py``: pages as resources, the wiki's workflows as prompts.
"""
from __future__ import annotations

from .resources import add_resources_and_prompts, page_resource_text
from .server import (
    DESTRUCTIVE,
    INSTRUCTIONS,
    SPECS,
    FirstBuildGate,
    HandshakeDone,
    RejectUnknownArguments,
    available,
    build_server,
    lean_schema,
    make_tool,
    serve,
)
from .tools import Tools, plain

__all__ = ["DESTRUCTIVE", "INSTRUCTIONS", "SPECS", "FirstBuildGate", "HandshakeDone", "RejectUnknownArguments",
           "Tools", "add_resources_and_prompts", "available", "build_server", "lean_schema", "make_tool",
           "page_resource_text", "plain", "serve"]
