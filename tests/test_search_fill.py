"""Issue 52: hybrid fusion scores every candidate on both sides. A chunk one ranker did not list got
0 from it, which on the lexical side is a cliff (BM25's scores are flat on pages that share their
words: its 50th candidate had ~half the best's share, the 51st none), so English hybrid ranked below
vector-only on the documentation set (benchmarks/README.md "Hybrid below vector-only")."""
from __future__ import annotations

import pytest

from wikimem.api import open_vault
from wikimem.config import Settings
from wikimem.search import fusion
from wikimem.search.rankers import Nearest

PAGES = {f"{name}.md": f"# {name}\n\n{text}\n" for name, text in {
    "Prune": "Remove extraneous packages that are not listed as dependencies.",
    "Token": "Create and revoke the tokens that authenticate you with the registry.",
    "Scripts": "Lifecycle scripts run before and after install, in a fixed order.",
    "Uninstall": "Remove a package from the dependencies and from the install folder.",
    "Cache": "The cache keeps downloaded tarballs; clean it when the disk fills up.",
}.items()}


@pytest.fixture
def vault(make_vault):
    v = open_vault(make_vault(PAGES), embedder="fake")
    v.index()
    yield v
    v.close()


def _ids(v) -> dict[str, str]:
    """Page name -> its (only) chunk's id."""
    return {path[:-3]: v.ctx.cache.manifest.chunk_ids_of_page(path)[0] for path in PAGES}


def _fused(v, settings, **lists):
    found = fusion.candidates(v.ctx, "remove packages", settings=settings, mode="hybrid", **lists)
    return {c.path[:-3]: c for c in found.values()}


def test_a_vector_candidate_below_bm25s_list_gets_its_own_bm25_score_not_zero(vault):
    """Prune is the vector side's first and BM25's third; with BM25's list cut at two it got 0 from
    BM25 and tied Uninstall, which both sides listed; scored by BM25 it comes first."""
    i = _ids(vault)
    lists = dict(lexical=[(i["Uninstall"], 10.0), (i["Token"], 9.0)],
                 vector=[(i["Prune"], 0.9), (i["Uninstall"], 0.8), (i["Cache"], 0.7)],
                 lexical_deeper=[(i["Prune"], 8.0), (i["Scripts"], 1.0)])
    c = _fused(vault, Settings(), **lists)
    assert c["Prune"].bm25 == pytest.approx(8.0) and c["Prune"].bm25_rank is None
    assert c["Prune"].filled == "bm25" and c["Prune"].components()["filled"] == "bm25"
    assert c["Prune"].fused == pytest.approx(0.8 + 1.0)
    assert c["Uninstall"].fused == pytest.approx(1.0 + 0.5)
    assert c["Prune"].fused > c["Uninstall"].fused
    assert "Scripts" not in c  # the deeper list scores candidates, it adds none
    assert c["Prune"].found_by == ("vector",)  # who listed it: unchanged
    # rank fusion has no scores to fill in: as before
    rrf = _fused(vault, Settings(fusion="rrf"), **lists)
    assert rrf["Prune"].bm25 is None and rrf["Prune"].filled is None


def test_a_chunk_only_bm25_listed_gets_its_vector_score_on_the_vector_lists_scale(vault):
    """Below the vector list's last candidate is not as good as the last: Token, far from the
    question in meaning, now loses on that side, at most one full share."""
    i = _ids(vault)
    far, near = Nearest(0.6, None, None), Nearest(0.75, None, None)
    c = _fused(vault, Settings(), lexical=[(i["Token"], 10.0), (i["Scripts"], 9.0), (i["Uninstall"], 5.0)],
               vector=[(i["Prune"], 0.9), (i["Uninstall"], 0.8), (i["Cache"], 0.7)],
               vector_more={i["Token"]: (0.6, far), i["Scripts"]: (0.0, far), i["Prune"]: (0.75, near)})
    assert c["Token"].vector == pytest.approx(0.6) and c["Token"].vector_rank is None
    assert c["Token"].vector_share == pytest.approx(-0.5) and c["Token"].filled == "vector"
    assert c["Token"].fused == pytest.approx(1.0 - 0.5)
    assert c["Scripts"].vector_share == pytest.approx(-1.0)  # bounded: as far below as the best is above
    assert c["Cache"].vector_share == pytest.approx(0.0)  # the list's own scale is unchanged
    assert c["Prune"].vector_share == pytest.approx(1.0)  # a listed candidate keeps its listed score


def test_placed_maps_scores_onto_the_lists_min_max_scale():
    ranked = [("a", 0.9), ("b", 0.8), ("c", 0.7)]
    assert fusion.placed(ranked, [0.8, 0.6, 0.1, 0.95]) == pytest.approx([0.5, -0.5, -1.0, 1.0])
    assert fusion.placed([("a", 0.5)], [0.4, 0.5]) == [0.0, 1.0]
    assert fusion.placed([], [0.4]) == [0.0]


def test_the_search_reads_bm25_deeper_than_its_candidates_and_scores_the_rest_by_vectors(make_vault, monkeypatch):
    """Wiring: a hybrid search hands fusion BM25's list beyond the candidates (the ones it matched
    but did not list) and the vector scores of the chunks only BM25 listed; with the rule off
    (``tuning.SCORE_BOTH_SIDES``), or in another mode, neither."""
    from wikimem.search import tuning
    seen = []
    real = fusion.candidates

    def spy(*args, **kwargs):
        seen.append((args, kwargs))
        return real(*args, **kwargs)
    monkeypatch.setattr(fusion, "candidates", spy)
    v = open_vault(make_vault(PAGES), embedder="fake", candidates=1)
    v.index()
    try:
        query = "remove a package from the install folder"
        matched = len(v.search(query, limit=10, mode="lexical").hits)
        assert matched >= 3
        v.search(query, limit=1)
        args, _ = seen[-1]
        lexical, deeper, more = args[2], args[10], args[11]
        assert len(lexical) == 2 and len(lexical) + len(deeper) == matched  # n = 2 x limit
        listed_by_vectors = {cid for cid, _ in args[3]}
        assert set(more) == {cid for cid, _ in lexical} - listed_by_vectors
        monkeypatch.setattr(tuning, "SCORE_BOTH_SIDES", False)
        v.search(query, limit=1)
        args, _ = seen[-1]
        assert len(args[2]) == 2 and not args[10] and not args[11]
    finally:
        v.close()
