"""The language-model client: an answer from Ollama (the official ``ollama`` client) or any
endpoint speaking the OpenAI chat-completions protocol (``POST {url}/chat/completions``, httpx).

A provider, like the embedders: asked for only when the user configured one (``llm`` setting or
flag), never reached otherwise. Any failure (server down, model missing, timeout, a reply that is
not text) raises LLMError; callers fall back to what they do without a model.
"""
from __future__ import annotations

from typing import Any

from .errors import WikimemError

DEFAULT_URLS = {"ollama": "http://127.0.0.1:11434", "openai": "http://127.0.0.1:8000/v1"}


class LLMError(WikimemError):
    """The language model could not produce an answer (the message says why)."""


def _ollama(model: str, url: str, messages, timeout: float, schema: dict | None = None) -> str:
    try:
        import ollama
    except ImportError:
        raise LLMError("llm = 'ollama' needs the ollama package (pip install ollama)") from None
    try:
        client = ollama.Client(host=url or DEFAULT_URLS["ollama"], timeout=timeout)
        extra = {"format": schema} if schema is not None else {}  # structured output: a JSON schema
        response = client.chat(model=model, messages=messages, options={"temperature": 0}, **extra)
    except ollama.ResponseError as exc:
        if exc.status_code == 404:
            raise LLMError(f"ollama: model {model!r} not found; pull it first (ollama pull {model})") from None
        raise LLMError(f"ollama answered {exc.status_code}: {exc.error}") from None
    except Exception as exc:  # noqa: BLE001 - httpx timeouts, connection refused, bad JSON
        raise LLMError(f"ollama at {url or DEFAULT_URLS['ollama']} failed ({exc.__class__.__name__}: {exc})") from None
    content = getattr(getattr(response, "message", None), "content", None)
    if not isinstance(content, str):
        raise LLMError("ollama returned no message")
    return content


def _openai(model: str, url: str, api_key: str, messages, timeout: float, schema: dict | None = None) -> str:
    import httpx

    base = (url or DEFAULT_URLS["openai"]).rstrip("/")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    body: dict[str, Any] = {"model": model, "messages": messages, "temperature": 0}
    if schema is not None:  # structured output (the OpenAI json_schema response format)
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema,
                                                                          "strict": True}}
    try:
        response = httpx.post(f"{base}/chat/completions", headers=headers, timeout=timeout, json=body)
    except httpx.HTTPError as exc:
        raise LLMError(f"openai-compatible endpoint {base} failed ({exc.__class__.__name__}: {exc})") from None
    if response.status_code >= 400:
        raise LLMError(f"openai-compatible endpoint {base} answered {response.status_code}: "
                       f"{response.text.strip()[:200]}")
    try:
        content = response.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise LLMError(f"openai-compatible endpoint {base} did not return a chat completion") from None
    if not isinstance(content, str):
        raise LLMError(f"openai-compatible endpoint {base} returned no text")
    return content


def choose_llm(settings, kind: str | None, model: str | None, url: str | None, api_key: str | None,
               timeout: float | None) -> dict[str, Any]:
    """The LLM to use: arguments (flags) win over settings (.wikimem.toml, WIKIMEM_LLM*); kind None
    means none (extractive answers)."""
    chosen = kind or (settings.llm if settings.llm != "none" else None)
    return {"kind": None if chosen == "none" else chosen, "model": model or settings.llm_model,
            "url": url or settings.llm_url, "api_key": api_key or settings.llm_api_key,
            "timeout": timeout or settings.llm_timeout}


def complete(kind: str, model: str, url: str, api_key: str, messages, timeout: float,
             schema: dict | None = None) -> str:
    """The model's reply text; ``schema``: a JSON schema the reply must follow (structured output)."""
    if kind not in DEFAULT_URLS:
        raise LLMError(f"unknown llm {kind!r} (known: ollama, openai)")
    if not model:
        raise LLMError(f"llm = {kind!r} needs a model (--llm-model)")
    if kind == "ollama":
        return _ollama(model, url, messages, timeout, schema)
    return _openai(model, url, api_key, messages, timeout, schema)
