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


def test_status_written_from_two_threads_is_never_torn(tmp_path):
    """The worker thread writes the status at each state change, and watchdog's thread writes it
    too when events were lost (a fallback): readers must always find one whole status or the other."""
    (tmp_path / ".wikimem").mkdir()
    stop, torn = threading.Event(), []

    def writer(n):
        for i in range(300):
            control.write_status(tmp_path, {"writer": n, "i": i, "pad": "x" * (20000 + 997 * n)})

    def reader():
        while not stop.is_set():
            saved = control.read_status(tmp_path)
            if "writer" not in saved:
                torn.append(saved)

    control.write_status(tmp_path, {"writer": 0})
    threads = [threading.Thread(target=writer, args=(n,)) for n in (1, 2)]
    watching = threading.Thread(target=reader)
    watching.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    watching.join()
    assert not torn
    assert control.read_status(tmp_path)["i"] == 299
