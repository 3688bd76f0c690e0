"""Watch mode: the cache follows the vault while people edit (see watcher.py for the design).

    watcher = open_vault("~/notes").watch().start()
    watcher.wait_idle(10)
    watcher.status()
    watcher.stop()
"""
from __future__ import annotations

from .control import read_status, spawn_daemon, stop
from .watcher import DEFAULT_DEBOUNCE_MS, Watcher

__all__ = ["Watcher", "DEFAULT_DEBOUNCE_MS", "read_status", "spawn_daemon", "stop"]
