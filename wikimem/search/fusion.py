"""Fusion: each ranker's list becomes a share of the candidate's score, weighted and summed.

Then the re-rank steps (steps.py) and one hit per page (or ``per_page``)."""
from __future__ import annotations

import re
from typing import Any, Callable, Sequence

from ..index.vectors import is_held
from ..model import Hit
from ..parse.chunk import shown_heading
from . import evidence
from .steps import graph_step, neighbour_context, speaker_boost


def new_parts() -> dict[str, Any]:
    return {"bm25_rank": None, "bm25": None, "vector_rank": None, "vector": None, "vector_whole": None,
            "vector_passage": None, "fused": 0.0, "graph": 0.0, "speaker": 0.0, "context": 0.0}


def fusion_scores(ranked: Sequence[tuple[str, float]], settings, floor: float | None = None) -> list[float]:
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


def _groups(ranked, turn_ids: set[str] | None):
    """The vector list as it is, or split into notes and transcript turns (ranked and scaled apart,
    so transcript tuning cannot change a note's share)."""
    if turn_ids is None:
        return [ranked]
    return [[r for r in ranked if r[0] not in turn_ids], [r for r in ranked if r[0] in turn_ids]]


REPEAT_SPARE = 5  # candidates read beyond the limit so that dropping a repeated text still fills it
REPEAT_MIN_CHARS = 40  # a paragraph shorter than this (a heading, a one-word item) is alike by chance
REPEAT_MIN_TOTAL = 60  # and what repeats must add up to at least this much
_NOT_WORD = re.compile(r"[\W_]+")


def _key(text: str) -> str:
    return " ".join(_NOT_WORD.sub(" ", text.lower()).split())


