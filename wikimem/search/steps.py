"""Re-rank steps after fusion: a list of small objects over typed candidates (candidates.py).

Each step says whether it ``applies`` to this search (switched on by what the candidates hold:
transcript turns, text in two scripts, by the mode and by its setting) and ``apply`` returns the
candidates with the fields it owns set, naming itself in ``Candidate.steps`` where it changed a
score (``--explain`` shows them). In order (``STEPS``):

0. ``ShortTextPrior`` (hybrid; priors.py): a note's chunk with almost no text of its own keeps
   only a share of its vector score.
1. ``ImputeLexical`` (hybrid, two scripts): a candidate in another script than the query gets a
   lexical share imputed from its vector share (evidence.imputed_gains).
2. ``TranslationsBelowOriginals`` (hybrid, two scripts, vectors): a translation ranks just below
   its original (evidence.translations); capped before the graph step, which picks the pages whose
   links it follows by fused score.
3. ``SpeakerBoost`` (transcript turns): turns spoken by someone the query names.
4. ``GraphPullIn`` (hybrid): pages that neither ranker found but the top pages link to strongly.
5. ``NeighbourContext`` (transcript turns): a turn lifted towards a strong neighbouring turn.
6. ``RecencyPrior`` (opt-in, ``recency_weight``): newer candidates gain a little.
7. ``QueryPagesBelowCited`` (hybrid; priors.py): a filed answer (queries/) ranks just below a
   page it cites when the rankers found both; last, so that no later part of a score lifts it back.

The final score is ``(fused + graph + context) x (1 + speaker)``: the lift says which exchange is
relevant, the boost which of its turns the named person spoke (boosting first lifts the other
speaker's replies with it). The transcript steps act only on transcript turns: no step changes the
score of an ordinary note's chunk except the language steps (notes in another script than the
query), the two priors (a chunk with almost no text, a query page below the note it cites) and the
graph step, which only pulls in pages that neither ranker found.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from ..stores.graph import neighbours
from . import evidence
from .candidates import Candidate
from .priors import QueryPagesBelowCited, ShortTextPrior
from .rankers import names_in, words
from .tuning import GRAPH_TOP_PAGES, STRONG_LINK

Candidates = dict[str, Candidate]  # chunk id -> candidate


@dataclass(frozen=True)
class Facts:
    """What the steps may look at: the search as asked, and what its candidates hold."""

    query: str  # the ranked text
    mode: str
    settings: Any  # config.Settings
    cache: Any  # stores.protocol.Stores (graph pull-ins read the link graph and first chunks)
    filters: Any = None  # stores.filters.Filters: the search's filters (pulled-in pages must pass them)
    vectors_of: Callable | None = None  # chunk ids -> unit vectors across the language axis
    turns: bool = False  # some candidate is a transcript turn
    two_scripts: bool = False  # some candidate is written in another script than the query


class Step(Protocol):
    name: str

    def applies(self, facts: Facts) -> bool: ...

    def apply(self, candidates: Candidates, facts: Facts) -> Candidates: ...


class ImputeLexical:
    name = "imputed"

    def applies(self, facts: Facts) -> bool:
        return facts.mode == "hybrid" and facts.two_scripts and evidence.CROSS_LEXICAL > 0

    def apply(self, candidates: Candidates, facts: Facts) -> Candidates:
        shares = {c.id: c.shares for c in candidates.values() if c.foreign}
        for cid, gain in evidence.imputed_gains(shares, facts.settings.weight_lexical).items():
            c = candidates[cid]
            c.fused += gain
            c.imputed = round(gain, 8)
            c.changed_by(self.name)
        return candidates


class TranslationsBelowOriginals:
    name = "translation"

    def applies(self, facts: Facts) -> bool:
        return facts.mode == "hybrid" and facts.two_scripts and facts.vectors_of is not None \
            and evidence.TWIN_SIMILARITY <= 1.0

    def apply(self, candidates: Candidates, facts: Facts) -> Candidates:
        notes = [cid for cid, c in candidates.items() if not c.turn]
        twins = evidence.translations(facts.vectors_of(notes), {cid for cid, c in candidates.items() if c.foreign})
        fused = {cid: candidates[cid].fused for pair in twins.items() for cid in pair}
        for cid, (original, score) in evidence.capped_translations(fused, twins).items():
            c = candidates[cid]
            c.translation_of = candidates[original].path
            if score != c.fused:
                c.fused = score
                c.changed_by(self.name)
        return candidates


class SpeakerBoost:
    """Speaker-aware ranking for transcripts: "what did Caroline research?" is about what
    Caroline said, not about turns where someone else addresses her by name."""

    name = "speaker"

    def applies(self, facts: Facts) -> bool:
        return facts.turns and facts.settings.speaker_boost > 0

    def apply(self, candidates: Candidates, facts: Facts) -> Candidates:
        named = words(facts.query)
        for c in candidates.values():
            if c.turn and any(names_in(s, named) for s in c.speakers):
                c.speaker = facts.settings.speaker_boost
                c.changed_by(self.name)
        return candidates


class GraphPullIn:
    """Bounded graph step: pages that neither ranker found but that the top pages link to
    strongly are pulled in, scored by a decayed share of their parents' scores. Pages already
    found keep their fused order: re-ranking them by links hurt more than it helped on dense vaults."""

    name = "graph"

    def applies(self, facts: Facts) -> bool:
        return facts.mode == "hybrid" and facts.settings.graph_weight > 0

    def apply(self, candidates: Candidates, facts: Facts) -> Candidates:
        if not candidates:
            return candidates
        settings = facts.settings
        page_best: dict[str, float] = {}
        for c in candidates.values():
            page_best[c.path] = max(page_best.get(c.path, 0.0), c.fused)
        top = sorted(page_best.items(), key=lambda kv: (-kv[1], kv[0]))[:GRAPH_TOP_PAGES]
        bonus: dict[str, float] = {}
        strength: dict[str, float] = {}
        around = neighbours(facts.cache.manifest, [page for page, _ in top], settings.graph_fanout)
        for page, score in top:
            for other, share in around[page]:
                if other in page_best:
                    continue
                bonus[other] = bonus.get(other, 0.0) + settings.graph_weight * score * share
                strength[other] = strength.get(other, 0.0) + share
        for page in sorted(bonus):
            if strength[page] < STRONG_LINK:
                continue
            lead = facts.cache.manifest.first_chunk(page, facts.filters)
            if lead is not None:
                # never a turn to the transcript steps, which see only the rankers' candidates
                candidates[lead.id] = Candidate(lead.id, lead.path, graph=round(bonus[page], 8), steps=[self.name])
        return candidates


class NeighbourContext:
    name = "context"

    def applies(self, facts: Facts) -> bool:
        s = facts.settings
        return facts.turns and s.neighbour_weight > 0 and s.neighbour_span > 0

    def apply(self, candidates: Candidates, facts: Facts) -> Candidates:
        s = facts.settings
        lifts = neighbour_lifts({cid: c.base for cid, c in candidates.items()},
                                {cid: (c.path, c.ordinal) for cid, c in candidates.items() if c.turn},
                                s.neighbour_weight, s.neighbour_span)
        for cid, lift in lifts.items():
            candidates[cid].context = lift
            candidates[cid].changed_by(self.name)
        return candidates


class RecencyPrior:
    """Opt-in (``recency_weight`` > 0; off by default): newer candidates gain up to the weight,
    by where their date (``updated``, else ``created``, else a transcript's ``date``) stands among
    the dated candidates, oldest 0, newest 1; undated ones gain nothing. Off until it helps every
    measured set; benchmarks/README.md ("Time") has the figures."""
    name = "recency"

    def applies(self, facts: Facts) -> bool:
        return getattr(facts.settings, "recency_weight", 0.0) > 0

    def apply(self, candidates: Candidates, facts: Facts) -> Candidates:
        from .timeline import moment
        chunks = facts.cache.manifest.chunks_by_id(list(candidates))
        dated = {cid: m for cid, c in chunks.items() if (m := moment(c.updated or c.created or c.date))}
        order = sorted(set(dated.values()))
        if len(order) < 2:
            return candidates
        rank = {m: i / (len(order) - 1) for i, m in enumerate(order)}
        for cid, when in dated.items():
            gain = round(facts.settings.recency_weight * rank[when], 10)
            if gain:
                candidates[cid].recency = gain
                candidates[cid].changed_by(self.name)
        return candidates


STEPS: tuple[Step, ...] = (ShortTextPrior(), ImputeLexical(), TranslationsBelowOriginals(), SpeakerBoost(),
                           GraphPullIn(), NeighbourContext(), RecencyPrior(), QueryPagesBelowCited())


def run_steps(candidates: Candidates, facts: Facts, steps: Sequence[Step] = STEPS) -> Candidates:
    for step in steps:
        if step.applies(facts):
            candidates = step.apply(candidates, facts)
    return candidates


def neighbour_lifts(scores: dict[str, float], turns_at: dict[str, tuple[str, int]], weight: float,
                    span: int) -> dict[str, float]:
    """Conversation context: a transcript turn is lifted ``weight`` of the way towards the best
    candidate turn at most ``span`` turns away in the same session. Evidence in a conversation
    comes in exchanges ("What did you make?" / "A stained glass window for a local church"), so a
    turn beside a strong match is likelier to matter than an isolated weak one. A turn is never
    lifted above its best neighbour (the speaker boost comes after), so a session's best turn
    keeps its score and transcripts do not gain on prose notes (which are left alone). Measured on
    LoCoMo (benchmarks/README.md). ``turns_at``: turn id -> (page, ordinal), the turns among
    ``scores``' candidates. Returns turn id -> its lift (> 0)."""
    by_page: dict[str, dict[int, str]] = {}
    for cid in scores:
        if cid in turns_at:
            page, ordinal = turns_at[cid]
            by_page.setdefault(page, {})[ordinal] = cid
    lifts: dict[str, float] = {}
    for turns in by_page.values():
        if len(turns) < 2:
            continue
        for ordinal, cid in turns.items():
            near = [scores[turns[o]] for o in range(ordinal - span, ordinal + span + 1) if o != ordinal and o in turns]
            if near and max(near) > scores[cid]:
                lifts[cid] = round(weight * (max(near) - scores[cid]), 10)
    return lifts


def _add_neighbour_context(scores: dict[str, float], parts, light, weight: float, span: int) -> None:
    """``neighbour_lifts`` in place on ``parts[cid]["context"]``; ``light``: chunk id -> (page,
    speakers, ordinal) (transcript turns carry their speakers)."""
    turns_at = {cid: (row[0], row[2]) for cid, row in light.items() if row[1]}
    for cid, lift in neighbour_lifts(scores, turns_at, weight, span).items():
        parts[cid]["context"] = lift
