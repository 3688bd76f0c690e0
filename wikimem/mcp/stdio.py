"""``wikimem mcp VAULT``: MCP's JSON-RPC 2.0 loop over stdio, without the SDK.

Importing the MCP SDK took 1.2-1.5 s of every start (it builds ~580 pydantic models for two protocol
versions) before the client could list a tool. This loop answers as the SDK's stdio server did --
the same results, errors and era rules, compared as parsed JSON with it in tests/test_mcp_stdio.py --
with the transport of wire.py, the request checks of surface.py, the methods of protocol.py and the
lists of listing.json:

- the client's first request decides the connection's era: ``initialize`` (or any request without
  the 2026-07-28 envelope) opens a handshake connection, an enveloped request a 2026-07-28 one;
- the handshake, the lists and ``ping`` are answered at once, in order; ``tools/call``,
  ``resources/read``, ``prompts/get`` and ``subscriptions/listen`` each in a thread of their own (at
  most 40 at a time), so a slow call does not hold up the others; ``notifications/cancelled``
  drops the answer of a request still running;
- a line that is not JSON is answered with a parse error (-32700), JSON that is not a JSON-RPC
  message with an invalid-request error (-32600), both with ``id: null`` unless the message's id
  could be read (the SDK dropped both without an answer);
- at end of input, the calls still running finish and are answered, then the server stops;
- the vault's warm session is made once the client uses the tools (``LateSession``), so its
  modules do not delay the first answers.
"""
from __future__ import annotations

import json
import logging
import threading
from typing import Any, BinaryIO, Callable

from .protocol import HandlerCrash, Methods
from .surface import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MODERN,
    PARSE_ERROR,
    ROUND_TRIP_METHODS,
    SERVED,
    SUBSCRIPTION_KEY,
    UNSUPPORTED_VERSION,
    RpcError,
    check_envelope,
    check_params,
    has_envelope,
    invalid_params,
    negotiate,
)
from .wire import Wire

log = logging.getLogger(__name__)

MAX_CALLS = 40  # calls running at once (the SDK's worker-thread limit); more wait for a slot
PRE_REQUEST_FRAMES = 8  # notifications kept from before the first request (the SDK keeps as many)
THREADED = frozenset({"tools/call", "resources/read", "prompts/get", "subscriptions/listen"})
_LAX_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})


def _request_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _key(rid: Any) -> Any:
    """Request ids as the SDK correlates them ("7" and 7 are one)."""
    if isinstance(rid, str):
        try:
            return int(rid)
        except ValueError:
            pass
    return rid


class _Call:
    def __init__(self, rid: Any, method: str):
        self.rid, self.method = rid, method
        self.cancelled = False
        self.done = threading.Event()  # a listen stream waits on it: set by a cancel or the end of input


