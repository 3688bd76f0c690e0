"""Near-duplicate pages from the vectors the cache already holds (lint never embeds: that is
``wikimem index``'s job and slow with the default model).

A page's vector is the normalised mean of its chunks' vectors; pages are compared only with pages
of the same type, in blocks (a 10,000 x 10,000 similarity matrix never exists at once). Pairs above
the cosine threshold are then confirmed by lexical overlap (Jaccard of the pages' word sets), with
the thresholds wikimem.knowledge.similarity calibrated per embedder for writes, so one calibration
decides "same subject" everywhere. (The calibration's overlap is over analyzer tokens, stemmed;
word sets without stemming score a little lower, so this errs towards fewer findings.)
"""
from __future__ import annotations

import logging

import numpy as np

from ...vault.files import is_raw_path
from ..context import SPECIAL_PAGES
from ..options import number

log = logging.getLogger(__name__)
BLOCK = 2048
NEIGHBOURS = 1  # per page, only its nearest later page of the same type is confirmed lexically (cost)


def _all_vectors(index) -> tuple[dict[int, int], np.ndarray]:
    """Every searched vector in one C call (vector id -> row), not 40,000 ``reconstruct`` calls."""
    ids, vectors = index.searched()
    return {int(vid): row for row, vid in enumerate(ids)}, vectors


def _page_vectors(ctx, index) -> tuple[list[str], np.ndarray, list[str], int]:
    rows = ctx.vault.cache.db.execute("SELECT vid, path FROM chunks ORDER BY path, ord").fetchall()
    row_of, vectors = _all_vectors(index)
    by_page: dict[str, list[int]] = {}
    missing = 0
    for vid, path in rows:
        if path not in ctx.pages or ctx.is_superseded(path) or ctx.pages[path].type in ("source", "memory") \
                or path in SPECIAL_PAGES or is_raw_path(path):
            continue
        row = row_of.get(int(vid))
        if row is None:
            missing += 1
        else:
            by_page.setdefault(path, []).append(row)
    paths = sorted(by_page)
    if not paths:
        return [], np.zeros((0, 1), dtype=np.float32), [], missing
    mat = np.stack([vectors[by_page[p]].sum(axis=0) for p in paths]).astype(np.float32)
    mat /= np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12)
    return paths, mat, [ctx.pages[p].type for p in paths], missing


def near_duplicate_pairs(ctx):
    from ...knowledge.similarity import thresholds_for
    cache = ctx.vault.cache
    embedder = cache.embedder()
    index = cache.vectors(embedder.identity.dim) if embedder is not None else None
    if index is None or index.ntotal == 0:
        ctx.notice("skipped: no vectors in the cache (run `wikimem index` with an embedder)")
        return
    calibrated, _ = thresholds_for(embedder)
    options = ctx.rule_options()
    where = f"SCHEMA.md lint.rules.{ctx.code}"
    cos_bar = number(options, "threshold", calibrated.update_cos or 0.95, where)
    lex_bar = number(options, "min_overlap", calibrated.update_lex, where)
    paths, mat, types, missing = _page_vectors(ctx, index)
    if missing:
        ctx.notice(f"{missing} chunk(s) have no vector yet; their pages were compared on the rest "
                   "(run `wikimem index` to embed them)")
    word_sets: dict[str, frozenset[str]] = {}

    def overlap(a: str, b: str) -> float:
        for p in (a, b):
            if p not in word_sets:
                word_sets[p] = frozenset(ctx.words(ctx.pages[p]))
        union = len(word_sets[a] | word_sets[b])
        return len(word_sets[a] & word_sets[b]) / union if union else 1.0

    by_type: dict[str, list[int]] = {}
    for i, t in enumerate(types):
        by_type.setdefault(t, []).append(i)
    for t, members in sorted(by_type.items()):
        sub = mat[members]
        for start in range(0, len(members), BLOCK):
            sims = sub[start:start + BLOCK] @ sub.T
            for r in range(sims.shape[0]):
                i = start + r
                row = sims[r]
                row[: i + 1] = -1.0  # each pair once, never with itself
                top = np.argpartition(-row, min(NEIGHBOURS, len(row) - 1))[:NEIGHBOURS] if len(row) > 1 else []
                for j in sorted(top, key=lambda j: -row[j]):
                    if row[j] < cos_bar:
                        continue
                    a, b = paths[members[i]], paths[members[j]]
                    pa, pb = ctx.pages[a], ctx.pages[b]
                    shared = ctx.memo.get(pa.sha256, f"overlap:{pb.sha256}", lambda: overlap(a, b),
                                          family="overlap:") if pb.sha256 else overlap(a, b)
                    if shared >= lex_bar:
                        yield a, b, float(row[j])
