"""The writer door: raw/ stays immutable whatever the path spelling or symlink, names that are not
valid (lone surrogates, Unicode normalisation twins), dot folders and the log are refused, folder
symlinks inside the vault are allowed and loops refused, and the NUL check refuses exactly what the
index would skip as binary (and a refusal stops no more than the one item). Each "Was:" says what
happened before the fix."""
from __future__ import annotations

import hashlib
import json
import os
import unicodedata

import pytest

from conftest import write_vault
from wikimem.api import Vault, open_vault
from wikimem.errors import WikimemError

from support_built_vault import built  # noqa: F401, F811 - the shared built-vault fixture

pytestmark = pytest.mark.adversarial


SOURCE = "---\ntitle: Source\n---\n# A source\n\nImmutable text about mulch.\n"


def _open(root):
    return open_vault(root, embedder="fake")


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def _no_embedder(monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "none")


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


# -- symlinked folders, dot folders and the log ------------------------------------------------------
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


# -- the NUL check: never write what the index skips, never refuse what it reads ---------------------
def test_the_writer_never_writes_a_note_the_index_then_skips_as_binary(built):
    # Was: write_page and remember wrote text holding a NUL character as is; the next build skipped the
    # note ("binary file (contains NUL bytes); skipped"), so an agent's page or memory was written but
    # could never be found, and remember only warned that index.md was not updated.
    root, _ = built
    vault = open_vault(root, embedder="fake")
    for write in (lambda: vault.write_page("notes/x.md", "# X\n\nhello\x00world zebracorn\n"),
                  lambda: vault.remember("zebracorn fact with a nul \x00 inside")):
        try:
            write()
        except WikimemError:
            continue  # refused with a clear error: fine
    report = vault.index()
    assert not report.skipped, report.skipped


@pytest.mark.usefixtures("_no_embedder")
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


def test_a_note_the_index_reads_can_still_have_its_frontmatter_edited(tmp_path):
    # decode_note skips a note as binary only for a NUL in its first 8 KB; _check_text refuses a NUL
    # anywhere. A note with a stray NUL further in is indexed and found, but update_frontmatter (and
    # so supersede, lint --fix, write-backs quoting it) now fails with "a note with them is skipped
    # as binary, so it is not written" - which is not true of this note.
    body = "# Big\n\n" + "lorem ipsum dolor sit amet " * 400 + "\n\nstray\x00nul zebracorn\n"
    root = write_vault(tmp_path / "vault", {"notes/Big.md": "---\nstatus: current\n---\n" + body})
    vault = open_vault(root, embedder="fake")
    assert not vault.index().skipped
    assert [h.path for h in vault.search("zebracorn", mode="lexical").hits] == ["notes/Big.md"]
    vault.update_frontmatter("notes/Big.md", {"status": "draft"})


def _conv(cid: str, text: str) -> dict:
    return {"title": f"Conv {cid}", "conversation_id": cid, "current_node": "r", "create_time": 1700000000,
            "mapping": {"r": {"message": {"author": {"role": "user"},
                                          "content": {"content_type": "text", "parts": [text]}},
                              "parent": None, "children": []}}}


def test_one_conversation_holding_a_nul_does_not_block_the_rest_of_the_export(tmp_path):
    # The writer now refuses text holding NUL (VaultFiles._check_text raises UsageError), but the
    # transcript path neither cleans a message's text nor catches the refusal per session: the
    # import stops at that conversation, every later one is never imported (on every retry), and
    # the ones written before it are reported as nothing ("failed", raw=()). Before the change the
    # export imported (that one note was then skipped as binary). A "\u0000" in an export's JSON
    # (pasted log output, a tool result of a binary file) is ordinary.
    root = write_vault(tmp_path / "vault", {"a/Alpha.md": "# Alpha\n\nAlpha text.\n"})
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([_conv("good-1", "fine zebracorn"), _conv("bad-2", "x\u0000y"),
                                  _conv("good-3", "also fine")]), encoding="utf-8")
    vault = open_vault(root, embedder="fake")
    item = vault.ingest([export], kind="transcript").items[0]
    written = sorted(p.name for p in (root / "raw" / "transcripts").iterdir())
    assert any("good-3" in name for name in written), (item.status, item.message, written)
    assert len(item.raw) == len(written), (item.raw, written)
