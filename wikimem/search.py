"""Hybrid search (design.md §5): BM25 top-N + vector top-N -> weighted RRF -> bounded 1-hop graph
step -> per-page de-duplication. Every hit carries its score components and who found it.

If the vector side is missing or incomplete the answer comes from what there is, and says so in
``degraded`` — never silently, never a crash.
"""
from __future__ import annotations

import logging
import re
import time
from typing import Any, Sequence
from urllib.parse import quote

from .errors import LockError, UsageError
from .index.graph import neighbours
from .model import Hit

log = logging.getLogger(__name__)

MODES = ("hybrid", "lexical", "vector")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
GRAPH_TOP_PAGES = 5
_POOL = None


def _pool():
    """One worker thread for the lexical side (created on first hybrid search)."""
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor
        _POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wikimem-lexical")
    return _POOL
STRONG_LINK = 0.5  # summed link share from the top pages needed to pull a page in


def obsidian_uri(vault_name: str, path: str) -> str:
    target = path[:-3] if path.endswith(".md") else path
    return f"obsidian://open?vault={quote(vault_name, safe='')}&file={quote(target, safe='')}"


def _check_args(query: str, mode: str, since: str | None, until: str | None, limit: int) -> None:
    if not query or not query.strip():
        raise UsageError("empty query: say what to look for")
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r} (choose {', '.join(MODES)})")
    for name, value in (("since", since), ("until", until)):
        if value and not _DATE.match(value):
            raise UsageError(f"--{name} wants a date as YYYY-MM-DD, got {value!r}")
    if limit < 1:
        raise UsageError("limit must be at least 1")


def _ensure_ready(vault, notices: list[str]) -> None:
    """Repair a missing, corrupt or half-written cache before searching (lexical side only;
    embedding never happens inside a search)."""
    cache = vault.cache
    problem = cache.manifest_problem()
    if problem is None:
        meta = cache.meta()
        damaged = cache.artifact_problems(meta)
        if not meta.get("dirty") and not damaged:
            return
        problem = "the cache needs repair" if meta.get("dirty") else f"cache damaged ({', '.join(damaged)})"
    from .index.build import build
    try:
        report = build(vault, embed=False)
    except LockError:
        if cache.manifest_problem():
            raise
        notices.append("the index is being updated by another process; results are from the last committed state")
        return
    notices.append(f"built the index first ({problem})")
    notices.extend(report.notices)


