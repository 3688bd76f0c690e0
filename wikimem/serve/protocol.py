"""The forwarding protocol between a one-shot ``wikimem`` command and a warm process holding the
vault (``serve``, ``watch`` or ``mcp``): one request, one answer, each a 4-byte length and a JSON
object, over an owner-only Unix socket in the vault's cache folder.

Imported by the command-line entry point before anything else: standard library only, so a
forwarded command never pays for faiss, onnxruntime or igraph (nor typer and rich).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import socket
import stat
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


# settings a command reads from the environment that do not change its answer (where the vault is,
# forwarding itself, a remote server's token): they may differ between the client and the warm process
IGNORED_ENV = frozenset({"WIKIMEM_VAULT", "WIKIMEM_NO_FORWARD", "WIKIMEM_TOKEN", "WIKIMEM_TOKENS"})


def settings_digest(environ, salt: str) -> str:
    """A salted SHA-256 of the ``WIKIMEM_*`` settings that shape an answer: the client sends this,
    never the values (a database password, an API key), and the warm process compares it with the
    digest of its own settings under the same salt (a new random salt per request, so equal
    settings are not recognisable from one request to the next)."""
    items = sorted((k, v) for k, v in environ.items() if k.startswith("WIKIMEM_") and k not in IGNORED_ENV)
    raw = json.dumps(items, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return hmac.new(salt.encode("utf-8"), raw, hashlib.sha256).hexdigest()


def same_settings(request: dict, environ) -> bool:
    salt, digest = request.get("salt"), request.get("settings_sha256")
    if not isinstance(salt, str) or not isinstance(digest, str) or not salt:
        return False
    return hmac.compare_digest(settings_digest(environ, salt), digest)


def untrusted_socket(path: Path, uid: int) -> str | None:
    """Why the socket at ``path`` may not be the warm process of this user (None when it may): it
    must be a socket (not a link) owned by ``uid`` in a folder owned by ``uid`` that no one else
    may write to. The peer's uid is checked as well once connected (``peer_uid``): this check
    alone would leave a moment between it and the connect."""
    try:
        folder = os.lstat(path.parent)
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot inspect {path}: {exc.strerror}"
    if not stat.S_ISDIR(folder.st_mode) or folder.st_uid != uid or folder.st_mode & stat.S_IWOTH:
        return f"{path.parent} is not a folder of this user's that only it may write to"
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != uid:
        return f"{path} is not a socket of this user's"
    return None


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a connected Unix socket (Linux ``SO_PEERCRED``;
    None where it cannot be known, and then nothing is sent)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return None
    return struct.unpack("3i", creds)[1]


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
