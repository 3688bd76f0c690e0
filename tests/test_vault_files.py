"""The vault access layer: deterministic walks, safe reads, atomic conflict-checked writes."""
import os

import pytest

from wikimem.api import open_vault
from wikimem.errors import ConflictError, NoteReadError, PathEscapeError, ReadOnlyError, VaultError
from wikimem.vault import VaultFiles


def test_scan_is_sorted_and_skips_dot_folders(make_vault):
    root = make_vault({"b.md": "b", "a/z.md": "z", "a/c.md": "c", ".obsidian/x.md": "x", ".trash/t.md": "t",
                       ".hidden.md": "h", "img.png": b"\x89PNG"})
    scan = VaultFiles(root).scan()
    assert [f.path for f in scan.files] == ["a/c.md", "a/z.md", "b.md", "img.png"]
    assert [f.path for f in scan.notes] == ["a/c.md", "a/z.md", "b.md"]


def test_missing_vault_is_a_clear_error(tmp_path):
    with pytest.raises(VaultError, match="not found"):
        VaultFiles(tmp_path / "nope")
    (tmp_path / "f").write_text("x")
    with pytest.raises(VaultError, match="not a folder"):
        VaultFiles(tmp_path / "f")


def test_symlink_loop_and_dangling_link_survive(make_vault):
    root = make_vault({"a/n.md": "n"})
    os.symlink("../a", root / "a" / "self")
    os.symlink("missing.md", root / "dangling.md")
    scan = VaultFiles(root).scan()
    assert [f.path for f in scan.files] == ["a/n.md"]
    kinds = sorted(s.kind for s in scan.skipped)
    assert kinds == ["symlink_loop", "unreadable"]


@pytest.mark.parametrize("rel", ["../x.md", "a/../../x.md", "/etc/passwd", "", "a\x00b", "C:/x.md", "..\\x.md"])
def test_paths_that_escape_are_refused(make_vault, rel):
    root = make_vault({"n.md": "n"})
    with pytest.raises(PathEscapeError):
        VaultFiles(root).abspath(rel)


def test_symlink_pointing_outside_is_refused(make_vault, tmp_path):
    root = make_vault({"n.md": "n"})
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "out")
    with pytest.raises(PathEscapeError, match="symlink"):
        VaultFiles(root).abspath("out/new.md")


def test_read_reports_kinds(make_vault):
    root = make_vault({"bin.md": b"a\x00b", "l1.md": "é".encode("latin-1"), "big.md": "x" * 2000})
    files = VaultFiles(root, max_bytes=1000)
    for rel, kind in (("bin.md", "binary"), ("l1.md", "not_utf8"), ("big.md", "too_large"), ("gone.md", "unreadable")):
        with pytest.raises(NoteReadError) as info:
            files.read_note(rel)
        assert info.value.kind == kind


def test_write_is_atomic_and_keeps_crlf_and_bom(make_vault):
    root = make_vault({"n.md": b"\xef\xbb\xbfa\r\nb\r\n"})
    files = VaultFiles(root)
    note = files.read_note("n.md")
    assert note.newline == "\r\n" and note.bom
    files.write_note("n.md", "a\nb\nc\n", expected_sha256=note.sha256, newline=note.newline, bom=note.bom)
    assert (root / "n.md").read_bytes() == b"\xef\xbb\xbfa\r\nb\r\nc\r\n"
    assert [p.name for p in root.iterdir()] == ["n.md"]  # no temp file left behind


def test_write_refuses_changed_file(make_vault):
    root = make_vault({"n.md": "original"})
    files = VaultFiles(root)
    note = files.read_note("n.md")
    (root / "n.md").write_text("edited in Obsidian meanwhile")
    with pytest.raises(ConflictError, match="changed on disk"):
        files.write_note("n.md", "mine", expected_sha256=note.sha256)
    assert (root / "n.md").read_text() == "edited in Obsidian meanwhile"
    with pytest.raises(ConflictError, match="already exists"):
        files.write_note("n.md", "new", expected_sha256=None)


def test_raw_is_immutable(make_vault):
    root = make_vault({"raw/a.md": "source"})
    with pytest.raises(ReadOnlyError):
        VaultFiles(root).write_note("raw/a.md", "x", expected_sha256=None)
    with pytest.raises(ReadOnlyError):
        open_vault(root).update_frontmatter("raw/a.md", {"status": "x"})
    assert (root / "raw/a.md").read_text() == "source"


def test_failed_write_leaves_original(make_vault, monkeypatch):
    root = make_vault({"n.md": "original"})
    files = VaultFiles(root)
    note = files.read_note("n.md")

    def boom(*a, **k):
        raise OSError("disk full")
    from wikimem.vault import safe_write
    monkeypatch.setattr(os, "replace", boom)
    monkeypatch.setattr(safe_write, "exchange", boom)  # the swap itself fails (a full disk, an I/O error)
    with pytest.raises(OSError):
        files.write_note("n.md", "new", expected_sha256=note.sha256)
    assert (root / "n.md").read_text() == "original"
    assert [p.name for p in root.iterdir()] == ["n.md"]


def test_wikimemignore_patterns(make_vault):
    root = make_vault({".wikimemignore": "drafts/\n*.bak.md\n!keep.bak.md\n", "drafts/a.md": "a",
                       "x.bak.md": "x", "keep.bak.md": "k", "n.md": "n"})
    assert [f.path for f in VaultFiles(root).scan().files] == ["keep.bak.md", "n.md"]


def test_symlinked_folder_outside_the_vault_is_not_followed(make_vault, tmp_path):
    root = make_vault({"n.md": "n"})
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.md").write_text("not part of the vault")
    os.symlink(outside, root / "linked")
    os.symlink("..", root / "up")  # the parent of the vault: outside too
    scan = VaultFiles(root).scan()
    assert [f.path for f in scan.files] == ["n.md"]
    assert sorted((s.path, s.kind) for s in scan.skipped) == [("linked", "outside"), ("up", "outside")]


def test_a_note_that_vanishes_mid_build_is_skipped(make_vault, monkeypatch):
    from wikimem.vault.files import FileInfo, ScanResult
    root = make_vault({"a.md": "# A\n\nalpha\n"})
    real_scan = VaultFiles.scan

    def scan_with_ghost(self):
        result = real_scan(self)
        return ScanResult(result.files + (FileInfo("ghost.md", 10, 1),), result.skipped)
    monkeypatch.setattr(VaultFiles, "scan", scan_with_ghost)
    report = open_vault(root, embedder="none").index()
    assert report.pages == 1 and {s["path"]: s["kind"] for s in report.skipped} == {"ghost.md": "unreadable"}
