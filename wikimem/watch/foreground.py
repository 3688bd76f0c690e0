"""Running a watcher as the process's main job (``wikimem watch``, in a terminal or as a daemon).

SIGTERM and SIGINT ask the watcher to stop after the commit it is in; nothing is cut off midway,
and whatever was not built yet is reconciled by the next start.
"""
from __future__ import annotations

import signal
import threading
import time
from typing import Any, Callable


def run_foreground(watcher, tick: Callable[[dict[str, Any]], None] | None = None,
                   interval: float = 0.5) -> dict[str, Any]:
    """Start ``watcher``, call ``tick(status)`` every ``interval`` seconds until a signal or the
    watcher stops by itself, then stop it. Returns the final status."""
    done = threading.Event()

    def on_signal(signum, frame) -> None:  # noqa: ARG001
        watcher.request_stop()
        done.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        watcher.start()
        while watcher.running and not done.is_set():
            if tick is not None:
                tick(watcher.status())
            done.wait(interval)
    finally:
        watcher.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return watcher.status()


def _ago(at: float | None) -> str:
    if not at:
        return "-"
    seconds = max(0.0, time.time() - at)
    if seconds < 60:
        return f"{seconds:.0f}s ago"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m ago"
    return f"{seconds / 3600:.1f}h ago"


def status_line(info: dict[str, Any]) -> str:
    """One line for a terminal: state, last build and its time, pending, pages, chunks, vectors."""
    last = info.get("last_build") or {}
    build = "-"
    if last:
        what = "full scan" if last.get("full") else f"{last.get('files')} file(s)"
        build = f"{what} in {last.get('seconds', 0) * 1000:.0f} ms, {_ago(last.get('at'))}"
    parts = [f"{info.get('state', '?')} ({info.get('mode') or '-'})", f"last build: {build}",
             f"pending {info.get('pending', 0)}", f"pages {info.get('pages') if info.get('pages') is not None else '-'}",
             f"chunks {info.get('chunks') if info.get('chunks') is not None else '-'}"]
    if info.get("embedder"):
        coverage, passages = info.get("coverage"), info.get("passage_coverage")
        vectors = "-" if coverage is None else f"{coverage:.0%}"
        if passages is not None and passages < 1.0:
            vectors += f", passages {passages:.0%}"
        backlog = info.get("backlog")
        parts.append(f"vectors {vectors}" + (f" ({backlog} to embed)" if backlog else ""))
    else:
        parts.append("lexical only")
    if last.get("skipped_count"):
        parts.append(f"skipped {last['skipped_count']} (wikimem status)")
    if info.get("fallbacks"):
        parts.append(f"fallback: {info['fallbacks'][-1]['action']}")
    if info.get("stopped_because"):
        parts.append(f"stopped because {info['stopped_because']}")
    elif info.get("last_error"):
        parts.append(f"error: {info['last_error']}")
    return " | ".join(parts)
