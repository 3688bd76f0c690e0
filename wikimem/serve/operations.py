"""The JSON API's operations: each one a method of ``mcp.tools.Tools`` (so an HTTP call, an MCP
tool call and the CLI run the same code), its arguments validated by a model made from that
method's signature (the same bounds and types the MCP schemas publish, unknown fields refused),
and every failure mapped to one HTTP status.

``OPERATIONS`` is the route table: (HTTP method, path under ``/v1/vaults/{name}``, Tools method,
writes?). The OpenAPI document is generated from it.
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from ..errors import (
    AmbiguousPageError,
    ConflictError,
    DatabaseUnavailable,
    DiskFullError,
    EmbedderError,
    IndexStaleError,
    LockError,
    NoteReadError,
    PageNotFoundError,
    PathEscapeError,
    ReadOnlyError,
    UsageError,
    VaultError,
    WikimemError,
)
from ..mcp.tools import Tools
from ..stores.failures import in_words


@dataclass(frozen=True)
class Operation:
    http: str  # GET | POST
    path: str  # under /v1/vaults/{name}
    method: str  # the Tools method
    writes: bool
    summary: str = ""
    aliases: tuple[tuple[str, str], ...] = ()  # (parameter as the API takes it, the method's name for it)


OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", "/search", "search", False, aliases=(("q", "query"), ("limit", "top_k"), ("tag", "tags"))),
    Operation("GET", "/pages", "list_pages", False),
    Operation("GET", "/page", "read_page", False),
    Operation("GET", "/taxonomy", "taxonomy", False),
    Operation("GET", "/prime", "prime_context", False),
    Operation("GET", "/history", "history", False),
    Operation("GET", "/memories", "recall", False),
    Operation("GET", "/neighbors", "neighbors", False),
    Operation("GET", "/path", "path", False),
    Operation("GET", "/related", "related", False),
    Operation("GET", "/recent", "recent", False),
    Operation("GET", "/communities", "communities", False),
    Operation("GET", "/lint", "lint", False),
    Operation("GET", "/review", "review", False, aliases=(("path", "paths"),)),
    Operation("POST", "/review/refresh", "refresh_stale", True),
    Operation("POST", "/compile", "compile", True),
    Operation("GET", "/stats", "stats", False),
    Operation("GET", "/status", "status", False),
    Operation("GET", "/query", "query_no_write", False, aliases=(("q", "question"), ("tag", "tags"))),
    Operation("POST", "/query", "query", True),
    Operation("POST", "/write", "write_page", True),
    Operation("POST", "/edit", "edit_page", True),
    Operation("POST", "/move", "move_page", True),
    Operation("POST", "/delete", "delete_page", True),
    Operation("POST", "/remember", "remember", True),
    Operation("POST", "/supersede", "supersede", True),
    Operation("POST", "/restore", "restore", True),
)


class ApiError(Exception):
    """A failure as the client gets it: status, message, and extra fields (e.g. the current sha256)."""

    def __init__(self, status: int, message: str, code: str, **extra: Any):
        super().__init__(message)
        self.status, self.message, self.code, self.extra = status, message, code, extra
        self.headers: dict[str, str] = {}

    def body(self) -> dict[str, Any]:
        return {"error": self.message, "code": self.code, **self.extra}


# most specific first: AmbiguousPageError is a UsageError
_STATUS: tuple[tuple[type[BaseException], int], ...] = (
    (PageNotFoundError, 404), (AmbiguousPageError, 400), (ConflictError, 409), (ReadOnlyError, 403),
    (PathEscapeError, 400), (UsageError, 400), (LockError, 503), (IndexStaleError, 503), (EmbedderError, 503),
    (DiskFullError, 507), (VaultError, 503), (DatabaseUnavailable, 503), (NoteReadError, 400), (WikimemError, 400),
)


def api_error(exc: BaseException) -> ApiError:
    """The status a failure maps to; never a traceback (a bug is a 500 whose message says so)."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, ValidationError):
        return ApiError(400, "; ".join(_problem(e) for e in exc.errors()), "bad_request")
    exc = in_words(exc) or exc  # a driver error that escaped a store (a connection cut, a refused grant)
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            if isinstance(exc, NoteReadError) and exc.kind == "too_large":
                status = 413
            elif isinstance(exc, NoteReadError) and isinstance(exc.__cause__, FileNotFoundError):
                status = 404  # no such page
            error = ApiError(status, str(exc), type(exc).__name__)
            if status == 503 and not getattr(exc, "lasting", False):  # a retry mends it: say when to try again
                error.headers["Retry-After"] = "2"
            return error
    if isinstance(exc, (OSError, ValueError, TypeError)):
        return ApiError(400, f"{type(exc).__name__}: {exc}", type(exc).__name__)
    return ApiError(500, f"internal error ({type(exc).__name__}: {exc}); the server is still running", "internal")


# an absolute path in a message: a slash not inside a word, a relative path or a URL, up to a space or quote
_SERVER_PATH = re.compile(r"(?<![\w.:/\\~-])/[^\s\"'<>()]+")


