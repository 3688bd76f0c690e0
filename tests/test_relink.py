"""move_page rewrites every form of link that named the page, and nothing else (issue 35 item 10)."""
from __future__ import annotations

import pytest

from wikimem.api import open_vault
from wikimem.parse import generated


def _moved(make_vault, referrer: str, old_page: str = "# Old\n\nText.\n", *, aliases: bool = False):
    head = "---\naliases: [Alias]\n---\n" if aliases else ""
    v = open_vault(make_vault({"SCHEMA.md": "# S\n", "notes/Old name.md": head + old_page,
                               "notes/Ref.md": referrer}), embedder="none")
    v.index()
    sha = v.files.read_note("notes/Old name.md").sha256
    result = v.move_page("notes/Old name.md", "places/New name.md", expected_sha256=sha)
    return v, result


@pytest.mark.parametrize("before, after", [
    # Was: broken after the move
    ("| a | [[Old name\\|x]] |\n", "| a | [[New name\\|x]] |\n"),  # a table's escaped pipe
    ('[t](Old%20name.md "title")\n', '[t](places/New%20name.md "title")\n'),  # a title after the target
    ("[t](<Old name.md>)\n", "[t](<places/New name.md>)\n"),  # angle brackets
    ("[t](./Old%20name.md)\n", "[t](places/New%20name.md)\n"),  # ./ relative: now the vault path
    # held before too, kept holding
    ("[[Old name]] and ![[Old name#Text]]\n", "[[New name]] and ![[New name#Text]]\n"),
    ("[[notes/Old name|shown]]\n", "[[places/New name|shown]]\n"),
])
def test_each_link_form_points_at_the_new_place(make_vault, before, after):
    v, result = _moved(make_vault, "# Ref\n\n" + before)
    assert (v.root / "notes/Ref.md").read_text() == "# Ref\n\n" + after
    assert result.links_updated == ["notes/Ref.md"]


def test_an_alias_link_and_inline_code_are_left_as_written(make_vault):
    # Was: [[Alias]] rewritten to the file name, and `[[Old name]]` in code changed too
    text = "# Ref\n\n[[Alias]] is it; `[[Old name]]` is how to write it; [[Old name]] links.\n"
    v, _ = _moved(make_vault, text, aliases=True)
    assert (v.root / "notes/Ref.md").read_text() == \
        "# Ref\n\n[[Alias]] is it; `[[Old name]]` is how to write it; [[New name]] links.\n"


def test_the_pages_own_links_to_itself_follow_it(make_vault):
    # Was: [[Old name#Old]] inside the moved page stayed, a broken link
    v, result = _moved(make_vault, "# Ref\n\nnothing\n", "# Old\n\nSee [[Old name#Old]] and [[#Old]].\n")
    assert (v.root / "places/New name.md").read_text() == "# Old\n\nSee [[New name#Old]] and [[#Old]].\n"
    assert "places/New name.md" in result.links_updated


def test_a_generated_section_relinked_stays_wikimems(make_vault):
    # Was: the rewrite left the recorded hash stale, so the next write kept a duplicate section
    section = generated.render("answer", "From [[Old name]].")
    v, _ = _moved(make_vault, "# Ref\n\n" + section + "\nmine [[Old name]]\n")
    text = (v.root / "notes/Ref.md").read_text()
    live = generated.find(text, "answer")
    assert live is not None and not live.edited and "[[New name]]" in live.content
    again, notice = generated.replace(text, "answer", "fresh")
    assert notice is None and again.count("wikimem:begin answer") == 1 and "mine [[New name]]" in again
