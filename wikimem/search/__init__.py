"""Hybrid search (design.md §5), in stages::

    the query read (query_syntax.py: ranked text, page and text conditions)
    -> candidates (rankers.py: BM25 top-N, vector top-N) -> fusion (fusion.py: convex or RRF, typed
       candidates.Candidate) -> re-rank steps (steps.STEPS, each on when the candidates call for it)
    -> one hit per page, the query's text conditions checked (fusion.select) -> hits with lines and links

Operators (docs/search-syntax.md): the free text is ranked; tag:, path:, file: and [property]
narrow the candidates like the filter arguments (with which they combine); phrases, excludes,
line: and section: are checked on each hit's text after ranking (more candidates are fetched so
``limit`` is still met when possible). A query of conditions only lists the pages they admit,
most recent first. A query without operators is ranked exactly as typed.

Every hit carries its score components and who found it. A search never writes: a cache that an
interrupted build left behind, or a damaged vector index, is reported in ``degraded`` and left to
the next build (or the watcher). Only a vault with no usable cache at all is indexed first (its
lexical side), when this process may write it. If the vector side is missing or incomplete the
answer comes from what there is, and says so — never silently, never a crash.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import replace
from typing import Collection, Sequence
from urllib.parse import quote

from ..errors import IndexStaleError, LockError
from ..index.status import vector_coverage, vector_degraded
from ..model import Hit, SearchResult
from . import conditions, fusion, rankers
from .candidates import Candidate
from .filters import MODES, Filters, check_args, make_filters
from .query_syntax import ParsedQuery, parse_query
from .timeline import timeline
from . import tuning
from .tuning import POST_FILTER_FETCH

log = logging.getLogger(__name__)

__all__ = ["MODES", "obsidian_uri", "search"]


def obsidian_uri(vault_name: str, path: str, heading: str | None = None) -> str:
    """A link that opens the page in Obsidian, at ``heading`` when given: Obsidian's URI scheme
    takes the heading after an encoded '#' in ``file``."""
    target = path[:-3] if path.endswith(".md") else path
    if heading:
        target = f"{target}#{heading}"
    return f"obsidian://open?vault={quote(vault_name, safe='')}&file={quote(target, safe='')}"


def _ready(ctx, notices: list[str], degraded: list[str]) -> None:
    """Make sure there is a cache to read. Builds only when there is none usable at all."""
    cache = ctx.cache
    problem = cache.manifest_problem()
    if problem is None:
        meta = cache.meta()
        if meta.get("dirty"):
            degraded.append("cache_interrupted")
            notices.append("the last build was interrupted; results may be incomplete (run `wikimem index`)")
        damaged = cache.artifact_problems(meta)
        if damaged:
            degraded.append("vectors_damaged")
            notices.append("the vector index is damaged; answering from the lexical side (run `wikimem index`)")
        return
    _bootstrap(ctx, problem, notices)


def _bootstrap(ctx, problem: str, notices: list[str]) -> None:
    cache = ctx.cache
    if not cache.writable():
        raise IndexStaleError(f"cannot search: {problem}, and {cache.dir} cannot be written here; "
                              "run `wikimem index` as a user who can write the vault")
    from ..index.build import build
    try:
        report = build(ctx, embed=False)
    except OSError as exc:  # a full disk or a read-only folder: say what, not "a wikimem bug"
        raise IndexStaleError(f"cannot search: {problem}, and the index cannot be built here "
                              f"({exc.strerror or exc}); free space or make {cache.dir} writable, then run "
                              "`wikimem index`") from None
    except LockError:
        if cache.manifest_problem():
            raise
        notices.append("the index is being updated by another process; results are from the last committed state")
        return
    notices.append(f"built the index first ({problem})")
    notices.extend(report.notices)


def search(ctx, query: str, *, limit: int = 10, mode: str = "hybrid", folder: str | None = None,
           type: str | None = None, tags: Sequence[str] | None = None, since: str | None = None,
           until: str | None = None, include_superseded: bool = False, per_page: int = 1,
           paths: Collection[str] | None = None, include_meta: bool = False, literal: bool = False,
           as_of: str | None = None) -> SearchResult:
    """Search the vault. ``query`` may use Obsidian's operators (docs/search-syntax.md); the other
    arguments are filters that combine with them. ``per_page``: hits per page (0: no cap).
    ``literal``: the query is text, not a search a person typed (a note's body sent by the writer's
    similarity check, a coding prompt sent by prime): its words are ranked, nothing in it is an
    operator ("See path:ops" in a note must not filter the candidates). ``as_of``: the pages valid
    then (YYYY-MM-DD, the end of that day, or a date-time; search/timeline.py), each hit in a version
    chain saying where it stands in it."""
    check_args(query, mode, limit, since, until)
    filters = make_filters(folder, type, tags, since, until, include_superseded, paths, include_meta, as_of)
    parsed = ParsedQuery(raw=query, text=" ".join(query.split())) if literal else parse_query(query)
    try:
        with ctx.cache.sound_snapshot() as sound:  # one committed state for every read of this search
            if sound:
                return _search_or_relax(ctx, query, limit, mode, filters, per_page, parsed)
        return _search_or_relax(ctx, query, limit, mode, filters, per_page, parsed)
    except ctx.cache.damage_errors as exc:  # damage that only a query could find (the engine says which errors)
        from ..stores.sidefiles import raise_if_not_damage
        raise_if_not_damage(exc)
        log.warning("the cache is damaged (%s)", exc)
        notices = [f"the cache was damaged ({exc}); rebuilt it"]
        ctx.cache.close_thread()
        if not ctx.cache.writable():
            raise IndexStaleError(f"the cache is damaged ({exc}); run `wikimem index --rebuild`") from None
        from ..index.build import build
        build(ctx, rebuild=True, embed=False, wait=30.0)
        result = _search_or_relax(ctx, query, limit, mode, filters, per_page, parsed)
        return replace(result, notices=tuple(notices) + result.notices)


def _search_or_relax(ctx, raw: str, limit: int, mode: str, filters: Filters, per_page: int,
                     parsed: ParsedQuery) -> SearchResult:
    """A quoted phrase is required, as in Obsidian. When a search finds nothing and a required
    phrase is in no note at all (not merely removed by the query's other conditions), that phrase's
    words are ranked instead and a notice says so; the answer is kept only if some hit matches
    those words (the vector side alone always finds neighbours, which is no answer to a phrase).
    A question quoting a title the notes never spell out ("would she enjoy "The Four Seasons" by
    Vivaldi?") found nothing at all: one LoCoMo question of 383 lost every hit to the operator."""
    result = _search(ctx, raw, limit, mode, filters, per_page, parsed)
    phrases = parsed.required_phrases()
    if result.hits or mode == "vector" or not phrases:
        return result
    absent = [p for p in dict.fromkeys(phrases) if not _held_anywhere(ctx, p)]
    if not absent:
        return result  # the phrases are there: the other conditions left nothing
    looser = parsed.without_phrases(absent)
    again = _search(ctx, raw, limit, mode, filters, per_page, looser, ranked_text=looser.text)
    if not any(h.components.get("bm25_rank") for h in again.hits):
        return result
    said = ", ".join(f'"{p}"' for p in absent)
    notice = (f"no note has the exact phrase {said}: its words are ranked instead" if len(absent) == 1 else
              f"no note has the exact phrases {said}: their words are ranked instead")
    return replace(again, notices=(notice, *again.notices))


def _held_anywhere(ctx, phrase: str) -> bool:
    """Whether some chunk holds ``phrase``, checked on the chunks BM25 ranks best for its words
    (a phrase is in a chunk only if its words are; the few hundred best cover it unless the words
    are everywhere, and then the phrase is too)."""
    check = conditions.text_check(parse_query(f'"{phrase}"'))
    if check is None:
        return False
    n = ctx.settings.candidates * POST_FILTER_FETCH
    ids = [cid for cid, _ in rankers.lexical(ctx.cache, phrase, n, None, set())]
    return any(check(chunk) for chunk in ctx.cache.manifest.chunks_by_id(ids).values())


def _search(ctx, raw: str, limit: int, mode: str, filters: Filters, per_page: int,
            parsed: ParsedQuery, ranked_text: str | None = None) -> SearchResult:
    """``ranked_text``: what the rankers read, when not the query's own (a relaxed phrase's words)."""
    from ..index.embedding import GATE

    started = time.perf_counter()
    notices: list[str] = []
    degraded: list[str] = []
    _ready(ctx, notices, degraded)
    cache = ctx.cache
    settings = ctx.settings
    read = tuple(parsed.explain()) if parsed.groups or parsed.notes else ()
    query = ranked_text or (parsed.text if parsed.groups else raw)  # without operators: ranked exactly as typed
    more, page_ok = conditions.page_filter(cache.manifest, parsed)
    versions = timeline(cache) if filters.as_of or filters.include_superseded else None
    if filters.as_of:
        more, page_ok = conditions.valid_only(more, page_ok, versions.valid_on(filters.as_of), set(versions.pages))
    if more:
        filters = replace(filters, **more)
    text_ok = conditions.text_check(parsed, cache.manifest)
    if parsed.groups and parsed.only_filters:
        hits = _as_on_disk(ctx, _with_versions(_listing(ctx, filters, limit, page_ok, text_ok, parsed), versions),
                           notices)
        return SearchResult(raw, mode, tuple(hits), tuple(degraded), 1.0,
                            (time.perf_counter() - started) * 1000, tuple(notices), read)
    n = max(settings.candidates, limit * max(per_page, 1) * 2)
    if text_ok is not None or page_ok is not None:  # hits are dropped after ranking: fetch more
        n *= POST_FILTER_FETCH
    coverage = 0.0
    narrowing = filters.narrowing
    excluded: set[int] = set()
    if not narrowing and not filters.include_superseded:  # few rows: over-fetch and drop them instead of a join
        excluded = cache.manifest.superseded_vids()

    vector: list[tuple[str, float]] = []
    ready = None  # (index, query vector, transcript query vector, allowed ids) once the vector side can run
    vector_trust = 1.0  # the share of chunks the vector side sees (fusion.candidates)
    if mode in ("hybrid", "vector"):
        meta = cache.meta()
        no_vectors_yet = ctx.settings.embedder != "none" and not cache.vector_store.committed(meta) \
            and not cache.embedder_loaded()
        embedder = None if no_vectors_yet else cache.embedder()
        index = cache.vector_store.load(embedder.identity.dim, meta) if embedder is not None else None
        if no_vectors_yet:
            # no vectors at all yet (a vault indexed a moment ago): answer from the lexical side at
            # once and say so, rather than wait for the model to load (seconds, more on first use)
            degraded.append("vectors_partial")
            notices.append("vectors are not built yet; these results are from the lexical side")
        elif embedder is None:
            degraded.append("vectors_unavailable")
            if cache.embedder_error:
                notices.append(cache.embedder_error)
        elif index is None or meta.get("embedder") != embedder.identity.key:
            if "vectors_damaged" not in degraded:
                degraded.append("vectors_partial")
        else:
            coverage, passages = vector_coverage(  # chunks are counted only for a manifest that never recorded its wants
                meta, 0 if meta.get("vectors_wanted") else cache.manifest.chunk_count(), index.ntotal, index.held_total)
            partial = vector_degraded(meta, coverage, passages)
            if partial:
                degraded.append(partial)
                vector_trust = coverage
            allowed = cache.vector_store.searchable_ids(filters) if narrowing else None
            # embedded before BM25 starts: the model uses every core, and sharing them made both slower
            turns_query = rankers.transcript_query(query, meta.get("speakers"), settings)
            if turns_query and meta.get("prose_chunks") == 0:
                query_for_vectors, turns_query = turns_query, None  # only turns here: one embedding will do
            else:
                query_for_vectors = query
            with GATE.query():
                qvec = embedder.embed_query(query_for_vectors)
                tvec = embedder.embed_query(turns_query) if turns_query else None
            ready = (index, qvec, tvec, allowed, bool(meta.get("speakers")))

    both_sides = mode == "hybrid" and settings.fusion == "convex" and tuning.SCORE_BOTH_SIDES
    lexical: list[tuple[str, float]] = []
    reach = 1.0  # how much of the query the lexical side can match (rankers.lexical_reach)
    lexical_job = None
    if mode in ("hybrid", "lexical"):
        lex_filters = filters if narrowing else None

        def run_lexical():
            if mode != "hybrid":
                return rankers.lexical(cache, query, n, lex_filters, excluded), 1.0
            # deeper than the candidates: the vector side's candidates that BM25 ranks below its top n get
            # their own score, not 0 (fusion.candidates; one ORDER BY over the same matches)
            deep = n * tuning.LEXICAL_DEPTH if both_sides and ready is not None else n
            return rankers.lexical_and_reach(cache, query, deep, lex_filters, excluded)
        if ready is not None:
            # BM25 runs in SQLite (which releases the GIL) on its own connection while FAISS
            # searches here on one thread: the two sides overlap instead of adding up
            lexical_job = cache.runtime.pool().submit(run_lexical)
        else:
            lexical, reach = run_lexical()
    turn_ids: set[str] | None = None
    nearest: dict = {}
    if ready is not None:
        index, qvec, tvec, allowed, has_turns = ready
        from .evidence import script
        near, turn_vids, why = rankers.vector(cache, index, qvec, tvec, n, excluded, allowed, has_turns, script(query))
        ids = cache.manifest.chunk_ids_by_vid(v for v, _ in near)
        vector = [(ids[v], s) for v, s in near if v in ids]
        turn_ids = {ids[v] for v in turn_vids if v in ids} if has_turns else None
        nearest = {ids[v]: found for v, found in why.items() if v in ids}
    if lexical_job is not None:
        lexical, reach = lexical_job.result()
    lexical, deeper = lexical[:n], lexical[n:]
    vector_more: dict = {}
    if ready is not None and both_sides and lexical:
        vector_more = _vector_scores(cache, ready, query, lexical, vector, turn_ids)

    name = ctx.root.name
    vectors_of = (lambda ids: rankers.unit_vectors(cache, ready[0], ids)) if ready is not None else None
    found = fusion.candidates(ctx, query, lexical, vector, settings, mode, turn_ids, nearest, vector_trust,
                              reach, deeper, vector_more)
    nearest.update({cid: why for cid, (_, why) in vector_more.items()})
    if mode == "hybrid" and vectors_of is not None and vector_trust < 1.0:
        fusion.impute_pending(found, vectors_of, settings, vector_trust)
    ranked = fusion.rank(ctx, query, found, settings, mode, filters, vectors_of)
    chosen = fusion.select(cache, ranked, limit, per_page, filters.hidden(), text_ok, page_ok)
    hits = _with_versions(fusion.hits(ctx, chosen, lambda path, heading=None: obsidian_uri(name, path, heading),
                                      nearest, query), versions)
    if mode == "hybrid":
        hits = _without_padding(query, hits, found)
    if mode == "hybrid" and hits and not lexical and any(not c.foreign for c in found.values()):
        # nothing but vectors, for a query in a script the vault's notes are written in: say so, as the
        # hits may be the nearest of nothing (a typo, a word the vault does not have); a query in a
        # script no hit is written in is a cross-language search, where this is how it works
        # ... unless it has no word to look for: stop words only ("the of and"), punctuation, emoji;
        # "no note contains" them would be untrue (every note holds "the")
        from ..stores.analysis import terms
        notices.append("no note contains the query's words; these are only the nearest in meaning" if terms(query)
                       else "the query has no word to search for (only common words, punctuation or symbols); "
                            "these are only the nearest in meaning")
    hits = _as_on_disk(ctx, hits, notices)
    took = (time.perf_counter() - started) * 1000
    return SearchResult(raw, mode, tuple(hits), tuple(degraded), coverage if mode != "lexical" else 1.0,
                        took, tuple(notices), read)


def _vector_scores(cache, ready, query: str, lexical, vector, turn_ids) -> dict:
    """The vector side's score (and ``rankers.Nearest``) for the note chunks BM25 listed and the vector
    side did not return, so that fusion scores every candidate on both sides (fusion.candidates).
    Transcript turns are left out: they are ranked by the query without speakers' names and scaled
    apart from notes."""
    from .evidence import script
    index, qvec = ready[0], ready[1]
    have = {cid for cid, _ in vector}
    wanted = [cid for cid, _ in lexical if cid not in have and (turn_ids is None or cid not in turn_ids)]
    vids = cache.manifest.vids_by_id(wanted)
    if ready[4] and vids:
        turns = cache.manifest.transcript_vids(vids.values())
        vids = {cid: v for cid, v in vids.items() if v not in turns}
    if not vids:
        return {}
    got = rankers.scores_of(cache, index, qvec, vids.values(), script(query))
    return {cid: got[v] for cid, v in vids.items() if v in got}


def _as_on_disk(ctx, hits: list[Hit], notices: list[str]) -> list[Hit]:
    """The hits checked against the files (a stat each, ~10): a note deleted since the last build
    is left out, one changed is kept (its text as indexed) and both are said, so a search with no
    watcher running never answers from a note that is gone without a word."""
    if not hits:
        return hits
    paths = sorted({h.path for h in hits})
    try:
        recorded = ctx.cache.manifest.file_states(paths)
    except (*ctx.cache.damage_errors, OSError):
        return hits
    gone, changed = [], []
    for path in paths:
        try:
            st = os.stat(ctx.root.joinpath(*path.split("/")))
        except FileNotFoundError:
            gone.append(path)
            continue
        except OSError:
            continue
        row = recorded.get(path)
        if row is not None and (st.st_size, st.st_mtime_ns) != (row[1], row[2]):
            changed.append(path)
    hint = "run `wikimem index` (or keep `wikimem watch` running)"
    if gone:
        notices.append(f"{_listed(gone)} deleted since the last build: left out; {hint}")
    if changed:
        notices.append(f"{_listed(changed)} changed since the last build: shown as indexed then; {hint}")
    return [h for h in hits if h.path not in gone] if gone else hits


def _listed(paths: list[str]) -> str:
    return ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "") + \
        (" was" if len(paths) == 1 else " were")


def _without_padding(query: str, hits: list[Hit], found: dict) -> list[Hit]:
    """A one-word query the notes hold (an identifier, a command name: "aria2c") is answered by the
    notes that hold it: hits the vector side alone found are left out, as they were the nearest
    in meaning to a lone word, which is noise (one exact match was shown with nine unrelated pages).
    Kept: every hit with lexical or link evidence, and hits in another script than the query (a
    cross-language search finds them by meaning only)."""
    from ..stores.analysis import terms
    if len(terms(query)) != 1 or not any("lexical" in h.found_by for h in hits):
        return hits
    return [h for h in hits if set(h.found_by) - {"vector"} or getattr(found.get(h.chunk_id), "foreign", False)]


def _with_versions(hits: list[Hit], versions) -> list[Hit]:
    """Each hit in a version chain with where it stands in it (searches that may show old versions)."""
    if versions is None:
        return hits
    return [replace(h, version=v) if (v := versions.version_of(h.path)) else h for h in hits]


def _listing(ctx, filters: Filters, limit: int, page_ok, text_ok, parsed: ParsedQuery) -> list[Hit]:
    """A query of conditions only: the pages they admit (and the filters), most recent first, each
    shown by its first chunk that meets the text conditions (the page's text must meet them too)."""
    cache = ctx.cache
    hidden = filters.hidden()
    chosen = []
    recency: dict[str, str] = {}
    manifest = cache.manifest
    for path, when in conditions.recent_pages(manifest, filters):
        if len(chosen) >= limit:
            break
        if path in hidden or (page_ok is not None and not page_ok(path)):
            continue
        ids = manifest.chunk_ids_of_page(path, filters)
        chunks = manifest.chunks_by_id(ids)
        ordered = [chunks[i] for i in ids if i in chunks]
        if not ordered:
            continue
        if text_ok is not None:
            body = manifest.page_body(path)
            if not parsed.text_matches(body if body is not None else "\n".join(c.text for c in ordered)):
                continue
            ordered = [c for c in ordered if text_ok(c)] or ordered
        recency[ordered[0].id] = when
        chosen.append((Candidate(ordered[0].id, path), ordered[0]))
    name = ctx.root.name
    hits = fusion.hits(ctx, chosen, lambda path, heading=None: obsidian_uri(name, path, heading))
    return [replace(h, score=0.0, components={"recency": recency[h.chunk_id]}, found_by=("filter",)) for h in hits]
