"""Watch mode: event filtering, debounce, the one-watcher lock, fallbacks, and edits followed."""
from __future__ import annotations

import errno
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_watch_support import assert_equal_to_rebuild, settle, until

from wikimem.api import open_vault
from wikimem.errors import LockError
from wikimem.watch import control, read_status
from wikimem.watch import observing as observing_mod
from wikimem.watch import watcher as watcher_mod
from wikimem.watch.events import Batch, Changes, PathFilter, expand

NOTES = {
    "notes/apple.md": "---\ntitle: Apple\n---\n# Apple\n\nThe apple orchard by the river stone. See [[Pear]].\n",
    "notes/pear.md": "# Pear\n\nPears grow near the quiet harbour. #fruit\n",
    "other/lantern.md": "# Lantern\n\nA copper lantern. [[Apple]]\n",
}


@pytest.fixture
def vault_root(make_vault):
    return make_vault(NOTES)


@pytest.fixture
def watcher(vault_root):
    v = open_vault(vault_root, embedder="fake")
    w = v.watch(debounce_ms=100).start()
    w.vault = v  # the tests' handle on the facade (the watcher itself holds the vault's Context)
    assert w.wait_idle(60)
    yield w
    w.stop()
    v.close()


def _paths(vault, query: str) -> list[str]:
    return [h.path for h in vault.search(query, mode="lexical").hits]


# -- pieces ----------------------------------------------------------------------------------------
def test_path_filter_uses_the_scans_rules(tmp_path):
    (tmp_path / ".wikimemignore").write_text("private/\n*.draft.md\n")
    f = PathFilter(tmp_path)
    assert f.indexed("notes/a.md", False)
    assert f.indexed("notes/attachment.png", False)
    for ignored in (".wikimem/manifest.sqlite", ".obsidian/workspace.json", ".trash/old.md", ".git/index",
                    "notes/.a.md.swp", "notes/.#a.md", "private/secret.md", "notes/x.draft.md"):
        assert not f.indexed(ignored, False), ignored
    assert not f.indexed("private", True)
    assert f.relative(str(tmp_path / "notes" / "a.md")) == "notes/a.md"
    assert f.relative(str(tmp_path.parent / "elsewhere.md")) is None


def test_debounce_waits_for_quiet_but_not_forever():
    c = Changes(debounce_s=0.3, max_wait_s=1.0)
    with c.cond:
        assert c.due() is None
    c.add_file("a.md")
    with c.cond:
        first = c._first
        assert c.due(first + 0.1) == pytest.approx(0.2)
        assert c.due(first + 0.3) == 0
    for i in range(10):  # a steady trickle keeps it quiet-less; the cap still fires
        c._last = first + 0.1 * i
    with c.cond:
        assert c.due(first + 0.95) == pytest.approx(0.05)
        assert c.due(first + 1.0) == 0
        batch = c.take()
        assert batch.files == {"a.md"} and c.due() is None


def test_expand_lists_files_of_new_and_vanished_folders(tmp_path):
    (tmp_path / "new" / "deep").mkdir(parents=True)
    (tmp_path / "new" / "deep" / "x.md").write_text("x")
    (tmp_path / "new" / ".hidden").mkdir()
    (tmp_path / "new" / ".hidden" / "y.md").write_text("y")
    cached = {"gone": ["gone/a.md", "gone/sub/b.md"], "new": []}
    paths = expand(tmp_path, Batch(files={"c.md"}, folders_gone={"gone"}, folders_new={"new"}),
                   lambda folder: cached.get(folder, []))
    assert paths == {"c.md", "gone/a.md", "gone/sub/b.md", "new/deep/x.md"}
    assert expand(tmp_path, Batch(full="because"), lambda f: []) is None


# -- following edits -----------------------------------------------------------------------------
def test_edits_creates_renames_deletes_and_folder_moves_are_followed(watcher, tmp_path):
    v, root = watcher.vault, Path(watcher.vault.root)
    with open(root / "notes/pear.md", "a") as fh:
        fh.write("\nA zebracorn was seen.\n")
    assert until(lambda: _paths(v, "zebracorn") == ["notes/pear.md"])
    os.rename(root / "notes/pear.md", root / "notes/pear2.md")
    assert until(lambda: _paths(v, "zebracorn") == ["notes/pear2.md"])
    os.rename(root / "notes", root / "renamed")  # a whole folder
    assert until(lambda: _paths(v, "zebracorn") == ["renamed/pear2.md"])
    (root / "renamed/new").mkdir()
    (root / "renamed/new/fig.md").write_text("# Fig\n\nviolet engine\n")
    assert until(lambda: _paths(v, "violet engine") == ["renamed/new/fig.md"])
    os.remove(root / "renamed/pear2.md")
    assert until(lambda: _paths(v, "zebracorn") == [])
    settle(watcher)
    assert_equal_to_rebuild(v, tmp_path)


