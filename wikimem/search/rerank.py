"""A page-level re-rank from vectors already stored (issue 52, step 3): the page's centroid.

A chunk is ranked by its own cosine (and its nearest passage's). On documentation that picks the
page holding the one section nearest the question in wording, which is often a long reference
page ("package.json", "config") with a section on everything: "how do I deprecate a published
version?" put ``npm-unpublish``'s description first and ``npm-deprecate`` fifth. What a page is
about as a whole is a second, independent measure: the mean of its chunks' vectors (each at unit
length, across the language axis the vector side used), compared with the query. A page about one
thing has a centroid near that thing; a page about everything has one near nothing in particular.

``PageCentroid`` adds, for the candidates of the best ``CENTROID_PAGES`` pages (by fused score),
``CENTROID_WEIGHT`` times the page's centroid cosine scaled over those pages (min-max, as the
vector side's scores are: fusion.fusion_scores), to every candidate of that page. Centroids are
kept for the process while the index's searched vectors stay the same. Only the vectors the
index already holds are read: no model runs, so the cost is a few reads and a small product.
Transcript turns are left alone (their page is a whole conversation: no one topic).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .candidates import Candidate
from .tuning import CENTROID_PAGES, CENTROID_WEIGHT

Candidates = dict[str, Candidate]


def page_similarity(cache, index, qvec, lang) -> Callable[[list[str]], dict[str, float]]:
    """paths -> {path: cosine of the query with the page's centroid} (pages with no stored chunk
    vector left out), across ``lang`` (a language.LanguageAxis, or None) as the vector side
    measured. Centroids are kept for this process (``cache.runtime`` slot "page_centroids")."""
    q = np.asarray(qvec, dtype=np.float32).reshape(-1)
    if lang is not None:
        q = lang.project(q[None, :])[0]
    q = q / max(float(np.linalg.norm(q)), 1e-12)
    key = (index.serial, index.searched_version, None if lang is None else (float(lang.k), lang.direction.tobytes()))

    def similar(paths: list[str]) -> dict[str, float]:
        kept = cache.runtime.kept("page_centroids", key)
        if kept is None:
            kept = {}
            cache.runtime.keep("page_centroids", key, kept)
        missing = [p for p in paths if p not in kept]
        if missing:
            kept.update(_centroids(cache, index, lang, missing))
        return {p: float(kept[p] @ q) for p in paths if kept.get(p) is not None}
    return similar


def _centroids(cache, index, lang, paths: list[str]) -> dict[str, np.ndarray | None]:
    manifest = cache.manifest
    out: dict[str, np.ndarray | None] = {}
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
        out[path] = mean / size if size > 1e-9 else None
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
        pages = [p for p, _ in sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:CENTROID_PAGES]]
        if len(pages) < 2:
            return candidates
        sims = facts.page_similarity(pages)
        if len(sims) < 2:
            return candidates
        low, high = min(sims.values()), max(sims.values())
        spread = high - low
        if spread <= 0:
            return candidates
        for c in candidates.values():
            if c.path in sims and not c.turn:
                c.centroid = round(CENTROID_WEIGHT * (sims[c.path] - low) / spread, 8)
                c.fused += c.centroid
                c.changed_by(self.name)
        return candidates
