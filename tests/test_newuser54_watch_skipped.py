"""A note the watcher cannot index (not UTF-8, over max_file_mb) was skipped without a word: the
terminal running `wikimem watch` (and watch.log of a daemon) said nothing, its status line nothing,
and a search for the note's words answered "no note contains the query's words". Only `wikimem
status` listed it. The build's skipped files are now logged as a warning, kept in the status's
last build and counted on the status line."""
from __future__ import annotations

import logging

from test_watch_support import until

from wikimem.api import open_vault
from wikimem.watch.foreground import status_line


def test_a_note_the_watcher_skips_is_said(make_vault, caplog):
    root = make_vault({"notes/a.md": "# A\n\nfine words\n"})
    v = open_vault(root, embedder="fake")
    try:
        with v.watch(debounce_ms=100) as w:
            assert w.wait_idle(60)
            caplog.set_level(logging.WARNING, logger="wikimem.watch")
            (root / "notes/latin1.md").write_bytes(b"# Caf\xe9\n\ncr\xe8me br\xfbl\xe9e\n")

            def said():
                last = w.status().get("last_build") or {}
                return any(s["path"] == "notes/latin1.md" for s in last.get("skipped") or [])
            assert until(said, 60), w.status()
            skipped = w.status()["last_build"]["skipped"]
            assert [s["kind"] for s in skipped] == ["not_utf8"]
            assert "skipped 1" in status_line(w.status())
            assert any("notes/latin1.md" in r.getMessage() and "UTF-8" in r.getMessage() for r in caplog.records), \
                [r.getMessage() for r in caplog.records]
            (root / "notes/latin1.md").write_text("# Café\n\ncrème brûlée\n", encoding="utf-8")
            assert until(lambda: "notes/latin1.md" in [h.path for h in v.search("brûlée", mode="lexical").hits], 60)
            assert "skipped" not in status_line(w.status())
    finally:
        v.close()
