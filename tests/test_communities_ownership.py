"""Issue 27 item 2: `communities --write` never overwrites a person's communities.md, and keeps
what a person added to the one wikimem writes. Was: it overwrote a user's own page, no backup."""
import pytest

from wikimem.api import open_vault
from wikimem.errors import ConflictError


def _vault(make_vault, extra=None):
    files = {"a.md": "# A\n\n[[b]] [[c]]\n", "b.md": "# B\n\n[[a]] [[c]]\n", "c.md": "# C\n\n[[a]]\n",
             "d.md": "# D\n\n[[e]]\n", "e.md": "# E\n\n[[d]]\n"}
    files.update(extra or {})
    v = open_vault(make_vault(files), embedder="none")
    v.index()
    return v


def test_a_persons_own_communities_page_is_refused(make_vault):
    mine = "# Communities\n\nMy own list of communities in the neighbourhood.\n"
    v = _vault(make_vault, {"communities.md": mine})
    with pytest.raises(ConflictError, match="page of your own"):
        v.communities(write=True)
    assert (v.root / "communities.md").read_text() == mine


def test_lines_a_person_adds_around_the_section_survive_the_next_write(make_vault):
    v = _vault(make_vault)
    v.communities(write=True)
    page = v.root / "communities.md"
    page.write_text(page.read_text().replace("# Communities\n", "# Communities\n\nMy intro line.\n", 1)
                    + "\n## My remarks\n\nThe D-E pair is the billing team.\n")
    (v.root / "f.md").write_text("# F\n\n[[d]] [[e]]\n")
    v.index()
    v.communities(write=True)
    text = page.read_text()
    assert "My intro line." in text and "The D-E pair is the billing team." in text
    assert "[[f|F]]" in text or "[[f]]" in text  # the section itself was recompiled
    assert text.count("<!-- wikimem:begin communities") == 1


def test_a_page_an_older_version_wrote_whole_keeps_every_line_and_gets_the_section_beside_them(make_vault):
    # Was: rewritten whole, the old text only in communities.md.bak (issue 35 item 1: a generated_by
    # page with no intact section is a person's page)
    old = "---\ntitle: Communities\ntype: note\ngenerated_by: wikimem communities --write\n---\n\n# Communities\n\nold\n"
    v = _vault(make_vault, {"communities.md": old})
    _, written = v.communities(write=True)
    text = (v.root / "communities.md").read_text()
    assert "<!-- wikimem:begin communities" in text and "\nold\n" in text
    assert text.index("<!-- wikimem:begin communities") < text.index("\nold\n")
    assert any("no intact generated communities" in w for w in written["page"].warnings)
    _, again = v.communities(write=True)  # the section is found and owned from now on
    assert not again["page"].written and (v.root / "communities.md").read_text() == text


def test_obsidian_groups_are_recognised_without_the_cache_and_the_backup_keeps_the_users_file(make_vault):
    # Was: which groups were ours lived only in the cache: after `rm -rf .wikimem` each run added them
    # again (7 -> 13 -> 19) and graph.json.bak then held our groups, not the user's file
    import json
    import shutil
    user_file = json.dumps({"colorGroups": [{"query": "tag:#mine", "color": {"a": 1, "rgb": 1}}], "scale": 1.5})
    v = _vault(make_vault, {".obsidian/graph.json": user_file})
    v.communities(obsidian_graph=True)
    first = json.loads((v.root / ".obsidian/graph.json").read_text())
    for _ in range(2):
        shutil.rmtree(v.root / ".wikimem")
        v = open_vault(v.root, embedder="none")
        v.index()
        v.communities(obsidian_graph=True)
    again = json.loads((v.root / ".obsidian/graph.json").read_text())
    assert len(again["colorGroups"]) == len(first["colorGroups"]) and again["colorGroups"][0]["query"] == "tag:#mine"
    assert again["scale"] == 1.5
    assert (v.root / ".obsidian/graph.json.bak").read_text() == user_file
