"""WM4xx: the page graph and index.md: orphans, the catalogue out of step with the pages, and the
page thresholds SCHEMA.md sets (``## Page Thresholds``)."""
from __future__ import annotations

import datetime as _dt

from ...errors import ConfigError
from ..registry import Fix, rule

INDEXED_TYPES = ("entity", "concept", "comparison", "query", "source")


def _types(ctx, default: tuple[str, ...]) -> tuple[str, ...]:
    value = ctx.rule_options().get("types", list(default))
    if not isinstance(value, list):
        raise ConfigError(f"SCHEMA.md lint.rules.{ctx.code}.types: expected a list of page types")
    return tuple(str(v) for v in value)


@rule("WM401", "orphan-page", severity="warning")
def orphan_page(ctx):
    """A page nothing links to and index.md does not list: nobody will find it by browsing.
    Example: concepts/Lost.md with no ``[[Lost]]`` anywhere. Memories and superseded pages are
    not expected to be linked (option ``types``: the page types checked). Links from log.md,
    SCHEMA.md and communities.md do not count. The same definition as ``wikimem stats``'s orphans
    (wikimem.graph.stats.orphan_pages)."""
    from ...graph.stats import orphan_pages  # one definition, shared with `wikimem stats`
    types = _types(ctx, INDEXED_TYPES + ("note",))
    for path in orphan_pages(ctx.cache.manifest, types):
        page = ctx.pages.get(path)
        if page is not None:
            yield ctx.finding(path, 1, f"orphan page [[{page.title}]]: no page links to it and index.md "
                                       "does not list it")


@rule("WM402", "index-missing-page", severity="warning")
def index_missing_page(ctx):
    """index.md does not list a current page of a catalogued type (entity, concept, comparison,
    query, source; option ``types``). Example: a new concepts/Chunking.md with no ``[[Chunking]]``
    in index.md. Fixable: adds ``- [[Title]]`` under the type's section."""
    if "index.md" not in ctx.pages:
        return
    types = _types(ctx, INDEXED_TYPES)
    for page in ctx.wiki_pages():
        if page.type in types and not ctx.is_superseded(page.path) and page.path not in ctx.index_listed:
            yield ctx.finding(page.path, 1, f"index.md does not list [[{page.title}]]",
                              fix=Fix("add_to_index", (page.path,), "add to index.md"))


@rule("WM403", "index-lists-missing-page", severity="error")
def index_lists_missing(ctx):
    """index.md links to a page that does not exist (renamed or deleted). Example: ``- [[Old Name]]``
    in index.md after the page was renamed."""
    page = ctx.pages.get("index.md")
    if page is None:
        return
    for link in page.links:
        if not link.resolved and link.target:
            yield ctx.finding("index.md", ctx.link_line(page, link), f"index.md lists missing page [[{link.target}]]")


def _threshold(ctx, key: str):
    value = ctx.schema.thresholds.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        ctx.notice(f"SCHEMA.md threshold {key}: {value!r} is not a number; not checked")
        return None
    return value


@rule("WM404", "entity-min-references", severity="info")
def entity_min_references(ctx):
    """An entity page with fewer inbound links than SCHEMA.md's ``entity_min_references``: too thin
    to deserve its own page, or not yet connected. Example: ``- entity_min_references: 2`` and an
    entity linked from one page."""
    need = _threshold(ctx, "entity_min_references")
    if need is None:
        return
    for page in ctx.wiki_pages():
        n = len(ctx.inbound.get(page.path, ()))
        if page.type == "entity" and not ctx.is_superseded(page.path) and n < need:
            yield ctx.finding(page.path, 1, f"entity [[{page.title}]] has {n} inbound link(s); "
                                            f"entity_min_references is {need}")


@rule("WM405", "concept-min-sections", severity="info")
def concept_min_sections(ctx):
    """A concept page with fewer ``##`` sections than SCHEMA.md's ``concept_min_sections``.
    Example: ``- concept_min_sections: 2`` and a concept page with one section."""
    need = _threshold(ctx, "concept_min_sections")
    if need is None:
        return
    for page in ctx.wiki_pages():
        n = sum(1 for h in page.headings if h.level >= 2)
        if page.type == "concept" and not ctx.is_superseded(page.path) and n < need:
            yield ctx.finding(page.path, 1, f"concept [[{page.title}]] has {n} section(s); "
                                            f"concept_min_sections is {need}")


def axes(page) -> int:
    """A comparison's axes: the rows of its first table (header excluded), else its sections."""
    lines = page.body.split("\n")
    for span in page.spans:
        if span.kind == "table":
            return max(0, span.end_line - span.start_line - 2)
    return sum(1 for h in page.headings if h.level >= 2) if lines else 0


