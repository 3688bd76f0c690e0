"""Commands of the warm process and its clients: serve, token, read."""
from __future__ import annotations

from typing import List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from .app import JsonOpt, VaultOpt, _emit_json, _printable, _run, app, err, out

token_app = typer.Typer(help="API tokens for `wikimem serve` (stored as hashes in your config folder).",
                        no_args_is_help=True)
app.add_typer(token_app, name="token")


@app.command()
def serve(vaults: Optional[List[str]] = typer.Argument(None, metavar="[VAULT]...",
                                                       help="Vault folders (default: the current vault)."),
          named: Optional[List[str]] = typer.Option(None, "--vault", "-V", metavar="NAME=PATH",
                                                    help="A vault under a name of your choosing (repeatable)."),
          host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (beyond loopback: tokens needed)."),
          port: int = typer.Option(8765, "--port", min=0, max=65535, metavar="N", help="Port to listen on."),
          allow_host: Optional[List[str]] = typer.Option(None, "--allow-host", metavar="NAME",
                                                         help="Another Host name clients use for this server "
                                                              "(behind a proxy; repeatable)."),
          rate: float = typer.Option(20.0, "--rate", metavar="N", help="Requests a second per token (0: no limit)."),
          no_watch: bool = typer.Option(False, "--no-watch", help="Do not follow edits (a read-only copy)."),
          ) -> None:
    """One warm process for every client: HTTP API, MCP over HTTP, a web page; one-shot commands
    on these vaults are answered by it."""
    from ..serve.app import ServeConfig, plan, run

    config = ServeConfig(host=host, port=port, allowed_hosts=set(allow_host or ()), rate=rate)
    pairs, store, config = _run(lambda: plan(list(vaults or ()), list(named or ()), config))

    def announce(info) -> None:
        err.print(f"[bold]wikimem serve[/] on {escape(info['url'])}  "
                  f"({'tokens required' if info['tokens'] else 'no token needed on loopback'})", highlight=False)
        for name, root in info["vaults"].items():
            err.print(f"  {escape(name)}: {escape(_printable(root))}  web {escape(info['url'])}v/{escape(name)}/  "
                      f"MCP {escape(info['url'])}mcp/{escape(name)}", highlight=False)
        err.print("[dim]Ctrl-C stops it[/]", highlight=False)

    from .forward import ForwardServer
    _run(lambda: run(pairs, store, config, watch=not no_watch, announce=announce,
                     on_open=lambda vault, mcp: ForwardServer(vault, mcp=mcp).start()))


@token_app.command("add")
def token_add(name: str = typer.Argument(..., help="Who or what uses it, e.g. alice-laptop (log.md's author)."),
              vault: str = typer.Option(..., "--vault", "-V", metavar="NAME",
                                        help="The served vault's name (as serve prints it), or * for all."),
              scope: str = typer.Option("read", "--scope", help="read | write."),
              as_json: bool = JsonOpt) -> None:
    """Make a token; it is printed once and only its hash is kept."""
    from ..serve.tokens import store_here
    store = _run(store_here)
    secret = _run(lambda: store.add(name, vault, scope))
    if as_json:
        _emit_json({"name": name, "vault": vault, "scope": scope, "token": secret, "file": str(store.path)})
        return
    out.print(secret, highlight=False, markup=False)
    err.print(f"[dim]token {escape(name)!s} ({scope} on {escape(vault)}) — shown once; stored as a hash in "
              f"{escape(str(store.path))}[/]", highlight=False)


@token_app.command("list")
def token_list(as_json: bool = JsonOpt) -> None:
    """The tokens (names, vaults, scopes; never the secrets)."""
    from ..serve.tokens import store_here
    store = _run(store_here)
    tokens = _run(store.tokens)
    if as_json:
        _emit_json([{"name": t.name, "vault": t.vault, "scope": t.scope, "created": t.created} for t in tokens])
        return
    if not tokens:
        out.print("no tokens (`wikimem token add NAME --vault VAULT`)")
        return
    table = Table("name", "vault", "scope", "created")
    for t in tokens:
        table.add_row(escape(t.name), escape(t.vault), t.scope, t.created)
    out.print(table)


@token_app.command("revoke")
def token_revoke(name: str = typer.Argument(..., help="The token's name.")) -> None:
    """Revoke a token; a running server refuses it from its next request."""
    from ..serve.tokens import store_here
    gone = _run(lambda: store_here().revoke(name))
    out.print(f"revoked {escape(gone.name)} ({gone.scope} on {escape(gone.vault)})", highlight=False)


@app.command()
def read(page: str = typer.Argument(..., help="A page: vault-relative path (.md may be left out)."),
         vault: Optional[str] = VaultOpt,
         heading: Optional[str] = typer.Option(None, "--heading", help="Only this section ('H1#H2')."),
         as_json: bool = JsonOpt) -> None:
    """Print a page (or one section); --json adds its sha256, frontmatter, backlinks and versions."""
    from ..api import open_vault
    v = _run(lambda: open_vault(vault))
    data = _run(lambda: v.read_page(page, heading=heading))
    if as_json:
        _emit_json(data)
        return
    import sys
    text = data["content"]
    sys.stdout.write(_printable(text if text.endswith("\n") else text + "\n"))
