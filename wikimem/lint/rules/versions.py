"""WM3xx: version chains (``supersedes``): dangling targets, cycles, forks, superseded pages that
do not say so, and current pages that still cite an old version."""
from __future__ import annotations

from ...vault.files import is_raw_path
from ..registry import Fix, rule


def _supersedes_links(page):
    return [l for l in page.links if l.kind == "frontmatter" and l.key == "supersedes"]


@rule("WM301", "supersedes-missing", severity="error")
def supersedes_missing(ctx):
    """``supersedes`` names a page that does not exist, so the version chain is broken. Example:
    ``supersedes: "[[BM25 (old)]]"`` with no such page."""
    for path in sorted(ctx.pages):
        page = ctx.pages[path]
        for link in _supersedes_links(page):
            if not link.resolved:
                yield ctx.finding(path, ctx.link_line(page, link), f"supersedes missing page [[{link.target}]]")
        if page.supersedes and not _supersedes_links(page):
            yield ctx.finding(path, ctx.key_line(page, "supersedes"),
                              f"supersedes {', '.join(page.supersedes)!r} is not written as a [[link]]")


@rule("WM302", "supersedes-cycle", severity="error")
def supersedes_cycle(ctx):
    """Pages that supersede each other in a loop (A supersedes B, B supersedes A): no version is
    the current one. Example: two pages each with ``supersedes`` naming the other."""
    edges = {path: sorted({l.resolved for l in _supersedes_links(p) if l.resolved and l.resolved != path})
             for path, p in ctx.pages.items()}
    # one finding per set of pages that loop (a strongly connected component), at its first page,
    # naming a shortest loop through it: linear in the pages and links (the walk from every page
    # that copied its trail at each step never finished on a 10,000-page chain)
    for component in _loops(edges):
        first = min(component)
        trail = _shortest_loop(first, edges, component)
        others = sorted(component.difference(trail))
        more = f" (also looping with them: {', '.join(others[:5])}{', …' if len(others) > 5 else ''})" if others else ""
        yield ctx.finding(first, ctx.key_line(ctx.pages[first], "supersedes"),
                          "supersedes cycle: " + " -> ".join(trail + [first]) + more)


def _loops(edges: dict[str, list[str]]) -> list[set[str]]:
    """The strongly connected components of more than one page (Tarjan's algorithm, without
    recursion), in a deterministic order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[set[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for nxt in children:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(edges.get(nxt, ()))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return sorted(found, key=min)


def _shortest_loop(first: str, edges: dict[str, list[str]], component: set[str]) -> list[str]:
    """A shortest path ``first -> ... -> first`` inside the component (breadth first, links in
    sorted order), without the closing ``first``."""
    parent: dict[str, str] = {first: ""}
    queue = [first]
    for node in queue:
        for nxt in edges.get(node, ()):
            if nxt == first:
                trail = [node]
                while trail[-1] != first:
                    trail.append(parent[trail[-1]])
                return trail[::-1]
            if nxt in component and nxt not in parent:
                parent[nxt] = node
                queue.append(nxt)
    return [first]  # pragma: no cover - a component always loops back to its first page


@rule("WM303", "stale-reference", severity="warning")
def stale_reference(ctx):
    """A current page links to a superseded page; readers follow it to the old version. Example:
    ``see [[BM25 (early notes)]]`` after BM25.md superseded it (history sections may link on
    purpose: suppress with ``wikimem: {ignore: [WM303]}``)."""
    for page in ctx.wiki_pages():
        if ctx.is_superseded(page.path):
            continue
        for link in page.links:
            if link.key in ("supersedes", "superseded_by") or not link.resolved or link.resolved == page.path:
                continue
            if ctx.is_superseded(link.resolved):
                newer = ctx.superseded_by.get(link.resolved) or [
                    l.resolved for l in ctx.pages[link.resolved].links if l.key == "superseded_by" and l.resolved]
                hint = f"; the current version is {newer[0]}" if newer else ""
                yield ctx.finding(page.path, ctx.link_line(page, link),
                                  f"links to superseded page [[{link.target}]]{hint}")


@rule("WM304", "superseded-not-marked", severity="warning")
def superseded_not_marked(ctx):
    """A page that an active page supersedes still says it is current (no ``status: superseded``),
    so search keeps showing it. Example: old.md without ``status`` while new.md has
    ``supersedes: "[[old]]"``. Fixable: sets ``status: superseded`` and ``superseded_by``."""
    for old, newer in sorted(ctx.superseded_by.items()):
        page = ctx.pages.get(old)
        if page is None or page.status == "superseded" or is_raw_path(old) or page.frontmatter.error:
            continue
        new_title = ctx.pages[newer[0]].title if newer[0] in ctx.pages else newer[0]
        fix = None
        if len(newer) == 1:  # the link names the page by its path: its title may be no page's name at all
            target = newer[0][:-3] if newer[0].lower().endswith(".md") else newer[0]
            fix = Fix("mark_superseded", (old, page.sha256, f"[[{target}]]"), f"mark superseded by {newer[0]}")
        yield ctx.finding(old, ctx.key_line(page, "status"),
                          f"superseded by [[{new_title}]] ({newer[0]}) but not marked status: superseded", fix=fix)


@rule("WM305", "supersede-fork", severity="error")
def supersede_fork(ctx):
    """Two active pages both claim to supersede the same page: which one is current? Example:
    new-a.md and new-b.md both with ``supersedes: "[[old]]"``."""
    for old, newer in sorted(ctx.superseded_by.items()):
        active = [p for p in newer if not ctx.is_superseded(p)]
        if len(active) > 1:
            for path in active:
                yield ctx.finding(path, ctx.key_line(ctx.pages[path], "supersedes"),
                                  f"[[{ctx.pages[old].title if old in ctx.pages else old}]] ({old}) is also "
                                  f"superseded by {', '.join(p for p in active if p != path)}")


@rule("WM306", "supersede-dates", severity="warning")
def supersede_dates(ctx):
    """A version chain's dates are in the wrong order, so ``--as-of`` cannot tell which version held
    when: a page superseded before it was created, a newer version created before the one it
    replaces, or a ``superseded_on`` that is not a date. Example: old.md ``created: 2026-03-01``
    with ``superseded_on: 2026-02-01``."""
    from ...search.timeline import moment
    for path, page in sorted(ctx.pages.items()):
        created = moment(page.created)
        raw_on = page.frontmatter.get("superseded_on")
        on = moment(raw_on)
        if raw_on not in (None, "") and on is None:
            yield ctx.finding(path, ctx.key_line(page, "superseded_on"),
                              f"superseded_on {raw_on!r} is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS)")
        elif on and created and on < created:
            yield ctx.finding(path, ctx.key_line(page, "superseded_on"),
                              f"superseded on {on[:16].replace('T', ' ')}, before it was created "
                              f"({created[:16].replace('T', ' ')})")
        for link in _supersedes_links(page):
            old = ctx.pages.get(link.resolved or "")
            if old is None or old.path == path:
                continue
            before = moment(old.created)
            if created and before and created < before:
                yield ctx.finding(path, ctx.link_line(page, link),
                                  f"created {created[:16].replace('T', ' ')}, before the version it supersedes "
                                  f"([[{old.title}]], created {before[:16].replace('T', ' ')})")
