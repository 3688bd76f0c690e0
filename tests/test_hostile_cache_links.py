"""A lock file of .wikimem that is a symlink, a hard link or a FIFO: a `.wikimem/lock` linked to a note
had the writer's pid written over the note (truncated to a few bytes); a FIFO made `status` hang.
Every lock and state file of the cache is opened as a regular file of that folder, or replaced."""
import os

import pytest

from wikimem.api import open_vault
from wikimem.stores.sidefiles import WATCH_LOCK, flock_holder, open_cache_file

NOTE = "# Keep\n\n" + "A note a person wrote and must keep. " * 40 + "\n"


def _vault(make_vault):
    root = make_vault({"SCHEMA.md": "# Schema\n", "notes/keep.md": NOTE, "notes/b.md": "# B\n\nbeta\n"})
    v = open_vault(root, embedder="fake")
    v.index()
    return root


@pytest.mark.local_store  # on PostgreSQL the writer lock is the database's, no file
@pytest.mark.parametrize("how", ["symlink", "hardlink"])
def test_the_writer_lock_linked_to_a_note_never_writes_into_it(make_vault, how):
    root = _vault(make_vault)
    lock = root / ".wikimem" / "lock"
    lock.unlink()
    (os.symlink if how == "symlink" else os.link)(root / "notes" / "keep.md", lock)
    (root / "notes" / "b.md").write_text("# B\n\nbeta changed\n", encoding="utf-8")
    report = open_vault(root, embedder="fake").index()
    assert report.changed == 1
    assert (root / "notes" / "keep.md").read_text(encoding="utf-8") == NOTE
    assert lock.is_file() and not lock.is_symlink() and os.stat(lock).st_nlink == 1


@pytest.mark.local_store
def test_a_fifo_where_a_lock_goes_neither_hangs_nor_stays(make_vault):
    root = _vault(make_vault)
    lock = root / ".wikimem" / "lock"
    lock.unlink()
    os.mkfifo(lock)
    assert flock_holder(lock) is None  # no hang: a FIFO is no lock of ours
    open_vault(root, embedder="fake").index()
    assert lock.is_file()


def test_the_watch_lock_linked_to_a_note_never_writes_into_it(make_vault):
    from wikimem.watch.control import WatchLock
    root = _vault(make_vault)
    target = root / ".wikimem" / WATCH_LOCK
    target.unlink(missing_ok=True)
    os.symlink(root / "notes" / "keep.md", target)
    lock = WatchLock(root)
    lock.acquire()
    try:
        assert (root / "notes" / "keep.md").read_text(encoding="utf-8") == NOTE
    finally:
        lock.release()


def test_without_create_what_is_there_is_left_alone(tmp_path):
    note = tmp_path / "note.md"
    note.write_text(NOTE, encoding="utf-8")
    link = tmp_path / "lock"
    os.symlink(note, link)
    with pytest.raises(OSError):
        open_cache_file(link, os.O_RDONLY)
    assert link.is_symlink() and note.read_text(encoding="utf-8") == NOTE
