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


def test_a_page_an_older_version_wrote_whole_is_backed_up_before_it_is_rewritten(make_vault):
    old = "---\ntitle: Communities\ntype: note\ngenerated_by: wikimem communities --write\n---\n\n# Communities\n\nold\n"
    v = _vault(make_vault, {"communities.md": old})
    _, written = v.communities(write=True)
    assert (v.root / "communities.md.bak").read_text() == old
    assert any("communities.md.bak" in w for w in written["page"].warnings)
    assert "<!-- wikimem:begin communities" in (v.root / "communities.md").read_text()
