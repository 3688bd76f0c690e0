"""The forwarding protocol between a one-shot ``wikimem`` command and a warm process holding the
vault (``serve``, ``watch`` or ``mcp``): one request, one answer, each a 4-byte length and a JSON
object, over an owner-only Unix socket in the vault's cache folder.

Imported by the command-line entry point before anything else: standard library only, so a
forwarded command never pays for faiss, onnxruntime or igraph (nor typer and rich).
"""
from __future__ import annotations

import json
import os
import socket
import struct
from pathlib import Path

PROTOCOL = 1
SOCKET_NAME = "serve.sock"
MAX_MESSAGE = 64 * 1024 * 1024
# commands a warm process answers (read-only; `query` only with --no-write)
FORWARDED = frozenset({"search", "query", "related", "recent", "neighbors", "path", "status", "stats", "read"})
# the client's environment that shapes a command's output, sent along so it renders for its terminal
DISPLAY_ENV = ("TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "TTY_COMPATIBLE",
               "TTY_INTERACTIVE", "CLICOLOR", "CLICOLOR_FORCE")


def socket_path(root: Path) -> Path:
    return Path(root) / ".wikimem" / SOCKET_NAME


def send(sock: socket.socket, data: dict) -> None:
    raw = json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogatepass")
    sock.sendall(struct.pack(">I", len(raw)) + raw)


def receive(sock: socket.socket) -> dict:
    head = _exactly(sock, 4)
    (size,) = struct.unpack(">I", head)
    if size > MAX_MESSAGE:
        raise ValueError(f"message of {size} bytes")
    data = json.loads(_exactly(sock, size).decode("utf-8", "surrogatepass"))
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def _exactly(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ConnectionError("closed mid-message")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def short_address(path: Path) -> tuple[str, int | None]:
    """A Unix socket address for ``path`` that fits the 107-byte limit: the path itself, or, when it
    is longer, ``/proc/self/fd/N/name`` through an open descriptor of its folder (Linux)."""
    text = os.fsencode(str(path))
    if len(text) < 100:
        return str(path), None
    fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    return f"/proc/self/fd/{fd}/{path.name}", fd
