"""The watcher holds no inotify watch inside folders the scan never indexes (issue 26 item 5).

Measured the honest way: the kernel's own list of this process's watches (``/proc/self/fdinfo``
of each inotify descriptor, one ``inotify wd:`` line per watch, naming the watched inode), mapped
back to the vault's folders by inode. A ``.git/`` with its object folders, ``.wikimem/``,
``.obsidian/``, ``.trash/`` and ``.wikimemignore``'d folders must cost no watch, while every
folder that holds notes keeps one, including folders created, moved in or un-ignored later.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from test_watch_support import EVENT_LATENCY_S, settle, until

from wikimem.api import open_vault
from wikimem.watch import events as events_mod
from wikimem.watch import observing as observing_mod
from wikimem.watch import watcher as watcher_mod

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify watches are Linux's")

NOTES = {
    "notes/apple.md": "# Apple\n\nThe apple orchard by the river stone.\n",
    "notes/deep/x/pear.md": "# Pear\n\nPears grow near the quiet harbour.\n",
    "notes/skip/old.md": "# Old\n\nan old draft\n",
    "archive/2019/jan/log.md": "# Log\n\ncopper lantern\n",
    ".wikimemignore": "archive/\nnotes/skip/\n",
    ".obsidian/plugins/dataview/data.json": "{}",
    ".trash/gone/old.md": "# gone\n",
}
IGNORED_TOPS = (".git", ".wikimem", ".obsidian", ".trash", "archive", "notes/skip")


def _inotify_fds() -> set[int]:
    fds = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == "anon_inode:inotify":
                fds.add(int(name))
        except OSError:
            continue
    return fds


def _watched_inodes(fds: set[int]) -> list[int]:
    """The inode of every watch the kernel holds on these inotify descriptors."""
    inodes = []
    for fd in fds:
        try:
            with open(f"/proc/self/fdinfo/{fd}") as fh:
                lines = fh.read().splitlines()
        except OSError:
            continue
        for line in lines:
            if line.startswith("inotify wd:"):
                fields = dict(part.split(":", 1) for part in line.split()[1:] if ":" in part)
                inodes.append(int(fields["ino"], 16))
    return inodes


def _folders(root: Path) -> dict[int, str]:
    """inode -> vault-relative path of every folder in the vault (symlinks not followed)."""
    found = {os.stat(root).st_ino: "."}
    for dirpath, dirnames, _ in os.walk(root):
        for d in dirnames:
            full = os.path.join(dirpath, d)
            if not os.path.islink(full):
                found[os.stat(full).st_ino] = os.path.relpath(full, root).replace(os.sep, "/")
    return found


def _under_ignored(rel: str, extra: tuple[str, ...] = ()) -> bool:
    return any(rel == top or rel.startswith(top + "/") for top in IGNORED_TOPS + extra)


class Kernel:
    """The watches the watcher's own inotify descriptor(s) hold, as vault-relative folders."""

    def __init__(self, before: set[int], root: Path):
        self.fds = _inotify_fds() - before
        self.root = root

    def watched(self) -> list[str]:
        names = _folders(self.root)
        return sorted(names.get(ino, f"<inode {ino} outside the vault>") for ino in _watched_inodes(self.fds))


def _make_git(root: Path, n: int = 50) -> None:
    """A ``.git`` the shape git leaves: hooks, refs, and object folders (50 nested folders)."""
    for i in range(n - 6):
        (root / f".git/objects/{i:02x}").mkdir(parents=True)
        (root / f".git/objects/{i:02x}/abc").write_bytes(b"x")
    for sub in ("hooks", "info", "refs/heads", "refs/tags", "logs/refs/heads"):
        (root / ".git" / sub).mkdir(parents=True, exist_ok=True)
    (root / ".git/HEAD").write_text("ref: refs/heads/main\n")


@pytest.fixture
def vault_root(make_vault):
    root = make_vault(NOTES)
    _make_git(root)
    return root


def _start(root: Path):
    before = _inotify_fds()
    v = open_vault(root, embedder="fake")
    w = v.watch(debounce_ms=100).start()
    assert w.wait_idle(60)
    assert w.status()["mode"] == "inotify"
    return v, w, Kernel(before, root)


