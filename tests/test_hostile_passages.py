"""Hostile tests for note passages (index/passages.py), the passage shown with a hit
(search/fusion.py), the coverage flags (index/status.py, index/embedding.py) and the sorted id
sets (index/vectors.py). A test marked xfail(strict=True) pins a bug found here."""
from __future__ import annotations

import re
import sqlite3

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikimem.api import open_vault
from wikimem.index.embedding import wanted_ids
from wikimem.index.passages import blocks, passage_id, passages, sentences
from wikimem.index.status import vector_coverage
from wikimem.index.vectors import HELD_BIT, id_difference, is_held, sorted_ids
from wikimem.model import Chunk, index_clean

_WORDS = re.compile(r"\w+")
_LETTER = re.compile(r"[^\W_]")  # a letter or digit


def _chunk(text: str, title: str = "T") -> Chunk:
    return Chunk(id="d" * 16, path="t.md", title=title, heading_path=(), text=text, start=0, end=len(text))


def _check_passages(got: list[str], text: str, title: str) -> None:
    """The invariants every note passage list must keep."""
    prefix = f"{title}: "
    assert len(got) == len(set(got)), "duplicate passages"
    assert len(got) != 1, "one passage is never kept (the chunk vector is that passage)"
    source_words = set(_WORDS.findall(index_clean(text)))
    for p in got:
        assert p.startswith(prefix), p
        body = p[len(prefix):]
        assert body.strip(), f"empty passage {p!r}"
        assert "\n" not in body and "\r" not in body, p
        assert body == " ".join(body.split()), f"whitespace not collapsed in {p!r}"
        invented = set(_WORDS.findall(body)) - source_words
        assert not invented, f"words not in the note: {invented}"


# -- blocks(): hostile Markdown ------------------------------------------------------------------

def test_a_note_of_fences_only_is_one_block_and_no_passage():
    text = "```\nalpha\n```\n~~~\nbeta\n~~~\n```` \ngamma\n````\n"
    assert blocks(text) == ["``` alpha ``` ~~~ beta ~~~ ```` gamma ````"]
    assert passages(_chunk(text), "all") == []


def test_an_unclosed_fence_keeps_headings_and_blank_lines_as_code():
    text = "Intro.\n\n```python\n# not a heading\n\nx = 1\n\n## still code\n"
    assert blocks(text) == ["Intro. ```python # not a heading x = 1 ## still code"]


def test_a_longer_outer_fence_holds_a_shorter_inner_one():
    text = "````md\n```\ninner\n```\n````\nafter the fence\n\nlast"
    assert blocks(text) == ["````md ``` inner ``` ````", "after the fence", "last"]


def test_a_longer_closing_fence_closes_and_a_shorter_one_does_not():
    assert blocks("````\ncode\n```\nstill code\n`````\nafter") == ["```` code ``` still code `````", "after"]
    assert blocks("```\ncode\n`````\nafter") == ["``` code `````", "after"]


def test_a_tilde_fence_is_not_closed_by_backticks_and_vice_versa():
    assert blocks("~~~\na\n```\nb\n~~~\nc") == ["~~~ a ``` b ~~~", "c"]
    assert blocks("```\na\n~~~\nb\n```\nc") == ["``` a ~~~ b ```", "c"]


def test_a_closing_fence_with_an_info_string_does_not_close():
    assert blocks("```\na\n``` py\nb\n```\nc") == ["``` a ``` py b ```", "c"]


def test_lone_cr_mixed_endings_and_tabs():
    text = "One.\rTwo.\r\rThree.\r\n-\tfour\n#\tHeading\n\tfive"
    assert blocks(text) == ["One. Two.", "Three.", "-\tfour", "five"]
    got = passages(_chunk(text), "all")
    _check_passages(got, text, "T")
    assert got == ["T: One. Two.", "T: Three.", "T: - four", "T: five"]


def test_headings_only_give_nothing():
    text = "# One\n## Two\n###### Six\n   ### Indented three\n#\n"
    assert blocks(text) == []
    assert passages(_chunk(text), "all") == []


def test_hash_words_that_are_not_headings_are_kept():
    text = "#tag at the start\n\n####### seven hashes\n\n    # four spaces"
    assert blocks(text) == ["#tag at the start", "####### seven hashes", "# four spaces"]


def test_a_100k_character_line_is_kept_whole():
    long = "word" * 25_000
    text = f"{long}\n\nShort paragraph."
    got = passages(_chunk(text), "all")
    assert got == [f"T: {long}", "T: Short paragraph."]


def test_thousands_of_list_items_are_thousands_of_passages():
    n = 5000
    text = "Intro:\n" + "\n".join(f"- item number {i}" for i in range(n))
    got = passages(_chunk(text), "all")
    assert len(got) == n + 1
    assert got[0] == "T: Intro:" and got[-1] == f"T: - item number {n - 1}"
    _check_passages(got, text, "T")


