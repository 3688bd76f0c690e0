"""The language-model client: an answer from Ollama (``POST {url}/api/chat``, the request its official
client sends) or any endpoint speaking the OpenAI chat-completions protocol (``POST
{url}/chat/completions``), both over httpx with one deadline for the whole reply and a size bound.

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


MAX_REPLY_BYTES = 2 * 1024 * 1024  # an answer, a compile's claims or a memory verdict is a few KB


def _post(what: str, url: str, body: dict, headers: dict, timeout: float) -> tuple[int, bytes]:
    """(status, body bytes) of a POST, read as a stream so that ``timeout`` bounds the whole reply, not
    only each read (a server trickling a byte a second never tripped a read timeout: a query with
    ``--llm-timeout 3`` hung for minutes), and a reply past ``MAX_REPLY_BYTES`` is refused unread
    (a 30 MB "answer" was printed and filed as a query page)."""
    import time

    import httpx

    deadline = time.monotonic() + timeout
    data = bytearray()
    try:
        with httpx.stream("POST", url, headers=headers, json=body, timeout=timeout) as response:
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) > MAX_REPLY_BYTES:
                    raise LLMError(f"{what} sent a reply larger than {MAX_REPLY_BYTES // (1024 * 1024)} MiB; "
                                   "not read")
                if time.monotonic() > deadline:
                    raise LLMError(f"{what} did not finish its reply within {timeout:g} s (--llm-timeout)")
            return response.status_code, bytes(data)
    except httpx.HTTPError as exc:
        raise LLMError(f"{what} failed ({exc.__class__.__name__}: {exc})") from None


def _ollama(model: str, url: str, messages, timeout: float, schema: dict | None = None) -> str:
    """Ollama's ``/api/chat`` (the request the official client sends, without streaming), through
    ``_post`` for its whole-reply deadline and size bound."""
    import json

    try:
        from ollama._client import _parse_host  # the official client's reading of OLLAMA_HOST-style hosts
        host = _parse_host(url or DEFAULT_URLS["ollama"])
    except Exception:  # noqa: BLE001 - another ollama version: the URL as given
        host = (url or DEFAULT_URLS["ollama"]).rstrip("/")
    what = f"ollama at {url or DEFAULT_URLS['ollama']}"
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": False, "options": {"temperature": 0}}
    if schema is not None:  # structured output: a JSON schema
        body["format"] = schema
    status, data = _post(what, f"{host}/api/chat", body, {}, timeout)
    try:
        reply = json.loads(data)
    except ValueError:
        reply = None
    if status >= 400:
        error = reply.get("error") if isinstance(reply, dict) else data.decode("utf-8", "replace").strip()[:200]
        if status == 404:
            raise LLMError(f"ollama: model {model!r} not found; pull it first (ollama pull {model})")
        raise LLMError(f"ollama answered {status}: {error}")
    message = reply.get("message") if isinstance(reply, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise LLMError(f"{what} returned no message")
    return content


def _openai(model: str, url: str, api_key: str, messages, timeout: float, schema: dict | None = None) -> str:
    import json

    base = (url or DEFAULT_URLS["openai"]).rstrip("/")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    body: dict[str, Any] = {"model": model, "messages": messages, "temperature": 0}
    if schema is not None:  # structured output (the OpenAI json_schema response format)
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema,
                                                                          "strict": True}}
    status, data = _post(f"openai-compatible endpoint {base}", f"{base}/chat/completions", body, headers, timeout)
    if status >= 400:
        raise LLMError(f"openai-compatible endpoint {base} answered {status}: "
                       f"{data.decode('utf-8', 'replace').strip()[:200]}")
    try:
        content = json.loads(data)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise LLMError(f"openai-compatible endpoint {base} did not return a chat completion") from None
    if not isinstance(content, str):
        raise LLMError(f"openai-compatible endpoint {base} returned no text")
    return content


def choose_llm(settings, kind: str | None, model: str | None, url: str | None, api_key: str | None,
               timeout: float | None) -> dict[str, Any]:
    """The LLM to use: arguments (flags) win over settings (.wikimem.toml, WIKIMEM_LLM*); kind None
    means none (extractive answers)."""
    if timeout is not None and not (isinstance(timeout, (int, float)) and 0 < timeout < float("inf")):
        from .errors import UsageError  # -1 reached httpx as "Timeout value out of range": "a wikimem bug"
        raise UsageError(f"--llm-timeout wants a positive number of seconds, got {timeout!r}")
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
