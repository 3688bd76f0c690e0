"""SIGTERM stops ``wikimem serve`` as Ctrl-C does: every ``finally`` runs, so the forwarding
socket (``.wikimem/serve.sock``) and the watcher's pid file are removed. ``kill PID`` is what
systemd, docker and ``wikimem watch --stop`` send; left to its default, SIGTERM ended the process
at once and left both behind (after which ``doctor`` failed)."""
from __future__ import annotations

import contextlib


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that every ``finally`` below runs (a default SIGTERM
    ends the process at once: the forwarding socket and the watcher's pid file were left behind)."""


@contextlib.contextmanager
def sigterm_unwinds():
    """SIGTERM unwinds the stack like Ctrl-C does -> a function saying whether it came. uvicorn
    catches SIGTERM for its graceful stop, then raises it again once it is done: that second one
    lands here as ``_Terminated``, after uvicorn's own stop, before the vaults are let go."""
    import signal
    import threading
    came = []
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return

    def on_term(signum, frame) -> None:  # noqa: ARG001
        if came:  # stopping already: a second SIGTERM must not cut the clean-up short
            return
        came.append(signum)
        raise _Terminated()
    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield lambda: bool(came)
    except _Terminated:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
