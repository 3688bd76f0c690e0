"""Who typed the command: this process, or the client of a command forwarded to this warm process
(cli/forward.py). A forwarded command resolves relative paths against the client's folder and
reports time "with start-up" from the client's start."""
from __future__ import annotations

import contextvars
import os

# {"cwd": the client's folder, "started": its start as a wall-clock time} while a forwarded command
# runs in this thread; None for a command run in its own process
FORWARDED_CLIENT: contextvars.ContextVar[dict | None] = contextvars.ContextVar("wikimem_forwarded", default=None)


def own_seconds() -> float | None:
    """Wall seconds since this process started (Linux: /proc), or None where that cannot be read."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as fh:
            uptime = float(fh.read().split()[0])
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # starttime, the 22nd field of stat(5)
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return max(0.0, uptime - started)
