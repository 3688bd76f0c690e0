"""The ``wikimem`` command's entry point: a read command whose vault is held by a warm process
(``serve``, ``watch`` or ``mcp``) is answered by that process over its Unix socket; anything else,
or any trouble on the way (no socket, a stale one, another version, ``WIKIMEM_NO_FORWARD=1``), runs
the command here as always. Only the standard library is imported before that choice.

The socket is trusted only when it is this user's: the socket file and its folder owned by this
user (the folder writable by no one else), and the process that accepted the connection running as
this user (``SO_PEERCRED``), all checked before a byte is sent; otherwise the command runs here. A
socket another user bound in a folder they can write would otherwise receive the command line and
the working folder, and choose the output and the exit code. The ``WIKIMEM_*`` settings are never
sent, only a salted digest of them for the warm process to compare with its own.
"""
from __future__ import annotations

import os
import secrets
import socket
import sys
import time
from pathlib import Path

from .caller import own_seconds
from .serve.protocol import (
    DISPLAY_ENV,
    FORWARDED,
    PROTOCOL,
    peer_uid,
    receive,
    send,
    settings_digest,
    short_address,
    socket_path,
    untrusted_socket,
)

CONNECT_TIMEOUT_S = 0.5
VAULT_MARKERS = (".wikimem", "SCHEMA.md", ".obsidian")  # as core.VAULT_MARKERS (kept light here)
# options that take a value, of the forwarded commands (a value is not the command or a vault); kept
# here so a forwarded start imports no typer, and checked against the typer app by tests/test_forward.py
VALUE_OPTIONS = {"--vault", "-V", "--limit", "-k", "--k", "--mode", "--folder", "--type", "--tag", "--since",
                 "--until", "--community", "--format", "--depth", "-d", "--fanout", "--min-weight", "--heading",
                 "--llm", "--llm-model", "--llm-url", "--llm-timeout", "--server", "--token", "--as-of", "--chunks"}


def forwardable(argv: list[str]) -> str | None:
    """The command of ``argv`` when a warm process may answer it, else None."""
    if os.environ.get("WIKIMEM_NO_FORWARD", "") not in ("", "0"):
        return None
    words = [a for a in argv if not a.startswith("-")]
    if not words or words[0] not in FORWARDED or argv[0].startswith("-") and argv[0] not in ("-q", "--quiet"):
        return None
    command = words[0]
    if any(a in ("--help", "--version") for a in argv):
        return None
    if any(a == "--server" or a.startswith("--server=") for a in argv):
        return None  # a remote server was named: not this machine's warm process
    if command == "query" and "--no-write" not in argv:
        return None  # a query that files its answer writes: run here, through the writer
    if command == "search" and any(a in ("vimgrep", "--format=vimgrep") for a in argv):
        return None  # paths relative to the client's folder
    return command


def vault_of(argv: list[str], command: str, cwd: Path) -> Path | None:
    """The vault the command would open, found as core.default_vault_path finds it."""
    chosen = None
    positional: list[str] = []
    skip = False
    seen_command = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg in ("--vault", "-V") and i + 1 < len(argv):
            chosen = argv[i + 1]
            skip = True
        elif arg.startswith("--vault="):
            chosen = arg.split("=", 1)[1]
        elif arg in VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            if seen_command:
                positional.append(arg)
            seen_command = True
    if chosen is None and command in ("status", "stats") and positional:
        chosen = positional[0]
    if chosen is None and command in ("search", "query") and len(positional) >= 2:
        chosen = _vault_word(positional[-1], cwd)  # `search QUERY VAULT`, as core.vault_from_words reads it
    chosen = chosen or os.environ.get("WIKIMEM_VAULT") or None
    if chosen:
        root = Path(chosen).expanduser()
        return root if root.is_absolute() else cwd / root
    for folder in (cwd, *cwd.parents):
        try:
            if any((folder / marker).exists() for marker in VAULT_MARKERS):
                return folder
        except OSError:
            return None
    return None


def _vault_word(word: str, cwd: Path) -> str | None:
    """``word`` when it is a folder that is a vault root (core.vault_from_words: the last of two or
    more query words names the vault as ``rg PATTERN PATH``), else None: it is searched for."""
    folder = Path(word).expanduser()
    folder = folder if folder.is_absolute() else cwd / folder
    try:
        return word if folder.is_dir() and any((folder / m).exists() for m in VAULT_MARKERS) else None
    except (OSError, ValueError):  # NUL, a name too long: a word
        return None


