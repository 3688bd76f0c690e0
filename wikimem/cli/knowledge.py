"""Commands that write knowledge: versions, memories, ingest, query (wikimem.knowledge, wikimem.qa)."""
from __future__ import annotations

import shlex
from typing import Optional

import typer
from rich.markup import escape

from .app import _moment, app, QueryCommand, AsOfOpt, err, FolderOpt, JsonOpt, out, SinceOpt, TagOpt, TypeOpt, UntilOpt, VaultOpt, _emit_json, _print_warnings, _run


# -- versions and memories (wikimem.knowledge) ---------------------------------------------------




@app.command()
def supersede(old: str = typer.Argument(..., help="The page being replaced (vault-relative path)."),
              new: str = typer.Argument(..., help="The page that replaces it."),
              vault: Optional[str] = VaultOpt, as_json: bool = JsonOpt) -> None:
    """Record that NEW replaces OLD: NEW gets `supersedes`, OLD `status: superseded` (hidden from search)."""
    from ..api import open_vault

    v = _run(lambda: open_vault(vault))
    res = _run(lambda: v.supersede(old, new))
    if as_json:
        _emit_json(res.to_dict())
        return
    _print_warnings(res.warnings)
    verb = "superseded" if res.changed else "already superseded"
    out.print(f"{res.old} [dim]{verb} by[/] {res.new}", highlight=False)


@app.command()
def restore(page: str = typer.Argument(..., help="The superseded page to make active again."),
            vault: Optional[str] = VaultOpt, as_json: bool = JsonOpt) -> None:
    """Undo a supersede: PAGE is active again and the newer page no longer supersedes it (logged)."""
    from ..api import open_vault

    v = _run(lambda: open_vault(vault))
    res = _run(lambda: v.restore(page))
    if as_json:
        _emit_json(res.to_dict())
        return
    _print_warnings(res.warnings)
    if res.changed:
        out.print(f"{res.old} [dim]is active again (no longer superseded by[/] {res.new}[dim])[/]", highlight=False)
    else:
        out.print(f"{res.old} [dim]was not superseded; nothing changed[/]", highlight=False)