def hide_paths(error: ApiError, roots: dict[str, Any]) -> ApiError:
    """``error`` as a teammate's token gets it: no path of this machine (a served vault's folder is
    named by the vault's name; any other absolute path, such as the token file or the database's
    socket folder, is left out). The full message stays in the server's log."""
    def clean(text: str) -> str:
        for name, root in sorted(roots.items(), key=lambda item: -len(str(item[1]))):
            text = text.replace(str(root), f"vault {name!r}")
        return _SERVER_PATH.sub("[a path on the server]", text)
    hidden = ApiError(error.status, clean(error.message), error.code,
                      **{k: clean(v) if isinstance(v, str) else v for k, v in error.extra.items()})
    hidden.headers = dict(error.headers)
    return hidden


def _problem(error: dict[str, Any], names: dict[str, str] | None = None) -> str:
    where = ".".join(str((names or {}).get(p, p)) for p in error.get("loc", ())) or "body"
    if error.get("type") == "extra_forbidden":
        return f"{where}: unknown field"
    if error.get("type") == "missing":
        return f"{where}: required"
    return f"{where}: {error.get('msg', 'invalid')}"


def _is_list(annotation: Any) -> bool:
    while get_origin(annotation) is not None and get_origin(annotation) is not list:
        inner = [a for a in get_args(annotation) if a is not type(None)]
        if not inner:
            return False
        annotation = inner[0]
    return get_origin(annotation) is list


@lru_cache(maxsize=None)
def arguments_model(method: str) -> type[BaseModel]:
    """A model of the Tools method's arguments: its annotations (bounds, enums) and defaults;
    unknown fields are an error (a misspelt ``expected_sha256`` must not drop the conflict check)."""
    fn = getattr(Tools, method)
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(fn, eval_str=True).parameters.items():
        if name == "self":
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (param.annotation, default)
    return create_model(f"{method}_arguments", __config__=ConfigDict(extra="forbid"), **fields)


def list_fields(method: str) -> set[str]:
    return {name for name, f in arguments_model(method).model_fields.items() if _is_list(f.annotation)}


def query_arguments(op: Operation, pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """A GET's query string as arguments: list fields from repeated (or comma-free repeated)
    parameters, any other parameter given twice is an error rather than a guess."""
    aliases = dict(op.aliases)
    lists = list_fields(op.method)
    args: dict[str, Any] = {}
    for key, value in pairs:
        name = aliases.get(key, key)
        if name in lists:
            args.setdefault(name, []).append(value)
        elif name in args:
            raise ApiError(400, f"{key}: given more than once", "bad_request")
        else:
            args[name] = value
    return args


def body_arguments(op: Operation, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object of arguments", "bad_request")
    aliases = dict(op.aliases)
    return {aliases.get(k, k): v for k, v in body.items()}


def validate(op: Operation, args: dict[str, Any]) -> dict[str, Any]:
    model = arguments_model(op.method)
    try:
        parsed = model.model_validate(args)
    except ValidationError as exc:
        if op.http != "GET" or not op.aliases:
            raise api_error(exc) from None
        # a GET's parameters as the query string named them (limit=, not the tool's top_k)
        back = {name: key for key, name in op.aliases}
        raise ApiError(400, "; ".join(_problem(e, back) for e in exc.errors()), "bad_request") from None
    return {name: getattr(parsed, name) for name in model.model_fields}


def openapi(title: str, version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the JSON API, from the route table and the argument models."""
    paths: dict[str, Any] = {}
    errors = {str(code): {"description": text, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
              for code, text in ((400, "bad input (what was wrong)"), (401, "no or wrong token"),
                                 (403, "the token may not do this"), (404, "unknown vault or page"),
                                 (409, "compare-and-swap conflict (current_sha256)"), (413, "too large"),
                                 (429, "rate limited (Retry-After)"))}
    for op in OPERATIONS:
        schema = arguments_model(op.method).model_json_schema()
        doc = " ".join((getattr(Tools, op.method).__doc__ or "").split())
        entry: dict[str, Any] = {"operationId": f"{op.method}", "summary": doc, "tags": ["write" if op.writes else "read"],
                                 "responses": {"200": {"description": "the result, as the MCP tool returns it",
                                                       "content": {"application/json": {"schema": {"type": "object"}}}},
                                               **errors}}
        vault_param = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
        if op.http == "GET":
            back = {v: k for k, v in op.aliases}
            entry["parameters"] = [vault_param] + [
                {"name": back.get(n, n), "in": "query", "required": n in schema.get("required", []),
                 "schema": p, "description": p.get("description", "")}
                for n, p in schema.get("properties", {}).items()]
        else:
            entry["parameters"] = [vault_param]
            entry["requestBody"] = {"required": True, "content": {"application/json": {"schema": schema}}}
        paths.setdefault(f"/v1/vaults/{{name}}{op.path}", {})[op.http.lower()] = entry
    paths["/health"] = {"get": {"operationId": "health", "summary": "Liveness and each vault's state (no token needed).",
                                "responses": {"200": {"description": "ok"}}}}
    paths["/v1/vaults"] = {"get": {"operationId": "vaults", "summary": "The vaults this token sees.",
                                   "responses": {"200": {"description": "ok"}}}}
    return {"openapi": "3.1.0", "info": {"title": title, "version": version}, "paths": paths,
            "components": {"schemas": {"Error": {"type": "object", "properties": {
                "error": {"type": "string"}, "code": {"type": "string"}, "current_sha256": {"type": "string"}}}},
                "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
            "security": [{"bearer": []}]}
