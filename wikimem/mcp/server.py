"""What the two MCP front ends share, and the SDK one: the tool table (SPECS), the first-build gate,
how a tool call runs and fails (``run_tool``), and ``build_server``, the SDK server with lean schemas
and middleware that ``wikimem serve`` runs over HTTP and that the stdio server is checked against.
``serve`` runs ``wikimem mcp`` on stdio.py, which does not import the SDK (nor does this module,
until ``build_server`` or ``make_tool`` is called)."""
from __future__ import annotations

import functools
import inspect
import json
import logging
import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .. import __version__
from ..errors import ConflictError, LockError, WikimemError, describe_os_error
from ..stores.failures import driver_errors, in_words

if TYPE_CHECKING:
    from .tools import Tools

log = logging.getLogger(__name__)

INSTRUCTIONS = """wikimem: an Obsidian vault as long-term memory.
Start a session with prime_context. Use search (compact hits; full_text=true for whole chunks) and
read_page before answering from memory. read_page returns sha256: pass it as expected_sha256 to
write_page so an edit made meanwhile is never overwritten. Link pages with the wikilinks results give.
raw/ holds immutable sources and cannot be written."""

LOCK_WAIT_S = 30.0  # how long a tool waits for a build that holds the cache (the first one, mostly)


def _when_unlocked(fn: Callable[..., Any], args, kwargs) -> Any:
    """Call ``fn``; while a first build holds the cache (LockError), wait for it a while."""
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            return fn(*args, **kwargs)
        except LockError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


class FirstBuildGate:
    """While the vault has no usable cache yet, a tool call waits (a while) for the background first
    build and calls go one at a time: concurrent calls would each try to bootstrap the cache."""

    def __init__(self, vault, ready: threading.Event | None = None):
        self.vault = vault
        self.ready = ready
        self._lock = threading.Lock()

    @contextmanager
    def __call__(self) -> Iterator[None]:
        try:
            problem = self.vault.cache.manifest_problem()
        except Exception:  # noqa: BLE001 - whatever it is, go the careful way
            problem = "unreadable"
        if problem is None:
            yield
            return
        if self.ready is not None:  # until the background start has committed a lexical index, not longer
            deadline = time.monotonic() + LOCK_WAIT_S
            while not self.ready.is_set() and time.monotonic() < deadline:
                if self.ready.wait(0.05):
                    break
                try:  # a first build's manifest exists before its first commit: wait for that commit
                    if self.vault.cache.manifest_problem() is None and not self.vault.cache.meta().get("dirty"):
                        break
                except Exception:  # noqa: BLE001 - keep waiting the careful way
                    pass
        with self._lock:
            yield


def compact_text(data: dict[str, Any]) -> str:
    """A structured result's text content: the same JSON without indentation (the SDK's default indents
    it, 10-50 % more of an agent's context for nothing)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


def _compact(data: Any) -> Any:
    """A result as the SDK server sends it: the structured content, and as text ``compact_text``.
    The SDK still validates the structured content against the tool's output schema, if it has one."""
    from mcp.types import CallToolResult, TextContent
    if not isinstance(data, dict):
        return data
    return CallToolResult(content=[TextContent(type="text", text=compact_text(data))], structured_content=data)


