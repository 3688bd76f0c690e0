"""The warm side of forwarding: a process that holds a vault (``serve``, ``watch``, ``mcp``) listens
on ``.wikimem/serve.sock`` (mode 0600, the peer's uid checked) and runs the one-shot read commands
sent to it in-process, on its open vault, with the client's terminal, so their output and exit
code are what the command would have printed itself.

A request this process cannot answer the same way (another wikimem version, other ``WIKIMEM_*``
settings, a command it does not take) is answered with ``fallback`` and the client runs the
command itself; so does a client that finds no socket or a stale one.
"""
from __future__ import annotations

import contextlib
import fcntl
import io
import logging
import os
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .. import __version__
from ..serve.protocol import FORWARDED, PROTOCOL, SOCKET_NAME, receive, same_settings, send, short_address

log = logging.getLogger(__name__)

LOCK_NAME = SOCKET_NAME + ".lock"  # flock(2) held by the process answering on the socket, for its lifetime
STANDBY_EVERY_S = 2.0  # how often a process that does not answer tries to take the socket over


class RoutedStream(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` in a process that runs forwarded commands: a thread running one
    writes to its own buffer (and reports the client's isatty); every other thread to the real stream."""

    def __init__(self, real):
        self.real = real
        self.local = threading.local()

    def routed(self):
        return getattr(self.local, "target", None)

    def write(self, text: str) -> int:
        target = self.routed()
        return (target[0] if target else self.real).write(text)

    def flush(self) -> None:
        target = self.routed()
        if not target:
            self.real.flush()

    def isatty(self) -> bool:
        target = self.routed()
        return target[1] if target else self.real.isatty()

    def fileno(self) -> int:
        if self.routed():
            raise io.UnsupportedOperation("a forwarded command's stream has no file descriptor")
        return self.real.fileno()

    @property
    def encoding(self):  # type: ignore[override]
        return "utf-8" if self.routed() else self.real.encoding

    @property
    def errors(self):  # type: ignore[override]
        return "strict" if self.routed() else getattr(self.real, "errors", "strict")

    def __getattr__(self, name: str):
        return getattr(self.real, name)


_ROUTING_LOCK = threading.Lock()


def _route_std_streams() -> tuple[RoutedStream, RoutedStream]:
    with _ROUTING_LOCK:
        if not isinstance(sys.stdout, RoutedStream):
            sys.stdout = RoutedStream(sys.stdout)
        if not isinstance(sys.stderr, RoutedStream):
            sys.stderr = RoutedStream(sys.stderr)
        return sys.stdout, sys.stderr  # type: ignore[return-value]


def run_command(request: dict[str, Any]) -> dict[str, Any]:
    """Run one forwarded command line in this thread -> {"code", "stdout", "stderr"}."""
    from ..api import FORWARDED_CLIENT
    from .app import forwarded_consoles, invoke

    out_stream, err_stream = _route_std_streams()
    out, err = io.StringIO(), io.StringIO()
    out_stream.local.target = (out, bool(request.get("stdout_tty")))
    err_stream.local.target = (err, bool(request.get("stderr_tty")))
    client = {"cwd": str(request.get("cwd") or "/"), "started": request.get("started")}
    reset = FORWARDED_CLIENT.set(client)
    try:
        with forwarded_consoles(out, err, bool(request.get("stdout_tty")), bool(request.get("stderr_tty")),
                                dict(request.get("env") or {}), list(request.get("argv") or [])):
            code = invoke(list(request.get("argv") or []))
    finally:
        FORWARDED_CLIENT.reset(reset)
        out_stream.local.target = None
        err_stream.local.target = None
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def _other_client(request: dict[str, Any]) -> str | None:
    """Why a client would not get from this process what it would get alone: another protocol or
    wikimem version, other ``WIKIMEM_*`` settings; None when it would."""
    if request.get("protocol") != PROTOCOL or request.get("version") != __version__:
        return f"the warm process runs wikimem {__version__}, this command {request.get('version')}"
    if not same_settings(request, os.environ):  # the client sends a salted digest, never the values
        return "this command's WIKIMEM_* settings differ from the warm process's"
    return None


def refusal(request: dict[str, Any]) -> str | None:
    """Why this process does not answer ``request`` itself (the client then runs it), or None."""
    if request.get("protocol") != PROTOCOL or request.get("version") != __version__:
        return _other_client(request)
    argv = request.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return "malformed request"
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in FORWARDED:
        return f"{command!r} is not answered by a warm process"
    return _other_client(request)


class ForwardServer:
    """Listens on ``<vault>/.wikimem/serve.sock`` for this process's open ``vault``."""

    def __init__(self, vault, mcp: dict[str, str] | None = None):
        self.vault = vault
        # a `wikimem serve`'s MCP endpoint of this vault for a local `wikimem mcp` to bridge to:
        # {"url", "read", "write"} (the two bearer secrets of this process, for this uid only)
        self.mcp = mcp
        self.path = Path(vault.root) / ".wikimem" / SOCKET_NAME
        self.sock: socket.socket | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._standby: threading.Thread | None = None
        self._lock_fd: int | None = None
        self._inode: tuple[int, int] | None = None

    def start(self) -> "ForwardServer":
        """Take the socket unless another live process answers on it, and then stand by: when that
        process ends (however: ``kill -9`` releases its lock too) this one takes the socket over
        within ``STANDBY_EVERY_S``, so one-shot commands stay warm while any serve, mcp or watch of
        the vault runs. Never raises (forwarding is a speed-up: without it every command still runs,
        in its own process)."""
        if getattr(self.vault, "overrides", None):
            log.info("not answering forwarded commands: this vault was opened with %s", sorted(self.vault.overrides))
            return self
        try:
            taken = self._take()
        except OSError as exc:
            log.info("not answering forwarded commands: %s", exc)
            taken = False
        if not taken:
            self._standby = threading.Thread(target=self._stand_by, name="wikimem-forward-standby", daemon=True)
            self._standby.start()
        return self

    def _take(self) -> bool:
        """Bind the socket when this process gets the forwarding lock (False: another holds it)."""
        from ..vault.files import ensure_cache_folder
        ensure_cache_folder(self.path.parent)
        from ..stores.sidefiles import open_cache_file
        fd = open_cache_file(self.path.parent / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self._bind()
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self._lock_fd = fd
        from ..api import host_vault
        host_vault(self.vault)
        self._thread = threading.Thread(target=self._accept, name="wikimem-forward", daemon=True)
        self._thread.start()
        return True

    def _stand_by(self) -> None:
        while not self._stop.wait(STANDBY_EVERY_S):
            try:
                if self._take():
                    log.warning("answering one-shot commands on %s now (the process that answered them ended)",
                                self.path)
                    return
            except OSError as exc:  # the cache folder going, an older wikimem answering without the lock
                log.debug("still not answering forwarded commands: %s", exc)

    def _bind(self) -> None:
        from ..vault.files import ensure_cache_folder
        ensure_cache_folder(self.path.parent)
        address, fd = short_address(self.path)
        try:
            if os.path.lexists(self.path):
                probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                probe.settimeout(0.5)
                try:
                    probe.connect(address)
                    raise OSError(f"another process answers on {self.path}")
                except (ConnectionRefusedError, FileNotFoundError, socket.timeout):
                    os.unlink(self.path)  # a socket its process left behind when it died
                finally:
                    probe.close()
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(address)
            os.chmod(self.path, 0o600)
            sock.listen(16)
            sock.settimeout(0.5)
            st = os.stat(self.path)
            self._inode = (st.st_dev, st.st_ino)
            self.sock = sock
        finally:
            if fd is not None:
                os.close(fd)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()  # type: ignore[union-attr]
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), name="wikimem-forwarded", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.closing(conn):
            try:
                creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
                _pid, uid, _gid = struct.unpack("3i", creds)
                if uid != os.getuid():
                    log.warning("refused a forwarded command from uid %s", uid)
                    return
                conn.settimeout(30)
                request = receive(conn)
                conn.settimeout(None)
                if request.get("kind") == "mcp":
                    send(conn, self._mcp_endpoint(request))
                    return
                why = refusal(request)
                if why:
                    send(conn, {"fallback": why})
                    return
                started = time.monotonic()
                answer = run_command(request)
                log.debug("forwarded %s in %.0f ms", request.get("argv"), (time.monotonic() - started) * 1000)
                send(conn, answer)
            except Exception as exc:  # noqa: BLE001 - the client falls back; this process goes on
                log.info("a forwarded command failed: %s", exc)
                with contextlib.suppress(OSError):
                    send(conn, {"fallback": f"the warm process failed ({type(exc).__name__})"})

    def _mcp_endpoint(self, request: dict[str, Any]) -> dict[str, Any]:
        """Where a local `wikimem mcp` may bridge its stdio to this serve's MCP over HTTP, or why not."""
        if self.mcp is None:
            return {"fallback": "this process serves no MCP over HTTP"}
        why = _other_client(request)
        if why:
            return {"fallback": why}
        scope = "read" if request.get("read_only") else "write"
        return {"url": self.mcp["url"], "token": self.mcp[scope], "scope": scope}

    def stop(self) -> None:
        self._stop.set()
        if self._standby is not None:  # first: a take in progress finishes before the socket is closed
            self._standby.join(timeout=5)
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()
            with contextlib.suppress(OSError):  # only our own socket, not one a newer process bound since
                st = os.stat(self.path)
                if (st.st_dev, st.st_ino) == self._inode:
                    os.unlink(self.path)
        from ..api import unhost_vault
        unhost_vault(self.vault)
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._lock_fd is not None:  # after the socket file is gone: a standby then binds a fresh one
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)
            self._lock_fd = None
