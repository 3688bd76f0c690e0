"""Helpers shared by the watch tests: what "the cache equals a fresh rebuild" means, and settling."""
from __future__ import annotations

import shutil
import time
from pathlib import Path

from wikimem.api import open_vault

QUERIES = ["apple orchard", "river stone", "copper lantern", "quiet harbour", "amber meadow", "zebracorn",
           "violet engine", "north garden"]

# The inotify move grouper holds an unpaired move for 0.5 s before reporting it: let events land
# before asking whether the watcher is idle.
EVENT_LATENCY_S = 0.8


def until(predicate, timeout: float = 30.0, every: float = 0.02) -> bool:
    """Poll until ``predicate()`` holds. Deadlines are generous: a loaded 2-core CI machine can
    delay an event or a build by seconds, and polling costs nothing when things are fast."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return False


def behind(vault) -> list[str]:
    """Paths whose cached content differs from the files on disk (either side may lack them), by
    sha256: what the watcher has not caught up with yet."""
    disk = {f.path: vault.files.file_sha256(f.path) for f in vault.files.scan().files}
    cached = dict(vault.cache.db.execute("SELECT path, sha256 FROM files").fetchall())
    return sorted(p for p in disk.keys() | cached.keys() if disk.get(p) != cached.get(p))


def settle(watcher, timeout: float = 60.0) -> None:
    """Wait until the watcher has built the files as they are now and embedded their vectors.

    Idle alone is not enough: on a loaded machine the events of the last edits can reach the
    watcher after a fixed pause, and an idle watcher that has not heard of them yet would pass.
    So: the cache holds what the disk holds (sha256 per path), and after that the watcher is idle
    (its build of those files is finished, vectors included)."""
    time.sleep(EVENT_LATENCY_S)
    deadline = time.monotonic() + timeout
    while True:
        late = behind(watcher.ctx)
        if not late and watcher.wait_idle(max(0.0, deadline - time.monotonic())):
            return
        assert watcher.running, watcher.status()
        assert time.monotonic() < deadline, f"not caught up after {timeout} s: {late[:5]} {watcher.status()}"
        time.sleep(0.05)


def snapshot(vault, hybrid: bool = True) -> dict:
    """Chunk ids, files, edges and ranked results for a fixed query set."""
    db = vault.cache.db
    data = {
        "files": sorted(db.execute("SELECT path, sha256, note FROM files").fetchall()),
        "chunks": sorted(db.execute("SELECT path, ord, id, text FROM chunks").fetchall()),
        "edges": sorted(db.execute("SELECT src, dst, type, weight FROM edges").fetchall()),
    }
    modes = ("lexical", "hybrid") if hybrid else ("lexical",)
    for mode in modes:
        for q in QUERIES:
            hits = vault.search(q, mode=mode, limit=10).hits
            data[f"{mode}:{q}"] = [(h.path, h.heading_path, round(h.score, 5)) for h in hits]
    return data


def fresh_rebuild(root: Path, tmp: Path, embedder: str = "fake") -> dict:
    """Copy the vault without its cache, build it from scratch, and snapshot it."""
    copy = tmp / f"rebuild-{time.monotonic_ns()}"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".wikimem"), symlinks=True)
    v = open_vault(copy, embedder=embedder)
    v.index(rebuild=True)
    try:
        return snapshot(v, hybrid=embedder != "none")
    finally:
        v.close()


def assert_equal_to_rebuild(vault, tmp: Path, embedder: str = "fake") -> None:
    mine = snapshot(vault, hybrid=embedder != "none")
    fresh = fresh_rebuild(Path(vault.root), tmp, embedder)
    for key in fresh:
        assert mine[key] == fresh[key], f"{key} differs from a fresh rebuild"
    assert mine.keys() == fresh.keys()