@app.command()
def history(page: str = typer.Argument(..., help="Any page of the chain (vault-relative path)."),
            as_of: Optional[str] = AsOfOpt,
            commits: bool = typer.Option(True, "--commits/--no-commits", help="List each version's git commits "
                                         "(when the vault is in a git repository)."),
            vault: Optional[str] = VaultOpt, as_json: bool = JsonOpt) -> None:
    """Every version of a page, oldest to newest: when each was valid, what changed, its git commits."""
    from ..api import open_vault

    v = _run(lambda: open_vault(vault))
    h = _run(lambda: v.history(page, as_of=as_of, commits=commits))
    if as_json:
        _emit_json(h.to_dict())
        return
    changes = {c.new: [] for c in h.changes}
    for c in h.changes:
        changes[c.new].append(c)
    if h.as_of:
        then = ", ".join(h.valid_then) or "none of these versions (the page did not exist yet, or no date says)"
        out.print(f"[cyan]as of {_moment(h.as_of)}:[/] {escape(then)}", highlight=False)
    for i, ver in enumerate(h.versions, 1):
        mark = " [green](current)[/]" if ver.path == h.current else ""
        if h.as_of and ver.path in h.valid_then:
            mark += " [cyan](valid then)[/]"
        span = ""
        if ver.valid_from or ver.valid_until:
            span = f" · valid {_moment(ver.valid_from) if ver.valid_from else '…'} → " \
                   f"{_moment(ver.valid_until) if ver.valid_until else 'now'}"
        out.print(f"{i}. [bold]{escape(ver.title)}[/]  [dim]{escape(ver.path)} · {ver.date or 'no date'} · "
                  f"{ver.status}{span}[/]{mark}", highlight=False)
        for commit in ver.commits:
            out.print(f"   [yellow]{commit.sha[:8]}[/] [dim]{commit.date[:16].replace('T', ' ')} · "
                      f"{escape(commit.author)} · +{commit.added}/-{commit.removed}[/] {escape(commit.message)}",
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
             no_supersede: bool = typer.Option(False, "--no-supersede",
                                               help="Keep an earlier fact this one updates (write beside it)."),
             llm: Optional[str] = typer.Option(None, "--llm", help="ollama | openai: with --from, proposes the memories "
                                               "(extractive on failure); with a FACT, judges add / update / duplicate "
                                               "(the rule on failure). Default: the memory_llm setting."),
             llm_model: str = typer.Option("", "--llm-model", help="Model name for --llm."),
             llm_url: str = typer.Option("", "--llm-url", help="Server URL for --llm."),
             llm_timeout: Optional[float] = typer.Option(None, "--llm-timeout",
                                                         help="Seconds to wait for the model (the whole reply)."),
             vault: Optional[str] = VaultOpt, as_json: bool = JsonOpt) -> None:
    """Store a small fact under memories/ (at most 2,000 characters). The same words in the same order
    are a duplicate (not written again); a fact naming the same subject and attribute with another value
    supersedes the earlier one; where that is unsure, both are kept and the earlier one is named as a
    possible update."""
    from ..api import open_vault
    from ..errors import UsageError

    if (fact is None) == (from_ is None):
        _run(lambda: (_ for _ in ()).throw(UsageError("give either a FACT or --from TRANSCRIPT")))
    v = _run(lambda: open_vault(vault))
    if from_ is not None:
        results = _run(lambda: v.remember_from(from_, dry_run=dry_run, llm=llm, llm_model=llm_model, llm_url=llm_url,
                                               timeout=llm_timeout))
    else:
        results = [_run(lambda: v.remember(fact, kind=kind, about=about, dry_run=dry_run,
                                           supersede=not no_supersede, llm=llm, llm_model=llm_model or None,
                                           llm_url=llm_url or None, llm_timeout=llm_timeout))]
    if as_json:
        _emit_json([r.to_dict() for r in results] if from_ is not None else results[0].to_dict())
        return
    seen_warnings: set[str] = set()
    for r in results:
        _print_warnings([w for w in r.warnings if w not in seen_warnings])
        seen_warnings.update(r.warnings)
        what = {"written": "[green]remembered[/]", "duplicate": "[yellow]already remembered[/]",
                "superseded": "[yellow]remembered before, superseded[/]",
                "would-write": "[cyan]would remember[/]", "refused": "[red]refused[/]"}.get(r.action, r.action)
        line = f"{what} {r.path}" + (f" [dim](supersedes {r.supersedes})[/]" if r.supersedes else "")
        out.print(line, highlight=False)
        for cand in r.possible_update:
            out.print(f"    possible update of {cand} (both kept; `wikimem supersede {cand} {r.path}` if it replaces it)",
                      highlight=False, markup=False)
        if from_ is not None and r.fact:
            out.print(f"    {r.kind}: {r.fact}  {r.source or ''}", highlight=False, markup=False)
    if from_ is not None and not results:
        out.print("no memories found in that conversation")


@app.command()
def memories(kind: Optional[str] = typer.Option(None, "--kind", help="persona | episodic | instruction | decision"),
             about: Optional[str] = typer.Option(None, "--about", help="Only memories about this page or naming this word."),
             as_of: Optional[str] = typer.Option(None, "--as-of", help="Those valid then: YYYY-MM-DD[THH:MM]."),
             all_: bool = typer.Option(False, "--all", help="Also superseded memories."),
             vault: Optional[str] = VaultOpt, as_json: bool = JsonOpt) -> None:
    """List the memories current now (or valid at --as-of), newest first: date, kind, fact, what each
    replaced, and open conflicts (possible updates both still active)."""
    from ..api import open_vault

    v = _run(lambda: open_vault(vault))
    rows = _run(lambda: v.memories(kind=kind, about=about, as_of=as_of, include_all=all_))
    if as_json:
        _emit_json(rows)
        return
    if not rows:
        out.print("no memories")
        return
    for r in rows:
        gone = f"  (superseded by {r['superseded_by']})" if r.get("status") == "superseded" else ""
        out.print(f"{(r['created'] or '?')[:16]}  {r['kind']:<11} {r['fact']}{gone}", highlight=False, markup=False)
        out.print(f"    {r['path']}", highlight=False, markup=False, style="dim")
        for old in r["replaced"]:
            out.print(f"    replaced {old}", highlight=False, markup=False)
        for other in r["conflicts_with"]:
            out.print(f"    conflicts with {other} (one may update the other: wikimem supersede OLD NEW)",
                      highlight=False, markup=False)


