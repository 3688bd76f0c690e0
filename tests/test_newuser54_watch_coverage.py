"""`wikimem watch --status` while the watcher embeds what an edit added: it said `vectors 100%` and
no backlog (on the tldr vault, 60 pages dropped in: "embedding | ... pending 0 | ... vectors 100%"
while `wikimem status` said 0.86), and a watcher killed mid-embedding left `dead | ... vectors
100%` in watch.json. A build (lexical first) did not refresh the counts; only the embedding slice
that ended did, so until then they were the previous slice's."""
from __future__ import annotations

import threading

from test_watch_support import until

from wikimem.api import open_vault

NOTES = {f"notes/n{i}.md": f"# Note {i}\n\nText number {i} about quiet harbours.\n" for i in range(4)}


def test_the_status_counts_what_a_build_added_before_it_is_embedded(make_vault):
    root = make_vault(NOTES)
    v = open_vault(root, embedder="fake")
    model = v.cache.embedder()
    fast, gate, blocked = model.embed_passages, threading.Event(), threading.Event()
    try:
        with v.watch(debounce_ms=100) as w:
          try:
            assert w.wait_idle(60)
            first = w.status()
            assert first["coverage"] == 1.0 and first["backlog"] == 0

            def held(texts):  # the embedding of what the edit added waits until the test has looked
                blocked.set()
                gate.wait(60)
                return fast(texts)
            model.embed_passages = held
            for i in range(6):
                (root / f"notes/new{i}.md").write_text(f"# New {i}\n\nzebracorn number {i}, with a lantern.\n")
            # the files may come in one build or several: the first one's embedding is held
            assert until(blocked.is_set, 60)
            during = w.status()
            assert during["state"] == "embedding" and during["pages"] > 4, during
            assert during["coverage"] < 1.0, during
            assert during["backlog"] and during["backlog"] >= during["pages"] - 4, during
            gate.set()
            assert w.wait_idle(60)
            after = w.status()
            assert after["coverage"] == 1.0 and after["backlog"] == 0, after
          finally:
            gate.set()  # before the watcher is stopped (it would wait for the held batch)
    finally:
        gate.set()
        v.close()
