"""Index and search through the public API with the deterministic fake embedder."""

import pytest

from wikimem.api import open_vault
from wikimem.errors import UsageError

NOTES = {
    "concepts/Alpha.md": "---\ntags: [greek]\nupdated: 2026-01-05\n---\n# Alpha\n\nAlpha is the first letter. See [[Beta]].\n",
    "concepts/Beta.md": "---\ntags: [greek, second]\nupdated: 2026-03-01\n---\n# Beta\n\nBeta follows alpha and links [[Gamma]].\n",
    "entities/Gamma.md": "# Gamma\n\nGamma rays are electromagnetic radiation. [[Alpha]] [[Beta]]\n",
    "concepts/Old Alpha.md": "---\nstatus: superseded\n---\n# Old Alpha\n\nAlpha was once thought to be the last letter.\n",
    "raw/articles/src.md": "---\ntype: source\n---\n# Source\n\nA source about letters and radiation.\n",
}


@pytest.fixture
def vault(make_vault):
    v = open_vault(make_vault(NOTES), embedder="fake")
    v.index()
    return v


def test_hybrid_hits_carry_everything(vault):
    result = vault.search("gamma radiation")
    top = result.hits[0]
    assert top.path == "entities/Gamma.md" and top.title == "Gamma" and top.heading_path == ("Gamma",)
    assert "electromagnetic" in top.text and top.found_by[0] in ("lexical", "vector")
    assert set(top.components) == {"bm25_rank", "bm25", "vector_rank", "vector", "vector_whole", "vector_passage",
                                   "fused", "graph", "speaker", "context"}
    assert top.uri == "obsidian://open?vault=vault&file=entities%2FGamma"
    assert result.degraded == () and result.coverage == 1.0
    assert len({h.path for h in result.hits}) == len(result.hits)  # one hit per page


def test_modes(vault):
    lexical = vault.search("electromagnetic", mode="lexical")
    assert lexical.hits[0].components["vector_rank"] is None and lexical.hits[0].found_by == ("lexical",)
    vector = vault.search("electromagnetic", mode="vector")
    assert all(h.components["bm25_rank"] is None for h in vector.hits)
    with pytest.raises(UsageError):
        vault.search("x", mode="psychic")
    with pytest.raises(UsageError):
        vault.search("   ")
    with pytest.raises(UsageError):
        vault.search("x", since="yesterday")


def test_filters(vault):
    assert {h.path for h in vault.search("letter alpha", folder="entities")} == {"entities/Gamma.md"}
    assert {h.type for h in vault.search("letter", type="source")} == {"source"}
    assert {h.path for h in vault.search("letter", tags=["second"])} == {"concepts/Beta.md"}
    assert {h.path for h in vault.search("letter alpha", since="2026-02-01")} == {"concepts/Beta.md"}
    assert {h.path for h in vault.search("letter alpha", until="2026-02-01")} == {"concepts/Alpha.md"}


def test_superseded_hidden_unless_asked(vault):
    assert "concepts/Old Alpha.md" not in {h.path for h in vault.search("last letter", limit=10)}
    assert "concepts/Old Alpha.md" in {h.path for h in vault.search("last letter", include_superseded=True)}


def test_incremental_build_touches_only_changes(vault):
    again = vault.index()
    assert (again.added, again.changed, again.removed, again.embedded_now) == (0, 0, 0, 0)
    def texts():  # embed hash -> owning page, for chunks and (held) passages
        db = vault.cache.db
        out = dict(db.execute("SELECT embed_hash, path FROM chunks"))
        out.update(db.execute("SELECT p.embed_hash, c.path FROM passages p JOIN chunks c ON c.vid = p.vid"))
        return out
    before = texts()
    path = vault.root / "concepts/Alpha.md"
    path.write_text(path.read_text() + "\nA new paragraph about omega.\n")
    (vault.root / "entities/Gamma.md").unlink()
    report = vault.index()
    new = {h: page for h, page in texts().items() if h not in before}
    # the edited chunk and its new passages are embedded, nothing else
    assert set(new.values()) == {"concepts/Alpha.md"} and len(new) >= 2
    assert (report.changed, report.removed, report.embedded_now) == (1, 1, len(new))
    assert "entities/Gamma.md" not in {h.path for h in vault.search("gamma radiation")}
    assert vault.search("omega", mode="lexical").hits[0].path == "concepts/Alpha.md"


def test_rename_reuses_vectors(vault):
    (vault.root / "concepts/Beta.md").rename(vault.root / "concepts/Beta2.md")
    report = vault.index()
    assert report.added == 1 and report.removed == 1
    # the title is the H1, so the embedded text is unchanged: nothing is re-embedded
    assert report.embedded_now == 0 and report.coverage == 1.0