def test_thousands_of_sentences_are_overlapping_pairs():
    n = 3000
    text = " ".join(f"Sentence {i}." for i in range(n)) + "\n\n- tail"
    got = passages(_chunk(text), "all")
    assert len(got) == (n - 1) + 1
    assert got[0] == "T: Sentence 0. Sentence 1." and got[n - 2] == f"T: Sentence {n - 2}. Sentence {n - 1}."


def test_chinese_without_spaces_and_emoji():
    text = "我喜欢猫。猫也喜欢我。我们一起玩。\n\n- 🐱 emoji item 🎉\n\n- 第二项"
    got = passages(_chunk(text, title="猫 🐱"), "all")
    _check_passages(got, text, "猫 🐱")
    assert got == ["猫 🐱: 我喜欢猫。 猫也喜欢我。", "猫 🐱: 猫也喜欢我。 我们一起玩。",
                   "猫 🐱: - 🐱 emoji item 🎉", "猫 🐱: - 第二项"]


def test_zero_width_and_rtl_characters_do_not_break_invariants():
    text = "שלום עולם. \u200fמימין לשמאל.\u200e Third one.\n\n- a\u200bb item\n\n- \u2067isolate\u2069 item"
    got = passages(_chunk(text), "all")
    _check_passages(got, text, "T")
    assert got == ["T: שלום עולם. \u200fמימין לשמאל.\u200e Third one.", "T: - a\u200bb item",
                   "T: - \u2067isolate\u2069 item"]


@pytest.mark.parametrize("title", ["Re: meeting", "C++ (v2) [draft]*?", "a.b|c\\d$^", ": leading", "Note:"])
def test_a_title_with_colons_and_metacharacters_is_the_prefix_verbatim(title):
    text = "First paragraph.\n\nSecond paragraph."
    got = passages(_chunk(text, title=title), "all")
    assert got == [f"{title}: First paragraph.", f"{title}: Second paragraph."]