def _paths(vault, query: str) -> list[str]:
    return [h.path for h in vault.search(query, mode="lexical").hits]


def test_no_watch_inside_ignored_folders_yet_new_nested_folders_are_followed(vault_root):
    v, w, kernel = _start(vault_root)
    try:
        git_folders = sum(1 for rel in _folders(vault_root).values() if rel.startswith(".git/"))
        assert git_folders >= 50
        watched = kernel.watched()
        assert watched, "no inotify watch found for the watcher"
        assert [rel for rel in watched if _under_ignored(rel)] == []
        assert set(watched) == {".", "notes", "notes/deep", "notes/deep/x"}
        assert len(watched) == len(set(watched))

        # mkdir -p a/b/c; touch a/b/c/x.md: every new level is watched and the note is found
        (vault_root / "new/a/b/c").mkdir(parents=True)
        (vault_root / "new/a/b/c/x.md").write_text("# X\n\nzebracorn\n")
        assert until(lambda: _paths(v, "zebracorn") == ["new/a/b/c/x.md"])
        assert until(lambda: {"new", "new/a", "new/a/b", "new/a/b/c"} <= set(kernel.watched()))
        (vault_root / "new/a/b/c/x.md").write_text("# X\n\nviolet engine\n")  # followed by its own watch
        assert until(lambda: _paths(v, "violet engine") == ["new/a/b/c/x.md"])

        # folders created inside ignored trees (git writing objects, the cache's own folders) cost nothing
        for i in range(10):
            (vault_root / f".git/objects/f{i}/sub").mkdir(parents=True)
        (vault_root / ".wikimem/tmp-test/inner").mkdir(parents=True)
        (vault_root / "archive/2020/feb").mkdir(parents=True)
        (vault_root / "notes/.hidden/inner").mkdir(parents=True)
        time.sleep(EVENT_LATENCY_S)
        settle(w)
        assert [rel for rel in kernel.watched() if _under_ignored(rel) or ".hidden" in rel] == []
    finally:
        w.stop()
        v.close()


def test_folders_moved_in_out_and_out_of_ignored_places_are_rewatched(vault_root, tmp_path):
    v, w, kernel = _start(vault_root)
    try:
        # an ignored folder renamed to an indexed name: watched from then on, with its subfolders
        os.rename(vault_root / "archive", vault_root / "kept")
        assert until(lambda: _paths(v, "copper lantern") == ["kept/2019/jan/log.md"])
        assert until(lambda: {"kept", "kept/2019", "kept/2019/jan"} <= set(kernel.watched()))
        (vault_root / "kept/2019/jan/log.md").write_text("# Log\n\namber meadow\n")
        assert until(lambda: _paths(v, "amber meadow") == ["kept/2019/jan/log.md"])

        # a watched folder moved so that a path pattern no longer matches inside it: notes/skip/ was
        # ignored, notes2/skip is not, and must be watched although the move carried the other watches
        os.rename(vault_root / "notes", vault_root / "notes2")
        assert until(lambda: "notes2/skip/old.md" in {r[0] for r in v.cache.db.execute("SELECT path FROM files")})
        assert until(lambda: "notes2/skip" in kernel.watched())
        (vault_root / "notes2/skip/old.md").write_text("# Old\n\nnorth garden\n")
        assert until(lambda: _paths(v, "north garden") == ["notes2/skip/old.md"])

        # a folder with a .git inside moved in from outside the vault: its .git is not watched
        outside = tmp_path / "outside"
        (outside / "proj/.git/objects/aa").mkdir(parents=True)
        (outside / "proj/doc").mkdir()
        (outside / "proj/doc/readme.md").write_text("# Readme\n\nquiet harbour mooring\n")
        os.rename(outside / "proj", vault_root / "proj")
        assert until(lambda: _paths(v, "mooring") == ["proj/doc/readme.md"])
        assert until(lambda: {"proj", "proj/doc"} <= set(kernel.watched()))
        assert [rel for rel in kernel.watched() if ".git" in rel] == []

        # and moved out again: its watches go with it, nothing is left behind
        os.rename(vault_root / "proj", tmp_path / "proj-back")
        assert until(lambda: _paths(v, "mooring") == [])
        settle(w)
        assert w.status()["mode"] == "inotify" and w.running
    finally:
        w.stop()
        v.close()