@app.command()
def ingest(paths: list[str] = typer.Argument(..., help="Files to bring into raw/."),
           vault: Optional[str] = VaultOpt,
           kind: Optional[str] = typer.Option(None, "--kind", help="article | paper | transcript | asset (default: guessed)."),
           llm: Optional[str] = typer.Option(None, "--llm", help="ollama | openai: add a summary and the pages it names."),
           llm_model: Optional[str] = typer.Option(None, "--llm-model", help="Model name for --llm."),
           llm_url: Optional[str] = typer.Option(None, "--llm-url", help="Server URL for --llm."),
           supersede: bool = typer.Option(False, "--supersede", help="A new source page replaces the most similar one."),
           compile_: bool = typer.Option(False, "--compile", help="Then compile the new sources into entity and "
                                         "concept pages (as `wikimem compile`)."),
           as_json: bool = JsonOpt) -> None:
    """Copy sources into raw/<kind>/ once (same bytes twice: a no-op) and write a source page for each;
    conversation exports (Claude Code JSONL, ChatGPT conversations.json, `Speaker: text` chats) become
    one note per session."""
    from ..api import open_vault

    v = _run(lambda: open_vault(vault))
    report = _run(lambda: v.ingest(paths, kind=kind, llm=llm, llm_model=llm_model, llm_url=llm_url,
                                   supersede=supersede, compile=compile_))
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
        if report.compiled is not None:
            from .compiling import print_compile
            print_compile(report.compiled)
    if not report.ok:
        raise typer.Exit(1)


@app.command(cls=QueryCommand, context_settings={"ignore_unknown_options": True})  # a question taken as typed
def query(question_words: list[str] = typer.Argument(..., metavar="QUESTION", help="The question (any language)."),
          vault: Optional[str] = VaultOpt,
          k: int = typer.Option(6, "-k", "--chunks", min=1, max=50, help="How many chunks to answer from."),
          no_write: bool = typer.Option(False, "--no-write", help="Answer only; do not file a query page."),
          llm: Optional[str] = typer.Option(None, "--llm", help="ollama | openai (default: extractive)."),
          llm_model: Optional[str] = typer.Option(None, "--llm-model", help="Model name for --llm."),
          llm_url: Optional[str] = typer.Option(None, "--llm-url", help="Server URL for --llm."),
          llm_timeout: Optional[float] = typer.Option(None, "--llm-timeout", help="Seconds to wait for the model."),
          folder: Optional[str] = FolderOpt,
          type_: Optional[str] = TypeOpt,
          tag: Optional[list[str]] = TagOpt,
          since: Optional[str] = SinceOpt,
          until: Optional[str] = UntilOpt,
          as_of: Optional[str] = AsOfOpt,
          supersede: bool = typer.Option(False, "--supersede", help="The query page replaces the most similar one."),
          as_json: bool = JsonOpt) -> None:
    """Answer a question from the vault, each sentence cited as a wikilink to its page and heading, and
    file the answer back as queries/<question>.md (the same question again updates that page)."""
    from ..api import open_vault
    from ..core import vault_from_words

    question_words, vault = vault_from_words(question_words, vault)
    question = " ".join(question_words)
    v = _run(lambda: open_vault(vault))
    answer = _run(lambda: v.query(question, k=k, write=not no_write, llm=llm, llm_model=llm_model, llm_url=llm_url,
                                  llm_timeout=llm_timeout, folder=folder, type=type_, tags=tag, since=since,
                                  until=until, supersede=supersede, as_of=as_of))
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
            why = f": {answer.matched}" if answer.matched else ""
            out.print(f"[dim]{answer.page_status} {escape(answer.page)} ({answer.mode}){escape(why)}[/]", highlight=False)
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
def review(pages: Optional[list[str]] = typer.Argument(None, metavar="[PAGE]...",
                                                       help="Only these pages (default: every page with sources)."),
           refresh: bool = typer.Option(False, "--refresh", help="Ask the named stale query pages' questions again "
                                        "(only the marked answer section is rewritten)."),
           every: bool = typer.Option(False, "--all", help="With --refresh: every stale query page."),
           llm: Optional[str] = typer.Option(None, "--llm", help="With --refresh: ollama | openai (default: extractive)."),
           vault: Optional[str] = VaultOpt, as_json: bool = JsonOpt) -> None:
    """Pages whose evidence moved: a cited text or raw/ file changed, a cited page went or was superseded.
    Exit 1 while any is stale."""
    from ..api import open_vault
    from ..errors import UsageError

    if every and not refresh:
        _run(lambda: (_ for _ in ()).throw(UsageError("--all goes with --refresh (review lists every page already)")))
    v = _run(lambda: open_vault(vault))
    if refresh:
        report = _run(lambda: v.refresh_stale(pages or (), every=every, llm=llm))
    else:
        report = _run(lambda: v.review(pages or None))
    if as_json:
        _emit_json(report.to_dict())
    else:
        _print_review(report)
    if report.stale or report.contradictions:
        raise typer.Exit(1)


