"""The watcher's rotating hash check: size and mtime are a hint, never proof.

An edit can keep both (a sync tool, ``touch -r``, a same-length rewrite within the clock's grain)
and, made while nobody watched, reach no event. Each idle health pass hashes the next
``VERIFY_FILES`` files of the manifest (path order, wrapping around; at most ``VERIFY_BYTES`` read)
and queues those whose bytes or stat differ from what the manifest recorded, so such an edit is
found within one cycle over the vault (at 10k notes: ~8 minutes).
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from ..stores.failures import driver_errors
from .events import Changes

log = logging.getLogger(__name__)

VERIFY_FILES = 100  # files hashed per health pass (a 10k-note vault is re-hashed every ~8 minutes)
VERIFY_BYTES = 8 * 1024 * 1024  # and at most this much read per pass


class Verifier:
    """Where the check is in the manifest, and its counts (``counts`` is the watcher's status
    entry ``verified``: files, cycles, mismatches, at)."""

    def __init__(self, ctx, changes: Changes, counts: dict[str, Any]):
        self.ctx = ctx
        self.changes = changes
        self.counts = counts
        self.after = ""  # the last path checked (path order)

    def next_slice(self) -> None:
        try:
            rows = self.ctx.cache.manifest.file_stats_after(self.after, VERIFY_FILES)
        except driver_errors():  # a teammate's rebuild swapping the schema: the next pass checks
            return
        counts = self.counts
        if len(rows) < VERIFY_FILES:
            self.after = ""
            counts["cycles"] += 1
        read = 0
        root = Path(self.ctx.root)
        for path, size, mtime_ns, sha in rows:
            self.after = path
            try:
                st = os.stat(root.joinpath(*path.split("/")))
            except OSError:
                continue  # gone: its delete event (or the next reconcile) removes it
            if (st.st_size, st.st_mtime_ns) != (size, mtime_ns):
                found = True
            else:
                digest = self.ctx.files.file_sha256(path)
                found = bool(digest and sha and digest != sha)
                read += st.st_size
                counts["files"] += 1
            if found:
                counts["mismatches"] += 1
                log.info("watch: %s changed without an event this watcher saw; indexing it", path)
                self.changes.add_file(path)
            if read >= VERIFY_BYTES:
                break
        counts["at"] = time.time()
