"""The watcher's hold on its vault: an edit size+mtime cannot see (issue 27 item 7), the vault folder
moved or deleted under it (item 8), its own files in ``.wikimem/`` deleted under it (item 9)."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time

import pytest
from test_watch_cli import wikimem
from test_watch_support import until

from wikimem.api import open_vault
from wikimem.errors import LockError
from wikimem.watch import control, read_status
from wikimem.watch import watcher as watcher_mod

NOTES = {"notes/alpha.md": "# Alpha\n\nThe word lanternfish is here.\n",
         "notes/beta.md": "# Beta\n\nSecond note.\n"}


@pytest.fixture
def vault_root(make_vault):
    return make_vault(NOTES)


def _rmtree(path) -> None:
    """``rm -rf`` as a user types it, beside a watcher that may write a file in there meanwhile."""
    for _ in range(20):
        try:
            shutil.rmtree(path)
            return
        except OSError:  # a file the watcher wrote meanwhile (not empty), or one it renamed away (not found)
            if not os.path.lexists(path):
                return
            time.sleep(0.05)
    shutil.rmtree(path)


def _paths(vault, query: str) -> list[str]:
    return [h.path for h in vault.search(query, mode="lexical").hits]


def _same_size_same_mtime_edit(root, rel: str, old: str, new: str) -> None:
    """Rewrite ``rel`` replacing ``old`` by ``new`` (same length) and put its mtime back."""
    path = root / rel
    before = os.stat(path)
    text = path.read_text()
    assert len(old) == len(new) and old in text
    path.write_text(text.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


# -- item 7: size+mtime is a hint, never proof ------------------------------------------------------
def test_index_given_the_path_hashes_it(vault_root):
    v = open_vault(vault_root, embedder="fake")
    try:
        v.index()
        _same_size_same_mtime_edit(vault_root, "notes/alpha.md", "lanternfish", "quillwortex")
        report = v.index(paths=["notes/alpha.md"])
        assert report.changed == 1
        assert _paths(v, "quillwortex") == ["notes/alpha.md"] and _paths(v, "lanternfish") == []
    finally:
        v.close()


def test_the_watcher_indexes_an_edit_that_kept_size_and_mtime(vault_root):
    v = open_vault(vault_root, embedder="fake")
    w = v.watch(debounce_ms=50).start()
    try:
        assert w.wait_idle(60)
        _same_size_same_mtime_edit(vault_root, "notes/alpha.md", "lanternfish", "quillwortex")
        assert until(lambda: _paths(v, "quillwortex") == ["notes/alpha.md"]), w.status()
        assert _paths(v, "lanternfish") == []
    finally:
        w.stop()
        v.close()


def test_the_watchers_health_pass_finds_an_edit_nobody_reported(vault_root, monkeypatch):
    """Edited while no watcher ran, size and mtime kept, on a file system whose ctime says nothing
    (the full scan's ctime check off): the start-up reconcile trusts size and mtime, the rotating hash
    check of the idle health pass does not. (With ctime, the reconcile itself finds it:
    tests/test_racy_edits.py.)"""
    from wikimem.index import build
    monkeypatch.setattr(build, "CTIME_SLACK_NS", -(10 ** 18))  # every ctime counts as older than the last scan
    v = open_vault(vault_root, embedder="fake")
    v.index()
    _same_size_same_mtime_edit(vault_root, "notes/beta.md", "Second", "Zecond")
    monkeypatch.setattr(watcher_mod, "HEALTH_EVERY_S", 0.2)
    w = v.watch(debounce_ms=50).start()
    try:
        assert until(lambda: _paths(v, "zecond") == ["notes/beta.md"]), w.status()
        assert w.status()["verified"]["mismatches"] >= 1
    finally:
        w.stop()
        v.close()


# -- item 8: the vault folder moved or deleted under the watcher -------------------------------------
def test_vault_moved_away_stops_the_watcher_and_writes_nothing_at_the_old_path(vault_root):
    v = open_vault(vault_root, embedder="fake")
    w = v.watch(debounce_ms=50).start()
    moved = vault_root.with_name("moved")
    try:
        assert w.wait_idle(60)
        os.rename(vault_root, moved)
        (moved / "notes/alpha.md").write_text("# Alpha\n\nedited after the move\n")  # events, a build is due
        assert until(lambda: not w.running, timeout=30), w.status()
        time.sleep(0.5)
        assert not vault_root.exists(), sorted(p.name for p in vault_root.rglob("*"))
        info = read_status(moved)
        assert not info["running"] and info["state"] == "stopped"
        assert "moved or deleted" in info["stopped_because"], info
        os.rename(moved, vault_root)  # moving it back works: nothing took its place
    finally:
        w.stop()
        v.close()


def test_vault_deleted_stops_the_watcher_and_recreates_nothing(vault_root):
    v = open_vault(vault_root, embedder="fake")
    w = v.watch(debounce_ms=50).start()
    try:
        assert w.wait_idle(60)
        _rmtree(vault_root)
        assert until(lambda: not w.running, timeout=30), w.status()
        time.sleep(0.5)
        assert not vault_root.exists()
        assert "moved or deleted" in w.status()["stopped_because"]
    finally:
        w.stop()
        v.close()


def test_a_slow_deletion_of_the_vault_is_not_taken_for_a_deleted_cache(vault_root):
    """Issue 47: under load ``rm -rf vault`` outlasted the watcher's fixed grace after ``.wikimem``
    went, and the watcher made its files again (and rebuilt its cache) inside the vault being
    deleted. A deletion that keeps removing entries, however slowly, is waited out."""
    v = open_vault(vault_root, embedder="fake")
    w = v.watch(debounce_ms=50).start()
    try:
        assert w.wait_idle(60)
        for _ in range(4):  # more entries to delete, slowly, after the cache folder
            (vault_root / f"extra{_}").mkdir()
            for i in range(3):
                (vault_root / f"extra{_}" / f"n{i}.md").write_text(f"# N{i}\n")
        assert w.wait_idle(60)
        _rmtree(vault_root / ".wikimem")  # retried: the watcher may write its status file meanwhile
        remade = False
        for entry in sorted(vault_root.rglob("*"), key=lambda p: -len(p.parts)):
            time.sleep(0.15)  # slower than the old grace allowed for the whole vault (0.5 s)
            remade |= (vault_root / ".wikimem").exists()
            if entry.is_dir():
                with contextlib.suppress(OSError):
                    entry.rmdir()
            else:
                with contextlib.suppress(FileNotFoundError):
                    entry.unlink()
        remade |= (vault_root / ".wikimem").exists()
        _rmtree(vault_root)
        assert until(lambda: not w.running, timeout=30), w.status()
        assert not remade, "the watcher made its files again inside a vault being deleted"
        assert "moved or deleted" in w.status()["stopped_because"]
    finally:
        w.stop()
        v.close()


def test_a_vault_deleted_while_the_watcher_makes_its_lock_again_stops_it_cleanly(vault_root, monkeypatch):
    """``rm -rf vault`` deletes ``.wikimem`` first: the watcher sees its lock file gone and makes it
    again while the deletion goes on, and the folder it was making vanished under it. Was: the
    FileNotFoundError killed the watcher's thread (seen once under load in the full suite)."""
    v = open_vault(vault_root, embedder="fake")
    w = v.watch(debounce_ms=50).start()
    try:
        assert w.wait_idle(60)
        real = w._lock.retake

        def racing_retake():  # the rest of the vault goes while the lock file is being made again
            shutil.rmtree(vault_root)
            return real()

        monkeypatch.setattr(w._lock, "retake", racing_retake)
        (vault_root / ".wikimem" / "watch.lock").unlink()
        w._wake()
        assert until(lambda: not w.running, timeout=30), w.status()
        assert "moved or deleted" in w.status()["stopped_because"]
        assert not vault_root.exists()
    finally:
        w.stop()
        v.close()


def test_vault_replaced_by_another_folder_stops_the_watcher(vault_root, tmp_path):
    v = open_vault(vault_root, embedder="fake")
    w = v.watch(debounce_ms=50).start()
    try:
        assert w.wait_idle(60)
        os.rename(vault_root, tmp_path / "old")
        shutil.copytree(tmp_path / "old", vault_root, ignore=shutil.ignore_patterns(".wikimem"))
        assert until(lambda: not w.running, timeout=30), w.status()
        assert not (vault_root / ".wikimem").exists()
    finally:
        w.stop()
        v.close()


# -- item 9: the cache folder deleted under a running daemon -----------------------------------------
def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_cache_folder_deleted_under_a_daemon_status_stop_and_second_daemon(vault_root):
    wikimem(vault_root, "index", ".")
    started = json.loads(wikimem(vault_root, "watch", "--daemon", "--json").stdout)
    pid = started["pid"]
    try:
        _rmtree(vault_root / ".wikimem")

        def status():  # until the daemon makes .wikimem again, the folder is no vault to the CLI
            proc = wikimem(vault_root, "watch", "--status", "--json", check=False)
            return json.loads(proc.stdout) if proc.returncode == 0 else {"running": False, "error": proc.stderr}
        assert until(lambda: status()["running"], timeout=30), status()
        info = status()
        assert info["pid"] == pid
        assert (vault_root / ".wikimem/watch.pid").read_text().strip() == str(pid)
        second = wikimem(vault_root, "watch", "--daemon", check=False)
        assert second.returncode == 1 and f"pid {pid}" in second.stderr, (second.stdout, second.stderr)
        # and it still follows edits: the cache is rebuilt in the new folder
        with open(vault_root / "notes/beta.md", "a") as fh:
            fh.write("\nmarrowquill\n")
        assert until(lambda: _search(vault_root, "marrowquill") == ["notes/beta.md"], timeout=60)
        stopped = json.loads(wikimem(vault_root, "watch", "--stop", "--json").stdout)
        assert stopped == {"stopped": True, "pid": pid, "was_running": True}
        assert until(lambda: _pid_gone(pid), timeout=30)
    finally:
        if not _pid_gone(pid):
            os.kill(pid, signal.SIGTERM)


def _search(root, token: str) -> list[str]:
    proc = wikimem(root, "search", token, "--mode", "lexical", "--json", check=False)
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        return []
    return [hit["path"] for hit in json.loads(proc.stdout)["hits"]]


def test_lock_file_taken_by_another_watcher_after_the_folder_went_stops_this_one(vault_root):
    """If another watcher re-created and locked ``watch.lock`` first, this one must let it be."""
    v = open_vault(vault_root, embedder="fake")
    w = v.watch(debounce_ms=50)
    w._check_own_files = lambda: True  # noqa: SLF001 - keep it from re-creating them before the other does
    w.start()
    other = None
    try:
        assert w.wait_idle(60)
        for _ in range(20):  # on a loaded machine the watcher may re-take the new lock first: try again
            _rmtree(vault_root / ".wikimem")
            other = control.WatchLock(vault_root)
            try:
                other.acquire()  # a separate open file: flock(2) treats it as another holder
                break
            except LockError:
                other = None
                time.sleep(0.05)
        assert other is not None, "the watcher always re-took its lock first"
        del w._check_own_files  # noqa: SLF001
        assert until(lambda: not w.running, timeout=30), w.status()
        assert "another watcher" in w.status()["stopped_because"]
        assert control.holder(vault_root) == os.getpid()  # the other's lock is untouched
        assert control.read_pid(vault_root / ".wikimem" / control.PIDFILE) == os.getpid()
    finally:
        w.stop()
        if other is not None:
            other.release()
        v.close()
