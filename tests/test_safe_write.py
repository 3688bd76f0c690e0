"""Issue 28 item 1: no write can be raced outside the vault by a symlink swapped in after the check;
issue 27 item 15: a symlinked note is written where it points, not replaced by a regular file."""
import hashlib
import os
import threading
import time

import pytest

from wikimem.errors import ConflictError, PathEscapeError, ReadOnlyError
from wikimem.vault import safe_write

pytestmark = pytest.mark.skipif(not safe_write.supported(), reason="needs dir_fd support (POSIX)")


def _write(root, rel, data=b"x", expected=None, **kw):
    return safe_write.write_in_vault(root, rel.split("/"), data, expected_sha256=expected, mode_for_new=0o644, **kw)


def test_writes_make_folders_and_refuse_clobbering(tmp_path):
    _write(tmp_path, "a/b/c.md", b"one")
    assert (tmp_path / "a/b/c.md").read_bytes() == b"one"
    with pytest.raises(ConflictError, match="already exists"):
        _write(tmp_path, "a/b/c.md", b"two")
    with pytest.raises(ConflictError, match="changed"):
        _write(tmp_path, "a/b/c.md", b"two", expected="0" * 64)
    _write(tmp_path, "a/b/c.md", b"two", expected=hashlib.sha256(b"one").hexdigest())
    assert (tmp_path / "a/b/c.md").read_bytes() == b"two"
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_a_symlink_out_of_the_vault_is_refused(tmp_path):
    vault, outside = tmp_path / "v", tmp_path / "outside"
    vault.mkdir(), outside.mkdir()
    (vault / "escape").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PathEscapeError):
        _write(vault, "escape/x.md")
    assert list(outside.iterdir()) == []


def test_a_symlink_into_raw_is_refused_and_one_inside_the_vault_is_followed(tmp_path):
    (tmp_path / "raw").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "sources").symlink_to(tmp_path / "raw", target_is_directory=True)
    with pytest.raises(ReadOnlyError):
        _write(tmp_path, "sources/x.md")
    (tmp_path / "alias").symlink_to(tmp_path / "notes", target_is_directory=True)
    assert _write(tmp_path, "alias/y.md") == ["notes", "y.md"]
    assert (tmp_path / "notes/y.md").exists()


def test_a_symlinked_note_is_written_where_it_points(tmp_path):
    (tmp_path / "real.md").write_bytes(b"old")
    (tmp_path / "link.md").symlink_to("real.md")
    written = _write(tmp_path, "link.md", b"new", expected=hashlib.sha256(b"old").hexdigest())
    assert written == ["real.md"] and (tmp_path / "link.md").is_symlink()
    assert (tmp_path / "real.md").read_bytes() == b"new"


def test_a_symlink_loop_is_a_clear_error(tmp_path):
    (tmp_path / "loop").symlink_to(tmp_path / "loop", target_is_directory=True)
    with pytest.raises((PathEscapeError, OSError)):
        _write(tmp_path, "loop/x.md")


def _swap(folder, outside, stop):
    """Swap folder/sub between a real folder and a symlink to ``outside`` until ``stop``."""
    sub, parked = folder / "sub", folder / "parked"
    parked.mkdir()
    while not stop.is_set():
        try:
            if sub.is_symlink():
                sub.unlink()
                os.rename(parked, sub)
            else:
                if sub.exists():
                    os.rename(sub, parked)
                sub.symlink_to(outside, target_is_directory=True)
        except OSError:
            pass


def test_swapping_a_folder_for_a_symlink_while_writing_never_writes_outside(tmp_path):
    """The stress test of the issue: one thread swaps inside/sub between a real folder and a
    symlink to an outside folder while another writes inside/sub/n.md as fast as it can."""
    vault, outside = tmp_path / "v", tmp_path / "outside"
    (vault / "inside").mkdir(parents=True)
    outside.mkdir()
    stop = threading.Event()
    swapper = threading.Thread(target=_swap, args=(vault / "inside", outside, stop))
    swapper.start()
    written = refused = 0
    deadline = time.monotonic() + 3.0
    try:
        i = 0
        while time.monotonic() < deadline and i < 3000:
            i += 1
            try:
                _write(vault, f"inside/sub/n{i}.md", b"note")
                written += 1
            except (PathEscapeError, ConflictError, OSError):
                refused += 1
    finally:
        stop.set()
        swapper.join()
    assert list(outside.iterdir()) == [], "a write landed outside the vault"
    assert written > 0 and written + refused == i


def test_the_vault_writer_goes_through_it(make_vault):
    """Issue 27 item 15: MCP write_page through a symlinked note replaced the symlink with a regular
    file; issue 27 item 22: a case-only twin (NOTES.md beside notes.md) is refused like a
    normalisation twin."""
    from wikimem.api import open_vault
    root = make_vault({"notes/real.md": "# Real\n"})
    (root / "notes/link.md").symlink_to("real.md")
    v = open_vault(root, embedder="none")
    sha = v.files.read_note("notes/link.md").sha256
    v.write_page("notes/link.md", "# Real\n\nEdited through the link.\n", expected_sha256=sha)
    assert (root / "notes/link.md").is_symlink()
    assert "Edited through the link." in (root / "notes/real.md").read_text()
    v.write_page("notes/case.md", "# c\n")
    with pytest.raises(ConflictError, match="another case"):
        v.write_page("notes/CASE.md", "# C\n")
    assert not (root / "notes/CASE.md").exists()


def test_agent_writes_raced_by_a_symlink_swap_never_land_outside(make_vault, tmp_path):
    """The issue's own scenario, through the MCP write path (check_note_path + Vault.write_page)."""
    from wikimem.agent.guards import check_note_path
    from wikimem.api import open_vault
    from wikimem.errors import WikimemError
    root = make_vault({"inside/keep.md": "# k\n"})
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    v = open_vault(root, embedder="none")
    stop = threading.Event()
    swapper = threading.Thread(target=_swap, args=(root / "inside", outside, stop))
    swapper.start()
    try:
        for i in range(60):
            try:
                v.write_page(check_note_path(v, f"inside/sub/n{i}.md"), "# n\n", check_similar=False)
            except (WikimemError, OSError):
                pass
    finally:
        stop.set()
        swapper.join()
    assert list(outside.iterdir()) == []
