"""The MCP stdio transport: stdin and stdout claimed for the protocol, one JSON message per line.

While the server runs, file descriptor 1 points at stderr and 0 at the null device (as the SDK's
transport does): a stray print, or a library writing to fd 1, cannot corrupt the protocol, and a
child process reads end of input. Messages are compact UTF-8 JSON, NaN and infinities as null (JSON
has no spelling for them); numbers as Python writes them (1e-05): a client parses JSON, it does not
compare bytes.
"""
from __future__ import annotations

import io
import json
import os
import sys
import threading
from typing import Any, BinaryIO, Callable, Iterator

from ..model import json_safe  # NaN and infinities as null, as the SDK's JSON writer sends them

def encode(message: dict[str, Any]) -> bytes:
    """One message as one line: compact JSON, UTF-8."""
    try:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:
        text = json.dumps(json_safe(message), ensure_ascii=False, separators=(",", ":"), default=str)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate: escaped instead, still valid JSON
        text = json.dumps(json_safe(message), separators=(",", ":"), default=str)
        return text.encode("ascii") + b"\n"


class Wire:
    """stdin and stdout claimed for the protocol (or two given binary streams, claimed from nobody)."""

    def __init__(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None):
        self._restore: list[tuple[int, int]] = []
        self._out = stdout if stdout is not None else self._claim(1, sys.stdout, "wb", self._to_stderr)
        self._in = stdin if stdin is not None else self._claim(0, sys.stdin, "rb", self._from_null)
        self._lock = threading.Lock()
        self.broken = False

    @staticmethod
    def _to_stderr() -> int:
        try:
            return os.dup(2)
        except OSError:
            return os.open(os.devnull, os.O_WRONLY)

    @staticmethod
    def _from_null() -> int:
        return os.open(os.devnull, os.O_RDONLY)

    def _claim(self, fd: int, stream: Any, mode: str, diversion: Callable[[], int]) -> BinaryIO:
        """Serve the protocol on a private duplicate of ``fd`` and point ``fd`` elsewhere meanwhile."""
        try:
            if stream is None or stream.fileno() != fd:
                return stream.buffer
        except (AttributeError, OSError, ValueError):
            return stream.buffer
        try:
            if sys.platform == "win32":  # pragma: no cover
                private = os.dup(fd)
            else:
                import fcntl
                private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
        except OSError:
            return stream.buffer
        try:
            target = diversion()
            try:
                os.dup2(target, fd)
            finally:
                os.close(target)
        except OSError:
            os.close(private)
            return stream.buffer
        self._restore.append((fd, private))
        # closefd=False: a thread may still be blocked on it when the server stops; it is never recycled
        return os.fdopen(private, mode, closefd=False)

    def lines(self) -> Iterator[str]:
        reader = io.TextIOWrapper(self._in, encoding="utf-8", errors="replace")
        try:
            yield from reader
        finally:
            reader.detach()

    def send(self, message: dict[str, Any]) -> None:
        data = encode(message)
        with self._lock:
            if self.broken:
                return
            try:
                self._out.write(data)
                self._out.flush()
            except (BrokenPipeError, ValueError, OSError):  # the client is gone: nothing more to say
                self.broken = True

    def release(self) -> None:
        """Give fds 0 and 1 back (what was printed to them meanwhile went to stderr)."""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        while self._restore:
            fd, private = self._restore.pop()
            try:
                os.dup2(private, fd)
            except OSError:
                pass
