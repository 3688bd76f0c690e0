"""The language axis: take the query's language out of vector similarity (issue 17).

A multilingual embedder places every text partly by meaning and partly by language. Measured on
multilingual-e5-small over the tldr pages (benchmarks/README.md): the mean vector of the Chinese
chunks and that of the English ones are 0.95 cosine apart, and almost all of their difference
lies along one direction. Every Chinese text sits on one side of that direction and every English
text on the other, so a Chinese question is nearer to loosely related Chinese pages than to the
English page that answers it, and the reverse.

That direction, ``d``, is the embedder's own when it has one measured (the default embedder's
comes from 1,162 translated pages: benchmarks/language_axis.py), applied when the vault holds both
scripts. Otherwise this module finds it in the vault itself: the unit vector from the mean of its
Latin-script chunks to the mean of its Han-script ones (over a fixed sample of chunks, chosen by
vector id, so it depends only on what the vault holds). A vault's own estimate mixes language
with topic when its notes in the two languages are about different things (the bundled examples/
vault: 0.75 cosine from the translations' direction). Similarity is then measured with
``WEIGHT`` of each vector's component along ``d`` removed, for the query and every chunk alike:

    x' = x - b (x.d) d,   cos' = (x.q - k (x.d)(q.d)) / sqrt((1 - k (x.d)^2)(1 - k (q.d)^2)),  k = 2b - b^2

The numerator is an inner product with one modified query (``q - k (q.d) d``), so FAISS still
finds the candidates in one search; the candidates' norms are applied afterwards. That makes the
candidate list approximate: a vector far along the axis has a small projected norm, so its cosine
can beat vectors whose numerators were above it, and one just below the fetched 4n is not seen.
The norms vary little on real vectors (|x.d| <= 0.27 on the tldr pages: at most 3.6 %); an exact
search (widening until no unseen vector could win, ~3 flat scans a query) measured MRR@10 0.564
against 0.570 hybrid and 0.551 against 0.545 vector-only on tldr, so the single search stays. A vault
written in one script has no axis (fewer than ``MIN_GROUP`` chunks of the other script in the
sample): its search is exactly as without this module. This is the "language-neutral"
projection of Libovický et al., "On the language neutrality of pre-trained multilingual
representations" (2020), reduced to the one direction that two scripts define.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .evidence import script_of
from .tuning import AXIS_CROSS_QUERY as CROSS_QUERY, AXIS_MIN_GROUP as MIN_GROUP, AXIS_SAMPLE as SAMPLE, \
    AXIS_WEIGHT as WEIGHT

# WEIGHT, SAMPLE, MIN_GROUP: measured constants (tuning.py); 0 weight turns the projection off.


_KANA = re.compile(r"[\u3040-\u30ff]")


@dataclass(frozen=True)
class LanguageAxis:
    direction: np.ndarray  # unit vector, Latin mean -> Han mean
    k: float  # 2b - b^2: the share of each vector's squared component along ``direction`` removed

    def query(self, q: np.ndarray) -> np.ndarray:
        """The vector to search with: inner products with it are the projected numerators."""
        q = np.asarray(q, dtype=np.float32).reshape(-1)
        return q - self.k * float(q @ self.direction) * self.direction

    def project(self, vectors: np.ndarray) -> np.ndarray:
        """``vectors`` (rows) with the removed share of their component along the axis taken out:
        ``x - b (x.d) d``, where ``k = 2b - b^2``."""
        rows = np.asarray(vectors, dtype=np.float32)
        b = 1.0 - np.sqrt(max(0.0, 1.0 - self.k))
        return rows - b * np.outer(rows @ self.direction, self.direction)

    def rescale(self, q: np.ndarray, numerators: np.ndarray, vectors: np.ndarray) -> np.ndarray:
        """Projected numerators (one per stored vector, ``vectors`` as rows) -> projected cosines.
        A row of zeros (a vector no longer stored) keeps its numerator, over the query's norm."""
        qd = float(np.asarray(q, dtype=np.float32).reshape(-1) @ self.direction)
        q_norm = np.sqrt(max(1e-12, 1.0 - self.k * qd * qd))
        xd = np.asarray(vectors, dtype=np.float32) @ self.direction
        return np.asarray(numerators, dtype=np.float64) / (q_norm * np.sqrt(np.maximum(1e-12, 1.0 - self.k * xd * xd)))


def estimate(texts_and_vectors, weight: float | None = None) -> LanguageAxis | None:
    """The axis from ``(text, vector)`` pairs, or None (off, or too few of either script)."""
    sums = {"han": None, "latin": None}
    counts = {"han": 0, "latin": 0}
    for text, vec in texts_and_vectors:
        group = script_of(text)
        if not group:  # no letters (figures, another alphabet): on neither side of the axis
            continue
        sums[group] = vec.astype(np.float64) if sums[group] is None else sums[group] + vec
        counts[group] += 1
    if min(counts.values()) < MIN_GROUP:
        return None
    return _along(sums["han"] / counts["han"] - sums["latin"] / counts["latin"], weight)


