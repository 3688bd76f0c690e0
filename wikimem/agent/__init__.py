"""What agents see of a vault: page reads shaped for a tool call, listings, the taxonomy, the
session-start briefing and the guards in front of agent writes.

The MCP server (``wikimem.mcp``) and the ``prime`` command call these through ``wikimem.api.Vault``;
nothing here talks MCP, so everything is testable without a server.
"""