def lean_schema(schema: Any, output: bool = False) -> Any:
    """A schema as an agent needs to read it: no generated titles ("Top K"), one-line descriptions,
    no ``additionalProperties: true`` (the default), ``$ref``s into ``$defs`` inlined (results are
    not recursive; each type is used once or twice). An optional value: an argument as its own type
    (not anyOf with null and a null default: leaving it out is how to say none); a result field as
    ``"type": [T, "null"]``."""
    defs = schema.get("$defs", {}) if isinstance(schema, dict) else {}

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(x) for x in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
            node = {**defs[ref[8:]], **{k: v for k, v in node.items() if k != "$ref"}}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("title", "$defs") or (key == "additionalProperties" and value is True):
                continue
            if key == "properties" and isinstance(value, dict):  # names, not schema keywords
                out[key] = {name: walk(sub) for name, sub in value.items()}
            else:
                out[key] = walk(value)
        options = out.get("anyOf")
        if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
            (inner,) = [o for o in options if o != {"type": "null"}]
            if not output and out.get("default", 0) is None:
                out.pop("anyOf")
                out.pop("default")
                out = {**inner, **out}
            elif output and isinstance(inner.get("type"), str):
                out.pop("anyOf")
                out = {**inner, **out, "type": [inner["type"], "null"]}
        if not output and out.get("type") == "boolean" and out.get("default") is False:
            out.pop("default")  # a flag left out is off, as in any command line
        if isinstance(out.get("description"), str):
            out["description"] = " ".join(out["description"].split())
        return out

    return walk(schema)


class ToolFailure(Exception):
    """A tool call that failed, with the text the agent reads (the SDK server raises it as a ToolError)."""


