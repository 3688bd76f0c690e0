"""Embedders served over HTTP: Ollama (``POST /api/embed``) and OpenAI-compatible endpoints
(``POST /v1/embeddings``). Only used when the user configures them; errors say what to do.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import ConfigError, EmbedderError
from . import EmbedderIdentity, normalise


class _HTTPEmbedder:
    name = "http"
    default_url = ""
    query_prefix = ""

    def __init__(self, model: str, url: str = "", api_key: str = "", timeout: float = 60.0, transport=None):
        import httpx

        if not model:
            raise ConfigError(f"the {self.name} embedder needs a model: set embed_model in .wikimem/config.toml "
                              "or WIKIMEM_EMBED_MODEL")
        self.model = model
        self.url = (url or self.default_url).rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=self.url, timeout=timeout, headers=headers, transport=transport)
        probe = self._request(["dimension probe"])
        self.identity = EmbedderIdentity(self.name, model, "1", int(probe.shape[1]))

    def _post(self, path: str, payload: dict[str, Any]) -> Any:
        import httpx

        try:
            response = self._client.post(path, json=payload)
        except httpx.HTTPError as exc:
            raise EmbedderError(f"{self.name} embedder at {self.url} is unreachable ({exc.__class__.__name__}: "
                                f"{exc}); is the server running?") from None
        if response.status_code == 404:
            raise EmbedderError(f"{self.name} at {self.url}: model {self.model!r} not found "
                                f"({response.text.strip()[:200]}); pull or configure it first")
        if response.status_code >= 400:
            raise EmbedderError(f"{self.name} at {self.url} answered {response.status_code}: {response.text.strip()[:200]}")
        try:
            return response.json()
        except ValueError:
            raise EmbedderError(f"{self.name} at {self.url} did not answer with JSON") from None

    def _request(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def _checked(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._request(list(texts))
        if vectors.shape[0] != len(texts):
            raise EmbedderError(f"{self.name} returned {vectors.shape[0]} vectors for {len(texts)} texts")
        if hasattr(self, "identity") and vectors.shape[1] != self.identity.dim:
            raise EmbedderError(f"{self.name} model {self.model!r} returned dimension {vectors.shape[1]}, "
                                f"expected {self.identity.dim}; the model changed, run `wikimem index`")
        return normalise(vectors)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.identity.dim), dtype=np.float32)
        return self._checked(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._checked([self.query_prefix + text])[0]


def _matrix(rows: Any, who: str) -> np.ndarray:
    try:
        array = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError):
        raise EmbedderError(f"{who} returned vectors that are not numbers") from None
    if array.ndim != 2 or array.shape[1] == 0:
        raise EmbedderError(f"{who} returned no usable vectors")
    return array


class OllamaEmbedder(_HTTPEmbedder):
    name = "ollama"
    default_url = "http://127.0.0.1:11434"

    def _request(self, texts: list[str]) -> np.ndarray:
        data = self._post("/api/embed", {"model": self.model, "input": texts})
        return _matrix(data.get("embeddings") if isinstance(data, dict) else None, "ollama")


class OpenAIEmbedder(_HTTPEmbedder):
    name = "openai"
    default_url = "http://127.0.0.1:8000/v1"

    def _request(self, texts: list[str]) -> np.ndarray:
        data = self._post("/embeddings", {"model": self.model, "input": texts})
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise EmbedderError("openai-compatible endpoint returned no 'data' list")
        items = sorted(items, key=lambda d: d.get("index", 0))
        return _matrix([d.get("embedding") for d in items], "openai-compatible endpoint")
