"""Issue 28 item 6: partial edits, moves and deletes for agents, each compare-and-swap checked and logged."""
import pytest

from wikimem.agent.edits import edited_text
from wikimem.api import open_vault
from wikimem.errors import ConflictError, UsageError

PAGE = "---\ntitle: Garden\ntags: [home]\n---\n# Garden\n\nIntro.\n\n## Tomatoes\n\nWater at dawn.\n\n## Beans\n\nPick in July.\n"


@pytest.fixture
def vault(make_vault):
    v = open_vault(make_vault({
        "Garden.md": PAGE,
        "notes/Plan.md": "---\nsupersedes: \"[[Garden]]\"\n---\n# Plan\n\nSee [[Garden|the garden]], [[Garden#Beans]] and ![[Garden]]; [md](Garden.md).\n",
        "notes/Other.md": "# Other\n\nNothing about it. `[[Garden]]` in code stays.\n",
    }), embedder="fake")
    v.index()
    return v


def _sha(v, rel):
    return v.files.read_note(rel).sha256


def test_each_operation_changes_only_its_part():
    assert edited_text(PAGE, "append", "Added.")[0].endswith("Pick in July.\nAdded.\n")
    assert edited_text(PAGE, "prepend", "Top line.")[0].startswith("---\ntitle: Garden\ntags: [home]\n---\nTop line.\n# Garden")
    replaced, _ = edited_text(PAGE, "replace_section", "Water at dusk.", heading="Tomatoes")
    assert "Water at dusk." in replaced and "Water at dawn." not in replaced and "## Beans\n\nPick in July." in replaced
    assert "## Tomatoes\nWater at dusk.\n\n## Beans" in replaced
    out, n = edited_text(PAGE, "find_replace", "dusk", find="dawn", expected_count=1)
    assert n == 1 and "Water at dusk." in out


def test_a_find_replace_with_another_count_or_a_missing_heading_is_refused():
    with pytest.raises(ConflictError, match="found 0"):
        edited_text(PAGE, "find_replace", "x", find="nowhere")
    with pytest.raises(UsageError, match="no heading"):
        edited_text(PAGE, "replace_section", "x", heading="Carrots")
    with pytest.raises(UsageError, match="unknown operation"):
        edited_text(PAGE, "truncate")


def test_edit_page_is_compare_and_swap_checked_and_logged(vault):
    sha = _sha(vault, "Garden.md")
    with pytest.raises(ConflictError, match="changed since"):
        vault.edit_page("Garden.md", "append", expected_sha256="0" * 64, content="x")
    result = vault.edit_page("Garden.md", "append", expected_sha256=sha, content="- compost in May")
    assert result.sha256 == _sha(vault, "Garden.md") != sha
    assert (vault.root / "Garden.md").read_text().endswith("- compost in May\n")
    assert "Garden.md" in (vault.root / "log.md").read_text()
    assert [h.path for h in vault.search("compost", mode="lexical").hits] == ["Garden.md"]


def test_move_page_updates_the_links_that_point_at_it(vault):
    result = vault.move_page("Garden.md", "places/Backyard.md", expected_sha256=_sha(vault, "Garden.md"))
    assert not (vault.root / "Garden.md").exists() and (vault.root / "places/Backyard.md").read_text() == PAGE
    plan = (vault.root / "notes/Plan.md").read_text()
    assert "[[Backyard|the garden]]" in plan and "[[Backyard#Beans]]" in plan and "![[Backyard]]" in plan
    assert 'supersedes: "[[Backyard]]"' in plan and "](places/Backyard.md)" in plan
    assert "`[[Garden]]`" in (vault.root / "notes/Other.md").read_text()  # code is not a link
    assert result.links_updated == ["notes/Plan.md"]
    links = {l.resolved for l in vault.pages()["notes/Plan.md"].links}
    assert links == {"places/Backyard.md"}


def test_move_page_refuses_an_existing_target(vault):
    with pytest.raises(ConflictError, match="already exists"):
        vault.move_page("Garden.md", "notes/Other.md", expected_sha256=_sha(vault, "Garden.md"))
    assert (vault.root / "Garden.md").exists()


def test_delete_page_goes_to_the_trash_and_out_of_search(vault):
    sha = _sha(vault, "Garden.md")
    with pytest.raises(ConflictError):
        vault.delete_page("Garden.md", expected_sha256="0" * 64)
    result = vault.delete_page("Garden.md", expected_sha256=sha)
    assert result.moved_to == ".trash/Garden.md" and (vault.root / ".trash/Garden.md").read_text() == PAGE
    assert not vault.search("dawn", mode="lexical").hits
    assert "Garden.md -> .trash/Garden.md" in (vault.root / "log.md").read_text()
