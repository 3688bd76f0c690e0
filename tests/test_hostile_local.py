"""Hostile pass on the local store under ``serve`` (issue 56): the pool thread that answered a
request ends after 10 s idle and a new one answers the next burst. Each thread's SQLite
connections (file descriptors, the WAL's shared memory) stayed open after it ended: a long-running
serve leaked descriptors until the process hit its limit (EMFILE) and could open nothing."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from wikimem.api import open_vault


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd")
def test_the_connections_of_threads_that_ended_are_closed(make_vault):
    root = make_vault({f"n{i}.md": f"# Note {i}\n\nword{i}\n" for i in range(5)})
    vault = open_vault(root, embedder="fake", store="local")
    vault.index()

    def found() -> list[str]:
        return [h.path for h in vault.search("word1", mode="hybrid").hits]
    try:
        found()
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(12):
            t = threading.Thread(target=found)
            t.start()
            t.join(60)
        assert found()[0] == "n1.md"
        after = len(os.listdir("/proc/self/fd"))
        assert after <= before + 6, (before, after)  # one ended thread's, at most, until the next opens
    finally:
        vault.close()