def test_lexical_only_and_partial_vectors_are_reported(make_vault):
    v = open_vault(make_vault(NOTES, "a"), embedder="none")
    v.index()
    result = v.search("gamma")
    assert result.hits and "vectors_unavailable" in result.degraded
    p = open_vault(make_vault(NOTES, "b"), embedder="fake")
    p.index(embed=False)
    partial = p.search("gamma")
    assert partial.hits and "vectors_partial" in partial.degraded and partial.coverage == 0.0
    assert p.status()["degraded"] == ["vectors_partial"]


def test_search_builds_a_missing_cache(make_vault):
    v = open_vault(make_vault(NOTES), embedder="fake")
    result = v.search("gamma")
    assert result.hits and any("built the index first" in n for n in result.notices)
    assert "vectors_partial" in result.degraded  # search never embeds the whole vault itself


def test_status_reports_stale_files(vault):
    (vault.root / "concepts/New.md").write_text("# New\n")
    info = vault.status()
    assert info["pages"] == 5 and info["chunks"] >= 5 and info["stale_files"] == ["concepts/New.md"]
    assert info["embedder"].startswith("fake:") and info["vector_coverage"] == 1.0


def test_bad_files_do_not_stop_the_build(make_vault):
    files = dict(NOTES)
    files["bad.md"] = b"\xff\xfe\x00binary"
    files["latin.md"] = "caf\xe9".encode("latin-1")
    files["yaml.md"] = "---\ntitle: [x\n---\nbody words here\n"
    v = open_vault(make_vault(files), embedder="fake")
    report = v.index()
    assert {s["path"] for s in report.skipped} == {"bad.md", "latin.md"}
    assert v.search("body words", mode="lexical").hits[0].path == "yaml.md"


def test_changed_embedder_rebuilds_vectors_only(vault, monkeypatch):
    from wikimem.embed import fake
    monkeypatch.setattr(fake.FakeEmbedder, "__init__", lambda self, dim=32: (
        setattr(self, "identity", fake.EmbedderIdentity("fake", "hash-trigram", "2", dim)), setattr(self, "calls", 0))[0])
    v2 = open_vault(vault.root, embedder="fake")
    report = v2.index()
    assert any("embedder changed" in n for n in report.notices)
    assert report.changed == 0 and report.embedded_now == report.chunks and report.coverage == 1.0


def test_page_graph_has_typed_weighted_edges(make_vault):
    files = dict(NOTES)
    files["concepts/New Alpha.md"] = "---\nsupersedes: \"[[Old Alpha]]\"\ntags: [greek]\n---\n# New Alpha\n\n![[Beta]] and [[Beta]]\n"
    v = open_vault(make_vault(files), embedder="none")
    v.index()
    g = v.cache.graph()
    name = g.vs["name"]
    edges = {(name[e.source], name[e.target], e["type"]): e["weight"] for e in g.es}
    assert edges[("concepts/New Alpha.md", "concepts/Old Alpha.md", "supersedes")] == 2.0
    assert edges[("concepts/New Alpha.md", "concepts/Beta.md", "embeds")] == 1.0
    assert edges[("concepts/New Alpha.md", "concepts/Beta.md", "links_to")] == 1.0
    assert edges[("entities/Gamma.md", "concepts/Alpha.md", "links_to")] == 1.0
    assert edges[("concepts/New Alpha.md", "#greek", "tagged")] == 0.5
    assert set(g.vs.select(kind="tag")["name"]) == {"#greek", "#second"}


def test_lexical_search_matches_other_inflections(make_vault):
    v = open_vault(make_vault({"notes/Art.md": "# Art\n\nShe paints sunsets and went camping with her kids.\n",
                               "notes/Other.md": "# Other\n\nNothing about that here.\n"}), embedder="fake")
    v.index()
    for query in ("painting", "camped", "kid", "PAINTED sunset"):
        assert [h.path for h in v.search(query, mode="lexical")] == ["notes/Art.md"], query


def test_analyzer_stems_english_only():
    from wikimem.stores.analysis import tokens
    assert tokens("The kids were painting") == ["kid", "paint"]
    assert tokens("Zürich naïve 2026 中文分词") == ["zürich", "naïve", "2026", "中文", "分词"]


def test_fusion_shares():
    from wikimem.config import Settings
    from wikimem.search.fusion import fusion_scores as _fusion_scores
    ranked = [("a", 12.0), ("b", 9.0), ("c", 4.0)]
    assert _fusion_scores(ranked, Settings(fusion="convex")) == [1.0, 0.625, 0.0]  # min-max over the list
    assert _fusion_scores(ranked, Settings(fusion="convex"), floor=0.0) == [1.0, 0.75, 4 / 12]  # BM25: score / best
    assert _fusion_scores([("a", 0.8)], Settings(fusion="convex")) == [1.0]  # a lone candidate is the best
    assert _fusion_scores([("a", 3.0), ("b", 3.0)], Settings(fusion="convex")) == [1.0, 1.0]
    assert _fusion_scores([], Settings(fusion="convex")) == []
    assert _fusion_scores(ranked, Settings(fusion="rrf", rrf_k=60)) == [1 / 61, 1 / 62, 1 / 63]


