"""A deterministic, dependency-free embedder for tests: hashed character trigrams and words.

Similar strings get similar vectors, so vector search behaves plausibly in tests, and the same
text always gives the same vector on every machine.
"""
from __future__ import annotations

import hashlib
import re
from typing import Sequence

import numpy as np

from . import EmbedderIdentity, normalise

_WORD = re.compile(r"\w+", re.UNICODE)


class FakeEmbedder:
    def __init__(self, dim: int = 64):
        self.identity = EmbedderIdentity("fake", "hash-trigram", "1", dim)
        self.calls = 0  # how many passages were embedded (tests check caching with it)

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.identity.dim, dtype=np.float32)
        low = text.lower()
        feats = _WORD.findall(low) + [low[i:i + 3] for i in range(max(0, len(low) - 2))]
        for feat in feats:
            h = int.from_bytes(hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest(), "little")
            vec[h % self.identity.dim] += 1.0 if (h >> 32) & 1 else -1.0
        return vec

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += len(texts)
        if not texts:
            return np.zeros((0, self.identity.dim), dtype=np.float32)
        return normalise(np.stack([self._vector(t) for t in texts]))

    def embed_query(self, text: str) -> np.ndarray:
        return normalise(self._vector(text))[0]
