"""What the manifest says about vectors: the coverage flags (index/status.py, index/embedding.py) after
lexical-first builds, passage settings switched on or off, an empty or emptied vault; and the state
embed_pending keeps and advances by recorded id changes (69352ea), which must equal what a full
sync would give, also after another process's rebuild or passage rewrite."""
from __future__ import annotations

import pytest

from wikimem.api import open_vault
from wikimem.errors import EmbedderError
from wikimem.index import embedding
from wikimem.index.status import vector_coverage


# -- coverage flags ------------------------------------------------------------------------------
def _items(words):
    return "\n\n".join(f"- {w} thing number {i}:\n\n`cmd {w}`" for i, w in enumerate(words))


def test_lexical_first_then_embedded(make_vault):
    root = make_vault({"long.md": "# long\n\n" + _items(["apple", "pear", "plum"])})
    vault = open_vault(root, embedder="fake", embed_passages="all")
    report = vault.index(embed=False)
    assert report.coverage == 1.0  # nothing was wanted of a lexical-first build
    assert vault.status()["degraded"] == ["vectors_partial"]
    result = vault.search("plum thing")
    assert "vectors_partial" in result.degraded and result.hits
    # no vector passage yet: a hit shows the part holding the query's words, or none (issue 36)
    assert all(h.passage is None or "plum" in h.passage.lower() for h in result.hits)
    report = vault.index()
    assert report.degraded == [] and report.passages_held == report.passages_wanted == 3
    info = vault.status()
    assert info["degraded"] == [] and info["vector_coverage"] == 1.0 and info["passage_coverage"] == 1.0
    assert info["passages"] == 3
    vault.close()


def test_switching_passages_on_with_vectors_cached_embeds_only_passages(make_vault):
    root = make_vault({"long.md": "# long\n\n" + _items(["apple", "pear", "plum"])})
    vault = open_vault(root, embedder="fake", embed_passages="none")
    vault.index()
    info = vault.status()
    assert info["passage_coverage"] is None and info["degraded"] == [] and info["passages"] == 0
    vault.close()
    vault = open_vault(root, embedder="fake", embed_passages="all")
    report = vault.index()
    assert report.embedded_now == 3  # the chunks' vectors came from the cache
    info = vault.status()
    assert info["passage_coverage"] == 1.0 and info["degraded"] == [] and info["passages"] == 3
    assert vault.search("plum thing", mode="vector").hits[0].passage is not None
    vault.close()
    vault = open_vault(root, embedder="fake", embed_passages="none")  # and off again
    vault.index()
    info = vault.status()
    assert info["passage_coverage"] is None and info["degraded"] == [] and info["passages"] == 0
    assert vault.search("plum thing", mode="vector").hits[0].passage is None
    vault.close()


def _switched(make_vault, before: str, after: str):
    """A vault indexed in full under ``before``, then lexical-first under ``after`` (a watcher's build)."""
    root = make_vault({"long.md": "# long\n\n" + _items(["apple", "pear", "plum"])})
    vault = open_vault(root, embedder="fake", embed_passages=before)
    vault.index()
    vault.close()
    vault = open_vault(root, embedder="fake", embed_passages=after)
    vault.index(embed=False)
    return vault


def test_switching_passages_on_lexical_first_is_reported_partial(make_vault):
    vault = _switched(make_vault, "none", "all")
    info = vault.status()
    assert info["passages"] == 3
    try:
        assert info["passage_coverage"] == 0.0
        assert info["degraded"] in (["passages_partial"], ["vectors_partial"])
        assert vault.search("plum thing").degraded in (("passages_partial",), ("vectors_partial",))
    finally:
        vault.close()


def test_switching_passages_off_lexical_first_is_not_reported_partial(make_vault):
    vault = _switched(make_vault, "all", "none")
    try:
        info = vault.status()
        assert info["passages"] == 0
        result = vault.search("plum thing", mode="vector")
        assert result.hits and result.hits[0].passage is None
        # lexical first: the index still holds the old passages until the vectors follow, and says so
        assert result.degraded in ((), ("vectors_partial",)) and "passages_partial" not in result.degraded
        vault.embed_pending()
        info = vault.status()
        assert vault.search("plum thing", mode="vector").degraded == ()
        assert info["passage_coverage"] is None and info["degraded"] == []
    finally:
        vault.close()


