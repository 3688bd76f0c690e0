"""Generated sections a person edited never cost their lines (issue 35 items 1-2).

A marked section counts only when it is intact (its begin line, then its end line, nothing of its
name between) and outside code; of several, the one still holding what wikimem wrote is live; a
page with none is a person's page and keeps every line."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikimem.api import open_vault
from wikimem.parse import generated

Q = "How do I recover a deleted note?"
NOTES = {
    "SCHEMA.md": "# Schema\n",
    "concepts/Recovering deleted notes.md": (
        "# Recovering deleted notes\n\nA note you deleted goes to the trash folder first. To recover a deleted "
        "note, open the trash and restore it; restoring puts the file back where it was.\n"),
}


def _asked_twice(make_vault, edit):
    v = open_vault(make_vault(dict(NOTES)), embedder="fake")
    v.index()
    first = v.query(Q)
    path = v.root / first.page
    path.write_text(edit(path.read_text()))
    again = v.query(Q)
    assert again.page == first.page
    return path.read_text(), again


def _drop_marker_lines(text: str, kinds=("begin", "end")) -> str:
    return "".join(line for line in text.splitlines(keepends=True)
                   if not any(line.startswith(f"<!-- wikimem:{k} ") for k in kinds))


def test_both_markers_removed_and_a_line_added_above_sources_survives_re_asking(make_vault):
    # Was: the legacy rewrite replaced the title through the Sources list, the person's line with it
    def edit(text):
        return _drop_marker_lines(text).replace("## Sources", "My line above the sources.\n\n## Sources", 1)
    after, again = _asked_twice(make_vault, edit)
    assert "My line above the sources." in after
    assert after.count("<!-- wikimem:begin answer") == 1
    assert generated.find(after.split("---\n", 2)[2], "answer") is not None
    assert any("no intact generated answer" in n for n in again.notices)


def test_the_end_marker_replaced_by_a_list_line_keeps_that_line(make_vault):
    def edit(text):
        return text.replace("<!-- wikimem:end answer -->", "- [[concepts/Recovering deleted notes]] my own line", 1)
    after, _ = _asked_twice(make_vault, edit)
    assert "- [[concepts/Recovering deleted notes]] my own line" in after
    body = after.split("---\n", 2)[2]
    live = generated.find(body, "answer")
    assert live is not None and not live.edited and "my own line" not in live.content


def test_markers_inside_a_persons_fence_are_their_text(make_vault):
    # Was: the answer was written into the person's fence and their marker lines deleted
    fence = ("```markdown\n<!-- wikimem:begin answer sha256=000000000000 -->\nexample of a section\n"
             "<!-- wikimem:end answer -->\n```\n")

    def edit(text):  # the fence above the live section: it was found first
        return text.replace(f"# {Q}\n", f"# {Q}\n\n## How the markers look\n\n{fence}\n", 1)
    after, _ = _asked_twice(make_vault, edit)
    assert fence in after
    assert after.count("<!-- wikimem:begin answer") == 2  # the live one and the one quoted in the fence


def test_a_fence_holding_the_only_markers_is_not_a_section():
    body = "# T\n\n```\n<!-- wikimem:begin answer -->\nmine\n<!-- wikimem:end answer -->\n```\n"
    assert generated.find(body, "answer") is None
    new, notice = generated.replace(body, "answer", "fresh")
    assert body.split("# T\n", 1)[1].lstrip("\n") in new and "fresh" in new and notice


def test_fences_of_either_kind_hide_markers_and_the_live_section_after_them_is_found():
    body = "# T\n\n~~~\n" + generated.render("answer", "quoted") + "~~~\n"
    assert generated.find(body, "answer") is None
    quoted = generated.render("answer", "quoted")
    in_list = "# T\n\n- item\n\n  ```\n" + "".join("  " + line for line in quoted.splitlines(True)) + "  ```\n"
    assert generated.find(in_list, "answer") is None  # indented markers never match; the fence hides them anyway
    fenced_then_live = "# T\n\n```\n" + quoted + "```\n\n" + generated.render("answer", "live")
    assert generated.find(fenced_then_live, "answer").content == "live"


def test_a_copied_block_above_the_live_one_is_left_as_the_person_pasted_it():
    live = generated.render("answer", "the answer")
    copy = live.replace("the answer", "the answer, with my remark")  # a copy the person then edited
    body = "# T\n\n" + copy + "\nbetween\n\n" + live
    new, notice = generated.replace(body, "answer", "the new answer")
    assert notice is None
    assert copy in new and "between" in new and "the new answer" in new
    assert new.index(copy) < new.index("the new answer")


def test_an_exact_copy_is_kept_and_only_one_section_rewritten():
    live = generated.render("answer", "the answer")
    body = "# T\n\n" + live + "\nbetween\n\n" + live
    new, _ = generated.replace(body, "answer", "the new answer")
    assert new.count("the answer\n") == 1 and new.count("the new answer") == 1 and "between" in new


def test_lone_and_nested_markers_are_not_sections():
    assert generated.find("<!-- wikimem:begin answer sha256=abc -->\nx\n", "answer") is None
    assert generated.find("x\n<!-- wikimem:end answer -->\n", "answer") is None
    nested = ("<!-- wikimem:begin answer sha256=abc -->\nouter\n" + generated.render("answer", "inner")
              + "<!-- wikimem:end answer -->\n")
    found = generated.find(nested, "answer")
    assert found is not None and found.content == "inner"  # the intact inner pair, not outer..first end


def test_an_empty_unhashed_pair_a_person_placed_is_where_the_section_goes():
    body = "# T\n\nintro\n\n<!-- wikimem:begin answer -->\n<!-- wikimem:end answer -->\n\noutro\n"
    new, notice = generated.replace(body, "answer", "filled")
    assert notice is None and new.count("wikimem:begin answer") == 1
    assert new.index("intro") < new.index("filled") < new.index("outro")


_LINE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=30)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_LINE, max_size=6), where=st.lists(st.integers(0, 30), max_size=6),
       damage=st.sampled_from(["none", "drop-begin", "drop-end", "drop-both", "duplicate", "fence", "edit"]),
       answers=st.lists(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r"),
                                min_size=1, max_size=30), min_size=1, max_size=3))
def test_a_rewrite_never_removes_or_changes_a_line_the_person_added(lines, where, damage, answers):
    """Property: a person inserts lines anywhere around a generated section and damages its markers
    in one of several ways; any number of later writes keep every line they added, verbatim."""
    body = "# Q\n\n" + generated.render("answer", "first answer") + "\n## After\n"
    doc = body.split("\n")
    added = []
    for i, (line, at) in enumerate(zip(lines, where)):
        mine = f"PERSON{i} {line}".replace("<!--", "<!").replace("```", "``").replace("~~~", "~~")
        added.append(mine)
        doc.insert(min(at, len(doc)), mine)
    body = "\n".join(doc)
    if damage == "drop-begin":
        body = _drop_marker_lines(body, ("begin",))
    elif damage == "drop-end":
        body = _drop_marker_lines(body, ("end",))
    elif damage == "drop-both":
        body = _drop_marker_lines(body)
    elif damage == "duplicate":
        body = body + "\n" + generated.render("answer", "first answer")
    elif damage == "fence":
        body = "```\n" + body + "\n```\n"
    elif damage == "edit":
        body = body.replace("first answer", "first answer PERSONEDIT", 1)
        added.append("PERSONEDIT")
    for text in answers:
        body, _ = generated.replace(body, "answer", text)
        for mine in added:
            assert mine in body
    found = generated.find(body, "answer")
    assert found is not None and not found.edited and found.content == answers[-1].strip("\n")


def test_refresh_hashes_keeps_an_owned_section_owned_after_a_link_rewrite():
    before = "# T\n\n" + generated.render("answer", "see [[Old name]]") + "\nmine [[Old name]]\n"
    after = before.replace("[[Old name]]", "[[New name]]")
    assert generated.find(after, "answer").edited  # the rewrite alone would make it look hand-edited
    fixed = generated.refresh_hashes(before, after)
    live = generated.find(fixed, "answer")
    assert live is not None and not live.edited and "[[New name]]" in live.content
    assert "mine [[New name]]" in fixed


def test_refresh_hashes_leaves_a_section_a_person_edited_as_theirs():
    before = "# T\n\n" + generated.render("answer", "see [[Old name]]").replace("see", "I say see") + "\n"
    after = before.replace("[[Old name]]", "[[New name]]")
    fixed = generated.refresh_hashes(before, after)
    assert fixed == after and generated.find(fixed, "answer").edited


@pytest.mark.parametrize("answer", ["~~~", "```python\nx = 1", "text\n````\ncode ``` not a close"])
def test_an_answer_leaving_a_code_fence_open_keeps_its_section_intact(answer):
    # Was (hypothesis): "~~~" ran to the end of the page, so the end marker was code, the section
    # not intact, and the next write kept it and wrote a second answer above
    body = "# Q\n\n" + generated.render("answer", answer) + "\nA person's line.\n"
    found = generated.find(body, "answer")
    assert found is not None and not found.edited
    again, notice = generated.replace(body, "answer", "a new answer")
    assert notice is None and "A person's line." in again and again.count("wikimem:begin") == 1
