"""The watching role's standby: a ``serve`` whose vault another process watches answers every
request and waits to take the role over.

A vault folder has one watcher (``.wikimem/watch.lock``, a flock the kernel releases when its
holder dies, however it dies: ``kill -9`` included). Without a standby, the death of the serving
process that watched left the vault unwatched for good: the other servers kept answering, but
edits made on disk never became searchable and their own writes stayed lexical-only (nobody
embedded them). A standby tries to take the lock every ``EVERY_S`` seconds; the first that gets it
starts the watcher (whose start-up reconcile indexes what changed while nobody watched), says
so in the log and in ``/health``. Another standby keeps standing by: there is never a second
watcher, because only the lock's holder starts one.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from ..errors import LockError

log = logging.getLogger(__name__)

EVERY_S = 2.0  # how often a standby tries the lock: the longest a dead watcher leaves its vault unwatched


class Standby:
    """Retries ``take()`` (a watcher's ``start``, LockError while another process holds the role)
    in a thread of its own until it succeeds or ``stop()``; then ``took(watcher)`` is called once."""

    def __init__(self, name: str, take: Callable[[], Any], took: Callable[[Any], None], holder: str,
                 every: float = EVERY_S):
        self.name, self._take, self._took, self._every = name, take, took, every
        self.holder = holder  # who held the role when this server last looked (for /health)
        self.since = time.time()
        self.tries = 0
        self.took_at: float | None = None
        self.last_error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"wikimem-standby-{name}", daemon=True)

    def start(self) -> "Standby":
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def waiting(self) -> bool:
        return self.took_at is None and not self._stop.is_set()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.tries += 1
            try:
                watcher = self._take()
            except LockError as exc:
                self.holder, self.last_error = str(exc), None
                continue
            except Exception as exc:  # noqa: BLE001 - a failed try is retried; serving goes on
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("could not take over watching %s (%s); trying again in %.0f s", self.name,
                            self.last_error, self._every)
                continue
            if self._stop.is_set():  # stopping meanwhile: let go of what was just taken
                watcher.stop()
                return
            self.took_at = time.time()
            log.warning("took over watching %s: the process that watched it is gone (stood by %.0f s)",
                        self.name, self.took_at - self.since)
            self._took(watcher)
            return

    def state(self) -> dict[str, Any]:
        """What /health says of a server standing by (no paths: the holder is named by pid only)."""
        return {"standby": self.waiting, "since": self.since, "tries": self.tries,
                "holder": _pid_of(self.holder), "last_error": self.last_error}


def _pid_of(text: str) -> int | None:
    import re
    m = re.search(r"\(pid (\d+)\)", text or "")
    return int(m.group(1)) if m else None
