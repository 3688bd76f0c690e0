"""Rapid writes, deletes and renames while the watcher embeds (issue 28 item 15: a watcher thread
died with ``AttributeError: 'NoneType' object has no attribute 'ids'`` and left ``vectors_partial``
for good). Bounded: a few seconds of churn, then the cache must equal a fresh rebuild."""
from __future__ import annotations

import logging
import os
import random
import threading
import time

from test_watch_support import assert_equal_to_rebuild, settle

from wikimem.api import open_vault
from wikimem.embed import fake as fake_mod
from wikimem.watch import watcher as watcher_mod

CHURN_S = 3.0


def _note(i: int, n: int) -> str:
    return f"# Note {i}\n\nrevision {n} of note {i}, words amber meadow {i * 7 + n}.\n\n## Part\n\nmore {n} text\n"


def test_rapid_writes_deletes_and_renames_while_embedding(make_vault, tmp_path, monkeypatch, caplog):
    root = make_vault({f"n/{i}.md": _note(i, 0) for i in range(30)})
    slow = fake_mod.FakeEmbedder.embed_passages

    def slower(self, texts):
        time.sleep(0.01 * len(texts))  # the backlog takes a while: edits land mid-slice
        return slow(self, texts)
    monkeypatch.setattr(fake_mod.FakeEmbedder, "embed_passages", slower)
    monkeypatch.setattr(watcher_mod, "EMBED_AFTER_QUIET_S", 0.0)
    caplog.set_level(logging.WARNING, logger="wikimem")
    v = open_vault(root, embedder="fake")
    w = v.watch(debounce_ms=20).start()
    rng = random.Random(15)
    try:
        assert w.wait_idle(60, vectors=False)
        deadline = time.monotonic() + CHURN_S
        n = 0
        writer_errors: list[BaseException] = []

        def beside() -> None:  # a write-back's cache update in another thread, as the MCP server does
            try:
                while time.monotonic() < deadline:
                    v.index(paths=[f"n/{rng.randrange(30)}.md"], embed=True, wait=30)
                    time.sleep(0.05)
            except BaseException as exc:  # noqa: BLE001
                writer_errors.append(exc)
        other = threading.Thread(target=beside)
        other.start()
        while time.monotonic() < deadline:
            n += 1
            i = rng.randrange(30)
            path = root / f"n/{i}.md"
            action = rng.random()
            if action < 0.5 or not path.exists():
                path.write_text(_note(i, n))
            elif action < 0.75:
                path.unlink()
            else:
                j = rng.randrange(30)
                os.replace(path, root / f"n/{j}.md")
            time.sleep(rng.random() * 0.03)
        other.join(60)
        assert not writer_errors, writer_errors
        settle(w, timeout=120)
        info = w.status()
        assert info["running"], info
        assert info["coverage"] == 1.0, info
        crashes = [r.getMessage() for r in caplog.records if "NoneType" in r.getMessage()
                   or "stopped by an unexpected error" in r.getMessage() or "embedding stopped" in r.getMessage()]
        assert not crashes, crashes
        status = v.status()
        assert "vectors_partial" not in status["degraded"], status
        assert status["stale_files"] == []
    finally:
        w.stop()
    assert_equal_to_rebuild(v, tmp_path)
    v.close()


def test_vectors_completed_by_another_process_mid_slice(make_vault, monkeypatch):
    """The slice's last save finds that another process saved vectors (its signature changed) and
    re-derives the state; when that process completed them, the state has no index in memory, and
    the slice's bookkeeping read ``state.index.ids()`` of None."""
    root = make_vault({f"n/{i}.md": _note(i, 0) for i in range(12)})
    v = open_vault(root, embedder="fake")
    v.index(embed=False)
    other = open_vault(root, embedder="fake")  # its own Cache: as another process would be
    done = []

    def progress(stage, n, total):  # noqa: ARG001
        if n and not done:
            done.append(other.index())  # completes every vector and saves them
    try:
        report = v.embed_pending(progress=progress, batch=2)
        assert done and done[0].coverage == 1.0
        assert report.coverage == 1.0 and "vectors_partial" not in report.degraded
        assert v.status()["vector_coverage"] == 1.0
        assert v.embed_pending().embedded_now == 0
    finally:
        other.close()
        v.close()
