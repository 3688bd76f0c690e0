"""``wikimem compile``: sources into entity and concept pages (wikimem.compile)."""
from __future__ import annotations

from typing import Optional

import typer
from rich.markup import escape

from .app import app, err, JsonOpt, out, VaultOpt, _emit_json, _run


@app.command(name="compile")
def compile_(sources: Optional[list[str]] = typer.Argument(None, metavar="[SOURCE]...",
                                                           help="Only the pages these sources speak about "
                                                                "(a raw/ file or its sources/ page; default: all)."),
             vault: Optional[str] = VaultOpt,
             dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be written; write nothing."),
             llm: Optional[str] = typer.Option(None, "--llm", help="ollama | openai: the model words claims, "
                                               "each kept only with a quote found in its source."),
             llm_model: Optional[str] = typer.Option(None, "--llm-model", help="Model name for --llm."),
             llm_url: Optional[str] = typer.Option(None, "--llm-url", help="Server URL for --llm."),
             llm_timeout: Optional[float] = typer.Option(None, "--llm-timeout", help="Seconds to wait for the model."),
             as_json: bool = JsonOpt) -> None:
    """Write what the sources under raw/ say into entity and concept pages: one marked section per page,
    each sentence followed by its citation; new pages for names SCHEMA.md's threshold of sources use.
    A sentence that contradicts a page is held back for `wikimem review`. Exit 1 when one was."""
    from ..api import open_vault

    v = _run(lambda: open_vault(vault))
    report = _run(lambda: v.compile(sources or (), dry_run=dry_run, llm=llm, llm_model=llm_model, llm_url=llm_url,
                                    llm_timeout=llm_timeout))
    if as_json:
        _emit_json(report.to_dict())
    else:
        print_compile(report)
    if report.contradictions or any(p.status == "failed" for p in report.pages):
        raise typer.Exit(1)


def print_compile(report) -> None:
    for notice in report.notices:
        err.print(f"[yellow]note:[/] {escape(notice)}", highlight=False)
    for dropped in report.dropped_claims:
        err.print(f"[yellow]dropped:[/] {escape(dropped)}", highlight=False)
    colours = {"created": "green", "updated": "green", "would-create": "cyan", "would-update": "cyan",
               "failed": "red"}
    for page in report.pages:
        if page.status == "unchanged" and not page.notice:
            continue
        out.print(f"[{colours.get(page.status, 'dim')}]{page.status:<12}[/] {escape(page.path)} "
                  f"[dim]({page.sentences} sentence{'s' if page.sentences != 1 else ''} from "
                  f"{len(page.sources)} source{'s' if len(page.sources) != 1 else ''})[/]", highlight=False)
        if page.notice:
            out.print(f"   [yellow]{escape(page.notice)}[/]", highlight=False)
    for c in report.contradictions:
        out.print(f"[red]contradiction[/] {escape(c.page)}:{c.page_line} vs {escape(c.source)}:{c.source_line}",
                  highlight=False)
        out.print(f"   page:   {escape(c.page_sentence)}", highlight=False)
        out.print(f"   source: {escape(c.source_sentence)} {escape(c.source_link)}", highlight=False)
    changed = len(report.changed)
    unchanged = sum(p.status == "unchanged" for p in report.pages)
    fresh = sum(s.status == "new" for s in report.sources)
    moved = sum(s.status == "changed" for s in report.sources)
    out.print(f"[dim]{len(report.sources)} source(s) read ({fresh} new, {moved} changed; {report.mode}); {changed} page(s) "
              f"{'to write' if report.dry_run else 'written'}, {unchanged} unchanged, "
              f"{len(report.contradictions)} contradiction(s) held for review[/]", highlight=False)
