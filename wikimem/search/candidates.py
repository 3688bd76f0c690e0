"""A search candidate: one chunk and every part of its score, as typed fields.

Fusion (fusion.py) makes candidates from the rankers' lists; each re-rank step (steps.py) reads and
sets the fields it owns and names itself in ``steps`` when it changed the score. A hit's
``components`` (``--explain``) are these fields, under the names they have always had.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Candidate:
    id: str  # chunk id
    path: str = ""  # the page (set once the chunk's row is read; a chunk without a row is dropped)
    speakers: tuple[str, ...] = ()  # a transcript turn carries its speakers; a note's chunk none
    ordinal: int = 0  # the chunk's position in its page (turns: which exchange)
    foreign: bool = False  # written in another script than the query (hybrid, language steps on)
    bm25_rank: int | None = None
    bm25: float | None = None  # the ranker's own score
    vector_rank: int | None = None
    vector: float | None = None
    vector_whole: float | None = None  # the whole chunk's cosine (rankers.Nearest)
    vector_passage: float | None = None  # its nearest passage's cosine, None without passages
    fused: float = 0.0  # the weighted sum of the rankers' shares (fusion.fusion_scores)
    graph: float = 0.0  # a graph pull-in's decayed share of its parents' scores
    speaker: float = 0.0  # the speaker boost: the score is multiplied by (1 + speaker)
    context: float = 0.0  # the conversation-context lift towards a strong neighbouring turn
    recency: float = 0.0  # the opt-in recency prior (steps.RecencyPrior; recency_weight, off by default)
    imputed: float | None = None  # the lexical share imputed for a candidate in another script
    translation_of: str | None = None  # the original's page, for a translation of another candidate
    vector_share: float = 0.0  # the vector side's share before its weight (fusion.fusion_scores x trust)
    short: float | None = None  # the share of its vector score a chunk with little text kept (priors.py)
    query_below: str | None = None  # the cited page a query page was placed below (priors.py)
    filled: str | None = None  # the side that scored this candidate below its own list ("bm25", "vector"; fusion.py)
    shares: dict[str, float] = field(default_factory=dict)  # each side's share, for foreign candidates
    steps: list[str] = field(default_factory=list)  # the re-rank steps that changed its score

    @property
    def turn(self) -> bool:
        """A transcript turn (a graph pull-in is given no speakers: never one to the steps)."""
        return bool(self.speakers)

    @property
    def base(self) -> float:
        """The score the context lift compares: fused plus graph."""
        return self.fused + self.graph

    @property
    def score(self) -> float:
        """The final score: the context lift comes before the speaker boost (steps.py)."""
        return round((self.fused + self.graph + self.context + self.recency) * (1.0 + self.speaker), 10)

    @property
    def found_by(self) -> tuple[str, ...]:
        return tuple(side for side, rank in (("lexical", self.bm25_rank), ("vector", self.vector_rank)) if rank) \
            or ("graph",)

    def components(self) -> dict[str, Any]:
        """The score's parts as a hit shows them (``imputed`` and ``translation_of`` only when set)."""
        parts: dict[str, Any] = {
            "bm25_rank": self.bm25_rank, "bm25": self.bm25, "vector_rank": self.vector_rank,
            "vector": self.vector, "vector_whole": self.vector_whole, "vector_passage": self.vector_passage,
            "fused": self.fused, "graph": self.graph, "speaker": self.speaker, "context": self.context}
        if self.recency:
            parts["recency"] = self.recency
        if self.imputed is not None:
            parts["imputed"] = self.imputed
        if self.translation_of is not None:
            parts["translation_of"] = self.translation_of
        if self.short is not None:
            parts["short"] = self.short
        if self.filled is not None:
            parts["filled"] = self.filled
        if self.query_below is not None:
            parts["query_below"] = self.query_below
        return {k: (round(v, 8) if isinstance(v, float) else v) for k, v in parts.items()}

    def changed_by(self, step: str) -> None:
        if step not in self.steps:
            self.steps.append(step)
