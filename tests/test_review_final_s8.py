"""Final review of session 8 (7ac9d2a..HEAD): defects found by reading the day's changes.

Every test here failed when it was written; each says what happens instead ("Now: ...")."""
from __future__ import annotations

import pytest

from conftest import write_vault
from wikimem.api import Vault
from wikimem.errors import UsageError, WikimemError
from wikimem.vault.files import VaultFiles


@pytest.fixture(autouse=True)
def _no_embedder(monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "none")


# -- update_frontmatter: the per-key refusal rule ------------------------------------------------
@pytest.mark.parametrize("neighbour", ["'a:b': 1"])
def test_update_frontmatter_never_drops_a_key_the_line_scan_does_not_see(tmp_path, neighbour):
    # Now: _key_spans does not see a quoted key holding ': ' or ':' as a key, so its line is part of
    # the key above it; changing that key rewrites both lines and the neighbour is gone without a
    # word. Before 7b15ef7 the whole block was re-dumped (the key kept); now the rule only compares
    # the *changed* key. Either keep the neighbour or refuse the edit, never lose it.
    root = write_vault(tmp_path / "v", {"n.md": f"---\ntitle: x\n{neighbour}\n---\nbody\n"})
    v = Vault(root)
    before = v.parse_file("n.md").frontmatter.data
    try:
        v.update_frontmatter("n.md", {"title": "y"})
    except WikimemError:
        return  # a refusal is acceptable
    after = v.parse_file("n.md").frontmatter.data
    assert after.get("title") == "y"
    assert {k: val for k, val in after.items() if k != "title"} == {k: val for k, val in before.items() if k != "title"}, \
        (root / "n.md").read_text()


def test_update_frontmatter_never_drops_a_key_after_a_lone_cr(tmp_path):
    # Now: YAML reads a lone CR (or U+2028) as a line break, the line scan does not: "b" is lost
    # when "a" changes (before: re-dumped, "b" kept).
    root = write_vault(tmp_path / "v", {"n.md": b"---\r\na: 1\rb: 2\r\n---\r\nbody\r\n"})
    v = Vault(root)
    try:
        v.update_frontmatter("n.md", {"a": 3})
    except WikimemError:
        return
    assert v.parse_file("n.md").frontmatter.data == {"a": 3, "b": 2}, (root / "n.md").read_bytes()


# -- the writer's NUL check --------------------------------------------------------------------
def test_a_note_the_index_reads_can_have_its_frontmatter_edited_cjk(tmp_path):
    # Now: _check_text looks for NUL in the first 8192 *characters*; the index looks in the first
    # 8192 *bytes*. 3000 CJK characters are 9000 bytes: the index reads this note, the writer
    # refuses every edit of it (e0e54f8 says "a note the index reads can still be edited").
    text = "---\ntitle: t\n---\n" + "中" * 3000 + "\x00" + "tail\n"
    root = write_vault(tmp_path / "v", {"n.md": text})
    v = Vault(root)
    v.files.read_note("n.md")  # the index reads it: no NUL in its first 8 KiB
    page = v.update_frontmatter("n.md", {"status": "draft"})
    assert page.frontmatter.data["status"] == "draft"


# -- read_page heading ---------------------------------------------------------------------------
@pytest.mark.parametrize("heading", ["#", "##", ">", "# > #"])
def test_read_page_heading_of_only_separators_is_a_usage_error(tmp_path, heading):
    # Now: IndexError (parts is empty once no heading's text is "#"; `if not parts` became
    # `if not parts and not exact`). Before 2456c07: UsageError("empty heading").
    root = write_vault(tmp_path / "v", {"n.md": "# A\n\ntext\n\n## B\n\nmore\n"})
    v = Vault(root)
    v.index()
    with pytest.raises(UsageError):
        v.read_page("n.md", heading=heading)


# -- an attachment that cannot be read while a build hashes it ----------------------------------
def test_an_unreadable_attachment_is_not_missing_to_lint_nor_stale_for_ever(tmp_path, monkeypatch):
    # Now (510da94): the attachment is left out of the manifest, so lint says WM106 "attachment
    # 'img.png' not found" for a file that is there, and status lists it in stale_files after
    # every build (doctor: "run wikimem index", which cannot help). iCloud/OneDrive online-only
    # files and permission changes do this. Since the same change re-hashes a row recorded with
    # an empty hash, recording it with "" (as before) would do.
    root = write_vault(tmp_path / "v", {"a.md": "# A\n\n![[img.png]]\n", "img.png": b"\x89PNG\x00\x01"})
    orig = VaultFiles.file_sha256
    monkeypatch.setattr(VaultFiles, "file_sha256", lambda self, rel: "" if rel == "img.png" else orig(self, rel))
    v = Vault(root)
    v.index()
    codes = [(f.code, f.message) for f in v.lint(()).findings]
    assert not [c for c in codes if c[0] == "WM106"], codes
    assert "img.png" not in (v.status().get("stale_files") or [])


# -- conversation note names ---------------------------------------------------------------------
def test_a_conversation_with_a_long_cjk_title_is_imported(tmp_path):
    # Now: note_path cuts the title at 80 *characters* (fit_name was applied to source and query
    # pages only); 80 CJK characters + date + id are 263 bytes, over the 255-byte name limit, so
    # abspath refuses it and the conversation is reported "refused" and never imported.
    from wikimem.ingest.conversations import write_sessions
    from wikimem.ingest.transcript import Session, Turn
    root = write_vault(tmp_path / "v", {"index.md": "# Index\n"})
    v = Vault(root)
    session = Session(title="关于堆肥" * 20, turns=[Turn("User", "你好"), Turn("Assistant", "你好！")],
                      date="2024-05-01T10:00:00", extra={"session_id": "abcdef1234567890"})
    results = write_sessions(v, [session])
    assert [r.status for r in results] == ["added"], results


def test_a_comment_under_a_key_survives_an_edit_of_that_key(tmp_path):
    """Was (older than session 8): a column-0 comment between two keys counted as part of the key
    above, and changing that key dropped it."""
    root = write_vault(tmp_path / "v", {"n.md": "---\nstatus: draft\n# reviewed by X\n\ntags: [a]\n---\nBody\n"})
    v = Vault(root)
    v.update_frontmatter("n.md", {"status": "active"})
    v.close()
    assert (root / "n.md").read_text(encoding="utf-8") == "---\nstatus: active\n# reviewed by X\n\ntags: [a]\n---\nBody\n"