def _started() -> float | None:
    """This process's start as a wall-clock time (the warm process reports time "with start-up")."""
    seconds = own_seconds()
    return None if seconds is None else time.time() - seconds


def forward(argv: list[str]) -> int | None:
    """Run ``argv`` in the warm process holding its vault -> exit code, or None to run it here."""
    command = forwardable(argv)
    if command is None:
        return None
    cwd = Path(os.getcwd())
    root = vault_of(argv, command, cwd)
    if root is None or not socket_path(root).exists():
        return None
    from . import __version__
    request = {"protocol": PROTOCOL, "version": __version__, "argv": argv, "cwd": str(cwd),
               "env": {k: os.environ[k] for k in DISPLAY_ENV if k in os.environ}, **_settings(),
               "stdout_tty": sys.stdout.isatty(), "stderr_tty": sys.stderr.isatty(), "started": _started()}
    if sys.stdout.isatty() and "COLUMNS" not in request["env"]:
        try:
            request["env"]["COLUMNS"] = str(os.get_terminal_size(sys.stdout.fileno()).columns)
        except OSError:
            pass
    answer = _ask(root, request, timeout=None)  # None: a stale socket, a process gone mid-answer
    if answer is None or "fallback" in answer or not isinstance(answer.get("code"), int):
        return None
    _write(sys.stdout, answer.get("stdout", ""))
    _write(sys.stderr, answer.get("stderr", ""))
    return answer["code"]


def _settings() -> dict[str, str]:
    """The ``WIKIMEM_*`` settings as the warm process is told them: a salted digest, never a value."""
    salt = secrets.token_hex(16)
    return {"salt": salt, "settings_sha256": settings_digest(os.environ, salt)}


def _write(stream, text: str) -> None:
    if not text:
        return
    try:
        stream.write(text)
    except UnicodeEncodeError:
        stream.buffer.write(text.encode("utf-8", "backslashreplace"))
    stream.flush()


def _ask(root: Path, request: dict, timeout: float | None = 10.0) -> dict | None:
    """One request to the warm process holding ``root`` -> its answer, or None (no one answers).
    ``timeout``: for the answer, once connected (None: as long as the command takes)."""
    path = socket_path(root)
    uid = os.getuid()
    if not path.exists() or untrusted_socket(path, uid):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        address, fd = short_address(path)
        try:
            sock.settimeout(CONNECT_TIMEOUT_S)
            sock.connect(address)
        finally:
            if fd is not None:
                os.close(fd)
        if peer_uid(sock) != uid:  # another user's process answers: tell it nothing
            return None
        sock.settimeout(timeout)
        send(sock, request)
        return receive(sock)
    except (OSError, ValueError, ConnectionError):
        return None
    finally:
        sock.close()


def mcp_bridge(argv: list[str]) -> int | None:
    """``wikimem mcp VAULT`` while a ``wikimem serve`` holds the vault: relay stdio's JSON-RPC to
    that warm process's MCP over HTTP instead of starting a server (no model to load, no cache to
    open, nothing heavy imported: the client has its tools at once). None: start the server here."""
    if os.environ.get("WIKIMEM_NO_FORWARD", "") not in ("", "0") or not argv or argv[0] != "mcp":
        return None
    rest, vault, read_only = argv[1:], None, False
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg in ("--vault", "-V") and i + 1 < len(rest):
            vault, i = rest[i + 1], i + 2
            continue
        if arg.startswith("--vault="):
            vault = arg.split("=", 1)[1]
        elif arg == "--read-only":
            read_only = True
        elif arg in ("--json", "--no-watch"):
            pass
        elif arg.startswith("-") or vault is not None:
            return None  # --embedder and the like: a server of its own, as asked
        else:
            vault = arg
        i += 1
    cwd = Path(os.getcwd())
    root = vault_of(["mcp", *(["-V", vault] if vault else [])], "mcp", cwd)
    if root is None:
        return None
    from . import __version__
    answer = _ask(root, {"protocol": PROTOCOL, "version": __version__, "kind": "mcp", "read_only": read_only,
                         **_settings()})
    if not answer or not str(answer.get("url", "")).startswith("http://") or not isinstance(answer.get("token"), str):
        return None
    from .serve.bridge import relay
    sys.stderr.write(f"wikimem mcp: answered by the warm `wikimem serve` at {answer['url']} ({answer['scope']})\n")
    sys.stderr.flush()
    return relay(answer["url"], answer["token"])


def main() -> None:
    code = forward(sys.argv[1:])
    if code is None:
        code = mcp_bridge(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from .cli import main as cli_main
    cli_main()