def test_folder_moved_out_of_the_vault_is_removed(watcher, tmp_path):
    root = Path(watcher.vault.root)
    os.rename(root / "notes", tmp_path / "outside")  # one event for the folder, none for its files
    assert until(lambda: _paths(watcher.vault, "orchard") == [])
    settle(watcher)
    assert_equal_to_rebuild(watcher.vault, tmp_path)


def test_atomic_saves_swap_files_and_vanishing_files(watcher, tmp_path):
    root = Path(watcher.vault.root)
    note = root / "notes/apple.md"
    # Obsidian/most editors: write a temp file, rename it over the note
    tmp = root / "notes/.apple.md.tmp"
    tmp.write_text("---\ntitle: Apple\n---\n# Apple\n\namber meadow\n")
    os.replace(tmp, note)
    # vim: note -> note~, write a new note, remove the backup; plus its 4913 probe and a .swp
    (root / "other/.lantern.md.swp").write_bytes(b"\x00swap")
    (root / "other/4913").write_text("")
    os.remove(root / "other/4913")
    os.rename(root / "other/lantern.md", root / "other/lantern.md~")
    (root / "other/lantern.md").write_text("# Lantern\n\nnorth garden\n")
    os.remove(root / "other/lantern.md~")
    # a file that is gone before the build reads it
    (root / "notes/flash.md").write_text("# Flash\n")
    os.remove(root / "notes/flash.md")
    v = watcher.vault
    assert until(lambda: _paths(v, "amber meadow") == ["notes/apple.md"])
    assert until(lambda: _paths(v, "north garden") == ["other/lantern.md"])
    settle(watcher)
    paths = {r[0] for r in v.cache.db.execute("SELECT path FROM files")}
    assert not {p for p in paths if "swp" in p or p.endswith("~") or "4913" in p or "flash" in p}
    assert watcher.status()["last_error"] is None
    assert_equal_to_rebuild(v, tmp_path)


def test_own_writes_and_ignored_folders_do_not_trigger_builds(watcher):
    root = Path(watcher.vault.root)
    time.sleep(1.0)
    builds = watcher.status()["builds"]
    (root / ".obsidian").mkdir(exist_ok=True)
    (root / ".obsidian/workspace.json").write_text("{}")
    (root / ".git").mkdir(exist_ok=True)
    (root / ".git/HEAD").write_text("ref: x")
    (root / ".trash").mkdir(exist_ok=True)
    (root / ".trash/old.md").write_text("# old")
    watcher.vault.search("apple")  # reads the cache
    time.sleep(1.5)
    assert watcher.status()["builds"] == builds  # and the cache writes of earlier builds did not loop


def test_wikimemignore_change_rescans(watcher, tmp_path):
    root = Path(watcher.vault.root)
    (root / ".wikimemignore").write_text("other/\n")
    assert until(lambda: _paths(watcher.vault, "copper lantern") == [])
    settle(watcher)
    assert watcher.status()["last_build"]["full"]
    assert_equal_to_rebuild(watcher.vault, tmp_path)


def test_rename_of_unchanged_content_embeds_nothing(watcher):
    root = Path(watcher.vault.root)
    before = watcher.status()["embedded"]
    os.rename(root / "notes/apple.md", root / "other/apple.md")  # frontmatter title: same text embedded
    assert until(lambda: _paths(watcher.vault, "orchard") == ["other/apple.md"])
    settle(watcher)
    info = watcher.status()
    assert info["embedded"] == before and info["backlog"] == 0
    assert info["coverage"] == 1.0 and info["passage_coverage"] in (None, 1.0)
    (root / "other/apple.md").write_text("---\ntitle: Apple\n---\n# Apple\n\nNew words here.\n")
    assert until(lambda: _paths(watcher.vault, "new words") == ["other/apple.md"])
    settle(watcher)
    assert watcher.status()["embedded"] > before  # the counter does move when text changes


def test_embedder_none_is_lexical_only(vault_root):
    v = open_vault(vault_root, embedder="none")
    with v.watch(debounce_ms=50) as w:
        assert w.wait_idle(60)
        (vault_root / "notes/kiwi.md").write_text("# Kiwi\n\nzebracorn\n")
        assert until(lambda: _paths(v, "zebracorn") == ["notes/kiwi.md"])
        info = w.status()
        assert info["embedder"] is None and info["state"] in ("idle", "building")


