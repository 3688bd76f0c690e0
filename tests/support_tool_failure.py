"""What an MCP tool's failure says to the agent: the text ``run_tool`` puts in its ToolFailure."""
from __future__ import annotations

import pytest


def tool_failure(exc: BaseException) -> str:
    """Run a tool that raises ``exc`` through the MCP server's ``run_tool``; the agent's message."""
    from wikimem.mcp.server import FirstBuildGate, ToolFailure, run_tool

    class Nothing:
        pass

    def tool():
        raise exc
    with pytest.raises(ToolFailure) as failed:
        run_tool(tool, (), {}, False, FirstBuildGate(Nothing()), lambda d: d)
    return str(failed.value)
