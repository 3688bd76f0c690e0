"""Issue 52, step 3: a cross-script question is not ranked by the few words BM25 can match
(rankers.lexical_reach), and a page about the question as a whole gains on a long page with one
section near its wording (rerank.PageCentroid)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from wikimem.api import open_vault
from wikimem.embed import EmbedderIdentity, normalise
from wikimem.search import rankers, rerank, tuning
from wikimem.search.candidates import Candidate


class KeywordEmbedder:
    """Each dimension counts the words of one topic (either language), weighted; the last is
    something every text shares. The test decides how near each text is to each question."""

    def __init__(self, topics: dict[str, tuple[tuple[str, float], ...]]):
        self.topics = list(topics.values())
        self.identity = EmbedderIdentity("fake", "keyword-test", "1", len(self.topics) + 1)

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.identity.dim, dtype=np.float32)
        low = text.lower()
        for i, words in enumerate(self.topics):
            vec[i] = sum(weight * low.count(word) for word, weight in words)
        vec[-1] = 0.1
        return vec

    def embed_passages(self, texts):
        if not texts:
            return np.zeros((0, self.identity.dim), np.float32)
        return normalise(np.stack([self._vector(t) for t in texts]))

    def embed_query(self, text):
        return normalise(self._vector(text))[0]


def _open(make_vault, pages, embedder):
    v = open_vault(make_vault(pages), embedder="fake")
    v.cache._embedder = embedder
    v.index()
    return v


# -- how much of the query the lexical side can match -------------------------------------------

NPM_PAGES = {
    "Config.md": "# Config\n\nnpm config sets npm options for a package: npm reads each npm package setting "
                 "from npm files, and npm can remove a package setting again.\n",
    "Uninstall.md": "# Uninstall\n\nRemove a package from the project folder and from its manifest, and "
                    "forget the package in the lock file too.\n",
    "Publish.md": "# Publish\n\nUpload a new version to the registry so that others can download it and "
                  "use it in their own projects.\n",
}
NPM_TOPICS = {
    "uninstall": (("remove", 1.0), ("卸载", 1.0)),
    "package": (("package", 1.0), ("包", 1.0)),
    "config": (("options", 1.0),),
    "publish": (("upload", 1.0), ("registry", 1.0)),
}


def test_lexical_reach_is_the_share_of_the_query_the_index_holds(make_vault):
    v = _open(make_vault, NPM_PAGES, KeywordEmbedder(NPM_TOPICS))
    try:
        assert rankers.lexical_reach(v.cache, "remove a package from the project") == pytest.approx(1.0)
        # "npm" (3 letters) is held; 卸载 and 包 (3 Han characters, 5 letters each) are not
        assert rankers.lexical_reach(v.cache, "如何用 npm 卸载包") < 0.2
        assert rankers.lexical_reach(v.cache, "npm") == pytest.approx(1.0)
    finally:
        v.close()


def test_lexical_reach_is_whole_in_a_vault_that_holds_the_questions_script(make_vault):
    pages = dict(NPM_PAGES, **{"卸载.md": "# 卸载\n\n如何用 npm 卸载包：从项目文件夹和清单里删除这个包，锁文件里也一样。\n"})
    v = _open(make_vault, pages, KeywordEmbedder(NPM_TOPICS))
    try:
        assert rankers.lexical_reach(v.cache, "如何用 npm 卸载包") == pytest.approx(1.0)
    finally:
        v.close()


def test_a_cross_script_question_is_not_ranked_by_its_one_latin_word(make_vault, monkeypatch):
    """A Chinese question about English pages: BM25 sees only "npm", and the page that says it
    most ranked first, though by meaning the Uninstall page answers it (the issue's Chinese
    questions about npm's manual). With the lexical share scaled by what it could match, the page
    nearest in meaning is first."""
    v = _open(make_vault, NPM_PAGES, KeywordEmbedder(NPM_TOPICS))
    try:
        question = "如何用 npm 卸载包"
        lexical = [h.path for h in v.search(question, limit=3, mode="lexical").hits]
        assert lexical[0] == "Config.md"
        assert [h.path for h in v.search(question, limit=3, mode="vector").hits][0] == "Uninstall.md"
        assert [h.path for h in v.search(question, limit=3).hits][0] == "Uninstall.md"
        # an English question about the same pages is ranked as without the rule: every word is held
        english = [(h.path, h.score) for h in v.search("remove npm package options", limit=3).hits]
        monkeypatch.setattr(tuning, "REACH_MIN", 1.0)
        assert [(h.path, h.score) for h in v.search("remove npm package options", limit=3).hits] == english
        assert [h.path for h in v.search(question, limit=3).hits][0] == "Config.md"  # the rule off: as before
    finally:
        v.close()


# -- the page centroid -------------------------------------------------------------------------

FILLER = " The manual says more about it, with examples of its use in a project." * 4  # pages of several chunks


def _sections(title: str, sections: dict[str, str]) -> str:
    return f"# {title}\n\n" + "".join(f"## {h}\n\n{text}{FILLER}\n\n" for h, text in sections.items())


REFERENCE = _sections("Package reference", {
    "deprecate": "The deprecate field deprecates a version: each version it names is deprecated.",
    "bin": "The bin field maps command names to local files to install on the path.",
    "files": "The files field lists what is included when the package is packed.",
    "engines": "The engines field names the node versions the package works on.",
    "os": "The os field names the operating systems the package runs on."})
FOCUSED = _sections("Retire a release", {
    "Synopsis": "Deprecate a release version, with a message.",
    "Description": "Users who install a deprecated version get a warning.",
    "Undo": "An empty message lifts the deprecation of that version."})
OTHER = _sections("Search", {"Synopsis": "Find packages in the registry by name, keyword or author.",
                             "Output": "Print what matches, one package a line."})
CENTROID_TOPICS = {
    "deprecate": (("deprecat", 1.0), ("warn", 0.5)),
    "field": (("field", 0.7), ("version", 0.5)),
    "bin": (("bin", 1.0), ("command", 1.0)),
    "files": (("files", 1.0), ("packed", 1.0)),
    "engines": (("engines", 1.0), ("node", 1.0)),
    "os": (("operating", 1.0), ("os", 1.0)),
    "search": (("find", 1.0), ("keyword", 1.0)),
    "message": (("message", 0.8), ("users", 0.5)),
}


def _candidate(cid, path, fused, **kw):
    return Candidate(cid, path, fused=fused, bm25_rank=kw.pop("bm25_rank", 1), vector_rank=1, **kw)


def _facts(similar):
    return SimpleNamespace(mode="hybrid", page_similarity=similar)


def test_a_page_whose_centroid_is_nearer_gains_on_a_long_page_with_one_near_section(monkeypatch):
    """The issue's "how do I deprecate a published version?": the long page's one section nearest
    in wording led; the page about the question as a whole gains more and passes it."""
    monkeypatch.setattr(rerank, "CENTROID_WEIGHT", 1.0)
    monkeypatch.setattr(rerank, "CENTROID_PAGES", 3)
    found = {"a": _candidate("a", "reference.md", 1.9), "a2": _candidate("a2", "reference.md", 0.4),
             "b": _candidate("b", "deprecate.md", 1.6), "c": _candidate("c", "search.md", 1.0),
             "d": _candidate("d", "far.md", 0.2)}
    asked = []

    def similar(paths):
        asked.append(list(paths))
        table = {"reference.md": 0.80, "deprecate.md": 0.90, "search.md": 0.70, "far.md": 0.99}
        return {p: (table[p], 3) for p in paths}
    step = rerank.PageCentroid()
    assert step.applies(_facts(similar))
    out = step.apply(found, _facts(similar))
    assert asked == [["reference.md", "deprecate.md", "search.md"]]  # the best CENTROID_PAGES pages only
    assert sorted(out, key=lambda cid: -out[cid].fused)[0] == "b"
    # shares 0.5 / 1 / 0 over the three pages, less their mean (0.5)
    assert out["b"].centroid == pytest.approx(0.5) and out["c"].centroid == pytest.approx(-0.5)
    assert out["a"].centroid == 0.0 and out["a2"].centroid == 0.0
    assert out["d"].centroid == 0.0 and out["d"].fused == pytest.approx(0.2)  # beyond the pages asked
    assert "centroid" in out["b"].steps and "centroid" not in out["d"].steps


def test_the_page_centroid_leaves_turns_lexical_mode_and_a_lone_page_alone(monkeypatch):
    monkeypatch.setattr(rerank, "CENTROID_WEIGHT", 1.0)
    step = rerank.PageCentroid()
    assert not step.applies(SimpleNamespace(mode="lexical", page_similarity=lambda p: {}))
    assert not step.applies(SimpleNamespace(mode="hybrid", page_similarity=None))
    turn = _candidate("t", "session.md", 1.0, speakers=("Ann",))
    note = _candidate("n", "note.md", 0.5)
    out = step.apply({"t": turn, "n": note}, _facts(lambda paths: {p: (0.5, 3) for p in paths}))
    assert out["t"].fused == 1.0 and out["n"].fused == 0.5  # one page of notes: nothing to compare
    monkeypatch.setattr(rerank, "CENTROID_WEIGHT", 0.0)
    assert not step.applies(_facts(lambda paths: {}))


def test_the_page_centroid_stays_out_when_the_candidates_are_in_two_scripts(monkeypatch):
    """A page and its translation: the centroid's language residue is not topic (examples/ fell)."""
    monkeypatch.setattr(rerank, "CENTROID_WEIGHT", 1.0)
    found = {"a": _candidate("a", "en/curl.md", 1.0, foreign=True), "b": _candidate("b", "zh/curl.md", 0.9),
             "c": _candidate("c", "zh/wget.md", 0.5)}
    out = rerank.PageCentroid().apply(found, _facts(lambda paths: {p: (float(len(p)), 3) for p in paths}))
    assert [out[c].fused for c in "abc"] == [1.0, 0.9, 0.5] and not any(out[c].steps for c in "abc")
    found = {"a": _candidate("a", "en/curl.md", 1.0, foreign=True), "c": _candidate("c", "en/wget.md", 0.5,
                                                                                      foreign=True)}
    out = rerank.PageCentroid().apply(found, _facts(lambda paths: {"en/curl.md": (0.7, 2), "en/wget.md": (0.8, 2)}))
    assert out["c"].centroid == pytest.approx(0.5)  # all in another script (a Chinese question, English notes)


def test_a_search_ranks_the_page_about_the_question_above_a_long_page_with_one_near_section(make_vault,
                                                                                             monkeypatch):
    v = _open(make_vault, {"Package reference.md": REFERENCE, "Retire a release.md": FOCUSED, "Search.md": OTHER},
              KeywordEmbedder(CENTROID_TOPICS))
    try:
        query = "how do I deprecate a version"
        monkeypatch.setattr(rerank, "CENTROID_WEIGHT", 0.0)
        assert [h.path for h in v.search(query, limit=3).hits][:2] == ["Package reference.md", "Retire a release.md"]
        monkeypatch.setattr(rerank, "CENTROID_WEIGHT", 1.5)
        hits = v.search(query, limit=3).hits
        assert [h.path for h in hits][:2] == ["Retire a release.md", "Package reference.md"]
        assert "centroid" in hits[0].steps and hits[0].components["centroid"] > hits[1].components["centroid"]
        assert hits[2].path == "Search.md" and hits[2].components["centroid"] < 0
    finally:
        v.close()


def test_the_page_centroid_is_the_mean_of_its_chunks_unit_vectors(make_vault):
    v = _open(make_vault, {"Package reference.md": REFERENCE, "Retire a release.md": FOCUSED, "Search.md": OTHER},
              KeywordEmbedder(CENTROID_TOPICS))
    try:
        embedder = v.cache.embedder()
        index = v.cache.vector_store.load(embedder.identity.dim, v.cache.meta())
        q = embedder.embed_query("engines")
        sims = rerank.page_similarity(v.cache, index, q, None)(["Package reference.md", "Retire a release.md", "gone.md"])
        assert set(sims) == {"Package reference.md", "Retire a release.md"}
        ids = v.cache.manifest.chunk_ids_of_page("Package reference.md")
        rows = index.vector_rows(list(v.cache.manifest.vids_by_id(ids).values()))
        mean = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).mean(axis=0)
        assert sims["Package reference.md"][0] == pytest.approx(float(mean @ q) / float(np.linalg.norm(mean)), abs=1e-5)
        assert sims["Package reference.md"][1] == len(ids) == 5
    finally:
        v.close()
