"""Review of session 8's store changes (HeldStore, one vector index file per manifest, held
connections re-checked, the writer's NUL refusal): each test here failed when it was written."""
from __future__ import annotations

import json
import logging

from wikimem.api import open_vault
from wikimem.index.store import _file_checksum

from conftest import write_vault


def _notes(word: str) -> dict[str, str]:
    return {f"n/Note{i}.md": f"# Note {i}\n\n" + "\n\n".join(
        f"{word} paragraph {j} of note {i} on topic {i * 7 + j} with words." for j in range(6)) + "\n"
        for i in range(30)}


def test_a_vault_holding_an_index_from_before_an_identical_rebuild_saves_it_where_the_manifest_looks(tmp_path, caplog):
    # Process B (a watcher or MCP server) has the vector index in memory, loaded from
    # vectors.<X>.faiss. Process A runs `index --rebuild` with nothing changed: the index rebuilt from
    # the vector cache is byte-identical (same checksum, same id signature), so B's Cache.vectors
    # keeps its object, whose .path still names vectors.<X>.faiss, which A's swap deleted. B's next
    # build that changes more than a delta's worth of ids saves the whole index to vectors.<X>.faiss
    # (an orphan) while save_index records vectors.<Y>.faiss (A's untouched file) with B's checksum:
    # every other process is then told "vector index not usable (checksum does not match)", searches
    # degraded, and incremental builds (a watcher's) never repair it (sync_vectors finds the id
    # signature complete and returns without loading the file).
    root = write_vault(tmp_path / "vault", _notes("First"))
    a = open_vault(root, embedder="fake")
    a.index()
    a.index(rebuild=True)  # the file is now what a rebuild from the vector cache writes
    b = open_vault(root, embedder="fake")
    assert b.search("topic").degraded == ()  # B holds the index in memory
    a.index(rebuild=True)  # identical bytes: same checksum, same id signature
    for rel, text in _notes("Edited").items():  # ~200 ids change: a full save, not a delta
        (root / rel).write_text(text, encoding="utf-8")
    b.index()
    c = open_vault(root, embedder="fake")
    with caplog.at_level(logging.WARNING):
        assert c.search("Edited topic").degraded == (), caplog.text
    recorded = b.cache.meta()["artifacts"]["faiss"]
    assert _file_checksum(b.cache.faiss_path) == recorded["checksum"]
    assert b.cache.adopted_vectors().path == b.cache.faiss_path


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


def test_an_attachment_an_older_version_recorded_without_a_hash_is_hashed_again(tmp_path):
    """The previous version stored sha256 "" for an attachment it could not read, and lint's raw/
    ledger "" for it; neither was ever filled in (WM506 off for that file for good)."""
    import json

    root = write_vault(tmp_path / "v", {"SCHEMA.md": "# S\n", "raw/assets/pic.png": b"\x89PNG original"})
    v = open_vault(root, embedder="fake")
    v.index()
    with v.cache.transaction() as db:  # as the previous version left it
        db.execute("UPDATE files SET sha256 = '' WHERE path = 'raw/assets/pic.png'")
    (v.cache.dir / "lint-raw-ledger.json").write_text(json.dumps({"raw/assets/pic.png": ""}), encoding="utf-8")
    v.index()
    assert dict(v.cache.db.execute("SELECT path, sha256 FROM files"))["raw/assets/pic.png"]
    v.lint(select=["WM506"])  # records the file's hash now
    (root / "raw/assets/pic.png").write_bytes(b"\x89PNG tampered")
    assert [f.code for f in v.lint(select=["WM506"]).findings] == ["WM506"]
    v.close()
