"""`wikimem search "> [!warning]"` (an Obsidian user looking for their warning callouts) answered
"no results": `[!warning]` was read as the property filter `[property]` for a property named
"!warning", which no note can have (an unquoted `!` starts a YAML tag, not a key). A `[!...]` is
a callout's type and is searched as text."""
from __future__ import annotations

import pytest

from wikimem.api import open_vault
from wikimem.search.query_syntax import parse_query


@pytest.mark.parametrize("query", ["> [!warning]", "[!warning] restore", "[!tip]"])
def test_a_callout_type_is_not_a_property_filter(query):
    parsed = parse_query(query)
    assert not any(c.kind == "property" for g in parsed.groups for m in g for c in m), parsed


def test_a_property_filter_is_still_one():
    parsed = parse_query("[status:draft] notes")
    assert any(c.kind == "property" and c.key == "status" for g in parsed.groups for m in g for c in m)


def test_a_search_for_a_callout_finds_the_note_that_has_it(make_vault):
    root = make_vault({"SCHEMA.md": "# Schema\n",
                       "notes/Backups.md": "# Backups\n\n> [!warning] Restore drills\n> Test a restore every quarter.\n",
                       "notes/Other.md": "# Other\n\nNothing to restore here, no warning either way.\n"})
    v = open_vault(root, embedder="none")
    v.index()
    try:
        hits = v.search("[!warning] restore drills").hits
        assert hits and hits[0].path == "notes/Backups.md"
    finally:
        v.close()