def _print_review(report) -> None:
    for done in report.refreshed:
        colour = {"refreshed": "green", "unchanged": "green", "skipped": "yellow", "failed": "red"}[done.status]
        out.print(f"[{colour}]{done.status}[/] {escape(done.path)}: {escape(done.detail)}", highlight=False)
        for sentence in done.removed:
            out.print(f"   [red]- {escape(sentence)}[/]", highlight=False)
        for sentence in done.added:
            out.print(f"   [green]+ {escape(sentence)}[/]", highlight=False)
    if report.refreshed and report.stale:
        out.print("[dim]still stale:[/]")
    for page in report.stale:
        out.print(f"[bold]{escape(page.path)}[/]  [dim]{page.type}[/]", highlight=False)
        for reason in page.reasons:
            out.print(f"   [yellow]{reason.kind}[/] {escape(reason.detail)}", highlight=False)
            for change in reason.changed:
                out.print(f"     [red]- {escape(change.old)}[/]", highlight=False)
                out.print(f"     [green]+ {escape(change.new)}[/]" if change.new else "     [dim](nothing like it "
                          "is left in the source)[/]", highlight=False)
                if change.diff and len(change.diff) <= 6:  # the words that changed, when few did
                    out.print("     [dim]changed:[/] " + " ".join(
                        f"[red]{escape(d)}[/]" if d.startswith("-") else f"[green]{escape(d)}[/]" for d in change.diff),
                        highlight=False)
    for c in report.contradictions:
        out.print(f"[bold]{escape(c.page)}[/]  [red]contradiction[/]", highlight=False)
        out.print(f"   page {escape(c.page)}:{c.page_line}: {escape(c.page_sentence)}", highlight=False)
        out.print(f"   source {escape(c.source)}:{c.source_line}: {escape(c.source_sentence)} "
                  f"{escape(c.source_link)}", highlight=False)
    if report.contradictions:
        out.print("[dim]compile held these back; edit the page or `wikimem supersede` it[/]", highlight=False)
    if not report.refreshed or report.stale:
        stale = len(report.stale)
        hint = "; `wikimem review --refresh --all` re-answers the query pages" if any(
            p.type == "query" for p in report.stale) else ""
        out.print(f"[dim]{stale} stale page{'s' if stale != 1 else ''} of {report.checked} with sources{hint}[/]",
                  highlight=False)
