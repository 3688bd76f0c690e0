"""A query with no word to search for (only stop words, punctuation, symbols, emoji) was answered
with "no note contains the query's words; these are only the nearest in meaning": on the tldr
vault `wikimem search "the of and to a in is it"` told a user that no note contains "the". The
words were dropped as too common (or there were none), not missing from the notes; the notice says
that now, and a typo still gets the notice it had."""
from __future__ import annotations

import pytest

from wikimem.api import open_vault

MISSING = "no note contains the query's words"


@pytest.fixture(scope="module")
def vault(tmp_path_factory):
    root = tmp_path_factory.mktemp("v")
    (root / "SCHEMA.md").write_text("# Schema\n")
    (root / "a.md").write_text("# Alpha\n\nThe alpha particles and the decay of it.\n")
    (root / "b.md").write_text("# Beta\n\nThe beta rays from the nuclei, in a field.\n")
    (root / "c.md").write_text("# 伽马\n\n伽马射线的能量很高，和电子不同。\n")
    v = open_vault(root, embedder="fake")
    v.index()
    yield v
    v.close()


@pytest.mark.parametrize("query", ["the of and to a in is it", "?!.,;:", "，。！？；：", "🚀🔥", "的 了 和"])
def test_a_query_without_a_searchable_word_says_so_truly(vault, query):
    result = vault.search(query)
    assert not any(MISSING in n for n in result.notices), result.notices
    assert any("no word to search for" in n and "only the nearest in meaning" in n for n in result.notices), \
        result.notices


def test_a_word_no_note_holds_keeps_its_notice(vault):
    assert any(MISSING in n for n in vault.search("zzzqqq").notices)
    assert not any("no word to search for" in n for n in vault.search("zzzqqq").notices)
    assert vault.search("alpha decay").notices == ()
