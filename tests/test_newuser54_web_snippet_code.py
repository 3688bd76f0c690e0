"""The web page's search hits showed tldr's `tar czf {{target.tar.gz}} {{[-C|--directory]}}` as
`{{[-C · --directory]}}`: the one-line excerpt cleaner turned every `|` into a table's cell
separator, also inside inline code, so a command copied from a hit was wrong (the CLI showed it
right). Code spans are left as written; a table's pipes still go."""
from __future__ import annotations

from wikimem.serve.render import plain_text


def test_pipes_inside_inline_code_are_kept():
    line = "- [c]reate an archive from a directory: `tar czf {{target.tar.gz}} {{[-C|--directory]}} {{dir}}`"
    shown = plain_text(line)
    assert "tar czf {{target.tar.gz}} {{[-C|--directory]}} {{dir}}" in shown, shown
    assert "``cat a | grep b``" not in plain_text("pipe it: ``cat a | grep b`` then stop")
    assert "cat a | grep b" in plain_text("pipe it: ``cat a | grep b`` then stop")


def test_a_tables_pipes_and_list_marks_outside_code_still_go():
    shown = plain_text("| tool | use | |---|---| | `a|b` | c | - item `x`")
    assert shown.startswith("tool · use"), shown
    assert "a|b" in shown and "- item" not in shown
    assert plain_text("## Install | step | - run `make`") == "Install · step · run make"
