"""Hostile pass, session 8: the writer path (raw/ immutability, path checks, atomic writes,
frontmatter edits) attacked through the API and the MCP server. Every test but the last one
failed on the code before the fix it names ("Was:" says what happened)."""
from __future__ import annotations

import errno
import hashlib
import os
import unicodedata

import pytest

from conftest import write_vault
from wikimem.api import open_vault
from wikimem.errors import WikimemError
from wikimem.vault import files as files_mod

SOURCE = "---\ntitle: Source\n---\n# A source\n\nImmutable text about mulch.\n"


def _open(root):
    return open_vault(root, embedder="fake")


def _edited(make_vault, rel: str, before, changes) -> bytes:
    """The bytes of ``rel`` (written as ``before``) after ``update_frontmatter(rel, changes)``."""
    root = make_vault({"SCHEMA.md": "# S\n", rel: before})
    v = _open(root)
    try:
        v.update_frontmatter(rel, changes)
    finally:
        v.close()
    return (root / rel).read_bytes()


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- raw/ is never modified ------------------------------------------------------------------------
def test_mcp_write_page_through_a_symlinked_folder_cannot_reach_raw(make_vault):
    # Was: raw/ immutability is checked on the path *string* only (is_raw_path in
    # agent/guards.check_note_path, knowledge/writer._check_target, VaultFiles.write_note). A folder
    # symlink inside the vault that points at raw/ passes abspath() (it stays inside the vault), so an
    # agent overwrites an immutable source (and can add files to raw/) through it.
    from test_mcp import serve  # the real stdio server and SDK client

    root = make_vault({"SCHEMA.md": "# S\n", "concepts/A.md": "# A\n\ntext\n", "raw/articles/source.md": SOURCE})
    os.symlink("../raw", root / "concepts" / "sources")
    sha = _sha(root / "raw/articles/source.md")
    with serve(root) as server:
        result = server.call("write_page", {"path": "concepts/sources/articles/source.md",
                                            "content": "# pwned\n", "expected_sha256": sha})
        created = server.call("write_page", {"path": "concepts/sources/articles/new.md", "content": "# new\n"})
    assert (root / "raw/articles/source.md").read_text(encoding="utf-8") == SOURCE
    assert result.is_error and "raw/" in result.content[0].text
    assert created.is_error and not (root / "raw/articles/new.md").exists()


def test_update_frontmatter_refuses_raw_spelled_with_dot_slash(make_vault):
    # Was: VaultFiles.write_note's raw/ guard (vault/files.is_raw_path) only looks at the first
    # path segment, so "./raw/..." (or ".\\raw\\...") is not recognised as raw/ while abspath()
    # happily maps it onto raw/. Vault.update_frontmatter / Vault.write_note pass such a path
    # through unnormalised and rewrite the immutable source.
    root = make_vault({"SCHEMA.md": "# S\n", "raw/articles/source.md": SOURCE})
    v = _open(root)
    try:
        for rel in ("./raw/articles/source.md", ".\\raw\\articles\\source.md"):
            with pytest.raises(WikimemError):
                v.update_frontmatter(rel, {"status": "superseded"})
    finally:
        v.close()
    assert (root / "raw/articles/source.md").read_text(encoding="utf-8") == SOURCE


# -- paths that are not valid names ----------------------------------------------------------------
def test_write_page_refuses_a_lone_surrogate_path_before_writing(make_vault):
    # Was: VaultFiles.abspath accepts a path with a lone surrogate (an MCP client can send
    # "\udce9" in JSON). os.fsencode turns it into the raw byte 0xE9, so the note is created under a
    # name that is not UTF-8 (one the scan itself refuses as "bad_name"); only afterwards does
    # append_log fail with a bare UnicodeEncodeError (not a WikimemError), so the caller is told the
    # write failed although the file was written. It should be refused before anything is written.
    root = make_vault({"SCHEMA.md": "# S\n", "concepts/A.md": "# A\n"})
    v = _open(root)
    try:
        with pytest.raises(WikimemError):
            v.write_page("concepts/caf\udce9.md", "# Cafe\n\nText.\n")
    finally:
        v.close()
    assert sorted(os.listdir(os.fsencode(root / "concepts"))) == [b"A.md"]