def _filter_sql(folder, type_, tags, since, until, include_superseded) -> tuple[str, list[Any]]:
    """Filters as SQL over the ``chunks`` table aliased ``c`` (both rankers and graph pull-ins)."""
    sql: list[str] = []
    args: list[Any] = []
    if not include_superseded:
        sql.append("AND c.status != 'superseded'")
    if folder:
        sql.append("AND c.path LIKE ? ESCAPE '\\'")
        args.append(folder.strip("/").replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%")
    if type_:
        sql.append("AND c.type = ?")
        args.append(type_)
    for tag in tags or ():
        sql.append("AND c.tags LIKE ?")
        args.append(f'%"{tag.lstrip("#").lower()}"%')
    day = "substr(coalesce(c.updated, c.date, c.created, ''), 1, 10)"
    if since:
        sql.append(f"AND {day} >= ?")
        args.append(since)
    if until:
        sql.append(f"AND {day} != '' AND {day} <= ?")
        args.append(until)
    return " ".join(sql), args


def search(vault, query: str, *, limit: int = 10, mode: str = "hybrid", folder: str | None = None,
           type: str | None = None, tags: Sequence[str] | None = None, since: str | None = None,
           until: str | None = None, include_superseded: bool = False, per_page: int = 1):
    from .api import SearchResult
    from .index import lexical as lexical_index

    _check_args(query, mode, since, until, limit)
    started = time.perf_counter()
    notices: list[str] = []
    _ensure_ready(vault, notices)
    cache = vault.cache
    settings = vault.settings
    n = max(settings.candidates, limit * max(per_page, 1) * 2)
    degraded: list[str] = []
    coverage = 0.0

    filtered = bool(folder or type or tags or since or until)
    where, args = _filter_sql(folder, type, tags, since, until, include_superseded)
    excluded: set[int] = set()
    if not filtered and not include_superseded:  # few rows: over-fetch and drop them instead of a join
        excluded = {r[0] for r in cache.db.execute("SELECT vid FROM chunks WHERE status='superseded'")}

    vector: list[tuple[str, float]] = []
    ready = None  # (index, query vector, allowed ids) once the vector side can run
    if mode in ("hybrid", "vector"):
        embedder = cache.embedder()
        meta = cache.meta()
        index = cache.vectors(embedder.identity.dim) if embedder is not None else None
        if embedder is None:
            degraded.append("vectors_unavailable")
            if cache.embedder_error:
                notices.append(cache.embedder_error)
        elif index is None or meta.get("embedder") != embedder.identity.key:
            degraded.append("vectors_partial")
        else:
            wanted = int(meta.get("vectors_wanted") or cache.chunk_count())
            coverage = min(1.0, index.ntotal / wanted) if wanted else 1.0
            if coverage < 1.0:
                degraded.append("vectors_partial")
            allowed = None
            if filtered:
                allowed = [r[0] for r in cache.db.execute(f"SELECT c.vid FROM chunks c WHERE 1=1 {where}", args)]
                allowed += [r[0] for r in cache.db.execute(
                    f"SELECT p.pid FROM passages p JOIN chunks c ON c.vid = p.vid WHERE 1=1 {where}", args)]
            # embedded before BM25 starts: the model uses every core, and sharing them made both slower
            ready = (index, embedder.embed_query(_vector_query(query, meta.get("speakers"), settings)), allowed)

    lexical: list[tuple[str, float]] = []
    lexical_job = None
    if mode in ("hybrid", "lexical"):
        def run_lexical():
            return lexical_index.search(cache.reader(), query, n, where if filtered else "",
                                        args if filtered else (), exclude=excluded)
        if ready is not None:
            # BM25 runs in SQLite (which releases the GIL) on its own connection while FAISS
            # searches here on one thread: the two sides overlap instead of adding up
            lexical_job = _pool().submit(run_lexical)
        else:
            lexical = run_lexical()
    if ready is not None:
        index, qvec, allowed = ready
        raw = _vector_ranking(cache, index, qvec, n, excluded, allowed)
        ids = cache.chunk_ids_by_vid(v for v, _ in raw)
        vector = [(ids[v], s) for v, s in raw if v in ids]
    if lexical_job is not None:
        lexical = lexical_job.result()
    if mode == "lexical":
        coverage = 1.0 if not degraded else coverage

    hits = fuse(vault, query, lexical, vector, settings, mode, limit, per_page, where, args)
    took = (time.perf_counter() - started) * 1000
    return SearchResult(query, mode, tuple(hits), tuple(degraded), coverage if mode != "lexical" else 1.0,
                        took, tuple(notices))


def _vector_ranking(cache, index, qvec, n: int, excluded: set[int], allowed) -> list[tuple[int, float]]:
    """Chunk vids ranked by the mean of the whole-chunk similarity and the best passage's
    (passages.py); a chunk without passages counts its whole-chunk similarity twice. One FAISS
    search over both kinds of vector; a candidate found by only one kind gets the other from its
    stored vector (chunk) or, for passages not among the hits, the lowest passage score seen."""
    k = 4 * (n + len(excluded))
    raw = index.search(qvec, k, allowed)
    owners = cache.passage_owners(i for i, _ in raw)
    whole: dict[int, float] = {}
    best: dict[int, float] = {}
    for i, score in raw:
        if i in owners:
            vid = owners[i]
            best[vid] = max(best.get(vid, -2.0), score)
        else:
            whole[i] = score
    candidates = (set(whole) | set(best)) - excluded
    if not best:
        ranked = sorted(((v, whole[v]) for v in candidates), key=lambda h: (-round(h[1], 6), h[0]))
        return ranked[:n]
    floor = min(s for i, s in raw if i in owners) if len(raw) >= k else -1.0
    whole.update(index.similarity([v for v in candidates if v not in whole], qvec))
    has_passages = cache.chunks_with_passages(v for v in candidates if v not in best)
    scored = []
    for v in candidates:
        if v not in whole:
            continue  # a passage whose chunk vector is not stored yet (embedding under way)
        part = best.get(v, floor if v in has_passages else whole[v])
        scored.append((v, (whole[v] + part) / 2))
    scored.sort(key=lambda h: (-round(h[1], 6), h[0]))
    return scored[:n]


_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _vector_query(query: str, speakers, settings) -> str:
    """With ``speaker_strip``, names of transcript speakers are left out of the embedded query:
    they pull the vector side towards turns that merely address that person (the speaker boost
    uses the names instead)."""
    if not settings.speaker_strip or not speakers:
        return query
    names = {part.lower() for s in speakers for part in _WORD.findall(s) if len(part) >= 3}
    kept = [tok for tok in query.split() if not (_WORD.findall(tok) and _WORD.findall(tok)[0].lower() in names)]
    stripped = " ".join(kept)
    return stripped if _WORD.search(stripped) else query


def _query_words(query: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(query)}


def _names_in(speaker: str, words: set[str]) -> bool:
    """A speaker is named in the query when one of their name's words (3+ letters) is in it."""
    return any(len(part) >= 3 and part.lower() in words for part in _WORD.findall(speaker))


def _new_parts() -> dict[str, Any]:
    return {"bm25_rank": None, "bm25": None, "vector_rank": None, "vector": None,
            "fused": 0.0, "graph": 0.0, "speaker": 0.0, "context": 0.0}


def _fusion_scores(ranked: Sequence[tuple[str, float]], settings, floor: float | None = None) -> list[float]:
    """Each candidate's share from one ranker, before that ranker's weight.

    ``rrf``: ``1 / (rrf_k + rank)``, scale-free. ``convex`` (the default): the ranker's own score
    rescaled so its best candidate gets 1 and ``floor`` gets 0; a candidate the ranker did not
    return gets 0. BM25 has a natural floor (0: no match), so its share is ``score / best`` and
    does not depend on how many candidates were fetched; cosine has none (multilingual-e5's
    cosines crowd into 0.7-0.9), so the vector side is min-max scaled over its candidate list
    (``floor=None``). Rank fusion throws away how far apart the scores are: a turn whose cosine
    stands well clear of the rest but which BM25 misses ranks no better than one found mid-list by
    both (Bruch et al., "An analysis of fusion functions for hybrid retrieval", 2023). Measured on
    LoCoMo and the held-aside set in benchmarks/README.md."""
    if settings.fusion == "rrf":
        return [1.0 / (settings.rrf_k + rank) for rank in range(1, len(ranked) + 1)]
    if not ranked:
        return []
    scores = [score for _, score in ranked]
    low = min(scores) if floor is None else min(floor, min(scores))
    spread = max(scores) - low
    return [(score - low) / spread if spread > 0 else 1.0 for score in scores]


def _add_neighbour_context(scores: dict[str, float], parts, light, weight: float, span: int) -> None:
    """Conversation context: a transcript turn is lifted ``weight`` of the way towards the best
    candidate turn at most ``span`` turns away in the same session. Evidence in a conversation
    comes in exchanges ("What did you make?" / "A stained glass window for a local church"), so a
    turn beside a strong match is likelier to matter than an isolated weak one. A turn is never
    lifted above its best neighbour (the speaker boost comes after, in ``fuse``), so a session's
    best turn keeps its score and transcripts do not gain on prose notes (which are left alone).
    Measured on LoCoMo (benchmarks/README.md)."""
    by_page: dict[str, dict[int, str]] = {}
    for cid in scores:
        row = light.get(cid)
        if row and row[1]:  # transcript chunks carry their speakers
            by_page.setdefault(row[0], {})[row[2]] = cid
    for turns in by_page.values():
        if len(turns) < 2:
            continue
        for ordinal, cid in turns.items():
            near = [scores[turns[o]] for o in range(ordinal - span, ordinal + span + 1) if o != ordinal and o in turns]
            if near and max(near) > scores[cid]:
                parts[cid]["context"] = round(weight * (max(near) - scores[cid]), 10)


def fuse(vault, query: str, lexical, vector, settings, mode: str, limit: int, per_page: int,
         where: str, args: Sequence[Any]) -> list[Hit]:
    """``where``/``args``: the search's filters as SQL (``_filter_sql``), for pulled-in pages."""
    cache = vault.cache
    parts: dict[str, dict[str, Any]] = {}
    for side, ranked, weight, floor in (("bm25", lexical, settings.weight_lexical, 0.0),
                                        ("vector", vector, settings.weight_vector, None)):
        contributions = _fusion_scores(ranked, settings, floor)
        for rank, ((cid, score), share) in enumerate(zip(ranked, contributions), 1):
            p = parts.setdefault(cid, _new_parts())
            p[f"{side}_rank"] = rank
            p[side] = round(score, 6)
            p["fused"] += weight * share
    light = cache.paths_by_id(parts)  # light rows: full chunks are read for the final hits only
    paths = {cid: row[0] for cid, row in light.items()}
    # speaker-aware ranking for transcripts: "what did Caroline research?" is about what Caroline
    # said, not about turns where someone else addresses her by name
    if settings.speaker_boost and light:
        named = _query_words(query)
        for cid, (_, speakers, _) in light.items():
            if speakers and any(_names_in(s, named) for s in speakers):
                parts[cid]["speaker"] = settings.speaker_boost

    # bounded graph step: pages that neither ranker found but that the top pages link to strongly
    # are pulled in, scored by a decayed share of their parents' scores. Pages already found keep
    # their fused order: re-ranking them by links hurt more than it helped on dense vaults.
    if mode == "hybrid" and settings.graph_weight > 0 and parts:
        page_best: dict[str, float] = {}
        for cid, p in parts.items():
            if cid in paths:
                page_best[paths[cid]] = max(page_best.get(paths[cid], 0.0), p["fused"])
        top = sorted(page_best.items(), key=lambda kv: (-kv[1], kv[0]))[:GRAPH_TOP_PAGES]
        bonus: dict[str, float] = {}
        strength: dict[str, float] = {}
        for page, score in top:
            for other, share in neighbours(cache.db, page, settings.graph_fanout):
                if other in page_best:
                    continue
                bonus[other] = bonus.get(other, 0.0) + settings.graph_weight * score * share
                strength[other] = strength.get(other, 0.0) + share
        for page in sorted(bonus):
            if strength[page] < STRONG_LINK:
                continue
            lead = cache.first_chunk(page, where, args)
            if lead is not None:
                paths[lead.id] = lead.path
                parts[lead.id] = {**_new_parts(), "graph": round(bonus[page], 8)}

    scores = {cid: p["fused"] + p["graph"] for cid, p in parts.items() if cid in paths}
    if settings.neighbour_weight > 0 and settings.neighbour_span > 0:
        _add_neighbour_context(scores, parts, light, settings.neighbour_weight, settings.neighbour_span)
    # the speaker boost comes last: the lift says which exchange is relevant, the boost which of
    # its turns the named person spoke (boosting first lifts the other speaker's replies with it)
    ranked = sorted(((round((score + parts[cid]["context"]) * (1.0 + parts[cid]["speaker"]), 10), cid, parts[cid])
                     for cid, score in scores.items()), key=lambda r: (-r[0], r[1]))
    chosen = []
    seen: dict[str, int] = {}
    for score, cid, p in ranked:
        path = paths[cid]
        if per_page and seen.get(path, 0) >= per_page:
            continue
        seen[path] = seen.get(path, 0) + 1
        chosen.append((score, cid, p))
        if len(chosen) >= limit:
            break
    chunks = cache.chunks_by_id(cid for _, cid, _ in chosen)
    hits: list[Hit] = []
    vault_name = vault.root.name
    for score, cid, p in chosen:
        c = chunks[cid]
        found_by = tuple(side for side, key in (("lexical", "bm25_rank"), ("vector", "vector_rank")) if p[key]) \
            or ("graph",)
        components = {k2: (round(v, 8) if isinstance(v, float) else v) for k2, v in p.items()}
        hits.append(Hit(cid, c.path, c.title, c.heading_path, c.text, score, components, found_by,
                        obsidian_uri(vault_name, c.path), c.type, c.status, c.blocks))
    return hits
