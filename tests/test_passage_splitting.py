"""Note passages on hostile Markdown (index/passages.py: blocks, passages, sentences): fences of every
kind, lone CRs, headings, huge lines, thousands of items or sentences, CJK, emoji, zero-width and RTL
characters, titles with metacharacters; and the invariants every passage list keeps, on random
Markdown."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikimem.index.passages import blocks, passage_id, passages, sentences
from wikimem.stores.vectors import HELD_BIT, is_held
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
@pytest.mark.adversarial
def test_a_note_of_fences_only_is_one_block_and_no_passage():
    text = "```\nalpha\n```\n~~~\nbeta\n~~~\n```` \ngamma\n````\n"
    assert blocks(text) == ["``` alpha ``` ~~~ beta ~~~ ```` gamma ````"]
    assert passages(_chunk(text), "all") == []


@pytest.mark.adversarial
def test_an_unclosed_fence_keeps_headings_and_blank_lines_as_code():
    text = "Intro.\n\n```python\n# not a heading\n\nx = 1\n\n## still code\n"
    assert blocks(text) == ["Intro. ```python # not a heading x = 1 ## still code"]


@pytest.mark.adversarial
def test_a_longer_outer_fence_holds_a_shorter_inner_one():
    text = "````md\n```\ninner\n```\n````\nafter the fence\n\nlast"
    assert blocks(text) == ["````md ``` inner ``` ````", "after the fence", "last"]


@pytest.mark.adversarial
def test_a_longer_closing_fence_closes_and_a_shorter_one_does_not():
    assert blocks("````\ncode\n```\nstill code\n`````\nafter") == ["```` code ``` still code `````", "after"]
    assert blocks("```\ncode\n`````\nafter") == ["``` code `````", "after"]


@pytest.mark.adversarial
def test_a_tilde_fence_is_not_closed_by_backticks_and_vice_versa():
    assert blocks("~~~\na\n```\nb\n~~~\nc") == ["~~~ a ``` b ~~~", "c"]
    assert blocks("```\na\n~~~\nb\n```\nc") == ["``` a ~~~ b ```", "c"]


@pytest.mark.adversarial
def test_a_closing_fence_with_an_info_string_does_not_close():
    assert blocks("```\na\n``` py\nb\n```\nc") == ["``` a ``` py b ```", "c"]


@pytest.mark.adversarial
def test_lone_cr_mixed_endings_and_tabs():
    text = "One.\rTwo.\r\rThree.\r\n-\tfour\n#\tHeading\n\tfive"
    assert blocks(text) == ["One. Two.", "Three.", "-\tfour", "five"]
    got = passages(_chunk(text), "all")
    _check_passages(got, text, "T")
    assert got == ["T: One. Two.", "T: Three.", "T: - four", "T: five"]


@pytest.mark.adversarial
def test_headings_only_give_nothing():
    text = "# One\n## Two\n###### Six\n   ### Indented three\n#\n"
    assert blocks(text) == []
    assert passages(_chunk(text), "all") == []


@pytest.mark.adversarial
def test_hash_words_that_are_not_headings_are_kept():
    text = "#tag at the start\n\n####### seven hashes\n\n    # four spaces"
    assert blocks(text) == ["#tag at the start", "####### seven hashes", "# four spaces"]


@pytest.mark.adversarial
def test_a_100k_character_line_is_one_passage_cut_at_the_limit():
    from wikimem.index.passages import MAX_CHARS
    long = "word" * 25_000
    text = f"{long}\n\nShort paragraph."
    got = passages(_chunk(text), "all")
    assert got == [f"T: {long}"[:MAX_CHARS], "T: Short paragraph."]


@pytest.mark.adversarial
def test_thousands_of_list_items_are_thousands_of_passages():
    n = 5000
    text = "Intro:\n" + "\n".join(f"- item number {i}" for i in range(n))
    got = passages(_chunk(text), "all")
    assert len(got) == n + 1
    assert got[0] == "T: Intro:" and got[-1] == f"T: - item number {n - 1}"
    _check_passages(got, text, "T")


@pytest.mark.adversarial
def test_thousands_of_sentences_are_overlapping_pairs():
    n = 3000
    text = " ".join(f"Sentence {i}." for i in range(n)) + "\n\n- tail"
    got = passages(_chunk(text), "all")
    assert len(got) == (n - 1) + 1
    assert got[0] == "T: Sentence 0. Sentence 1." and got[n - 2] == f"T: Sentence {n - 2}. Sentence {n - 1}."


@pytest.mark.adversarial
def test_chinese_without_spaces_and_emoji():
    text = "我喜欢猫。猫也喜欢我。我们一起玩。\n\n- 🐱 emoji item 🎉\n\n- 第二项"
    got = passages(_chunk(text, title="猫 🐱"), "all")
    _check_passages(got, text, "猫 🐱")
    assert got == ["猫 🐱: 我喜欢猫。 猫也喜欢我。", "猫 🐱: 猫也喜欢我。 我们一起玩。",
                   "猫 🐱: - 🐱 emoji item 🎉", "猫 🐱: - 第二项"]


@pytest.mark.adversarial
def test_zero_width_and_rtl_characters_do_not_break_invariants():
    text = "שלום עולם. \u200fמימין לשמאל.\u200e Third one.\n\n- a\u200bb item\n\n- \u2067isolate\u2069 item"
    got = passages(_chunk(text), "all")
    _check_passages(got, text, "T")
    assert got == ["T: שלום עולם. \u200fמימין לשמאל.\u200e Third one.", "T: - a\u200bb item",
                   "T: - \u2067isolate\u2069 item"]


@pytest.mark.adversarial
@pytest.mark.parametrize("title", ["Re: meeting", "C++ (v2) [draft]*?", "a.b|c\\d$^", ": leading", "Note:"])
def test_a_title_with_colons_and_metacharacters_is_the_prefix_verbatim(title):
    text = "First paragraph.\n\nSecond paragraph."
    got = passages(_chunk(text, title=title), "all")
    assert got == [f"{title}: First paragraph.", f"{title}: Second paragraph."]


_HOSTILE = st.lists(st.sampled_from(list("ab. -*`~#1)\t\r\n!?;:") + ["。", "！", "…", "é", "猫", "🐱", "\u200b",
                                                                      "\u2028", "**", " ^x", "```", "~~~", "\n\n"]),
                    max_size=40).map("".join)


@pytest.mark.adversarial
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


@pytest.mark.adversarial
@pytest.mark.parametrize("rule", ["---", "***", "___", "- - -", "-", "\u200b"])
def test_a_rule_or_empty_line_is_no_passage(rule):
    text = f"First paragraph here.\n\n{rule}\n\nSecond paragraph here.\n"
    got = passages(_chunk(text), "all")
    assert all(_LETTER.search(p[len("T: "):]) for p in got), got


@pytest.mark.adversarial
@pytest.mark.parametrize("text", ["真的吗？！好的。再见。", "等等……然后呢？好吧。", "えっ！？本当に。"])
def test_a_run_of_cjk_punctuation_is_not_a_sentence(text):
    got = sentences(text)
    assert all(_LETTER.search(s) for s in got), got
    assert "".join(got) == text