def run_tool(fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any], wait_for_lock: bool,
             gate: FirstBuildGate, render: Callable[[Any], Any]) -> Any:
    """Run a tool and ``render`` its plain result; any failure (rendering included) becomes a
    ToolFailure with a readable message, never a traceback. ``wait_for_lock``: retry while a build
    holds the cache (reads only: a write is never repeated)."""
    from .tools import plain
    try:
        with gate():
            return render(plain(_when_unlocked(fn, args, kwargs) if wait_for_lock else fn(*args, **kwargs)))
    except ConflictError as exc:  # a compare-and-swap refusal: the hash to retry with, as the REST 409 gives
        sha = _current_sha(fn, kwargs)
        raise ToolFailure(f"{type(exc).__name__}: {exc}" + (
            f" (current sha256: {sha}; read_page for its text, then retry with expected_sha256={sha})"
            if sha else "")) from None
    except WikimemError as exc:
        raise ToolFailure(f"{type(exc).__name__}: {exc}") from None
    except (OSError, *driver_errors()) as exc:  # a full disk, a read-only cache, a database gone: in words
        log.warning("tool %s failed: %s", fn.__name__, exc)
        said = in_words(exc)  # PostgreSQL's: the server went, a GRANT missing
        raise ToolFailure(describe_os_error(exc) if said is None else f"{type(said).__name__}: {said}") from None
    except (ValueError, TypeError) as exc:
        log.warning("tool %s failed: %s", fn.__name__, exc)
        raise ToolFailure(f"{type(exc).__name__}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - the server must survive anything a tool does
        log.exception("tool %s crashed", fn.__name__)
        raise ToolFailure(f"internal error in {fn.__name__} ({type(exc).__name__}: {exc}); "
                          "the server is still running") from None


def _current_sha(fn: Callable[..., Any], kwargs: dict[str, Any]) -> str | None:
    """The current sha256 of the page a refused call named (``path``, else ``old``), or None."""
    vault = getattr(getattr(fn, "__self__", None), "vault", None)
    name = kwargs.get("path") or kwargs.get("old")
    if vault is None or not isinstance(name, str):
        return None
    try:
        from ..agent.pages import existing_page
        return vault.files.read_note(existing_page(vault.ctx, name)).sha256
    except Exception:  # noqa: BLE001 - gone or unreadable: no current hash to give
        return None


def _tool_error(fn: Callable[..., Any], wait_for_lock: bool, gate: FirstBuildGate) -> Callable[..., Any]:
    """``fn`` for the SDK: run by ``run_tool``, a failure raised as a ToolError (an MCP error result)."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return run_tool(fn, args, kwargs, wait_for_lock, gate, _compact)
        except ToolFailure as exc:
            raise ToolError(str(exc)) from None
    return run


# (tool name, Tools method, the Vault method it wraps, when offered: "read" always, "write" only
# without --read-only, "read-only" only with it). A tool whose Vault method is missing is not offered.
SPECS = (
    ("search", "search", "search", "read"),
    ("read_page", "read_page", "read_page", "read"),
    ("list_pages", "list_pages", "list_pages", "read"),
    ("taxonomy", "taxonomy", "taxonomy", "read"),
    ("prime_context", "prime_context", "prime_context", "read"),
    ("history", "history", "history", "read"),
    ("recall", "recall", "memories", "read"),
    ("query", "query", "query", "write"),
    ("query", "query_no_write", "query", "read-only"),
    ("neighbors", "neighbors", "neighbors", "read"),
    ("related", "related", "related", "read"),
    ("recent", "recent", "recent", "read"),
    ("communities", "communities", "communities", "read"),
    ("lint", "lint", "lint", "read"),
    ("review", "review", "review", "read"),
    ("refresh_stale", "refresh_stale", "refresh_stale", "write"),
    ("compile", "compile", "compile", "write"),
    ("stats", "stats", "stats", "read"),
    ("write_page", "write_page", "write_page", "write"),
    ("edit_page", "edit_page", "edit_page", "write"),
    ("move_page", "move_page", "move_page", "write"),
    ("delete_page", "delete_page", "delete_page", "write"),
    ("remember", "remember", "remember", "write"),
    ("supersede", "supersede", "supersede", "write"),
    ("restore", "restore", "restore", "write"),
)

DESTRUCTIVE = frozenset({"supersede", "restore", "write_page", "edit_page", "move_page", "delete_page"})  # they change or replace pages an agent did not create


def available(vault, read_only: bool) -> list[tuple[str, str, bool]]:
    """(tool name, Tools method, writes?) this build offers, in SPECS order."""
    wanted = ("read", "read-only") if read_only else ("read", "write")
    return [(name, method, when == "write") for name, method, api, when in SPECS
            if when in wanted and hasattr(vault, api)]


class RejectUnknownArguments:
    """Middleware: a tools/call with an argument the tool does not take is an error, not ignored
    (an agent misspelling ``expected_sha256`` must not silently lose its conflict check)."""

    def __init__(self, allowed: dict[str, set[str]]):
        self.allowed = allowed

    def refusal(self, params: Any) -> str | None:
        """The error text for a tools/call ``params`` naming an argument its tool does not take, or None."""
        if not isinstance(params, dict):
            return None
        name = params.get("name")
        args = params.get("arguments") or {}
        if isinstance(name, str) and name in self.allowed and isinstance(args, dict):
            unknown = sorted(set(args) - self.allowed[name])
            if unknown:
                takes = ", ".join(sorted(self.allowed[name])) or "no arguments"
                return f"{name}: unknown argument(s) {', '.join(unknown)} (it takes: {takes})"
        return None

    async def __call__(self, ctx, call_next):
        if ctx.method == "tools/call" and ctx.params:
            text = self.refusal(ctx.params)
            if text is not None:
                from mcp.types import CallToolResult, TextContent
                return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        return await call_next(ctx)


class HandshakeDone:
    """Middleware: sets ``event`` when the client has started using the server (its tools listed or
    a tool called), so the background warm-up starts after the handshake instead of competing with
    it for the interpreter (start-to-ready)."""

    def __init__(self, event: threading.Event):
        self.event = event

    async def __call__(self, ctx, call_next):
        if ctx.method == "tools/call":
            self.event.set()  # a call may wait for the warm-up: never make it wait for this too
        try:
            return await call_next(ctx)
        finally:
            if ctx.method.startswith("tools/"):
                self.event.set()


def make_tool(tools: Tools, name: str, method: str, writes: bool, gate: FirstBuildGate):
    """One SDK ``Tool``: the method's docstring as its description, lean input and output schemas.
    A method whose result is a TypedDict (schemas.py) gets an output schema, and the SDK validates
    each result against it (a mismatch is an error result); the others have none: a schema of
    ``{"type": "object"}`` would say nothing and cost tokens in every tool list."""
    from mcp.server.mcpserver.tools import Tool
    from mcp.types import ToolAnnotations
    from typing_extensions import is_typeddict

    fn = getattr(tools, method)
    typed = is_typeddict(inspect.signature(fn, eval_str=True).return_annotation)
    # only what differs from the spec's defaults (read_only false, destructive true, open_world true: query
    # may call an LLM service); destructive_hint is meaningless for a read-only tool
    hints = ToolAnnotations(destructive_hint=name in DESTRUCTIVE) if writes else ToolAnnotations(read_only_hint=True)
    tool = Tool.from_function(_tool_error(fn, wait_for_lock=not writes, gate=gate), name=name,
                              description=" ".join((fn.__doc__ or "").split()), annotations=hints,
                              structured_output=typed)
    tool.parameters = lean_schema(tool.parameters)
    if tool.fn_metadata.output_schema is not None:  # published lean; results are still validated by the full model
        tool.fn_metadata.output_schema = lean_schema(tool.fn_metadata.output_schema, output=True)
    return tool


def build_server(vault, read_only: bool = False, lifespan=None, ready: threading.Event | None = None,
                 started: threading.Event | None = None, tools: Tools | None = None,
                 extra_middleware: list[Any] | None = None):
    """An MCPServer whose tools call into ``vault``; ``ready`` is set when the background start-up
    has brought the cache up to date (calls wait for it only while there is no cache at all).
    ``tools``: share one ``Tools`` (and its write lock) with other front ends of the same vault."""
    from mcp.server import MCPServer

    from .resources import add_resources_and_prompts
    from .tools import Tools

    tools = tools if tools is not None else Tools(vault)
    gate = FirstBuildGate(vault, ready)
    offered = available(vault, read_only)
    allowed = {name: set(inspect.signature(getattr(tools, method)).parameters) for name, method, _ in offered}
    middleware: list[Any] = [*(extra_middleware or []), RejectUnknownArguments(allowed)]
    if started is not None:
        middleware.insert(0, HandshakeDone(started))
    server = MCPServer("wikimem", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan,
                       middleware=middleware,
                       tools=[make_tool(tools, name, method, writes, gate) for name, method, writes in offered])
    add_resources_and_prompts(server, vault)
    return server


def serve(path: str | None, read_only: bool = False, watch: bool = True, on_open: Callable[[Any], Any] | None = None,
          **overrides: Any) -> None:
    """Run ``wikimem mcp``'s stdio server until the client disconnects (stdio.py: no SDK import, so the
    client has its tools in a fraction of the SDK's start-up). ``on_open(vault)``: called once the
    server runs; what it returns is ``stop()``ped at the end (the CLI answers forwarded commands so)."""
    from .stdio import serve_stdio
    serve_stdio(path, read_only=read_only, watch=watch, on_open=on_open, **overrides)


def serve_sdk(path: str | None, read_only: bool = False, watch: bool = True,
              on_open: Callable[[Any], Any] | None = None, **overrides: Any) -> None:
    """The same stdio server on the SDK (``build_server``): what ``wikimem mcp`` ran before stdio.py,
    kept as the reference tests/test_mcp_stdio.py compares stdio.py with, byte for byte."""
    from contextlib import asynccontextmanager

    from ..api import open_vault

    vault = open_vault(path, **{k: v for k, v in overrides.items() if v is not None})
    session = vault.warm_session(watch=watch)

    @asynccontextmanager
    async def lifespan(_server):
        session.start()  # here, after the transport has claimed stdout
        extra = on_open(vault) if on_open is not None else None
        try:
            yield {}
        finally:
            if extra is not None:
                extra.stop()
            session.stop()

    server = build_server(vault, read_only=read_only, lifespan=lifespan, ready=session.ready, started=session.go)
    log.info("wikimem MCP server on %s (%s)", vault.root, "read-only" if read_only else "read-write")
    try:
        server.run("stdio")
    finally:
        vault.close()
