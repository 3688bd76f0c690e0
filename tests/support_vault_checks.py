"""Helpers for tests that put one bad note, file name or setting in a vault and check that index,
search, status and parse of the public API still work (moved from test_hostile.py)."""
import json
import signal
import time
from contextlib import contextmanager

from wikimem.api import open_vault


GOOD = {"SCHEMA.md": "# Schema\n", "good.md": "# Good\n\nAlpha beta gamma, the searchable note.\n"}


class Hung(Exception):
    """Not an OSError (as TimeoutError is), so code that skips unreadable files cannot swallow it."""


@contextmanager
def deadline(seconds):
    """Fail instead of hanging forever (a FIFO read blocks until a writer appears)."""
    def boom(*_):
        raise Hung(f"still running after {seconds} s")
    # pytest-timeout's own per-test alarm uses the same timer: put it back as it was afterwards
    outer_left, _ = signal.getitimer(signal.ITIMER_REAL)
    started = time.monotonic()
    old = signal.signal(signal.SIGALRM, boom)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if outer_left:
            signal.setitimer(signal.ITIMER_REAL, max(0.01, outer_left - (time.monotonic() - started)))


def everything(root):
    """index, search, status and parse: none may raise; returns what they said."""
    v = open_vault(root, embedder="fake")
    with deadline(60):
        report = v.index()
        hits = v.search("alpha beta gamma").hits
        status = v.status()
        summary = v.parse_summary()
    json.dumps(status, allow_nan=False)
    json.dumps(summary, allow_nan=False)
    assert "good.md" in {h.path for h in hits}, "the good note must stay searchable"
    return v, report, status, summary


def skipped_of(report, status):
    by_build = {s["path"]: s["kind"] for s in report.skipped}
    by_status = {s["path"]: s["kind"] for s in status.get("skipped_files", [])}
    return by_build, by_status
