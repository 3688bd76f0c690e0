"""Vector ids, shared by every engine: one id space for chunks and passages, and the held bit.

A chunk's id is 60 bits of its chunk id (``vector_id``); a passage's is derived from its chunk's
(index/passages.py). *Held* vectors (a note's passages: ids with ``HELD_BIT`` set) are only read
back for the few candidates a search found, never searched; each engine keeps them its own way
(``local/vectors.py``: float16 rows beside the FAISS index; PostgreSQL: a partition of ``vecs``)
and each engine's manifest statements test the bit as ``id >= HELD_BIT`` (ids are below 2**62).
The set operations below are what a sync of the index against the manifest needs.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

HELD_BIT = 1 << 61  # above the 60 bits of vector_id: set on the ids of held (never searched) vectors


def is_held(vid: int) -> bool:
    return bool(int(vid) & HELD_BIT)


def sorted_ids(ids) -> np.ndarray:
    """``ids`` as a sorted int64 array without repeats (FAISS takes an id twice; set differences
    over sorted unique arrays are what a sync and a delta need). Not ``np.unique``: numpy 2's hash
    path is ~20x slower than a sort on the ~500k ids of a 100k-chunk vault."""
    out = np.sort(np.asarray(ids, dtype=np.int64))
    if len(out) > 1:
        repeated = out[1:] == out[:-1]
        if repeated.any():
            out = out[np.concatenate(([True], ~repeated))]
    return out


def _in(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Which ids of ``a`` are in ``b`` (both from ``sorted_ids``): a binary search each, ~20x faster
    than numpy's set routines here, and cheap when ``a`` is the small one."""
    if not len(b):
        return np.zeros(len(a), dtype=bool)
    at = np.searchsorted(b, a)
    return b[np.minimum(at, len(b) - 1)] == a


def id_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The ids of ``a`` not in ``b``, both from ``sorted_ids``."""
    return a[~_in(a, b)] if len(a) and len(b) else a


def id_intersection(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The ids of ``a`` also in ``b``, both from ``sorted_ids``."""
    return a[_in(a, b)]


def vector_id(chunk_id: str) -> int:
    """Chunk ids are 16 hex digits; FAISS wants a signed 64-bit id. 60 bits keep it positive."""
    return int(chunk_id[:15], 16)


def rows_in_order(found: dict[int, np.ndarray], ids: Sequence[int], dim: int) -> np.ndarray:
    """``vector_rows``'s answer from ``get``'s: ``found``'s vectors in the order of ``ids``, zeros
    for an id not stored (both engines answer it so)."""
    zero = np.zeros(dim, dtype=np.float32)
    return np.stack([found.get(int(i), zero) for i in ids])


def inner_products(found: dict[int, np.ndarray], query: np.ndarray) -> dict[int, float]:
    """Exact inner products of ``query`` with the stored vectors ``found`` (id -> vector)."""
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    return {i: float(vec @ q) for i, vec in found.items()}