class Connection:
    """One client on one wire: the JSON-RPC loop, the era, the calls in flight."""

    def __init__(self, methods: Methods, wire: Wire):
        self.methods = methods
        self.wire = wire
        self.era: str | None = None  # "legacy" (the initialize handshake) or "modern" (2026-07-28)
        self.accepted = False  # a handshake connection: initialize answered, or notifications/initialized seen
        self.pending: list[tuple[str, Any]] = []
        self.calls: dict[Any, _Call] = {}
        self.threads: set[threading.Thread] = set()
        self.slots = threading.BoundedSemaphore(MAX_CALLS)
        self._lock = threading.Lock()

    # -- the loop ------------------------------------------------------------------------------------
    def run(self) -> None:
        try:
            for line in self.wire.lines():
                if line.strip():
                    self.receive(line)
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        with self._lock:
            for call in self.calls.values():
                call.done.set()
            threads = list(self.threads)
        for thread in threads:
            thread.join()

    def receive(self, line: str) -> None:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            self.send_error(None, RpcError(PARSE_ERROR, "Parse error"))
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self._invalid(message)
            return
        params = message.get("params")
        method = message.get("method")
        if "params" in message and params is not None and not isinstance(params, dict):
            self._invalid(message)
        elif isinstance(method, str) and _request_id(message.get("id")):
            self.on_request(message["id"], method, params)
        elif isinstance(method, str):
            self.on_notification(method, params)
        elif _request_id(message.get("id")) and isinstance(message.get("result"), dict):
            log.debug("dropping a response to a request this server never sent: %r", message.get("id"))
        elif "error" in message and isinstance(message.get("error"), dict) and (
                message.get("id") is None or _request_id(message.get("id"))):
            log.debug("dropping an error answer from the client: %r", message.get("error"))
        else:
            self._invalid(message)

    def _invalid(self, message: Any) -> None:
        rid = message.get("id") if isinstance(message, dict) and _request_id(message.get("id")) else None
        self.send_error(rid, RpcError(INVALID_REQUEST, "Invalid Request"))

    def send_result(self, rid: Any, result: dict[str, Any]) -> None:
        self.wire.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def send_error(self, rid: Any, error: RpcError) -> None:
        self.wire.send({"jsonrpc": "2.0", "id": rid, "error": error.error()})

    # -- notifications -------------------------------------------------------------------------------
    def on_notification(self, method: str, params: Any) -> None:
        if method == "notifications/cancelled":  # the answer of a request still running is dropped
            rid = params.get("requestId") if isinstance(params, dict) else None
            if _request_id(rid):
                with self._lock:
                    call = self.calls.get(_key(rid))
                if call is not None:
                    call.cancelled = True
                    call.done.set()
            return
        if self.era is None:
            if len(self.pending) < PRE_REQUEST_FRAMES:
                self.pending.append((method, params))
            return
        if method == "notifications/initialized" and self.era == "legacy" and (
                params is None or params.get("_meta") is None or isinstance(params.get("_meta"), dict)):
            self.accepted = True

    # -- requests ------------------------------------------------------------------------------------
    def on_request(self, rid: Any, method: str, params: dict[str, Any] | None) -> None:
        if self.era is None:  # the first request decides the connection's era
            self.era = "modern" if method != "initialize" and has_envelope(params) else "legacy"
            pending, self.pending = self.pending, []
            for notification in pending:
                self.on_notification(*notification)
        started = self.methods.started
        try:
            if self.era == "legacy":
                if method != "initialize" and has_envelope(params):
                    raise RpcError(INVALID_REQUEST, "this connection serves the handshake protocol era; "
                                                    "requests carrying the 2026-07-28 envelope are not accepted on it")
            else:
                if method == "initialize":
                    requested = (params or {}).get("protocolVersion")
                    data = {"supported": [MODERN], "requested": requested} if isinstance(requested, str) else \
                        {"supported": [MODERN]}
                    raise RpcError(UNSUPPORTED_VERSION, "connection is serving the 2026-07-28 protocol; the "
                                                        "initialize handshake is not accepted", data)
                check_envelope(params)
            # the SDK server's middleware, outermost first: requestState (this server mints none, so
            # any is refused), the handshake cue for the warm-up, unknown arguments
            if method in ROUND_TRIP_METHODS and params and params.get("requestState") is not None:
                log.warning("requestState rejected on %s: this server issues none", method)
                raise RpcError(INVALID_PARAMS, "Invalid or expired requestState", {"reason": "invalid_request_state"})
            if method == "tools/call" and started is not None:
                started.set()  # a call may wait for the warm-up: never make it wait for this too
            try:
                refusal = self.methods.refusal(params) if method == "tools/call" and params else None
                if refusal is not None:
                    self.send_result(rid, refusal)
                else:
                    self.handle(rid, method, params)
            finally:
                if method.startswith("tools/") and started is not None:
                    started.set()
        except RpcError as exc:
            self.send_error(rid, exc)

    def handle(self, rid: Any, method: str, params: dict[str, Any] | None) -> None:
        era = self.era
        check_params(method, era, params)
        if method == "initialize":
            self.send_result(rid, self.methods.initialize(negotiate(params["protocolVersion"])))
            self.accepted = True
            return
        if method not in SERVED:
            raise RpcError(METHOD_NOT_FOUND, "Method not found", method)
        if era == "legacy" and not self.accepted and method != "ping":
            raise invalid_params()  # before the handshake (the SDK's answer, word for word)
        if method in THREADED:
            self.spawn(rid, method, params or {})
        elif method == "ping":
            self.send_result(rid, {})
        elif method == "server/discover":
            self.send_result(rid, self.methods.discover())
        else:
            self.send_result(rid, self.methods.listed(method, era))

    # -- calls in threads ----------------------------------------------------------------------------
    def spawn(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        call = _Call(rid, method)
        thread = threading.Thread(target=self._work, args=(call, params), name=f"wikimem-mcp {method}", daemon=True)
        with self._lock:
            self.calls[_key(rid)] = call
            self.threads.add(thread)
        thread.start()

    def _work(self, call: _Call, params: dict[str, Any]) -> None:
        era = self.era
        answer: tuple[str, Any] | None = None
        try:
            with self.slots:
                if call.cancelled:
                    return
                try:
                    if call.method == "tools/call":
                        answer = ("result", self.methods.call_tool(params, era))
                    elif call.method == "resources/read":
                        answer = ("result", self.methods.read_resource(params, era))
                    elif call.method == "prompts/get":
                        answer = ("result", self.methods.get_prompt(params, era))
                    else:
                        answer = self._listen(call, params)
                except RpcError as exc:
                    answer = ("error", exc)
                except Exception as exc:  # noqa: BLE001 - a failing handler costs its request only
                    if not isinstance(exc, HandlerCrash):
                        log.exception("handler for %r raised", call.method)
                    answer = ("error", RpcError(0, str(exc)) if era == "legacy"
                              else RpcError(INTERNAL_ERROR, "Internal server error"))
        finally:
            with self._lock:
                if self.calls.get(_key(call.rid)) is call:
                    del self.calls[_key(call.rid)]
                self.threads.discard(threading.current_thread())
            if answer is not None and not call.cancelled:
                kind, value = answer
                if kind == "result":
                    self.send_result(call.rid, value)
                else:
                    self.send_error(call.rid, value)

    def _listen(self, call: _Call, params: dict[str, Any]) -> tuple[str, Any]:
        """``subscriptions/listen``: acknowledged, then open until cancelled (this server's lists never
        change, so no event ever follows); at end of input it ends as the SDK ends it."""
        wanted = params.get("notifications") or {}

        def on(key: str) -> bool:
            value = wanted.get(key)
            return value is True or value == 1 or (isinstance(value, str) and value.lower() in _LAX_TRUE)

        honored: dict[str, Any] = {k: True for k in ("toolsListChanged", "promptsListChanged", "resourcesListChanged")
                                   if on(k)}
        if wanted.get("resourceSubscriptions"):
            honored["resourceSubscriptions"] = list(wanted["resourceSubscriptions"])
        self.wire.send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                        "params": {"_meta": {SUBSCRIPTION_KEY: call.rid}, "notifications": honored}})
        call.done.wait()
        return "error", RpcError(CONNECTION_CLOSED, "Connection closed")


