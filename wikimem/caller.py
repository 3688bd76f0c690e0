"""Who typed the command: this process, or the client of a command forwarded to this warm process
(cli/forward.py). A forwarded command resolves relative paths against the client's folder and
reports time "with start-up" from the client's start."""
from __future__ import annotations

import contextvars

# {"cwd": the client's folder, "started": its start as a wall-clock time} while a forwarded command
# runs in this thread; None for a command run in its own process
FORWARDED_CLIENT: contextvars.ContextVar[dict | None] = contextvars.ContextVar("wikimem_forwarded", default=None)
