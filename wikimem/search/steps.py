"""Re-rank steps after fusion. The transcript steps act only on transcript turns (chunks that
carry speakers): no step here changes the score of an ordinary note's chunk except the graph
step, which only pulls in pages that neither ranker found."""
from __future__ import annotations

from typing import Any, Sequence

from ..index.graph import neighbours
from .rankers import names_in, words

GRAPH_TOP_PAGES = 5
STRONG_LINK = 0.5  # summed link share from the top pages needed to pull a page in


def speaker_boost(parts, light, query: str, settings) -> None:
    """Speaker-aware ranking for transcripts: "what did Caroline research?" is about what
    Caroline said, not about turns where someone else addresses her by name."""
    if not settings.speaker_boost or not light:
        return
    named = words(query)
    for cid, (_, speakers, _) in light.items():
        if speakers and any(names_in(s, named) for s in speakers):
            parts[cid]["speaker"] = settings.speaker_boost


def graph_step(cache, parts, paths, settings, where: str, args: Sequence[Any], new_parts) -> None:
    """Bounded graph step: pages that neither ranker found but that the top pages link to
    strongly are pulled in, scored by a decayed share of their parents' scores. Pages already
    found keep their fused order: re-ranking them by links hurt more than it helped on dense vaults."""
    if settings.graph_weight <= 0 or not parts:
        return
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
            parts[lead.id] = {**new_parts(), "graph": round(bonus[page], 8)}


def neighbour_context(scores, parts, light, settings) -> None:
    if settings.neighbour_weight > 0 and settings.neighbour_span > 0:
        _add_neighbour_context(scores, parts, light, settings.neighbour_weight, settings.neighbour_span)


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


