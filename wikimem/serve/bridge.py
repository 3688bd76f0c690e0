"""stdio ⇄ HTTP: a local ``wikimem mcp`` relaying its client's JSON-RPC to a warm ``wikimem serve``.

Standard library only (it runs in the light entry point, launch.py): one line from stdin is one
message, POSTed to the serve's MCP endpoint (streamable HTTP, JSON answers); each answer is one line
on stdout. The initialize request and notifications go in order; requests after it each in a
thread of their own, so a long tool call does not hold up a ping. The session id the server gives
is sent back with every later message, and the session is closed when stdin ends.
"""
from __future__ import annotations

import http.client
import json
import sys
import threading
from typing import Any
from urllib.parse import urlsplit


class Relay:
    def __init__(self, url: str, token: str, out=None):
        self.parts = urlsplit(url)
        self.token = token
        self.out = out or sys.stdout
        self.session: str | None = None
        self.version: str | None = None
        self.lock = threading.Lock()
        self.gone = threading.Event()

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "Authorization": f"Bearer {self.token}"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        if self.version:
            headers["MCP-Protocol-Version"] = self.version
        return headers

    def _exchange(self, method: str, body: bytes | None) -> tuple[int, str, bytes, str | None]:
        conn = http.client.HTTPConnection(self.parts.hostname, self.parts.port or 80, timeout=None)
        try:
            conn.request(method, self.parts.path or "/", body, self._headers())
            response = conn.getresponse()
            return (response.status, response.getheader("Content-Type") or "", response.read(),
                    response.getheader("Mcp-Session-Id"))
        finally:
            conn.close()

    def write(self, message: Any) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        with self.lock:
            self.out.write(line + "\n")
            self.out.flush()

    def _error(self, ident: Any, text: str) -> None:
        if ident is not None:
            self.write({"jsonrpc": "2.0", "id": ident, "error": {"code": -32000, "message": text}})

    def handle(self, line: str) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self.write({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})
            return
        ident = message.get("id") if isinstance(message, dict) else None
        try:
            status, ctype, data, session = self._exchange("POST", line.encode("utf-8"))
        except OSError as exc:
            self.gone.set()
            self._error(ident, f"the warm wikimem serve went away ({exc}); restart the MCP server")
            return
        if session and not self.session:
            self.session = session
        if status >= 400 and not data.strip():
            self._error(ident, f"wikimem serve answered {status}")
            return
        for answer in _messages(ctype, data):
            if isinstance(answer, dict) and isinstance(answer.get("result"), dict) and \
                    isinstance(answer["result"].get("protocolVersion"), str):
                self.version = answer["result"]["protocolVersion"]
            self.write(answer)

    def close(self) -> None:
        if self.session and not self.gone.is_set():
            try:
                self._exchange("DELETE", None)
            except OSError:
                pass


def _messages(ctype: str, data: bytes) -> list[Any]:
    if not data.strip():
        return []
    text = data.decode("utf-8", "replace")
    if "text/event-stream" in ctype:  # not asked for (JSON answers), handled all the same
        out = []
        for block in text.split("\n\n"):
            payload = "\n".join(line[5:].lstrip() for line in block.splitlines() if line.startswith("data:"))
            if payload:
                out.append(json.loads(payload))
        return out
    try:
        return [json.loads(text)]
    except ValueError:
        return [{"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": text[:500]}}]


def relay(url: str, token: str) -> int:
    """Relay stdin to ``url`` until stdin ends -> exit code (1 when the serve went away)."""
    bridge = Relay(url, token)
    threads: list[threading.Thread] = []
    initialized = False
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        if bridge.gone.is_set():
            break
        is_request = '"id"' in line
        if not initialized or not is_request:
            bridge.handle(line)  # the handshake and notifications in order
            initialized = initialized or is_request
            continue
        thread = threading.Thread(target=bridge.handle, args=(line,), daemon=True)
        thread.start()
        threads.append(thread)
        threads = [t for t in threads if t.is_alive()]
    for thread in threads:
        thread.join()
    bridge.close()
    return 1 if bridge.gone.is_set() else 0
