"""Page vectors (the normalised mean of a page's chunk vectors), read from the FAISS index the build
wrote (nothing is embedded here), and the semantic edges of ``communities --semantic``: each page
joined to its k nearest pages, so a poorly linked note still lands in the cluster it is about.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PageMatrix:
    """Every page that has vectors: ``paths[i]``'s unit vector is ``vectors[i]`` (the normalised
    mean of its chunks' vectors); ``missing``: per page, chunks whose vectors are not indexed yet."""

    paths: tuple[str, ...]
    vectors: np.ndarray
    row: dict[str, int] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)


def page_matrix(cache) -> tuple[PageMatrix | None, str | None]:
    """(the page matrix, None) or (None, why there is none). Computed once per state of the vector
    index (its serial and searched version) and kept for the process: ``related`` (one
    matrix-vector product a call), ``communities --semantic`` and lint's near-duplicate rule all
    read this one."""
    meta = cache.meta()
    tail = str(meta.get("embedder") or "").rsplit(":", 1)[-1]
    if not tail.isdigit():
        return None, "no vectors in the cache (built without an embedder): run `wikimem index` with an embedder"
    index = cache.vectors(int(tail), meta)
    if index is None or index.ntotal == 0:
        return None, "the vector index is missing, damaged or still empty: run `wikimem index`"
    key = (index.serial, index.searched_version)
    kept = cache.kept("page_matrix", key)
    if kept is not None:
        return kept, None
    ids, matrix = index.searched()
    row_of = {int(v): i for i, v in enumerate(ids)}
    by_page: dict[str, list[int]] = {}
    missing: dict[str, int] = {}
    for vid, path in cache.manifest.chunk_pages(by="page"):
        row = row_of.get(int(vid))
        if row is None:
            missing[path] = missing.get(path, 0) + 1
        else:
            by_page.setdefault(path, []).append(row)
    paths = tuple(sorted(by_page))
    if paths:
        sums = np.stack([matrix[by_page[p]].sum(axis=0) for p in paths]).astype(np.float32)
        sums /= np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    else:
        sums = np.zeros((0, index.dim), np.float32)
    found = PageMatrix(paths, np.ascontiguousarray(sums), {p: i for i, p in enumerate(paths)}, missing)
    cache.keep("page_matrix", key, found)
    return found, None


def page_vectors(ctx, paths: Sequence[str]) -> tuple[list[int], np.ndarray, str | None]:
    """(indexes into ``paths`` that have vectors, their L2-normalised page vectors, notice). The
    notice says why there are none (no embedder recorded, no or damaged FAISS index)."""
    found, why = page_matrix(ctx.cache)
    if found is None:
        return [], np.zeros((0, 0), np.float32), f"--semantic skipped: {why}"
    have = [i for i, p in enumerate(paths) if p in found.row]
    vectors = found.vectors[[found.row[paths[i]] for i in have]] if have else np.zeros((0, found.vectors.shape[1]),
                                                                                      np.float32)
    notice = None
    if len(have) < len(paths):
        notice = f"{len(paths) - len(have)} of {len(paths)} pages have no vectors yet and get no semantic edges"
    return have, np.ascontiguousarray(vectors, dtype=np.float32), notice


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