def test_write_page_refuses_a_unicode_normalisation_twin(make_vault):
    # Was: creating "Café.md" in NFD when "Café.md" in NFC exists is not a conflict: the writer
    # (knowledge/writer.write_page, via VaultFiles._check_unchanged's path.exists()) creates a second,
    # visually identical note. On macOS (normalisation-insensitive APFS) the same call is refused as
    # "file already exists", so a vault synced between machines ends up with colliding names and
    # [[Café]] links become ambiguous. A create should be refused when an existing note's name
    # differs only by Unicode normalisation.
    nfc = unicodedata.normalize("NFC", "concepts/Café.md")
    nfd = unicodedata.normalize("NFD", "concepts/Café.md")
    root = make_vault({"SCHEMA.md": "# S\n", nfc: "# Café\n\nThe original note.\n"})
    v = _open(root)
    try:
        with pytest.raises(WikimemError):
            v.write_page(nfd, "# Café\n\nA twin.\n")
    finally:
        v.close()
    assert [n for n in os.listdir(root / "concepts")] == [nfc.split("/")[1]]


# -- atomic writes and long names ------------------------------------------------------------------
def test_frontmatter_edit_of_a_note_with_a_long_valid_name_works(make_vault):
    # Was: vault/files.atomic_write_bytes names its temp file ".<name>.<8 random>.tmp", 14 bytes
    # longer than the note's own name. A note whose name is 242..255 bytes (legal on every file
    # system; 81 CJK characters) can be read but never written: OSError "File name too long" from
    # update_frontmatter / supersede / write_page (the same trap makes `wikimem query` fail on an
    # 80-character Chinese question, whose queries/<slug>.md is 243 bytes).
    long_name = "concepts/" + "长" * 81 + ".md"  # 246 bytes: a valid file name
    root = make_vault({"SCHEMA.md": "# S\n", long_name: "---\ntitle: Long\n---\n# Long\n"})
    v = _open(root)
    try:
        v.update_frontmatter(long_name, {"status": "draft"})
    finally:
        v.close()
    assert "status: draft" in (root / long_name).read_text(encoding="utf-8")


def test_ingest_of_an_article_with_a_long_chinese_title_works(tmp_path):
    # Was: ingest/sources._write_source_page cuts the source page's name at 100 *characters*;
    # 87 CJK characters are 261 bytes, over the 255-byte name limit, so ingesting an ordinary
    # Chinese web page fails with "File name too long" after raw/articles/ already received the
    # copy and its text note (reported with raw: [] and no source page).
    title = "关于城市社区堆肥项目在二零二五年春季的实施效果评估与居民参与度调查研究报告" * 2 + "以及后续改进建议和经验总结"
    root = write_vault(tmp_path / "v", {"SCHEMA.md": "# S\n"})
    src = tmp_path / "article.html"
    src.write_text(f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
                   "<p>堆肥应该每周翻堆一次，这样微生物可以获得足够的氧气。</p></body></html>", encoding="utf-8")
    v = _open(root)
    try:
        report = v.ingest([str(src)])
    finally:
        v.close()
    item = report.items[0]
    assert item.status == "added", item.message
    assert item.page and (root / item.page).exists()


def test_supersede_undoes_new_when_the_second_write_hits_an_oserror(make_vault, monkeypatch):
    # Was: knowledge/versions.supersede writes NEW's `supersedes`, then OLD; it undoes NEW only
    # when the second write raises a WikimemError. An OSError there (disk full, permission, the long
    # name above) propagates with NEW already changed: a half-made supersede left in the user's note.
    root = make_vault({"SCHEMA.md": "# S\n",
                       "concepts/Old.md": "---\ntitle: Old\n---\n# Old\n\nFirst version.\n",
                       "concepts/New.md": "---\ntitle: New\n---\n# New\n\nSecond version.\n"})
    new_before = (root / "concepts/New.md").read_bytes()
    real = files_mod.atomic_write_bytes

    def disk_full_for_old(path, data, before_replace=None):
        if path.name == "Old.md":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data, before_replace=before_replace)

    monkeypatch.setattr(files_mod, "atomic_write_bytes", disk_full_for_old)
    from wikimem.vault import safe_write
    real_safe = safe_write.write_in_vault

    def disk_full_for_old_safe(root_, parts, data, **kw):  # notes are written through folder descriptors
        if parts[-1] == "Old.md":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_safe(root_, parts, data, **kw)

    monkeypatch.setattr(safe_write, "write_in_vault", disk_full_for_old_safe)
    v = _open(root)
    try:
        v.index()
        with pytest.raises(OSError):
            v.supersede("concepts/Old.md", "concepts/New.md")
    finally:
        v.close()
    assert (root / "concepts/New.md").read_bytes() == new_before


# -- frontmatter edits keep everything they do not change ------------------------------------------
def test_update_frontmatter_keeps_every_body_byte_of_a_mixed_line_ending_note(make_vault):
    # Was: Vault.update_frontmatter promises "everything else stays byte for byte", but it turns
    # the whole file into LF and back into the dominant ending (VaultFiles.write_note with
    # newline="\r\n"), so the LF lines of a mixed-ending note's *body* become CRLF.
    before = b"---\r\ntitle: T\r\n---\r\nBody\r\npasted line\nlast\r\n"
    after = _edited(make_vault, "n/mixed.md", before, {"status": "draft"})
    assert after.endswith(b"---\r\nBody\r\npasted line\nlast\r\n"), after


