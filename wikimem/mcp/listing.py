"""What the stdio server lists, generated once from the SDK server so that both list exactly the same.

``wikimem mcp`` answers ``tools/list``, ``resources/list``, ``resources/templates/list`` and
``prompts/list`` from ``listing.json`` instead of building the SDK server (whose import alone took
1.2-1.5 s of every start). That file is generated from ``build_server`` -- the SDK server ``wikimem
serve`` runs -- through the SDK's own result serialiser, for each protocol era (the initialize
handshake of 2024-11-05 .. 2025-11-25, and the per-request envelope of 2026-07-28) and for read-write
and read-only servers; it also keeps each tool's argument schema as pydantic generated it (optional
arguments nullable, defaults), which stdio.py checks calls against (checks.py).

After changing a tool (a docstring, an argument, a result type), a resource or a prompt::

    python -m wikimem.mcp.listing

tests/test_mcp_stdio.py fails, saying so, while the shipped listing differs from the live one.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

MODES = ("read-write", "read-only")
LEGACY_VERSION = "2025-11-25"  # every handshake-era version has this era's result shapes
MODERN_VERSION = "2026-07-28"
LISTS = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")
DATA = Path(__file__).with_name("listing.json")  # package data (pyproject: wikimem.mcp *.json)
REGENERATE = "python -m wikimem.mcp.listing"


_LOADED: dict[str, Any] = {}


def load() -> dict[str, Any]:
    """The shipped listing (listing.json), read once."""
    if not _LOADED:
        _LOADED.update(json.loads(DATA.read_text(encoding="utf-8")))
    return _LOADED


def _wire(method: str, version: str, result: Any) -> dict[str, Any]:
    """A handler's result as the SDK server puts it on the wire at ``version`` (runner._serialize)."""
    from mcp_types.methods import serialize_server_result
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    wire = serialize_server_result(method, version, dumped)
    if version == MODERN_VERSION and wire.get("resultType") is None:
        wire["resultType"] = "complete"
    return wire  # a 2026-era result also gets the serverInfo stamp; stdio.py adds it


def _strip(schema: Any) -> Any:
    """An argument schema without what only people read (titles below the top, descriptions)."""
    if isinstance(schema, list):
        return [_strip(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: (_strip(v) if k != "properties" else {n: _strip(s) for n, s in v.items()})
            for k, v in schema.items() if k not in ("title", "description")}


def generate(vault_path: str | Path | None = None) -> dict[str, Any]:
    """The listing of the SDK server ``build_server`` makes, live (imports the SDK)."""
    import tempfile

    import anyio
    import mcp_types as types

    from ..api import open_vault
    from .checks import unsupported
    from .server import FirstBuildGate, available, build_server, make_tool
    from .tools import Tools

    with tempfile.TemporaryDirectory(prefix="wikimem-listing-") as tmp:
        vault = open_vault(vault_path or tmp, embedder="none")
        try:
            out: dict[str, Any] = {}
            for mode in MODES:
                read_only = mode == "read-only"
                server = build_server(vault, read_only=read_only)

                async def lists(server=server) -> dict[str, Any]:
                    return {"tools/list": types.ListToolsResult(tools=await server.list_tools()),
                            "resources/list": types.ListResourcesResult(resources=await server.list_resources()),
                            "resources/templates/list": types.ListResourceTemplatesResult(
                                resource_templates=await server.list_resource_templates()),
                            "prompts/list": types.ListPromptsResult(prompts=await server.list_prompts())}

                results = anyio.run(lists)
                tools, gate = Tools(vault), FirstBuildGate(vault)
                arguments = {}
                for name, method, writes in available(vault, read_only):
                    schema = make_tool(tools, name, method, writes, gate).fn_metadata.arg_model.model_json_schema()
                    schema = {"title": schema.get("title"), **_strip(schema)}
                    problems = unsupported(schema)
                    if problems:
                        raise ValueError(f"tool {name}: the stdio server cannot check {problems} (checks.py)")
                    arguments[name] = schema
                for tool in results["tools/list"].tools:
                    problems = unsupported(tool.output_schema) if tool.output_schema is not None else []
                    if problems:
                        raise ValueError(f"tool {tool.name}: the stdio server cannot check {problems} (checks.py)")
                out[mode] = {"legacy": {m: _wire(m, LEGACY_VERSION, r) for m, r in results.items()},
                             "modern": {m: _wire(m, MODERN_VERSION, r) for m, r in results.items()},
                             "arguments": arguments}
            return out
        finally:
            vault.close()


def render(listing: dict[str, Any]) -> str:
    """listing.json's text (indented: a regenerated listing is reviewed as a diff)."""
    return json.dumps(listing, ensure_ascii=False, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    listing = generate()
    if "--check" in argv:
        same = listing == load()
        print("listing.json is up to date" if same else f"listing.json is stale: run {REGENERATE}")
        return 0 if same else 1
    DATA.write_text(render(listing), encoding="utf-8")
    print(f"wrote {DATA}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
