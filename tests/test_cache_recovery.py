"""The cache recovers from damage and concurrency: a folder where the vector index belongs, foreign or
wrongly shaped manifest meta, vector rows of the wrong length, the cache deleted under a live vault,
a rebuild killed before its swap, a reader during a rebuild, a process holding an index from before
an identical rebuild. Each "Was:" says what happened before the fix."""
from __future__ import annotations

import logging
import shutil
import sqlite3

import pytest

from conftest import write_vault
from wikimem.api import open_vault
from wikimem.stores.local.cachedir import _file_checksum

from support_built_vault import _results, built  # noqa: F401, F811 - built is the shared fixture

pytestmark = pytest.mark.adversarial


def _unlink_sqlite(path):
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = type(path)(str(path) + suffix)
        if p.exists():
            p.unlink()


# -- foreign, damaged or vanished cache files ---------------------------------------------------------
@pytest.mark.local_store
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


@pytest.mark.local_store
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


@pytest.mark.local_store
@pytest.mark.parametrize("blob_sql", ["substr(vec, 1, 7)", "substr(vec, 1, 16)"], ids=["ragged", "wrong_dim"])
def test_vector_cache_rows_of_the_wrong_length_are_re_embedded(built, blob_sql):
    # Was: `index` (even `index --rebuild`) raised ValueError "buffer size must be a multiple of element
    # size" from FaissVectors.cached (np.frombuffer on a 7-byte blob), or a FAISS/numpy shape error
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


# -- interrupted and concurrent rebuilds -----------------------------------------------------------------
_KILLED_REBUILD = r"""
import os, signal, sys
from wikimem.api import open_vault
from wikimem.stores.local import cachedir as store
store.CacheDir.commit_replacement = lambda self: os.kill(os.getpid(), signal.SIGKILL)  # killed before the swap
open_vault(sys.argv[1], embedder="fake").index(rebuild=True)
"""


@pytest.mark.local_store
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


@pytest.mark.local_store
def test_a_reader_during_a_rebuild_keeps_the_last_committed_vectors(built, monkeypatch):
    # Was: `index --rebuild` writes its new manifest beside the live one but overwrites vectors.faiss in
    # place (sync_vectors -> save_index) before the swap, so a search in another process between the
    # two was told "the vector index is damaged; answering from the lexical side" (degraded
    # vectors_damaged) and ranked differently, although nothing had changed and nothing was committed;
    # a rebuild killed in that window leaves the live cache without vectors until the next index.
    root, expected = built
    from wikimem.stores.local import cachedir as store
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


def _notes(word: str) -> dict[str, str]:
    return {f"n/Note{i}.md": f"# Note {i}\n\n" + "\n\n".join(
        f"{word} paragraph {j} of note {i} on topic {i * 7 + j} with words." for j in range(6)) + "\n"
        for i in range(30)}


@pytest.mark.local_store
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
    assert b.cache.vector_store.adopted().path == b.cache.faiss_path


def test_a_cache_write_after_the_vault_folder_was_deleted_brings_nothing_back(make_vault):
    """``rm -rf vault`` beside an open vault (a watcher, an MCP server): the next cache write says
    the folder is gone instead of making ``vault/.wikimem`` (and so ``vault/``) again."""
    from wikimem.errors import VaultError
    root = make_vault({"a.md": "# A\n\nhello\n"})
    vault = open_vault(root, embedder="fake")
    vault.index()
    shutil.rmtree(root)
    with pytest.raises(VaultError, match="is gone"):
        vault.index()
    assert not root.exists()
    vault.close()