_HOSTILE = st.lists(st.sampled_from(list("ab. -*`~#1)\t\r\n!?;:") + ["。", "！", "…", "é", "猫", "🐱", "\u200b",
                                                                      "\u2028", "**", " ^x", "```", "~~~", "\n\n"]),
                    max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(_HOSTILE, st.sampled_from(["T", "Re: x", "a.*b", "猫"]))
def test_passages_keep_their_invariants_on_random_markdown(text, title):
    got = passages(_chunk(text, title=title), "all")
    _check_passages(got, text, title)
    if got:  # nothing a block says is lost: every word of the blocks is in some passage
        block_words = set(_WORDS.findall(" ".join(blocks(index_clean(text)))))
        assert block_words <= set(_WORDS.findall(" ".join(got)))


def test_passage_modes_and_ids():
    text = "One.\n\nTwo.\n\nThree."
    assert passages(_chunk(text), "none") == [] and passages(_chunk(text), "transcripts") == []
    ids = [passage_id("d" * 16, i, held=True) for i in range(50)]
    assert len(set(ids)) == 50 and all(is_held(i) and HELD_BIT <= i < 2**62 for i in ids)
    assert all(not is_held(passage_id("d" * 16, i)) for i in range(50))


@pytest.mark.parametrize("rule", ["---", "***", "___", "- - -", "-", "\u200b"])
def test_a_rule_or_empty_line_is_no_passage(rule):
    text = f"First paragraph here.\n\n{rule}\n\nSecond paragraph here.\n"
    got = passages(_chunk(text), "all")
    assert all(_LETTER.search(p[len("T: "):]) for p in got), got


@pytest.mark.parametrize("text", ["真的吗？！好的。再见。", "等等……然后呢？好吧。", "えっ！？本当に。"])
def test_a_run_of_cjk_punctuation_is_not_a_sentence(text):
    got = sentences(text)
    assert all(_LETTER.search(s) for s in got), got
    assert "".join(got) == text


# -- Hit.passage end to end ----------------------------------------------------------------------

def _passage_rows(vault) -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for path, title, text in vault.cache.db.execute(
            "SELECT c.path, c.title, p.text FROM passages p JOIN chunks c ON c.vid = p.vid"):
        rows.setdefault(path, []).append(text[len(title) + 2:])
    return rows


def test_a_title_that_also_starts_a_paragraph_is_stripped_once(make_vault):
    title = "Re: C++ (v2) [draft]*"
    root = make_vault({"weird.md": f"---\ntitle: \"{title}\"\n---\n"
                                   f"{title} explains zebra crossing lights at night.\n\n"
                                   "Apples and pears grow in orchards.\n\nPlums ripen late in summer.\n"})
    vault = open_vault(root, embedder="fake", embed_passages="all")
    vault.index()
    hit = vault.search(f"{title} zebra crossing lights at night", mode="vector").hits[0]
    assert hit.title == title
    assert hit.passage == f"{title} explains zebra crossing lights at night."
    vault.close()


ZEBRA_PAGES = {
    "a.md": "# a\n\n- zebra crossing lights at night\n\n- apples grow on trees\n\n- pears are green\n",
    "b.md": "# b\n\n- unrelated cooking notes\n\n- recipes for soup\n",
}


def test_the_passage_shown_follows_edits_and_deletions(make_vault):
    root = make_vault(dict(ZEBRA_PAGES))
    vault = open_vault(root, embedder="fake", embed_passages="all")
    vault.index()
    hit = vault.search("zebra crossing lights", mode="vector").hits[0]
    assert hit.path == "a.md" and hit.passage == "- zebra crossing lights at night"
    (root / "a.md").write_text("# a\n\n- zebra crossing lights were fixed today\n\n- apples grow on trees\n\n"
                               "- kiwis are brown\n", encoding="utf-8")
    vault.index()
    hit = vault.search("zebra crossing lights", mode="vector").hits[0]
    assert hit.path == "a.md" and hit.passage == "- zebra crossing lights were fixed today"
    assert hit.passage in hit.text
    (root / "a.md").unlink()
    vault.index()
    result = vault.search("zebra crossing lights", mode="vector")
    assert all(h.path == "b.md" for h in result.hits)
    assert all(h.passage is None or h.passage in _passage_rows(vault)["b.md"] for h in result.hits)
    assert "a.md" not in _passage_rows(vault)
    vault.close()


def test_lexical_mode_and_no_passages_give_no_passage(make_vault):
    files = {"a.md": "# a\n\n- zebra crossing lights at night\n\n- apples grow on trees\n"}
    root = make_vault(files)
    vault = open_vault(root, embedder="fake", embed_passages="all")
    vault.index()
    for h in vault.search("zebra crossing", mode="lexical").hits:
        assert h.passage is None and h.components["vector_passage"] is None and h.components["vector_whole"] is None
    assert vault.search("zebra crossing", mode="hybrid").hits[0].passage == "- zebra crossing lights at night"
    vault.close()
    vault = open_vault(root, embedder="fake", embed_passages="none")
    vault.index()
    assert vault.cache.db.execute("SELECT count(*) FROM passages").fetchone()[0] == 0
    for mode in ("vector", "hybrid"):
        hits = vault.search("zebra crossing", mode=mode).hits
        assert hits and all(h.passage is None and h.components["vector_passage"] is None for h in hits)
        assert hits[0].components["vector_whole"] is not None
    vault.close()


def test_a_folder_filter_shows_passages_of_allowed_pages_only(make_vault):
    root = make_vault({
        "in/a.md": "# a\n\n- zebra crossing lights at night\n\n- apples grow on trees\n",
        "in/b.md": "# b\n\n- a zebra crossing by the school\n\n- soup recipes\n",
        "out/c.md": "# c\n\n- zebra crossing lights at night exactly\n\n- pears are green\n",
    })
    vault = open_vault(root, embedder="fake", embed_passages="all")
    vault.index()
    rows = _passage_rows(vault)
    unfiltered = vault.search("zebra crossing lights at night", mode="vector", limit=10).hits
    assert any(h.path == "out/c.md" for h in unfiltered)
    hits = vault.search("zebra crossing lights at night", mode="vector", folder="in", limit=10).hits
    assert {h.path for h in hits} == {"in/a.md", "in/b.md"}
    for h in hits:
        assert h.passage in rows[h.path]
    vault.close()


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
    assert all(h.passage is None for h in result.hits)
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


def test_another_vaults_edit_changes_the_passage_shown(make_vault):
    root = make_vault(dict(ZEBRA_PAGES))
    reader = open_vault(root, embedder="fake", embed_passages="all")
    reader.index()
    assert reader.search("zebra crossing lights", mode="vector").hits[0].passage == "- zebra crossing lights at night"
    writer = open_vault(root, embedder="fake", embed_passages="all")
    (root / "a.md").write_text("# a\n\n- zebra crossing lights were broken again\n\n- apples grow on trees\n\n"
                               "- figs\n", encoding="utf-8")
    writer.index(embed=False)  # lexical first: the edited page has no vector yet
    result = reader.search("zebra crossing lights", mode="vector")
    assert "vectors_partial" in result.degraded
    assert all(h.path != "a.md" for h in result.hits)
    writer.embed_pending()
    result = reader.search("zebra crossing lights", mode="vector")
    assert result.degraded == ()
    top = result.hits[0]
    assert top.path == "a.md" and top.passage == "- zebra crossing lights were broken again"
    assert top.passage in top.text
    writer.close()
    reader.close()


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


def test_a_retitled_note_has_its_passages_embedded_again(make_vault):
    body = "Controllers reconcile custom resources in a loop.\n\nHelm charts package manifests for release.\n"
    root = make_vault({"n.md": "---\ntitle: Alpha\n---\n" + body})
    vault = open_vault(root, embedder="fake", embed_passages="all")
    vault.index()
    (root / "n.md").write_text("---\ntitle: Zebra Quagga\n---\n" + body, encoding="utf-8")
    vault.index()
    embedder = vault.cache.embedder()
    index = vault.cache.vectors(embedder.identity.dim)
    try:
        rows = vault.cache.db.execute("SELECT pid, text FROM passages").fetchall()
        assert len(rows) == 2 and all(text.startswith("Zebra Quagga: ") for _, text in rows)
        for pid, text in rows:
            stored = index.vectors([pid])[pid]
            assert float(stored @ embedder.embed_passages([text])[0]) > 0.999, text
    finally:
        vault.close()


def test_a_thematic_break_is_never_the_passage_shown(make_vault):
    root = make_vault({"Kubernetes Operators.md": (
        "# Kubernetes Operators\n\nControllers reconcile custom resources in a loop.\n\n---\n\n"
        "Helm charts package manifests for release.\n")})
    vault = open_vault(root, embedder="fake", embed_passages="all")
    vault.index()
    try:
        hit = vault.search("Kubernetes Operators", mode="vector").hits[0]
        assert hit.passage != "---"
        assert hit.passage in ("Controllers reconcile custom resources in a loop.",
                               "Helm charts package manifests for release.")
    finally:
        vault.close()


# -- sorted id sets ------------------------------------------------------------------------------

I64_MIN, I64_MAX = -2**63, 2**63 - 1


def test_sorted_ids_edges():
    assert sorted_ids([]).tolist() == [] and sorted_ids([]).dtype == np.int64
    assert sorted_ids(()).tolist() == []
    assert sorted_ids([5]).tolist() == [5]
    assert sorted_ids([3, -1, 3, -1, 0, I64_MIN, I64_MAX, I64_MAX]).tolist() == [I64_MIN, -1, 0, 3, I64_MAX]
    assert sorted_ids([2**62 - 1, HELD_BIT | 7, 7, HELD_BIT | 7]).tolist() == [7, HELD_BIT | 7, 2**62 - 1]
    assert sorted_ids(np.array([9, 9, 9], dtype=np.int32)).tolist() == [9]


def test_id_difference_edges():
    empty = sorted_ids([])
    a = sorted_ids([-5, 0, 7, I64_MAX])
    assert id_difference(empty, a).tolist() == []
    assert id_difference(a, empty).tolist() == a.tolist()
    assert id_difference(a, a).tolist() == []
    assert id_difference(a, sorted_ids([I64_MAX])).tolist() == [-5, 0, 7]
    assert id_difference(a, sorted_ids([I64_MIN, 8])).tolist() == a.tolist()
    assert id_difference(sorted_ids([I64_MIN, I64_MAX]), sorted_ids([0])).tolist() == [I64_MIN, I64_MAX]
    # every a id above every b id, and below: the clamp at the end of b must not match by accident
    assert id_difference(sorted_ids([10, 11]), sorted_ids([1, 2])).tolist() == [10, 11]
    assert id_difference(sorted_ids([1, 2]), sorted_ids([10, 11])).tolist() == [1, 2]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(I64_MIN, I64_MAX), max_size=30), st.lists(st.integers(I64_MIN, I64_MAX), max_size=30),
       st.lists(st.integers(-3, 3), max_size=10))
def test_id_sets_over_the_whole_int64_range(a, b, shared):
    a, b = a + shared + shared, b + shared
    sa, sb = sorted_ids(a), sorted_ids(b)
    assert sa.tolist() == sorted(set(a)) and sb.tolist() == sorted(set(b))
    assert id_difference(sa, sb).tolist() == sorted(set(a) - set(b))
    assert id_difference(sb, sa).tolist() == sorted(set(b) - set(a))


def test_wanted_ids_parses_held_ids_exactly():
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE chunks (vid INTEGER)")
    db.execute("CREATE TABLE passages (pid INTEGER)")
    assert wanted_ids(db).tolist() == []
    vids = [1, 2**60 - 1, 123456789012345678]
    pids = [HELD_BIT | (2**60 - 1), HELD_BIT | 1, 2**62 - 1, 987654321098765432, 987654321098765432]
    db.executemany("INSERT INTO chunks VALUES (?)", [(v,) for v in vids])
    assert wanted_ids(db).tolist() == sorted(vids)  # passages empty: its NULL group_concat is skipped
    db.executemany("INSERT INTO passages VALUES (?)", [(p,) for p in pids])
    assert wanted_ids(db).tolist() == sorted(set(vids) | set(pids))
