"""The vector store's narrow interface, and what both engines' vector stores share.

``VectorStore`` is the protocol an index implements (add / remove / search / get by id):
``local/vectors.py``'s ``VectorIndex`` (FAISS) and ``postgres.vectors.PgVectorIndex`` (pgvector).
``VectorsBase`` is the part of a bundle that loads, commits and shares one (``protocol.VectorsPart``):
``local/vectorstore.py``'s ``FaissVectors`` (a file, a delta, the local vector cache) and
``postgres.cache.PgVectors`` (rows committed as they are added, the database's embedding cache). Which
passages are *held* (a note's passages, read back for the chunks a search found, never scanned:
their ids carry ``vectors.HELD_BIT``) is the vector store's business: callers ask
``held_passages`` / ``chunks_with_passages``, and never build SQL about the id bit.
"""
from __future__ import annotations

import hashlib
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from .manifest import Manifest


@runtime_checkable
class VectorStore(Protocol):
    """What search and the build need of a vector backend, by vector id (an int64: a chunk's
    ``build.chunk_vid``, or a passage's ``passages.passage_id``; both name the text embedded, so an
    id never comes to mean another vector).

    - ``add(ids, vectors)``: store rows (unit length, float32, ``dim`` wide); an id given again
      replaces its vector.
    - ``remove(ids)``: forget them (ids not held are ignored).
    - ``search(query, k, allowed=None)``: the top ``k`` *searched* ids by inner product, best
      first, ties by id; ``allowed`` restricts the candidates (a filter). Held ids (``HELD_BIT``
      set) are stored and read back but never returned by a search.
    - ``get(ids)``: id -> stored vector, for the ids present (re-ranking, page vectors).
    - ``vector_rows(ids)``: the same as rows in order, zeros for an id not present.
    - ``ids()``, ``ntotal`` (all stored), ``held_total`` (of them held): what a sync compares
      with the ids the manifest wants.
    - ``searched()``: (ids, rows) of every searched vector, for whole-vault work (communities,
      near-duplicates, related pages).

    Persisting (files, deltas, checksums) is the backend's own affair (``FaissVectors`` for FAISS):
    a database backend commits as it adds.
    """

    dim: int

    def add(self, ids: Sequence[int], vectors: np.ndarray) -> None: ...

    def remove(self, ids: Sequence[int]) -> None: ...

    def search(self, query: np.ndarray, k: int, allowed: Sequence[int] | None = None) -> list[tuple[int, float]]: ...

    def get(self, ids: Sequence[int]) -> dict[int, np.ndarray]: ...

    def vector_rows(self, ids: Sequence[int]) -> np.ndarray: ...

    def ids(self) -> np.ndarray: ...

    def searched(self) -> tuple[np.ndarray, np.ndarray]: ...

    @property
    def ntotal(self) -> int: ...

    @property
    def held_total(self) -> int: ...


def id_signature(ids) -> str:
    """A digest of a set of vector ids: the index is complete when it holds exactly these."""
    return hashlib.sha1(np.sort(np.asarray(ids, dtype=np.int64)).tobytes()).hexdigest()


class VectorsBase:
    """What both engines' vector stores share: the team's embedding cache (``shared``), the counts
    a build reports of where vectors came from, and the held-passage questions."""

    def __init__(self, cache: Any, shared=None):
        self.cache = cache
        self.shared = shared  # shared_embeddings.SharedEmbeddings, or None
        # texts whose vector came from the local vector cache, and from the shared one: a build
        # reports the difference across it (``taken``)
        self.taken_local = 0
        self.taken_shared = 0

    # -- held passages (the id bit stays in here) ----------------------------------------------
    def held_passages(self, vids, manifest: Manifest | None = None) -> dict[int, int]:
        """The held passages (a note's, never searched) of these chunk vids: passage id -> chunk vid."""
        return (manifest or self.cache.manifest).passages_of(vids, held=True)

    def chunks_with_passages(self, vids, manifest: Manifest | None = None) -> set[int]:
        """Which of these chunk vids have searched passages (transcript turns)."""
        return (manifest or self.cache.manifest).chunks_with_passages(vids, held=False)

    def searchable_ids(self, filters, manifest: Manifest | None = None) -> list[int]:
        """The ids a filtered vector search may return (``search``'s ``allowed``): the chunks passing
        ``filters`` (``filters.Filters``), then their searched passages (transcript turns'; held
        passages are never searched)."""
        manifest = manifest or self.cache.manifest
        return manifest.chunk_vids_where(filters) + manifest.passage_ids_where(filters, held=False)

    def held_wanted(self, manifest: Manifest | None = None) -> int:
        """How many held vectors the manifest wants (a note's passages)."""
        return (manifest or self.cache.manifest).passage_count(held=True)
