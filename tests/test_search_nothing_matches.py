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


def test_a_one_word_query_the_notes_hold_is_not_padded_with_neighbours_in_meaning(make_vault):
    # Was: "aria2c" (one page holds it) came back with nine pages only the vector side found
    files = {"SCHEMA.md": "# S\n", "tools/aria2.md": "# aria2\n\nDownload with aria2c -x 16 URL.\n"}
    files.update({f"tools/t{i}.md": f"# Tool {i}\n\nA download manager for files number {i}.\n" for i in range(12)})
    v = open_vault(make_vault(files), embedder="fake")
    v.index()
    one = v.search("aria2c")
    assert [h.path for h in one.hits] == ["tools/aria2.md"]
    two = v.search("aria2c manager")  # more than one word: the vector side still adds what it finds
    assert len(two.hits) > 1
    none = v.search("zzqx")  # no note holds it: the nearest in meaning, as before, said so
    assert none.hits and any("only the nearest in meaning" in n for n in none.notices)
    v.close()