def repeat_key(text: str) -> tuple[tuple[str, ...], str] | None:
    """A chunk's text as compared for repeats: its paragraphs of some length and its whole body
    (headings left out; case, punctuation and Markdown marks ignored), or None when it has too
    little text to call anything a repeat."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    paragraphs = tuple(k for k in (_key(p) for p in "\n".join(lines).split("\n\n")) if len(k) >= REPEAT_MIN_CHARS)
    if sum(map(len, paragraphs)) < REPEAT_MIN_TOTAL:
        return None
    return paragraphs, _key("\n".join(lines))


def repeats(key: tuple[tuple[str, ...], str], other: tuple[tuple[str, ...], str]) -> bool:
    """One fact ingested comes back as its raw text and as the source page quoting it: a hit all of
    whose paragraphs a better hit shows (or which shows all of the better hit's) is a repeat."""
    return all(p in other[1] for p in key[0]) or all(p in key[1] for p in other[0])


def fuse(ctx, query: str, lexical, vector, settings, mode: str, limit: int, per_page: int,
         where: str, args: Sequence[Any], uri, turn_ids: set[str] | None = None,
         nearest: dict[str, Any] | None = None, vectors_of: Callable | None = None,
         hidden: frozenset[str] = frozenset()) -> list[Hit]:
    """``where``/``args``: the search's filters as SQL (for pulled-in pages); ``uri``: path -> link;
    ``turn_ids``: in a vault with transcripts, which vector candidates are transcript turns;
    ``nearest``: chunk id -> rankers.Nearest for the vector candidates (a hit's passage);
    ``vectors_of``: chunk ids -> {id: unit vector across the language axis} (rankers.unit_vectors),
    when the vector side ran; ``hidden``: paths ranked with the rest but never returned."""
    nearest = nearest or {}
    cache = ctx.cache
    # hybrid only: a missing lexical share is imputed for candidates in another script, and a
    # translation ranks below its original (evidence.py)
    other = set()
    if mode == "hybrid" and evidence.language_steps_on():
        other = evidence.foreign(cache.db, query, list(dict.fromkeys([cid for cid, _ in vector] +
                                                                     [cid for cid, _ in lexical])))
    parts: dict[str, dict[str, Any]] = {}
    shares: dict[str, dict[str, float]] = {}  # each side's share, for candidates in another script
    for side, groups, weight, floor in (("bm25", [lexical], settings.weight_lexical, 0.0),
                                        ("vector", _groups(vector, turn_ids), settings.weight_vector, None)):
        for ranked in groups:
            for rank, ((cid, score), share) in enumerate(zip(ranked, fusion_scores(ranked, settings, floor)), 1):
                p = parts.setdefault(cid, new_parts())
                p[f"{side}_rank"] = rank
                p[side] = round(score, 6)
                if side == "vector" and cid in nearest:
                    found = nearest[cid]
                    p["vector_whole"] = round(found.whole, 6)
                    p["vector_passage"] = None if found.passage is None else round(found.passage, 6)
                p["fused"] += weight * share
                if cid in other:
                    shares.setdefault(cid, {})[side] = share
    if mode == "hybrid":
        evidence.impute_lexical(parts, shares, settings.weight_lexical)
    light = cache.paths_by_id(parts)  # light rows: full chunks are read for the final hits only
    paths = {cid: row[0] for cid, row in light.items()}
    twins: dict[str, str] = {}
    if other and vectors_of is not None:
        twins = evidence.translations(vectors_of([cid for cid, row in light.items() if not row[1]]), other)
        # capped before the graph step too: it picks the pages whose links it follows by fused score
        fused = {cid: parts[cid]["fused"] for pair in twins.items() for cid in pair}
        evidence.below_translations(fused, parts, twins, paths)
        for cid in twins:
            parts[cid]["fused"] = fused[cid]
    speaker_boost(parts, light, query, settings)
    if mode == "hybrid":
        graph_step(cache, parts, paths, settings, where, args, new_parts)
    scores = {cid: p["fused"] + p["graph"] for cid, p in parts.items() if cid in paths}
    neighbour_context(scores, parts, light, settings)
    evidence.page_evidence(cache.db, query, scores, parts, light)
    evidence.below_translations(scores, parts, twins, paths)  # again: page evidence may have lifted one
    # the speaker boost comes last: the lift says which exchange is relevant, the boost which of
    # its turns the named person spoke (boosting first lifts the other speaker's replies with it)
    ranked = sorted(((round((score + parts[cid]["context"]) * (1.0 + parts[cid]["speaker"]), 10), cid, parts[cid])
                     for cid, score in scores.items()), key=lambda r: (-r[0], r[1]))
    chosen = []
    seen: dict[str, int] = {}
    for score, cid, p in ranked:
        path = paths[cid]
        if path in hidden or (per_page and seen.get(path, 0) >= per_page):
            continue
        seen[path] = seen.get(path, 0) + 1
        chosen.append((score, cid, p))
        if len(chosen) >= limit + min(limit, REPEAT_SPARE):  # a few spare: a repeated text is dropped below
            break
    chunks = cache.chunks_by_id(cid for _, cid, _ in chosen)
    said = cache.passage_texts(nearest[cid].passage_id for _, cid, _ in chosen
                               if cid in nearest and nearest[cid].passage_id is not None)
    hits: list[Hit] = []
    shown: list[tuple[tuple[str, ...], str]] = []
    for score, cid, p in chosen:
        c = chunks.get(cid)
        if c is None:  # replaced by a build that committed during this search: it no longer exists
            continue
        if len(hits) >= limit:
            break
        text = repeat_key(c.text)
        if text is not None and any(repeats(text, other) for other in shown):
            continue  # the same text a better hit shows (a source page quoting its raw file)
        if text is not None:
            shown.append(text)
        found_by = tuple(side for side, key in (("lexical", "bm25_rank"), ("vector", "vector_rank")) if p[key]) \
            or ("graph",)
        components = {k2: (round(v, 8) if isinstance(v, float) else v) for k2, v in p.items()}
        found = nearest.get(cid)
        passage = said.get(found.passage_id) if found is not None else None
        if passage is not None and is_held(found.passage_id) and passage.startswith(f"{c.title}: "):
            # a note's passage was embedded with its page title in front (index/passages.py)
            passage = passage[len(c.title) + 2:]
        heading_path = shown_heading(c.text, c.heading_path, passage) if passage else c.heading_path
        hits.append(Hit(cid, c.path, c.title, heading_path, c.text, score, components, found_by,
                        uri(c.path), c.type, c.status, c.blocks, passage))
    return hits
