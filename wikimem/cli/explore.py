"""Commands that follow the open note and the vault's activity: related, recent."""
from __future__ import annotations

from typing import List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from .app import JsonOpt, VaultOpt, _emit_json, _run, app, err, out


@app.command()
def related(page: str = typer.Argument(..., help="A page: vault-relative path, file name, title or alias."),
            vault: Optional[str] = VaultOpt,
            limit: int = typer.Option(10, "--limit", "-k", min=1, metavar="N", help="Pages to list."),
            unlinked: bool = typer.Option(False, "--unlinked", help="Only pages not yet linked with PAGE."),
            include_superseded: bool = typer.Option(False, "--include-superseded",
                                                    help="Also list superseded pages."),
            as_json: bool = JsonOpt) -> None:
    """Pages nearest PAGE by meaning, unlinked ones first, with the key terms they share."""
    from ..api import open_vault

    v = _run(lambda: open_vault(vault))
    report = _run(lambda: v.related(page, limit=limit, include_linked=not unlinked,
                                    include_superseded=include_superseded))
    if as_json:
        _emit_json(report.to_dict())
        return
    out.print(f"[bold]{escape(report.title)}[/]  [dim]{escape(report.page)}[/]", highlight=False)
    if report.related:
        table = Table("score", "page", "linked", "shared terms")
        for r in report.related:
            table.add_row(f"{r.score:.3f}", escape(r.path), r.link or "[green]no[/]", escape(", ".join(r.terms)))
        out.print(table)
    for notice in report.notices:
        err.print(f"[yellow]note:[/] {escape(notice)}", highlight=False)
    if not report.related and report.degraded:
        raise typer.Exit(1)


@app.command()
def recent(vault: Optional[str] = VaultOpt,
           since: str = typer.Option("7d", "--since", metavar="SPAN",
                                     help="How far back: 30m, 12h, 7d, 2w, or a date (2026-11-30)."),
           type_: Optional[List[str]] = typer.Option(None, "--type", help="Only pages of this type (repeatable)."),
           limit: int = typer.Option(50, "--limit", "-k", min=1, metavar="N", help="Changes to list."),
           as_json: bool = JsonOpt) -> None:
    """Pages created, edited, superseded or written by wikimem lately, newest first."""
    from ..api import open_vault

    v = _run(lambda: open_vault(vault))
    report = _run(lambda: v.recent(since, types=type_, limit=limit))
    if as_json:
        _emit_json(report.to_dict())
        return
    if not report.changes:
        out.print(f"no changes since {report.since}", highlight=False)
        return
    table = Table("when", "change", "page", "summary")
    for c in report.changes:
        table.add_row(c.when.replace("T", " "), c.kind, escape(c.path), escape(c.summary))
    out.print(table)
    if report.total > len(report.changes):
        err.print(f"[dim]{report.total - len(report.changes)} more: --limit or --json[/]", highlight=False)