@rule("WM406", "comparison-min-axes", severity="info")
def comparison_min_axes(ctx):
    """A comparison with fewer axes (table rows, else ``##`` sections) than SCHEMA.md's
    ``comparison_min_axes``. Example: ``- comparison_min_axes: 3`` and a two-row table."""
    need = _threshold(ctx, "comparison_min_axes")
    if need is None:
        return
    for page in ctx.wiki_pages():
        if page.type == "comparison" and not ctx.is_superseded(page.path) and axes(page) < need:
            yield ctx.finding(page.path, 1, f"comparison [[{page.title}]] compares {axes(page)} axis/axes; "
                                            f"comparison_min_axes is {need}")


def _date(value) -> _dt.date | None:
    try:
        return _dt.date.fromisoformat(str(value)[:10]) if value else None
    except ValueError:
        return None


def today(ctx) -> _dt.date:
    """Today, or SCHEMA.md's ``lint.today`` (tests and doc examples pin the date)."""
    return _date(ctx.options.today) or _dt.date.today()


@rule("WM407", "query-max-age", severity="info")
def query_max_age(ctx):
    """A query page older than SCHEMA.md's ``query_max_age_days`` (by ``updated``, else
    ``created``): its answer may no longer hold. Example: ``- query_max_age_days: 90`` and a query
    answered a year ago."""
    limit = _threshold(ctx, "query_max_age_days")
    if limit is None:
        return
    now = today(ctx)
    for page in ctx.wiki_pages():
        when = _date(page.updated or page.created)
        if page.type == "query" and when and not ctx.is_superseded(page.path) and (now - when).days > limit:
            yield ctx.finding(page.path, 1, f"query [[{page.title}]] is {(now - when).days} days old "
                                            f"(query_max_age_days is {limit})")


def _as_list(value) -> list:
    return value if isinstance(value, list) else []


def _cited_hashes(ctx, page) -> list[tuple[str, str, str | None]]:
    """(link as written, resolved path or None, sha256 of the cited chunk's text or None) for each
    ``sources`` entry, in the ``"[[page#heading]] sha256:<hex>"`` form query write-back records."""
    from ...qa.writeback import parse_source
    resolved = {l.target: l.resolved for l in page.links if l.key == "sources"}
    out = []
    for entry in _as_list(page.frontmatter.data.get("sources")):  # another shape is WM204's finding
        parsed = parse_source(entry)
        if parsed is None:
            continue
        link, digest = parsed
        target = link[2:-2].split("|")[0].split("#")[0].strip()
        out.append((link, resolved.get(target), digest))
    return out


@rule("WM408", "sources-changed", severity="warning")
def sources_changed(ctx):
    """A page cites something that changed after it was written, so it may be out of date (``wikimem
    review`` lists the same pages with the changed sentences, and ``--refresh`` re-answers a query
    page): a ``sources`` entry recorded with ``sha256:<hex>`` (``wikimem query`` records the cited
    chunk's text, ``wikimem ingest`` the raw/ file's bytes) whose text or file is no longer that,
    or, for a query page's plain ``"[[page]]"`` entries, the source's ``updated`` date is later than
    the query's. Example: a query ``updated: 2026-01-01`` citing a page with ``updated: 2026-03-01``."""
    from ...qa.review import stale_pages
    stale, _ = stale_pages(ctx, refresh=False)
    for page in stale:
        if page.path not in ctx.pages:
            continue
        line = ctx.key_line(ctx.pages[page.path], "sources")
        for reason in page.reasons:
            if reason.kind == "text-changed":
                quoted = f": {reason.changed[0].old!r} no longer reads so" if reason.changed else ""
                yield ctx.finding(page.path, line, f"the text cited from {reason.link} changed after this page was "
                                                   f"written ({reason.path}){quoted}")
            elif reason.kind == "file-changed":
                yield ctx.finding(page.path, line, f"{reason.detail}")
    for page in ctx.wiki_pages():
        if page.type != "query" or page.frontmatter.error:
            continue
        written = _date(page.updated or page.created)
        line = ctx.key_line(page, "sources")
        for link, path, digest in _cited_hashes(ctx, page):
            if digest or path is None or path not in ctx.pages:
                continue  # hashed entries: above; a missing page is WM101's
            changed = _date(ctx.pages[path].updated)
            if written and changed and changed > written:
                yield ctx.finding(page.path, line, f"source {link} changed on {changed} after this answer ({written})")