def _along(direction, weight: float | None = None) -> LanguageAxis | None:
    """The axis along ``direction`` (any length), or None (off, or no direction)."""
    weight = WEIGHT if weight is None else weight
    size = float(np.linalg.norm(direction))
    if weight <= 0 or size <= 1e-9:
        return None
    b = min(1.0, weight)
    return LanguageAxis((np.asarray(direction, dtype=np.float64) / size).astype(np.float32), 2 * b - b * b)


def two_scripts(texts) -> str | None:
    """``"chinese"`` or ``"japanese"`` when ``texts`` hold at least ``MIN_GROUP`` Han-script and
    Latin-script chunks each (read only until they do; Japanese when most of the Han-script ones
    seen carry kana), else None."""
    counts = {"han": 0, "latin": 0}
    kana = 0
    for text in texts:
        group = script_of(text)
        if group:
            counts[group] += 1
            kana += group == "han" and _KANA.search(text) is not None
            if min(counts.values()) >= MIN_GROUP:
                return "japanese" if 2 * kana > counts["han"] else "chinese"
    return None


def estimate_from(cache, index, sample: int | None = None, known: np.ndarray | None = None) -> LanguageAxis | None:
    """The axis for the first ``sample`` chunks by vector id (a fixed choice: it depends only on
    what the vault holds). With ``known`` (the embedder's own axis, measured once between Chinese
    and English) the chunks only decide whether the vault holds both scripts, and no vector is
    read; a vault whose Han-script chunks are Japanese estimates its own."""
    def rows():
        return cache.manifest.first_chunk_texts(SAMPLE if sample is None else sample)
    if known is not None:
        cursor = rows()
        try:
            held = two_scripts(text for _, text in cursor)
        finally:
            cursor.close()  # an unfinished statement would hold its read snapshot open
        if held != "japanese":
            return _along(known) if held == "chinese" else None
    found = list(rows())
    vectors = index.vectors([vid for vid, _ in found])
    return estimate((text, vectors[vid]) for vid, text in found if vid in vectors)


def axis(cache, index) -> LanguageAxis | None:
    """The vault's language axis for the index as it is now, kept for this process until the
    index's searched vectors change. The embedder's own axis (``language_axis``, measured once
    from translations: the default embedder has one) when it has one and the vault holds both
    scripts; else estimated from the vault (an estimate reads ``SAMPLE`` chunks: ~30 ms, ~120 ms
    the first time in a process, when every text's script is found; evidence.script_of keeps
    them). Held passages (a note's, embedded after every chunk) never move it."""
    if WEIGHT <= 0 or index is None or index.ntotal == 0:
        return None
    key = (index.serial, index.searched_version, WEIGHT)
    entry = cache.runtime.kept("language_axis", key)
    if entry is not None:
        return entry[0]
    embedder = cache.embedder()
    known = getattr(embedder, "language_axis", None) if embedder is not None else None
    if known is not None and len(known) != index.dim:
        known = None
    found = estimate_from(cache, index, known=known)
    cache.runtime.keep("language_axis", key, (found,))
    return found


def vault_script(cache, index) -> str | None:
    """``"han"`` or ``"latin"`` when the first ``SAMPLE`` chunks (by vector id) are in that script
    and fewer than ``MIN_GROUP`` in the other (a vault in one script), else None. Kept for this
    process until the index's searched vectors change, as the axis is."""
    key = (index.serial, index.searched_version)
    entry = cache.runtime.kept("vault_script", key)
    if entry is not None:
        return entry[0]
    counts = {"han": 0, "latin": 0}
    cursor = cache.manifest.first_chunk_texts(SAMPLE)
    try:
        for _, text in cursor:
            group = script_of(text)
            if group:
                counts[group] += 1
    finally:
        cursor.close()
    found = None
    if min(counts.values()) < MIN_GROUP and max(counts.values()) >= MIN_GROUP:
        found = max(counts, key=counts.get)
    cache.runtime.keep("vault_script", key, (found,))
    return found


def axis_for(cache, index, query_script: str | None) -> LanguageAxis | None:
    """The axis a search measures with: the vault's (``axis``), or, in a vault written in one
    script searched in the other (a Chinese question about English pages), the embedder's own
    measured axis (issue 52): the question's language pulls it towards whatever the vault holds
    nearest that language (pages of option tables, code, names), not towards the page that answers
    it. A vault's own estimate needs both scripts, so only an embedder with a measured axis has one."""
    found = axis(cache, index)
    if found is not None or not CROSS_QUERY or not query_script or WEIGHT <= 0 or index is None or index.ntotal == 0:
        return found
    embedder = cache.embedder()
    known = getattr(embedder, "language_axis", None) if embedder is not None else None
    if known is None or len(known) != index.dim:
        return None
    held = vault_script(cache, index)
    if held is None or held == query_script:
        return None
    return _along(known)
