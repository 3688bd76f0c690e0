"""A hybrid search none of whose words any note contains says so (issue 36: nonsense was answered
with ten confident neighbours); a query in a script no note is written in does not (that is how a
cross-language search works)."""
from __future__ import annotations

from wikimem.api import open_vault

NOTICE = "no note contains the query's words"


def test_a_query_no_note_has_a_word_of_is_flagged_but_not_a_cross_language_one(make_vault):
    root = make_vault({"SCHEMA.md": "# Schema\n", "a.md": "# Alpha\n\nalpha particles and decay\n",
                       "b.md": "# Beta\n\nbeta rays from nuclei\n"})
    vault = open_vault(root, embedder="fake")
    vault.index()
    nonsense = vault.search("zzzqqq", mode="hybrid")
    assert nonsense.hits and any(NOTICE in n for n in nonsense.notices)
    found = vault.search("alpha decay", mode="hybrid")
    assert not any(NOTICE in n for n in found.notices)
    chinese = vault.search("阿尔法粒子", mode="hybrid")
    assert not any(NOTICE in n for n in chinese.notices)
