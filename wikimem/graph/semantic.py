"""Semantic edges for ``communities --semantic``: each page joined to its k nearest pages by
page-level embedding (the mean of its chunks' vectors), so a poorly linked note still lands in the
cluster it is about. Read from the FAISS index the build wrote; nothing is embedded here.
"""
from __future__ import annotations

import logging
from typing import Sequence

import numpy as np

log = logging.getLogger(__name__)


def _dim(meta: dict) -> int | None:
    key = meta.get("embedder") or ""
    tail = str(key).rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else None


def page_vectors(ctx, paths: Sequence[str]) -> tuple[list[int], np.ndarray, str | None]:
    """(indexes into ``paths`` that have vectors, their L2-normalised page vectors, notice). The
    notice says why there are none (no embedder recorded, no or damaged FAISS index)."""
    cache = ctx.cache
    meta = cache.meta()
    dim = _dim(meta)
    if dim is None:
        return [], np.zeros((0, 0), np.float32), "no vectors in the cache (built without an embedder); " \
            "--semantic skipped: run `wikimem index` with an embedder"
    index = cache.vectors(dim, meta)
    if index is None or index.ntotal == 0:
        return [], np.zeros((0, dim), np.float32), "the vector index is missing or damaged; --semantic skipped: " \
            "run `wikimem index`"
    ids, matrix = index.searched()
    row_of = {int(v): i for i, v in enumerate(ids)}
    position = {p: i for i, p in enumerate(paths)}
    sums = np.zeros((len(paths), dim), np.float32)
    counts = np.zeros(len(paths), np.int64)
    for vid, path in cache.manifest.chunk_pages(by="vid"):
        row, at = row_of.get(int(vid)), position.get(path)
        if row is not None and at is not None:
            sums[at] += matrix[row]
            counts[at] += 1
    have = [i for i in range(len(paths)) if counts[i]]
    vectors = sums[have] / counts[have, None]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    notice = None
    if len(have) < len(paths):
        notice = f"{len(paths) - len(have)} of {len(paths)} pages have no vectors yet and get no semantic edges"
    return have, np.ascontiguousarray(vectors / norms, dtype=np.float32), notice


def knn_edges(have: list[int], vectors: np.ndarray, k: int, weight: float) -> dict[tuple[int, int], float]:
    """(i, j) with i < j (indexes into the page list) -> ``weight`` x cosine for each page's ``k``
    nearest pages (positive similarity only; a pair found from both ends counts once)."""
    if len(have) < 2 or k <= 0:
        return {}
    import faiss
    flat = faiss.IndexFlatIP(vectors.shape[1])
    flat.add(vectors)
    scores, nearest = flat.search(vectors, min(k + 1, len(have)))
    edges: dict[tuple[int, int], float] = {}
    for row in range(len(have)):
        for sim, col in zip(scores[row], nearest[row]):
            if col < 0 or col == row or sim <= 0:
                continue
            a, b = have[row], have[int(col)]
            key = (a, b) if a < b else (b, a)
            edges[key] = max(edges.get(key, 0.0), round(float(sim), 6) * weight)
    return edges
