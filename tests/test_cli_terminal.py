"""Commands on a real terminal (a pseudo-terminal): the progress bar of ``index`` and the live status
line of ``watch`` draw and finish. Every other CLI test runs off a terminal, where these are plain
lines; with rich 15 both failed on a terminal alone ("'_ConsoleSwitch' object does not support the
context manager protocol"): the console stand-in of the forwarding layer was handed to rich."""
from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")


def _spawn(args: list[str]):
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30", "WIKIMEM_EMBEDDER": "fake"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "wikimem.cli", *args], stdin=slave, stdout=slave, stderr=slave,
                            env=env, close_fds=True, start_new_session=True)
    os.close(slave)
    return proc, master


def _read(master: int, proc, until: str | None = None, timeout: float = 60.0) -> str:
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed its side
                break
            if not chunk:
                break
            out += chunk
            if until is not None and until.encode() in out:
                break
        elif proc.poll() is not None and until is None:
            break
    return out.decode("utf-8", "replace")


def test_index_draws_its_progress_on_a_terminal(make_vault):
    root = make_vault({f"notes/n{i}.md": f"# Note {i}\n\nText about topic {i}.\n" for i in range(30)})
    proc, master = _spawn(["index", str(root)])
    try:
        text = _read(master, proc)
        assert proc.wait(timeout=60) == 0, text
    finally:
        os.close(master)
    assert "error" not in text.lower() and "Traceback" not in text, text
    assert "30" in text  # the summary counts the notes


def test_watch_shows_its_status_line_on_a_terminal_and_stops_on_ctrl_c(make_vault):
    root = make_vault({"notes/a.md": "# A\n\nalpha\n"})
    proc, master = _spawn(["watch", str(root)])
    try:
        text = _read(master, proc, until="last build")
        assert proc.poll() is None, text  # running, not crashed
        os.killpg(proc.pid, signal.SIGINT)
        text += _read(master, proc)
        code = proc.wait(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert "unexpected" not in text and "Traceback" not in text, text
    assert code in (0, 130), text
    assert "stopped" in text, text
