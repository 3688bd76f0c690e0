"""Embedders served over HTTP: Ollama (through the official ``ollama`` client, ``POST /api/embed``)
and OpenAI-compatible endpoints (``POST /v1/embeddings`` over httpx). Only used when the user
configures them; errors say what to do.
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
        if not model:
            raise ConfigError(f"the {self.name} embedder needs a model: set embed_model in .wikimem.toml "
                              "or WIKIMEM_EMBED_MODEL")
        self.model = model
        self.url = (url or self.default_url).rstrip("/")
        self._connect(api_key, timeout, transport)
        probe = self._request(["dimension probe"])
        self.identity = EmbedderIdentity(self.name, model, "1", int(probe.shape[1]))

    def _connect(self, api_key: str, timeout: float, transport) -> None:
        import httpx

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=self.url, timeout=timeout, headers=headers, transport=transport)

    def _unreachable(self, exc: Exception) -> EmbedderError:
        return EmbedderError(f"{self.name} embedder at {self.url} is unreachable ({exc.__class__.__name__}: "
                             f"{exc}); is the server running?")

    def _post(self, path: str, payload: dict[str, Any]) -> Any:
        import httpx

        try:
            response = self._client.post(path, json=payload)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None
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
    """Through the official ``ollama`` client (the one the project is specified with), which
    also honours ``OLLAMA_API_KEY`` for hosted Ollama."""

    name = "ollama"
    default_url = "http://127.0.0.1:11434"

    def _connect(self, api_key: str, timeout: float, transport) -> None:
        try:
            import ollama
        except ImportError:
            raise ConfigError("embedder = 'ollama' needs the ollama package (pip install ollama)") from None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        extra = {"transport": transport} if transport is not None else {}
        self._client = ollama.Client(host=self.url, timeout=timeout, headers=headers, **extra)

    def _request(self, texts: list[str]) -> np.ndarray:
        import httpx
        import ollama

        try:
            response = self._client.embed(model=self.model, input=texts)
        except ollama.ResponseError as exc:
            if exc.status_code == 404:
                raise EmbedderError(f"ollama at {self.url}: model {self.model!r} not found ({exc.error}); "
                                    "pull or configure it first") from None
            raise EmbedderError(f"ollama at {self.url} answered {exc.status_code}: {str(exc.error)[:200]}") from None
        except (ConnectionError, httpx.HTTPError) as exc:
            raise self._unreachable(exc) from None
        except ValueError:  # not JSON, or JSON that is not an embed response
            raise EmbedderError(f"ollama at {self.url} did not answer with embeddings") from None
        return _matrix(getattr(response, "embeddings", None), "ollama")


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
