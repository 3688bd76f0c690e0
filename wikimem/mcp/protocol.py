"""What each MCP method ``wikimem mcp`` serves answers, without the SDK, shaped as the SDK server shaped
it: initialize, server/discover, the lists (from listing.json), tools/call, resources/read and
prompts/get. A 2026-07-28 result also carries ``resultType``, cache hints on the cacheable ones and
the server's identity under ``_meta``. surface.py checks the requests first; stdio.py frames it all.
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable
from urllib.parse import unquote

from .. import __version__
from .checks import check_arguments, result_problem
from .server import (
    INSTRUCTIONS,
    FirstBuildGate,
    RejectUnknownArguments,
    ToolFailure,
    available,
    compact_text,
    run_tool,
)
from .surface import INTERNAL_ERROR, INVALID_PARAMS, MODERN, SERVER_INFO_KEY, RpcError

log = logging.getLogger(__name__)


class HandlerCrash(Exception):
    """A failure the SDK let escape its handler: code 0 with its text on a 2025 connection, a bare
    internal error on a 2026-07-28 one."""


def stamp(result: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 result: the server's identity under ``_meta`` (last, as the SDK adds it)."""
    return {**result, "_meta": {SERVER_INFO_KEY: {"name": "wikimem", "version": __version__}}}


def text_content(text: str) -> dict[str, Any]:
    return {"text": text, "type": "text"}


def tool_error(text: str, era: str) -> dict[str, Any]:
    """A tool's error result as the SDK server sends it."""
    if era == "modern":
        return stamp({"content": [text_content(text)], "isError": True, "resultType": "complete"})
    return {"content": [text_content(text)], "isError": True}


def _content(data: Any) -> list[dict[str, Any]]:
    """Content blocks for a result that is not an object, as the SDK made them (text as is, the rest JSON)."""
    import json
    if data is None:
        return []
    if isinstance(data, (list, tuple)):
        return [block for item in data for block in _content(item)]
    if not isinstance(data, str):
        data = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    return [text_content(data)]


class _Registry:
    """Collects the functions ``add_resources_and_prompts`` registers (the SDK server's registration calls)."""

    def __init__(self) -> None:
        self.resources: dict[str, tuple[Callable[..., Any], str]] = {}
        self.templates: list[tuple[str, str, tuple[str, ...], Callable[..., Any], str]] = []
        self.prompts: dict[str, Callable[..., Any]] = {}

    def resource(self, uri: str, *, mime_type: str | None = None, **_: Any):
        def register(fn):
            if "{" not in uri:
                self.resources[uri] = (fn, mime_type or "text/plain")
                return fn
            # the one template form used: PREFIX{+name} and optionally {?a,b} (lenient query, as the SDK)
            prefix, _, rest = uri.partition("{+")
            name, _, tail = rest.partition("}")
            query = tuple(tail[2:-1].split(",")) if tail.startswith("{?") and tail.endswith("}") else ()
            if "{" in prefix or (tail and not query) or not name:
                raise ValueError(f"resource template {uri!r}: only PREFIX{{+name}}{{?a,b}} is supported by stdio.py")
            self.templates.append((prefix, name, query, fn, mime_type or "text/plain"))
            return fn
        return register

    def prompt(self, name: str | None = None, **_: Any):
        def register(fn):
            self.prompts[name or fn.__name__] = fn
            return fn
        return register


def _is_traversal(value: str) -> bool:
    depth = 0
    for part in value.replace("\\", "/").split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part and part != ".":
            depth += 1
    return False


def _unsafe(value: str) -> bool:
    """The SDK's default check of a template's values: NUL, a path climbing out, an absolute path."""
    return ("\0" in value or _is_traversal(value) or value[:1] in ("/", "\\")
            or (len(value) >= 2 and value[1] == ":" and value[0].isascii() and value[0].isalpha()))


