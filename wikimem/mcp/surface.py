"""What an MCP request must look like, per protocol era, as the SDK's wire models checked it.

Two eras: a 2025 connection opens with the ``initialize`` handshake (versions 2024-11-05 ..
2025-11-25, all checked with the 2025-11-25 shapes); a 2026-07-28 one carries its protocol version,
client capabilities and client info in every request's ``params._meta`` (the envelope) and opens
with ``server/discover`` (the SDK's own client does so). A spec method the era lacks is "Method not
found"; params of the wrong shape are "Invalid request parameters", with no details (the SDK's words).
"""
from __future__ import annotations

from typing import Any

from .checks import INT_TEXT

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[-1]
MODERN = "2026-07-28"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_KEY = "io.modelcontextprotocol/subscriptionId"

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
CONNECTION_CLOSED, UNSUPPORTED_VERSION = -32000, -32022


class RpcError(Exception):
    """A JSON-RPC error answer (``data`` only when given: the SDK leaves it out otherwise)."""

    _NO_DATA = object()

    def __init__(self, code: int, message: str, data: Any = _NO_DATA):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    def error(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not self._NO_DATA:
            out["data"] = self.data
        return out


def invalid_params() -> RpcError:
    """The SDK's answer to params its wire models refuse (no details on the wire)."""
    return RpcError(INVALID_PARAMS, "Invalid request parameters", "")


# -- what params look like ----------------------------------------------------------------------------
# A shape is a leaf name or {field: (shape, required)}; every field but a required one may be null.
# Leaves check as pydantic's lax mode did: "str" only a string, "bool" also 0/1 and "yes"/"off"...
_BOOL_TEXT = frozenset({"0", "off", "f", "false", "n", "no", "1", "on", "t", "true", "y", "yes"})


def _leaf(kind: str, value: Any) -> bool:
    if kind == "any":
        return True
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return (isinstance(value, (bool, int, float)) and value in (0, 1)) or (
            isinstance(value, str) and value.lower() in _BOOL_TEXT)
    if kind == "int":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer()) or (
            isinstance(value, str) and INT_TEXT.fullmatch(value.strip()) is not None)
    if kind == "id":  # str | int
        return isinstance(value, (str, int)) or (isinstance(value, float) and value.is_integer())
    if kind == "object":
        return isinstance(value, dict)
    if kind == "objects":  # dict[str, dict]
        return isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())
    if kind == "texts":  # dict[str, str]
        return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    if kind == "strs":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind.startswith("one of "):
        return value in kind[7:].split("|")
    raise AssertionError(kind)


def fits(shape: Any, value: Any) -> bool:
    if isinstance(shape, str):
        return _leaf(shape, value)
    if isinstance(shape, list):  # a list of this shape
        return isinstance(value, list) and all(fits(shape[0], v) for v in value)
    if not isinstance(value, dict):
        return False
    for key, (sub, required) in shape.items():
        if value.get(key) is None:  # absent, or null: only an optional field may be
            if required:
                return False
        elif not fits(sub, value[key]):
            return False
    return True


_ICON = {"src": ("str", True), "mimeType": ("str", False), "sizes": ("strs", False),
         "theme": ("one of dark|light", False)}
_IMPLEMENTATION = {"name": ("str", True), "version": ("str", True), "title": ("str", False),
                   "description": ("str", False), "websiteUrl": ("str", False), "icons": ([_ICON], False)}
_OBJECTS = {"form": ("object", False), "url": ("object", False)}
_CAPABILITIES_2025 = {
    "elicitation": (_OBJECTS, False), "experimental": ("objects", False),
    "roots": ({"listChanged": ("bool", False)}, False),
    "sampling": ({"context": ("object", False), "tools": ("object", False)}, False),
    "tasks": ({"cancel": ("object", False), "list": ("object", False),
               "requests": ({"elicitation": ({"create": ("object", False)}, False),
                             "sampling": ({"createMessage": ("object", False)}, False)}, False)}, False)}
_CAPABILITIES_2026 = {
    "elicitation": (_OBJECTS, False), "experimental": ("objects", False), "extensions": ("objects", False),
    "roots": ("object", False), "sampling": ({"context": ("object", False), "tools": ("object", False)}, False)}
_LEVELS = "one of alert|critical|debug|emergency|error|info|notice|warning"
_META_2025 = ({"progressToken": ("id", False)}, False)
_META_2026 = ({VERSION_KEY: ("str", True), CAPABILITIES_KEY: (_CAPABILITIES_2026, True),
               CLIENT_INFO_KEY: (_IMPLEMENTATION, False), "io.modelcontextprotocol/logLevel": (_LEVELS, False),
               "progressToken": ("id", False)}, True)