def test_update_frontmatter_refuses_a_cr_only_note(make_vault):
    # Was: parse/frontmatter.split only knows "\n"; a note saved with classic-Mac CR line endings
    # (which CommonMark, YAML and Obsidian all treat as line breaks) has its frontmatter missed, and
    # update_frontmatter prepends a *new* LF block, demoting the user's real frontmatter to body
    # text. It should edit the existing block (or refuse the note), never stack a second one.
    before = b"---\rtitle: Mac note\r---\rBody\r"
    root = make_vault({"SCHEMA.md": "# S\n", "n/mac.md": before})
    v = _open(root)
    try:
        with pytest.raises(WikimemError, match="CR only"):
            v.update_frontmatter("n/mac.md", {"status": "draft"})
    finally:
        v.close()
    assert (root / "n/mac.md").read_bytes() == before


def test_update_frontmatter_never_renames_keys_or_retypes_dates(make_vault):
    # Was: when a top-level key's text differs from str() of its parsed value (`on:` is the bool
    # True in YAML 1.1, `007:` the int 7), parse/frontmatter.update falls back to re-dumping the
    # *normalised* data: the user's key `on` is renamed to 'True', `007` to '7', every comment is
    # dropped and `created: 2024-01-02` (a date) becomes the string '2024-01-02', although only
    # `status` was asked to change. Unknown keys must survive a write unchanged.
    before = "---\non: weekends\n007: agent\ncreated: 2024-01-02  # first draft\ntitle: T\n---\nBody\n"
    after = _edited(make_vault, "n/keys.md", before, {"status": "draft"}).decode("utf-8")
    assert after.startswith("---\non: weekends\n007: agent\ncreated: 2024-01-02  # first draft\ntitle: T\n"), after


def test_a_key_yaml_reads_as_something_else_is_refused_not_re_dumped(make_vault):
    """Changing ``on`` itself (YAML reads it as True) cannot be done line by line: refused, and
    the note is left as it was."""
    before = "---\non: weekends\ntitle: T\n---\nBody\n"
    root = make_vault({"SCHEMA.md": "# S\n", "n/keys.md": before})
    v = _open(root)
    try:
        with pytest.raises(WikimemError, match="edit it by hand"):
            v.update_frontmatter("n/keys.md", {"on": "weekdays"})
        v.update_frontmatter("n/keys.md", {"title": "T"})  # no change: nothing written
    finally:
        v.close()
    assert (root / "n/keys.md").read_text(encoding="utf-8") == before


# -- held up (not covered elsewhere) ---------------------------------------------------------------
def test_write_page_through_symlinked_note_folder_inside_vault_is_allowed_and_refuses_loops(make_vault):
    # Passing: a folder symlink to another wiki folder is a legitimate alias; a symlink loop is a
    # clean PathEscapeError, never a hang or a traceback.
    root = make_vault({"SCHEMA.md": "# S\n", "concepts/A.md": "# A\n"})
    os.symlink("concepts", root / "entities")
    os.symlink("loop", root / "concepts" / "loop")
    v = _open(root)
    try:
        v.write_page("entities/B.md", "# B\n\nText.\n")
        with pytest.raises(WikimemError):
            v.write_page("concepts/loop/x.md", "# X\n")
    finally:
        v.close()
    assert (root / "concepts/B.md").read_text(encoding="utf-8") == "# B\n\nText.\n"


def test_agent_writes_stay_out_of_dot_folders_and_the_log(make_vault):
    """Was: an agent could write .obsidian/x.md or .git/x.md (folders the scan skips: the page is
    never indexed) and replace log.md with ``force``."""
    from wikimem.agent.guards import check_note_path

    root = make_vault({"SCHEMA.md": "# S\n", "log.md": "# Log\n"})
    v = _open(root)
    try:
        for rel in (".obsidian/x.md", ".git/hooks/x.md", "concepts/.hidden/x.md", "log.md", "./log.md"):
            with pytest.raises(WikimemError):
                check_note_path(v, rel)
        with pytest.raises(WikimemError, match="hidden"):  # issue 28 item 4: a dot file is never indexed
            check_note_path(v, "concepts/.x.md")
    finally:
        v.close()


def test_a_path_with_a_name_over_255_bytes_is_a_clean_error(make_vault):
    """Was: a bare OSError (File name too long) from read_page."""
    root = make_vault({"SCHEMA.md": "# S\n"})
    v = _open(root)
    try:
        with pytest.raises(WikimemError, match="255 bytes"):
            v.files.read_note("concepts/" + "x" * 5000 + ".md")
    finally:
        v.close()