def test_a_wikimemignore_edit_moves_the_watches(vault_root):
    v, w, kernel = _start(vault_root)
    try:
        (vault_root / ".wikimemignore").write_text("archive/\nnotes/\n")  # notes ignored from now on
        assert until(lambda: _paths(v, "orchard") == [])
        assert until(lambda: not any(rel.startswith("notes") for rel in kernel.watched()))
        (vault_root / ".wikimemignore").write_text("")  # nothing ignored: archive and notes/skip watched
        assert until(lambda: _paths(v, "orchard") == ["notes/apple.md"])
        assert until(lambda: {"archive/2019/jan", "notes/skip", "notes/deep/x"} <= set(kernel.watched()))
        (vault_root / "archive/2019/jan/log.md").write_text("# Log\n\nzebracorn\n")
        assert until(lambda: _paths(v, "zebracorn") == ["archive/2019/jan/log.md"])
        assert [rel for rel in kernel.watched() if rel.startswith((".git", ".wikimem", ".obsidian", ".trash"))] == []
    finally:
        w.stop()
        v.close()


def test_without_the_pruning_hook_the_plain_observer_still_follows_edits(vault_root, monkeypatch):
    """On a watchdog whose inotify internals the hook does not know, watching falls back to the
    plain recursive observer: ignored folders cost watches again, and nothing else changes."""
    monkeypatch.setattr(observing_mod, "Observer", events_mod.PLAIN_OBSERVER)
    v, w, kernel = _start(vault_root)
    try:
        assert any(rel.startswith(".git/") for rel in kernel.watched())  # the old behaviour, measured
        (vault_root / "new/a/b").mkdir(parents=True)
        (vault_root / "new/a/b/x.md").write_text("# X\n\nzebracorn\n")
        assert until(lambda: _paths(v, "zebracorn") == ["new/a/b/x.md"])
    finally:
        w.stop()
        v.close()


def test_the_hook_refuses_a_watchdog_it_does_not_know(monkeypatch):
    from watchdog.observers import inotify

    assert events_mod.pruning_observer_class() is not None  # the installed watchdog is supported
    monkeypatch.delattr(inotify.InotifyWatchGroup, "_add_all_callbacks")
    assert events_mod.pruning_observer_class() is None


def test_no_inotify_instance_left_falls_back_to_polling(vault_root, monkeypatch):
    """At fs.inotify.max_user_instances, creating the observer itself fails (EMFILE): that too is
    the polling fallback, not a watcher that cannot start."""
    import errno

    class NoInstances(observing_mod.Observer):
        def __init__(self, *args, **kwargs):
            raise OSError(errno.EMFILE, "inotify instance limit reached")

    monkeypatch.setattr(observing_mod, "Observer", NoInstances)
    v = open_vault(vault_root, embedder="fake")
    w = watcher_mod.Watcher(v.ctx, debounce_ms=50, poll_interval=0.2).start()
    try:
        assert w.wait_idle(60)
        info = w.status()
        assert info["mode"] == "polling" and "instance limit" in info["fallbacks"][0]["reason"]
        (vault_root / "notes/kiwi.md").write_text("# Kiwi\n\nzebracorn\n")
        assert until(lambda: _paths(v, "zebracorn") == ["notes/kiwi.md"])
    finally:
        w.stop()
        v.close()


def test_polling_does_not_walk_ignored_folders(vault_root, monkeypatch):
    """The polling fallback's snapshot (every poll) lists no folder the scan ignores: a .git full of
    objects is not stat'ed every two seconds; new nested folders are still found."""
    listed: list[str] = []
    real = events_mod.PathFilter.listdir

    def spy(self, path):
        listed.append(os.path.relpath(path, vault_root).replace(os.sep, "/"))
        return real(self, path)

    monkeypatch.setattr(events_mod.PathFilter, "listdir", spy)
    v = open_vault(vault_root, embedder="fake")
    w = v.watch(debounce_ms=50, polling=True)
    w.poll_interval = 0.2
    w.start()
    try:
        assert w.wait_idle(60) and w.status()["mode"] == "polling"
        (vault_root / "new/a/b").mkdir(parents=True)
        (vault_root / "new/a/b/x.md").write_text("# X\n\nzebracorn\n")
        assert until(lambda: _paths(v, "zebracorn") == ["new/a/b/x.md"])
        assert {".", "notes", "notes/deep/x", "new/a/b"} <= set(listed)
        assert [rel for rel in listed if _under_ignored(rel)] == []
        (vault_root / ".wikimemignore").write_text("")  # archive/ indexed from now on, and polled
        (vault_root / "archive/2019/jan/log.md").write_text("# Log\n\nviolet engine\n")
        assert until(lambda: _paths(v, "violet engine") == ["archive/2019/jan/log.md"])
        assert until(lambda: "archive/2019/jan" in listed)
        assert not any(rel.startswith((".git", ".wikimem")) for rel in listed)
    finally:
        w.stop()
        v.close()


