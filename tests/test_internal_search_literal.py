"""Internal searches never parse operators (issue 35, "every write behind a door"): the writer's
similarity check sends a note's body as a query, prime sends a coding prompt."""
from __future__ import annotations

from wikimem.api import open_vault
from wikimem.search import search

BODY = ("# Deploy checklist\n\nBefore a deploy, freeze the schema, run the migrations on staging, "
        "and announce the window in the release channel. Roll back with the previous image tag.\n")


def test_a_copy_with_an_operator_in_its_body_still_finds_its_original(make_vault):
    # Was: "See path:ops" filtered the candidates to path:ops, so the original was not found
    v = open_vault(make_vault({"SCHEMA.md": "# S\n", "guides/Deploy checklist.md": BODY}), embedder="fake")
    v.index()
    res = v.write_page("notes/Copy.md", BODY + "\nSee path:ops and -staging \"quoted (parens\n")
    assert [p for p, _ in res.similar] == ["guides/Deploy checklist.md"]


def test_literal_search_ranks_every_word_and_tolerates_any_punctuation(make_vault):
    v = open_vault(make_vault({"SCHEMA.md": "# S\n", "guides/Deploy checklist.md": BODY}), embedder="none")
    v.index()
    for text in ('path:ops staging "migrations', "-staging migrations", "(OR) tag:#x migrations AND", 'a"b(c)d:'):
        result = search(v.ctx, text, literal=True)
        assert result.hits is not None
    assert [h.path for h in search(v.ctx, "-staging migrations", literal=True).hits] == ["guides/Deploy checklist.md"]
    assert not search(v.ctx, "-staging migrations").hits  # typed by a person, "-staging" excludes