class Methods:
    """One vault's MCP methods; ``started`` is set once the client uses the tools (the warm-up's cue)."""

    def __init__(self, vault, listing: dict[str, Any], read_only: bool = False, ready: threading.Event | None = None,
                 started: threading.Event | None = None):
        self.vault = vault
        self.gate = FirstBuildGate(vault, ready)
        self.started = started
        mine = listing["read-only" if read_only else "read-write"]
        self.offered = {name: (method, writes) for name, method, writes in available(vault, read_only)}
        missing = set(self.offered) - set(mine["arguments"])
        if missing:  # a tool added without regenerating the listing: not offered rather than offered unchecked
            log.error("tools %s are not in listing.json: run python -m wikimem.mcp.listing", sorted(missing))
            self.offered = {n: v for n, v in self.offered.items() if n not in missing}
        self.lists = {era: {m: self._only_offered(m, r) for m, r in mine[era].items()} for era in ("legacy", "modern")}
        self.arguments = mine["arguments"]
        self.outputs = {t["name"]: t.get("outputSchema") for t in mine["legacy"]["tools/list"]["tools"]}
        self.prompt_info = {p["name"]: p for p in mine["legacy"]["prompts/list"]["prompts"]}
        self.refuse = RejectUnknownArguments({name: set(self.arguments[name]["properties"]) for name in self.offered})
        self._tools = None
        self._registry: _Registry | None = None
        self._lock = threading.Lock()

    def _only_offered(self, method: str, result: dict[str, Any]) -> dict[str, Any]:
        if method != "tools/list":
            return result
        return {k: ([t for t in v if t["name"] in self.offered] if k == "tools" else v) for k, v in result.items()}

    def tools(self):
        with self._lock:
            if self._tools is None:
                from .tools import Tools
                self._tools = Tools(self.vault)
            return self._tools

    def registry(self) -> _Registry:
        with self._lock:
            if self._registry is None:
                from .resources import add_resources_and_prompts
                registry = _Registry()
                add_resources_and_prompts(registry, self.vault)
                self._registry = registry
            return self._registry

    # -- the handshake and the lists ---------------------------------------------------------------------
    @staticmethod
    def initialize(version: str) -> dict[str, Any]:
        return {"capabilities": {"prompts": {"listChanged": False},
                                 "resources": {"listChanged": False, "subscribe": False},
                                 "tools": {"listChanged": False}},
                "instructions": INSTRUCTIONS, "protocolVersion": version,
                "serverInfo": {"name": "wikimem", "version": __version__}}

    @staticmethod
    def discover() -> dict[str, Any]:
        return stamp({"cacheScope": "private",
                      "capabilities": {"prompts": {"listChanged": True},
                                       "resources": {"listChanged": True, "subscribe": True},
                                       "tools": {"listChanged": True}},
                      "instructions": INSTRUCTIONS, "resultType": "complete", "supportedVersions": [MODERN],
                      "ttlMs": 0})

    def listed(self, method: str, era: str) -> dict[str, Any]:
        result = self.lists[era][method]
        return stamp(result) if era == "modern" else dict(result)

    # -- tools/call ----------------------------------------------------------------------------------------
    def refusal(self, params: Any) -> dict[str, Any] | None:
        """RejectUnknownArguments' answer (the same in both eras: the SDK sends it as its middleware made it)."""
        text = self.refuse.refusal(params)
        if text is None:
            return None
        return {"content": [{"type": "text", "text": text}], "isError": True, "resultType": "complete"}

    def call_tool(self, params: dict[str, Any], era: str) -> dict[str, Any]:
        name = params["name"]
        if name not in self.offered:
            log.info("Tool %r failed: %r", name, f"Unknown tool: {name}")
            return tool_error(f"Unknown tool: {name}", era)
        method, writes = self.offered[name]
        kwargs, problem = check_arguments(self.arguments[name], params.get("arguments") or {})
        if problem is not None:
            log.info("Tool %r rejected arguments", name)
            return tool_error(f"Error executing tool {name}: {problem}", era)
        fn = getattr(self.tools(), method)
        try:
            data, text = run_tool(fn, (), kwargs, not writes, self.gate,
                                  lambda d: (d, compact_text(d) if isinstance(d, dict) else None))
        except ToolFailure as exc:
            log.info("Tool %r failed: %r", name, str(exc))
            return tool_error(f"Error executing tool {name}: {exc}", era)
        schema = self.outputs.get(name)
        if schema is not None:  # a typed result: checked as the SDK checked it
            problem = result_problem(schema, data) if isinstance(data, dict) else "result: not an object"
            if problem is not None:
                log.error("Tool %r raised an unexpected exception: its result does not match its output schema (%s)",
                          name, problem)
                return tool_error(f"Error executing tool {name}", era)
        result: dict[str, Any] = {"content": _content(data) if text is None else [text_content(text)],
                                  "isError": False}
        if era == "modern":
            result["resultType"] = "complete"
        if text is not None:
            result["structuredContent"] = data
        return stamp(result) if era == "modern" else result

    # -- resources/read, prompts/get -------------------------------------------------------------------
    def _resource(self, uri: str) -> tuple[Callable[[], Any], str, str]:
        registry = self.registry()
        if uri in registry.resources:
            fn, mime = registry.resources[uri]
            return fn, mime, "Error reading resource"
        if len(uri) <= 65536:
            path, _, query = uri.partition("#")[0].partition("?")
            for prefix, name, names, fn, mime in registry.templates:
                if not path.startswith(prefix):
                    continue
                values = {name: unquote(path[len(prefix):])}
                for pair in query.split("&") if query else ():
                    key, _, value = pair.partition("=")
                    if key in names and key not in values:
                        values[key] = unquote(value)
                if any(_unsafe(v) for v in values.values()):
                    break
                return (lambda fn=fn, values=values: fn(**values)), mime, "Error creating resource from template"
        log.info("Resource %r failed: %r", uri, f"Unknown resource: {uri}")
        raise RpcError(INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri})

    def read_resource(self, params: dict[str, Any], era: str) -> dict[str, Any]:
        import json
        uri = params["uri"]
        read, mime, failure = self._resource(uri)
        try:
            content = read()
        except Exception:  # noqa: BLE001 - as the SDK: logged, a generic error naming only the URI
            log.exception("Resource %r raised an unexpected exception", uri)
            raise RpcError(INTERNAL_ERROR, f"{failure} {uri}", {"uri": uri}) from None
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False, indent=2, default=str)
        contents = [{"mimeType": mime, "text": content, "uri": uri}]
        if era == "modern":
            return stamp({"cacheScope": "private", "contents": contents, "resultType": "complete", "ttlMs": 0})
        return {"contents": contents}

    def get_prompt(self, params: dict[str, Any], era: str) -> dict[str, Any]:
        name, arguments = params["name"], params.get("arguments")
        fn = self.registry().prompts.get(name)
        if fn is None:
            raise HandlerCrash(f"Unknown prompt: {name}")
        required = {a["name"] for a in self.prompt_info[name].get("arguments", ()) if a.get("required")}
        missing = required - set(arguments or {})
        if missing:
            raise HandlerCrash(f"Missing required arguments: {missing}")
        try:
            text = fn(**(arguments or {}))
        except Exception:  # noqa: BLE001
            log.debug("prompt %s failed", name, exc_info=True)
            raise HandlerCrash(f"Error rendering prompt {name}") from None
        result = {"description": self.prompt_info[name].get("description", ""),
                  "messages": [{"content": text_content(text), "role": "user"}]}
        return stamp({**result, "resultType": "complete"}) if era == "modern" else result
