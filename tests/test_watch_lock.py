"""The one-watcher lock against the probes that read it (``watch --status``, ``--daemon``, doctor)."""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading

from wikimem.watch import control


def test_a_status_probe_is_not_mistaken_for_a_watcher(tmp_path):
    vault_root = tmp_path
    """``watch --status`` (and ``--daemon`` waiting for its child) probe the lock with a shared flock
    for a moment. A watcher starting during a probe, after a killed one left its pid in the lock
    file, waits the probe out instead of refusing in the dead watcher's name."""
    lock = vault_root / ".wikimem" / control.LOCK
    lock.parent.mkdir(exist_ok=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock.write_text(str(dead.pid))
    fd = os.open(lock, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH)  # the probe
    timer = threading.Timer(0.3, os.close, (fd,))  # closing lets go of it
    timer.start()
    w = control.WatchLock(vault_root)
    try:
        w.acquire()
        assert control.holder(vault_root) == os.getpid()
    finally:
        timer.join()
        w.release()