_PAGED = {"cursor": ("str", False)}
_TOOL_CALL = {"name": ("str", True), "arguments": ("object", False)}
_PROMPT_GET = {"name": ("str", True), "arguments": ("texts", False)}
_READ = {"uri": ("str", True)}
_COMPLETE = {"ref": ("object", True), "argument": ({"name": ("str", True), "value": ("str", True)}, True),
             "context": ("object", False)}
_ROUND = {"requestState": ("str", False), "inputResponses": ("objects", False)}

# (method, era) -> (params shape, params required); a spec method missing for its era is "Method not found"
SURFACE: dict[tuple[str, str], tuple[dict, bool]] = {}
for _method, _shape, _required in (
        ("initialize", {"protocolVersion": ("str", True), "capabilities": (_CAPABILITIES_2025, True),
                        "clientInfo": (_IMPLEMENTATION, True)}, True),
        ("ping", {}, False), ("tools/list", _PAGED, False), ("resources/list", _PAGED, False),
        ("resources/templates/list", _PAGED, False), ("prompts/list", _PAGED, False),
        ("tools/call", {**_TOOL_CALL, "task": ({"ttl": ("int", False)}, False)}, True),
        ("prompts/get", _PROMPT_GET, True), ("resources/read", _READ, True),
        ("resources/subscribe", _READ, True), ("resources/unsubscribe", _READ, True),
        ("logging/setLevel", {"level": (_LEVELS, True)}, True), ("completion/complete", _COMPLETE, True)):
    SURFACE[(_method, "legacy")] = ({"_meta": _META_2025, **_shape}, _required)
for _method, _shape in (
        ("server/discover", {}), ("tools/list", _PAGED), ("resources/list", _PAGED),
        ("resources/templates/list", _PAGED), ("prompts/list", _PAGED), ("tools/call", {**_TOOL_CALL, **_ROUND}),
        ("prompts/get", {**_PROMPT_GET, **_ROUND}), ("resources/read", {**_READ, **_ROUND}),
        ("completion/complete", _COMPLETE),
        ("subscriptions/listen", {"notifications": ({"promptsListChanged": ("bool", False),
                                                     "resourceSubscriptions": ("strs", False),
                                                     "resourcesListChanged": ("bool", False),
                                                     "toolsListChanged": ("bool", False)}, True)})):
    SURFACE[(_method, "modern")] = ({"_meta": _META_2026, **_shape}, True)
SPEC_METHODS = frozenset(m for m, _ in SURFACE)
SERVED = frozenset({"ping", "server/discover", "tools/list", "tools/call", "resources/list", "resources/templates/list",
                    "resources/read", "prompts/list", "prompts/get", "subscriptions/listen"})
ROUND_TRIP_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})  # the SDK checks requestState there


def check_params(method: str, era: str, params: dict[str, Any] | None) -> None:
    """Raise RpcError as the SDK did for a spec method: not of this era, or params of the wrong shape."""
    if method not in SPEC_METHODS:
        return
    if (method, era) not in SURFACE:
        raise RpcError(METHOD_NOT_FOUND, "Method not found", method)
    shape, required = SURFACE[(method, era)]
    if params is None:
        if required:
            raise invalid_params()
        return
    if not fits(shape, params):
        raise invalid_params()


def check_envelope(params: dict[str, Any] | None) -> None:
    """A 2026-07-28 request's ``params._meta`` envelope, checked as the SDK's inbound ladder checks it."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        raise RpcError(INVALID_PARAMS, "params._meta must be an object carrying the required "
                                       f"{VERSION_KEY!r} and {CAPABILITIES_KEY!r} envelope keys")
    missing = [key for key in (VERSION_KEY, CAPABILITIES_KEY) if key not in meta]
    if missing:
        raise RpcError(INVALID_PARAMS, f"params._meta is missing the required envelope key(s): {', '.join(missing)}")
    version = meta[VERSION_KEY]
    if not isinstance(version, str):
        raise RpcError(INVALID_PARAMS, "the protocol-version envelope value must be a string")
    if version != MODERN:
        raise RpcError(UNSUPPORTED_VERSION, "Unsupported protocol version",
                       {"supported": [MODERN], "requested": version})


def has_envelope(params: Any) -> bool:
    """Whether a request carries the 2026-07-28 envelope (its protocol-version key is the sign)."""
    return isinstance(params, dict) and isinstance(params.get("_meta"), dict) and VERSION_KEY in params["_meta"]


def negotiate(requested: Any) -> str:
    """The SDK's initialize negotiation: the client's version when this server speaks it, else its latest."""
    return requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE
