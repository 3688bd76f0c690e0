"""Commands on the knowledge graph: communities, neighbors, path, stats (wikimem.graph)."""
from __future__ import annotations

from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from .app import JsonOpt, VaultArg, VaultOpt, one_vault, _emit_json, _print_warnings, _run, app, err, out


# -- the knowledge graph (wikimem.graph) ---------------------------------------------------------


@app.command()
def communities(vault: Optional[str] = VaultArg,
                vault_option: Optional[str] = VaultOpt,
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
    vault = one_vault(vault, vault_option)
    from ..api import open_vault

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
        err.print(f"[yellow]note:[/] {escape(str(notice))}", highlight=False)
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
              vault: Optional[str] = VaultOpt,
              depth: int = typer.Option(1, "--depth", "-d", min=1, max=3, help="Links away (1..3)."),
              type_: Optional[str] = typer.Option(None, "--type", help="Edge types, comma-separated: "
                                                  "links_to,embeds,supersedes,tagged (default: all but tagged)."),
              min_weight: float = typer.Option(0.0, "--min-weight", min=0.0, help="Skip weaker connections."),
              fanout: int = typer.Option(20, "--fanout", min=1, help="At most this many neighbours per page."),
              as_json: bool = JsonOpt) -> None:
    """Pages linked to PAGE (inbound and outbound, with edge types and weights), up to --depth links away."""
    from ..api import open_vault

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
         vault: Optional[str] = VaultOpt,
         type_: Optional[str] = typer.Option(None, "--type", help="Edge types to follow, comma-separated."),
         directed: bool = typer.Option(False, "--directed", help="Follow links only in the direction written."),
         as_json: bool = JsonOpt) -> None:
    """The shortest chain of links between two pages (exit 1 when there is none)."""
    from ..api import open_vault

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
          vault_option: Optional[str] = VaultOpt,
          no_communities: bool = typer.Option(False, "--no-communities", help="Skip community detection."),
          as_json: bool = JsonOpt) -> None:
    """Counts from the cache: pages by type/folder/tag, links, orphans, hubs, communities, memories, coverage."""
    vault = one_vault(vault, vault_option)
    from ..api import open_vault

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