@pytest.mark.adversarial
def test_an_empty_vault_has_full_coverage_and_no_passage_coverage(make_vault):
    root = make_vault({"assets/readme.txt": "not a note"})
    vault = open_vault(root, embedder="fake", embed_passages="all")
    report = vault.index()
    assert report.coverage == 1.0 and report.degraded == []
    info = vault.status()
    assert info["pages"] == 0 and info["chunks"] == 0 and info["passages"] == 0
    assert info["vector_coverage"] == 1.0 and info["passage_coverage"] is None
    assert "vectors_partial" not in info["degraded"] and "passages_partial" not in info["degraded"]
    assert vault.search("anything at all").hits == ()
    vault.close()


@pytest.mark.adversarial
def test_deleting_every_note_leaves_no_division_by_zero(make_vault):
    root = make_vault({"long.md": "# long\n\n" + _items(["apple", "pear", "plum"])})
    vault = open_vault(root, embedder="fake", embed_passages="all")
    vault.index()
    (root / "long.md").unlink()
    report = vault.index()
    assert report.degraded == [] and report.passages_wanted == 0
    info = vault.status()
    assert info["chunks"] == 0 and info["vector_coverage"] == 1.0 and info["passage_coverage"] is None
    assert info["degraded"] == []
    vault.close()


@pytest.mark.adversarial
@pytest.mark.parametrize("meta,chunks,expected", [
    ({}, 0, (1.0, None)),
    ({}, 5, (0.0, None)),
    ({"vectors_wanted": 10, "passages_wanted": 4, "vectors": 6, "passages_held": 0}, 6, (1.0, 0.0)),
    ({"vectors_wanted": 10, "passages_wanted": 4, "vectors": 7, "passages_held": 2}, 6, (5 / 6, 0.5)),
    ({"vectors_wanted": 4, "passages_wanted": 4, "vectors": 4, "passages_held": 4}, 0, (1.0, 1.0)),
    ({"vectors_wanted": 3, "passages_wanted": 0, "vectors": 9, "passages_held": 0}, 3, (1.0, None)),
])
def test_vector_coverage_edges(meta, chunks, expected):
    searched, held = vector_coverage(meta, chunks)
    assert searched == pytest.approx(expected[0])
    assert held == (None if expected[1] is None else pytest.approx(expected[1]))
    assert 0.0 <= searched <= 1.0 and (held is None or 0.0 <= held <= 1.0)


# -- embed_pending's kept state ---------------------------------------------------------------------
def _watcher_vault(make_vault, n: int = 4):
    """A vault as a watcher leaves it: built, one edit committed lexical-first, its vectors
    embedded by embed_pending (which now keeps its state, index included, when complete)."""
    root = make_vault({f"notes/n{i}.md": f"# N{i}\n\nword{i} text about fusion.\n" for i in range(n)})
    v = open_vault(root, embedder="fake")
    v.index()
    (root / "notes/n1.md").write_text("# N1\n\nchanged fusion body\n")
    v.index(paths=["notes/n1.md"], embed=False)
    v.embed_pending()
    entry = v.cache.runtime.kept_entry("pending")
    assert entry is not None and entry[1].index is not None and not entry[1].missing
    return root, v


def test_an_edit_that_changes_no_vector_id_leaves_nothing_pending(make_vault):
    """A frontmatter key nobody embeds: the build marks vectors pending (lexical first); a full
    sync finds the index complete and clears the flags. advance changes nothing, so nothing is
    saved and search reports vectors_partial for good."""
    root, v = _watcher_vault(make_vault)
    before = sorted(v.cache.db.execute("SELECT vid FROM chunks").fetchall())
    (root / "notes/n1.md").write_text("---\nstatus: draft\n---\n# N1\n\nchanged fusion body\n")
    v.index(paths=["notes/n1.md"], embed=False)
    assert sorted(v.cache.db.execute("SELECT vid FROM chunks").fetchall()) == before  # no id changed
    v.embed_pending()
    meta = v.cache.meta()
    assert not meta.get("vectors_pending") and not meta.get("passages_pending")
    assert v.search("fusion").degraded == ()