def test_both_fusions_rank_the_obvious_answer_first(make_vault):
    root = make_vault({"notes/Leiden.md": "# Leiden\n\nThe Leiden algorithm guarantees connected communities.\n",
                       "notes/Cats.md": "# Cats\n\nCats sleep most of the day.\n",
                       "notes/Dogs.md": "# Dogs\n\nDogs like walks and fetch.\n"})
    for fusion in ("convex", "rrf"):
        vault = open_vault(root, embedder="fake", fusion=fusion)
        hits = vault.search("Leiden connected communities").hits
        assert hits[0].path == "notes/Leiden.md" and hits[0].components["fused"] > 0
        vault.close()


def test_unknown_fusion_is_a_config_error(make_vault):
    from wikimem.errors import ConfigError
    with pytest.raises(ConfigError, match="fusion"):
        open_vault(make_vault({"a.md": "# A\n"}), fusion="borda")


def test_vector_search_is_exact_and_leaves_the_thread_setting_alone(tmp_path):
    import faiss
    import numpy as np

    from wikimem.stores.local.vectors import VectorIndex
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((300, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = VectorIndex(tmp_path / "v.faiss", 8)
    index.add(list(range(1000, 1300)), vectors)
    before = faiss.omp_get_max_threads()
    hits = index.search(vectors[7], 5)
    assert faiss.omp_get_max_threads() == before  # search runs on one thread, then restores the setting
    expected = np.argsort(-(vectors @ vectors[7]))[:5] + 1000
    assert [i for i, _ in hits] == list(expected) and hits[0] == (1007, pytest.approx(1.0, abs=1e-5))
    assert [i for i, _ in index.search(vectors[7], 3, allowed=[1001, 1002])] == sorted(
        [1001, 1002], key=lambda i: -float(vectors[i - 1000] @ vectors[7]))


def test_a_few_pages_with_vectors_do_not_outrank_the_words_of_the_query(make_vault):
    """While a vault's vectors are still being embedded, the vector side sees only the pages
    embedded so far and scales its scores over them: the nearest of the few got a full share,
    level with the best keyword match, whatever it was about. Its weight is now its coverage."""
    first = {f"notes/n{i:02d}.md": f"# Note {i}\n\nA note about topic {i} and other matters.\n" for i in range(6)}
    first["zh/压缩.md"] = "# 压缩\n\n把文件夹压缩成一个归档文件。\n"  # another script: its lexical share is imputed
    root = make_vault(first)
    v = open_vault(root, embedder="fake")
    v.index()  # these six have vectors
    for i in range(6, 40):
        (root / "notes" / f"n{i:02d}.md").write_text(f"# Note {i}\n\nA note about topic {i} and other matters.\n")
    (root / "notes" / "archive.md").write_text("# Archive\n\nCompress a folder into an archive with tar.\n")
    (root / "notes" / "tar.md").write_text("# Tar\n\nThe tar tool writes an archive.\n")
    v.index(embed=False)  # the rest wait for theirs
    result = v.search("compress a folder into an archive", limit=10)
    assert "vectors_partial" in result.degraded and 0 < result.coverage < 0.3
    ranked = [h.path for h in result.hits]
    assert ranked[:2] == ["notes/archive.md", "notes/tar.md"]
    lexical = [h.path for h in v.search("compress a folder into an archive", mode="lexical", limit=50).hits]
    vector_only = [p for p in ranked if p not in lexical]
    assert vector_only and all(ranked.index(p) < ranked.index(q) for p in lexical if p in ranked for q in vector_only)


def test_a_result_carries_the_query_as_typed(vault):
    """`search --json` printed the vector ranker's (id, score) pairs as "query": a local variable
    of the hybrid path reused the name of the query's."""
    for mode in ("hybrid", "vector", "lexical"):
        assert vault.search("gamma rays", mode=mode).query == "gamma rays"


def test_a_search_without_a_watcher_says_what_changed_on_disk(make_vault):
    """Issue 47 item 13: a note deleted since the last build was returned (exit 0, no word)."""
    from typer.testing import CliRunner

    from wikimem.cli import app
    root = make_vault({"SCHEMA.md": "# S\n", "alpha.md": "# A\n\nzebra crossing\n", "b.md": "# B\n\nzebra stripes\n"})
    v = open_vault(root, embedder="fake")
    v.index()
    (root / "alpha.md").unlink()
    (root / "b.md").write_text("# B\n\nzebra stripes, and a longer text now\n")
    for mode in ("hybrid", "lexical"):
        result = v.search("zebra", mode=mode)
        assert [h.path for h in result.hits] == ["b.md"], mode
        assert any("alpha.md was deleted since the last build" in n for n in result.notices)
        assert any("b.md was changed since the last build" in n for n in result.notices)
    assert [h.path for h in v.search("path:alpha").hits] == []  # a listing too
    out = CliRunner().invoke(app, ["search", "zebra", "--vault", str(root)], env={"WIKIMEM_EMBEDDER": "fake"})
    assert "alpha.md was deleted since the last build" in out.output and "alpha.md:" not in out.output