# -- one watcher per vault, status, stop ---------------------------------------------------------
def test_second_watcher_is_refused_with_the_holders_pid(watcher):
    other = open_vault(watcher.vault.root, embedder="fake")
    with pytest.raises(LockError, match=f"pid {os.getpid()}"):
        other.watch().start()
    info = read_status(Path(watcher.vault.root))
    assert info["running"] and info["pid"] == os.getpid() and info["state"] in ("idle", "embedding")


def test_status_after_stop_says_not_running(vault_root):
    v = open_vault(vault_root, embedder="fake")
    w = v.watch(debounce_ms=50).start()
    assert w.wait_idle(60)
    w.stop()
    info = read_status(vault_root)
    assert not info["running"] and info["state"] == "stopped" and info["builds"] >= 1
    assert not (vault_root / ".wikimem/watch.pid").exists()
    assert not w.wait_idle(0.1)


def test_lock_of_a_killed_watcher_is_taken_over(vault_root):
    (vault_root / ".wikimem").mkdir(exist_ok=True)
    code = ("import sys, time; from pathlib import Path; from wikimem.watch.control import WatchLock; "
            "WatchLock(Path(sys.argv[1])).acquire(); print('locked', flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(vault_root)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        assert control.holder(vault_root) == proc.pid
        with pytest.raises(LockError, match=f"pid {proc.pid}"):
            open_vault(vault_root, embedder="fake").watch().start()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert (vault_root / ".wikimem/watch.pid").read_text().strip() == str(proc.pid)  # stale pid file left
    info = read_status(vault_root)
    assert not info["running"] and info["stale_pid_file"] == proc.pid
    v = open_vault(vault_root, embedder="fake")
    with v.watch() as w:
        assert w.wait_idle(60)
        assert (vault_root / ".wikimem/watch.pid").read_text().strip() == str(os.getpid())


def test_negative_debounce_is_refused(vault_root):
    from wikimem.errors import WikimemError
    with pytest.raises(WikimemError, match="debounce"):
        open_vault(vault_root, embedder="none").watch(debounce_ms=-1)


# -- falling behind is never silent ----------------------------------------------------------------
def test_watch_limit_falls_back_to_polling(vault_root, monkeypatch, caplog):
    class NoWatches(observing_mod.Observer):
        def start(self):
            raise OSError(errno.ENOSPC, "inotify watch limit reached")

    monkeypatch.setattr(observing_mod, "Observer", NoWatches)
    monkeypatch.setattr(watcher_mod, "POLL_INTERVAL_S", 0.2)
    v = open_vault(vault_root, embedder="fake")
    with caplog.at_level(logging.WARNING, logger="wikimem.watch"):
        w = watcher_mod.Watcher(v.ctx, debounce_ms=50, poll_interval=0.2).start()
    try:
        assert w.wait_idle(60)
        info = w.status()
        assert info["mode"] == "polling"
        assert "watch limit" in info["fallbacks"][0]["reason"] and info["fallbacks"][0]["action"] == "polling"
        assert "falling back to polling" in caplog.text
        assert read_status(vault_root)["fallbacks"][0]["action"] == "polling"  # what --status shows
        (vault_root / "notes/kiwi.md").write_text("# Kiwi\n\nzebracorn\n")
        assert until(lambda: _paths(v, "zebracorn") == ["notes/kiwi.md"])
    finally:
        w.stop()


def test_lost_events_are_reconciled_after_an_overflow(watcher, monkeypatch):
    v, root = watcher.vault, Path(watcher.vault.root)
    dropped = []
    monkeypatch.setattr(watcher._handler, "on_any_event", dropped.append)  # events go missing
    (root / "notes/lost.md").write_text("# Lost\n\nzebracorn\n")
    # the write's last event is its close: once that was dropped, none of its events is still on the way
    assert until(lambda: any(e.event_type == "closed" and os.fsdecode(e.src_path).endswith("lost.md")
                              for e in dropped))
    assert _paths(v, "zebracorn") == []
    monkeypatch.undo()
    logging.getLogger("watchdog.observers.inotify_c").warning("Inotify queue overflowed; filesystem events were lost")
    assert until(lambda: _paths(v, "zebracorn") == ["notes/lost.md"])
    info = watcher.status()
    assert info["fallbacks"][-1]["action"] == "full reconcile" and "overflow" in info["fallbacks"][-1]["reason"]
    settle(watcher)
    assert watcher.status()["last_build"]["full"]


@pytest.mark.local_store
def test_a_writer_lock_held_elsewhere_delays_but_loses_nothing(watcher):
    v, root = watcher.vault, Path(watcher.vault.root)
    other = open_vault(root, embedder="fake")
    with other.cache.writer_lock():
        (root / "notes/late.md").write_text("# Late\n\nzebracorn\n")
        # the watcher's build waits LOCK_WAIT_S for the lock, gives up naming the holder, retries
        assert until(lambda: "pid" in (watcher.status()["last_error"] or ""))
        assert _paths(v, "zebracorn") == []
    assert until(lambda: _paths(v, "zebracorn") == ["notes/late.md"])
    other.close()


def test_an_edit_does_not_wait_for_the_embedding_backlog(make_vault, monkeypatch, tmp_path):
    """With a backlog of 12 batches, an edit is built right after the batch being embedded when its
    event arrived: the slice embedding the backlog stops between batches. Proved by order (how many
    batches ran before the edit's build), not by the clock, so a slow machine can neither fail it
    nor make it pass: the batch in flight is held until the watcher has the edit's event, and the
    slice's time limit is lifted, so without the pre-emption every batch would run first.
    benchmarks/bench_watch.py measures edit-to-searchable times."""
    root = make_vault({f"notes/n{i}.md": f"# Note {i}\n\nText number {i} about things.\n" for i in range(48)})
    monkeypatch.setattr(watcher_mod, "EMBED_SLICE_S", 600.0)
    v = open_vault(root, embedder="fake")
    model = v.cache.embedder()
    fast, real_index = model.embed_passages, watcher_mod.update
    order, written, watchers = [], threading.Event(), []

    def slow(texts):
        order.append("batch")
        if order.count("batch") == 2:  # the edit's event reaches the watcher while this batch is embedded
            written.wait(60)
            until(lambda: watchers[0].changes.pending() > 0, 60)
        time.sleep(0.05)
        return fast(texts)

    def index(*args, **kwargs):
        order.append(("build", tuple(kwargs.get("paths") or ())))
        return real_index(*args, **kwargs)
    monkeypatch.setattr(model, "embed_passages", slow)
    monkeypatch.setattr(watcher_mod, "update", index)
    with v.watch(debounce_ms=100) as w:
        watchers.append(w)
        try:
            assert until(lambda: w.status()["state"] == "embedding" and (w.status()["slice"] or {}).get("embedded"), 60)
            start = time.monotonic()
            (root / "notes/new.md").write_text("# New\n\nzebracorn\n")
        finally:
            written.set()
        assert until(lambda: _paths(v, "zebracorn") == ["notes/new.md"])
        print(f"edit searchable {time.monotonic() - start:.2f} s after the write (0.05 s batches)")
        built = order.index(("build", ("notes/new.md",)))
        assert order[:built].count("batch") == 2, order  # the batch in flight, then the edit's build
        assert w.wait_idle(60)
        assert w.status()["backlog"] == 0
    assert order.count("batch") > 10  # the backlog was long: the order above was not a matter of luck
    assert_equal_to_rebuild(v, tmp_path)


def test_an_unexpected_build_error_is_retried_not_fatal(watcher, monkeypatch):
    v, root = watcher.vault, Path(watcher.vault.root)
    real, calls = watcher_mod.update, []
    seen = threading.Event()

    def flaky(*args, **kwargs):
        calls.append(kwargs.get("paths"))
        if len(calls) == 1:
            raise RuntimeError("a bug in one note's parser")
        seen.wait(60)  # the retry waits until the test has read the error in the status
        return real(*args, **kwargs)
    monkeypatch.setattr(watcher_mod, "update", flaky)
    (root / "notes/kiwi.md").write_text("# Kiwi\n\nzebracorn\n")
    try:
        assert until(lambda: watcher.status()["last_error"] == "RuntimeError: a bug in one note's parser")
        assert watcher.running
    finally:
        seen.set()
    assert until(lambda: _paths(v, "zebracorn") == ["notes/kiwi.md"])
    # The page is searchable the moment the build commits; the status is updated just after.
    assert until(lambda: watcher.status()["last_error"] is None)
    assert watcher.running
    assert calls[0] == ["notes/kiwi.md"] and calls[1] is None  # the retry scans the whole vault


def test_the_status_line_tells_chunk_vectors_from_note_passages():
    from wikimem.watch.foreground import status_line
    info = {"state": "watching", "mode": "events", "pending": 0, "pages": 3, "chunks": 9, "embedder": "fake",
            "coverage": 1.0, "passage_coverage": 0.25, "backlog": 30}
    assert "vectors 100%, passages 25% (30 to embed)" in status_line(info)
    info.update(passage_coverage=1.0, backlog=0)
    assert "vectors 100%" in status_line(info) and "passages" not in status_line(info)