def _watch_limit_below(monkeypatch, marker: bytes) -> None:
    """inotify_add_watch fails with ENOSPC for folders whose path holds ``marker``, as it does for
    every folder once fs.inotify.max_user_watches is reached."""
    import errno

    from watchdog.observers.inotify_c import InotifyFD

    real = InotifyFD.add_callback

    def add_callback(self, path, *args, **kwargs):
        if marker in path:
            raise OSError(errno.ENOSPC, "inotify watch limit reached")
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(InotifyFD, "add_callback", add_callback)


def test_watch_limit_reached_below_the_root_falls_back_to_polling(vault_root, monkeypatch):
    """watchdog 7.1 swallows a failure to watch any folder but the root: at the watch limit part of
    the vault went unwatched while the status said inotify. Now that is the polling fallback."""
    _watch_limit_below(monkeypatch, b"/notes/deep")
    v = open_vault(vault_root, embedder="fake")
    w = watcher_mod.Watcher(v.ctx, debounce_ms=50, poll_interval=0.2).start()
    try:
        assert w.wait_idle(60)
        info = w.status()
        assert info["mode"] == "polling", info
        reason = info["fallbacks"][0]["reason"]
        # watchdog 7.1.0 swallows the failure (wikimem counts the unwatched folder); 7.1.1 raises it
        assert "could not be watched" in reason or "watch limit was reached" in reason, reason
        (vault_root / "notes/deep/x/pear.md").write_text("# Pear\n\nzebracorn\n")
        assert until(lambda: _paths(v, "zebracorn") == ["notes/deep/x/pear.md"])
    finally:
        w.stop()
        v.close()


def test_watch_limit_reached_for_a_new_folder_falls_back_to_polling(vault_root, monkeypatch):
    monkeypatch.setattr(watcher_mod, "HEALTH_EVERY_S", 0.2)
    monkeypatch.setattr(watcher_mod, "POLL_INTERVAL_S", 0.2)
    v, w, kernel = _start(vault_root)
    try:
        w.poll_interval = 0.2
        _watch_limit_below(monkeypatch, b"/late")
        (vault_root / "late/a").mkdir(parents=True)
        assert until(lambda: w.status()["mode"] == "polling")
        assert "could not watch a new folder" in w.status()["fallbacks"][-1]["reason"]
        (vault_root / "late/a/x.md").write_text("# X\n\nzebracorn\n")
        assert until(lambda: _paths(v, "zebracorn") == ["late/a/x.md"])
    finally:
        w.stop()
        v.close()


def test_the_rebuild_after_a_queue_overflow_stays_pruned(vault_root):
    """After IN_Q_OVERFLOW watchdog drops and re-walks every watch of the group (and the watcher
    reconciles): the re-walk leaves the ignored folders out too."""
    v, w, kernel = _start(vault_root)
    try:
        before = kernel.watched()
        (emitter,) = w._observer.emitters
        emitter._inotify.on_queue_overflow()  # what watchdog calls when the kernel says IN_Q_OVERFLOW
        assert until(lambda: w.status()["fallbacks"] and w.status()["fallbacks"][-1]["action"] == "full reconcile")
        assert kernel.watched() == before == [".", "notes", "notes/deep", "notes/deep/x"]
        (vault_root / "notes/deep/x/pear.md").write_text("# Pear\n\nzebracorn\n")
        assert until(lambda: _paths(v, "zebracorn") == ["notes/deep/x/pear.md"])
    finally:
        w.stop()
        v.close()