class LateSession:
    """The vault's ``WarmSession``, made once the client's handshake is done (its first ``tools/*``
    request) or after ``HANDSHAKE_GRACE_S``: then it starts its warm-up at once, as it would on that
    same cue. Making it earlier cost ~0.3 s of CPU (its modules) before the client's first answer.
    ``go`` and ``ready`` stand for the session's own events until it exists."""

    HANDSHAKE_GRACE_S = 3.0  # as agent.session's: the longest the warm-up waits for a handshake

    def __init__(self, vault, watch: bool = True):
        self.vault, self.watch = vault, watch
        self.go = threading.Event()
        self.ready = threading.Event()
        self.session = None
        self._stopped = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="wikimem-warm-start", daemon=True)

    def start(self) -> LateSession:
        self._thread.start()
        return self

    def _run(self) -> None:
        self.go.wait(self.HANDSHAKE_GRACE_S)
        try:
            with self._lock:
                if self._stopped:
                    return
                session = self.vault.warm_session(watch=self.watch)
                session.go.set()  # the handshake is done (or its grace is over): warm up now
                session.start()
                self.session = session
            session.ready.wait()
        except Exception:  # noqa: BLE001 - the server keeps answering from the cache as it is
            log.exception("background start-up failed")
        finally:
            self.ready.set()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            session = self.session
        self.go.set()
        if session is not None:
            session.stop()


def serve_stdio(path: str | None, read_only: bool = False, watch: bool = True,
                on_open: Callable[[Any], Any] | None = None, stdin: BinaryIO | None = None,
                stdout: BinaryIO | None = None, **overrides: Any) -> None:
    """Serve the vault at ``path`` on stdin/stdout (or the two binary streams given) until end of input.
    ``on_open(vault)``: called once the server runs; what it returns is ``stop()``ped at the end."""
    from ..api import open_vault
    from .listing import load

    vault = open_vault(path, **{k: v for k, v in overrides.items() if v is not None})
    try:
        session = LateSession(vault, watch=watch)
        methods = Methods(vault, load(), read_only=read_only, ready=session.ready, started=session.go)
        log.info("wikimem MCP server on %s (%s)", vault.root, "read-only" if read_only else "read-write")
        wire = Wire(stdin, stdout)
        extra = None
        try:
            session.start()  # after the wire has claimed stdout
            extra = on_open(vault) if on_open is not None else None
            Connection(methods, wire).run()
        finally:
            if extra is not None:
                extra.stop()
            session.stop()
            wire.release()
    finally:
        vault.close()
