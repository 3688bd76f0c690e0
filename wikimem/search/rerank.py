"""A page-level re-rank from vectors already stored (issue 52, step 3): the page's centroid.

A chunk is ranked by its own cosine (and its nearest passage's). On documentation that picks the
page holding the one section nearest the question in wording, which is often a long reference
page ("package.json", "config") with a section on everything: "how do I deprecate a published
version?" put ``npm-unpublish``'s description first and ``npm-deprecate`` fifth. What a page is
about as a whole is a second, independent measure: the mean of its chunks' vectors (each at unit
length, across the language axis the vector side used), compared with the query. A page about one
thing has a centroid near that thing; a page about everything has one near nothing in particular.

``PageCentroid`` adds, for the candidates of the best ``CENTROID_PAGES`` pages (by fused score)
that have more than one chunk, ``CENTROID_WEIGHT`` times the page's centroid cosine scaled over
those pages (min-max, as the vector side's scores are: fusion.fusion_scores) less the mean of
those shares, to every candidate of that page. A page of one chunk has no centroid beyond its
chunk, which the vector side has scored already: counted again, its whole vector (which carries
its headings) outweighed the passages and BM25, the bias the short-text rules remove (a style
guide's "Key names and keyboard shortcuts" above Hotkeys again). Less the mean: pages of several
chunks, as a group, neither gain nor lose against pages of one. Centroids are
kept for the process while the index's searched vectors stay the same. Only the vectors the
index already holds are read: no model runs, so the cost is a few reads and a small product.
Transcript turns are left alone (their page is a whole conversation: no one topic).

Only when the candidates are all in one script, as the query sees them (all in its script, or
all in another: a Chinese question about English pages). Where both scripts are among them (a
vault of notes and their translations), a page and its translation have nearly the same centroid
across the language axis, and what is left between them is language, not topic; scaled over the
best pages it decided which of the two came first: the bundled examples/ held-aside set fell from
MRR@10 0.960 to 0.922 and tldr's Chinese questions from 0.943 to 0.917 (benchmarks/README.md).
The translation step (steps.TranslationsBelowOriginals) pairs only pages it is sure of.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .candidates import Candidate
from .tuning import CENTROID_PAGES, CENTROID_WEIGHT

Candidates = dict[str, Candidate]


def page_similarity(cache, index, qvec, lang) -> Callable[[list[str]], dict[str, float]]:
    """paths -> {path: (cosine of the query with the page's centroid, chunks it is the mean of)}
    (pages with no stored chunk vector left out), across ``lang`` (a language.LanguageAxis, or None) as the vector side
    measured. Centroids are kept for this process (``cache.runtime`` slot "page_centroids")."""
    q = np.asarray(qvec, dtype=np.float32).reshape(-1)
    if lang is not None:
        q = lang.project(q[None, :])[0]
    q = q / max(float(np.linalg.norm(q)), 1e-12)
    key = (index.serial, index.searched_version, None if lang is None else (float(lang.k), lang.direction.tobytes()))

    def similar(paths: list[str]) -> dict[str, tuple[float, int]]:
        kept = cache.runtime.kept("page_centroids", key)
        if kept is None:
            kept = {}
            cache.runtime.keep("page_centroids", key, kept)
        missing = [p for p in paths if p not in kept]
        if missing:
            kept.update(_centroids(cache, index, lang, missing))
        return {p: (float(kept[p][0] @ q), kept[p][1]) for p in paths if kept.get(p) is not None}
    return similar


def _centroids(cache, index, lang, paths: list[str]) -> dict[str, tuple[np.ndarray, int] | None]:
    manifest = cache.manifest
    out: dict[str, tuple[np.ndarray, int] | None] = {}
    for path in paths:
        ids = manifest.chunk_ids_of_page(path)
        vids = list(manifest.vids_by_id(ids).values())
        rows = index.vector_rows(vids) if vids else np.zeros((0, index.dim), dtype=np.float32)
        rows = rows[np.any(rows != 0, axis=1)]  # a row of zeros: not stored (yet)
        if not len(rows):
            out[path] = None
            continue
        if lang is not None:
            rows = lang.project(rows)
        rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        mean = rows.mean(axis=0)
        size = float(np.linalg.norm(mean))
        out[path] = (mean / size, len(rows)) if size > 1e-9 else None
    return out


class PageCentroid:
    name = "centroid"

    def applies(self, facts) -> bool:
        return facts.mode == "hybrid" and facts.page_similarity is not None and CENTROID_WEIGHT > 0

    def apply(self, candidates: Candidates, facts) -> Candidates:
        best: dict[str, float] = {}
        for c in candidates.values():
            if not c.turn and (c.bm25_rank is not None or c.vector_rank is not None):
                best[c.path] = max(best.get(c.path, float("-inf")), c.fused)
        if len({c.foreign for c in candidates.values() if c.path in best}) > 1:
            return candidates  # two scripts: a page and its translation differ by language, not topic
        pages = [p for p, _ in sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:CENTROID_PAGES]]
        if len(pages) < 2:
            return candidates
        sims = {p: cos for p, (cos, chunks) in facts.page_similarity(pages).items() if chunks > 1}
        if len(sims) < 2:
            return candidates
        low, high = min(sims.values()), max(sims.values())
        spread = high - low
        if spread <= 0:
            return candidates
        shares = {p: (m - low) / spread for p, m in sims.items()}
        centre = sum(shares.values()) / len(shares)
        for c in candidates.values():
            if c.path in shares and not c.turn:
                c.centroid = round(CENTROID_WEIGHT * (shares[c.path] - centre), 8)
                if c.centroid:
                    c.fused += c.centroid
                    c.changed_by(self.name)
        return candidates