def test_deleting_the_page_whose_vectors_were_missing_leaves_nothing_pending(make_vault):
    """The only backlog is a page that is then deleted: advance drops its ids (no index change),
    the state is complete, but nothing is saved and the manifest still says vectors are pending."""
    root = make_vault({f"notes/n{i}.md": f"# N{i}\n\nword{i} text about fusion.\n" for i in range(4)})
    v = open_vault(root, embedder="fake")
    v.index()
    (root / "notes/n1.md").write_text("# N1\n\nchanged fusion body\n")
    v.index(paths=["notes/n1.md"], embed=False)
    embedder = v.cache.embedder()
    real = embedder.embed_passages

    def down(texts):
        raise EmbedderError("model down")

    embedder.embed_passages = down
    try:
        assert v.embed_pending().coverage < 1.0  # n1's vectors stay missing, the state is kept
    finally:
        embedder.embed_passages = real
    (root / "notes/n1.md").unlink()
    v.index(paths=["notes/n1.md"], embed=False)
    assert v.embed_pending().coverage == 1.0
    assert not v.cache.meta().get("vectors_pending")
    assert v.search("fusion").degraded == ()


@pytest.mark.adversarial
def test_a_rebuild_elsewhere_restarts_the_generations_and_our_old_records_must_not_bridge_them(make_vault):
    """Generation numbers restart at 0 in a replacement manifest. Another process rebuilds (its
    vectors from the vector cache: the same ids, so the same vectors_sig) and commits two
    lexical-first edits: the manifest is at generation 3 again, and this process's own record
    (2 -> 3: the note it added) forms a 'chain' from its kept generation 2. It must not be used."""
    root, v = _watcher_vault(make_vault)
    assert v.cache.meta()["generation"] == 2
    (root / "notes/n9.md").write_text("# N9\n\nbrand new tomato river note\n")
    v.index(paths=["notes/n9.md"], embed=False)  # recorded as 2 -> 3; the embedder has not run yet
    other = open_vault(root, embedder="fake")  # another process
    other.index(rebuild=True, embed=False)  # a new manifest: generation 1
    (root / "notes/n2.md").write_text("# N2\n\nrewritten graph lexical elsewhere\n")
    other.index(paths=["notes/n2.md"], embed=False)  # 2
    (root / "notes/n3.md").write_text("# N3\n\nalso rewritten weights elsewhere\n")
    other.index(paths=["notes/n3.md"], embed=False)  # 3
    other.close()
    assert v.cache.meta()["generation"] == 3
    v.embed_pending()
    state = v.cache.runtime.kept_entry("pending")[1]
    want = v.cache.manifest.wanted_ids()
    assert state.want.tolist() == want.tolist()
    held = v.cache.vectors(v.cache.embedder().identity.dim).ids().tolist()
    assert sorted(held) == want.tolist()  # n2's and n3's new chunks have vectors, their old ones are gone


@pytest.mark.adversarial
def test_a_passage_rewrite_elsewhere_that_touches_no_page_is_not_missed(make_vault):
    """Another process with another passage setting rewrites every passage row but touches no
    page, so the generation does not move: the kept (complete) state is returned as it is, and
    its wanted ids are not the manifest's."""
    root = make_vault({f"notes/n{i}.md": f"# N{i}\n\n- item one {i}\n- item two {i}\n\nword{i} fusion.\n"
                       for i in range(4)})
    v = open_vault(root, embedder="fake")
    v.index()
    (root / "notes/n1.md").write_text("# N1\n\n- changed one\n- changed two\n\nchanged fusion body\n")
    v.index(paths=["notes/n1.md"], embed=False)
    v.embed_pending()
    other = open_vault(root, embedder="fake", embed_passages="none")
    other.index(embed=False)
    other.close()
    v.embed_pending()
    state = v.cache.runtime.kept_entry("pending")[1]
    assert state.want.tolist() == v.cache.manifest.wanted_ids().tolist()


def test_the_kept_state_does_not_hold_the_hash_of_every_id_ever_missing(make_vault):
    """VectorState.hashes is 'the embed hash of each missing id'. It was dropped with the state
    once the backlog was done; now the state is kept for the life of the process, and a watcher
    that started with the whole vault as backlog keeps a hash per chunk and passage for good."""
    root = make_vault({f"notes/n{i}.md": f"# N{i}\n\n- one {i}\n- two {i}\n\nword{i} text.\n" for i in range(20)})
    v = open_vault(root, embedder="fake")
    v.index(embed=False)  # a watcher's start: the vectors follow as a backlog
    v.embed_pending()
    state = v.cache.runtime.kept_entry("pending")[1]
    assert not state.missing
    assert set(state.hashes) <= set(state.missing)
    assert not state.by_path or not any(state.by_path.values())
