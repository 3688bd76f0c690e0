"""`query` says "not in the vault" when the question asks what no note says about a page it names
(issue 36 part 2: such questions were answered from the page about the name and filed)."""
from __future__ import annotations

from wikimem.api import open_vault

NOTES = {
    "SCHEMA.md": "# S\n",
    "entities/Vincent Traag.md": "# Vincent Traag\n\nVincent Traag is a researcher at Leiden University who "
                                 "introduced the Leiden algorithm for community detection in 2019.\n",
    "concepts/Leiden Algorithm.md": "# Leiden Algorithm\n\nThe Leiden algorithm, proposed by Vincent Traag, refines "
                                    "partitions found by Louvain and guarantees connected communities.\n",
    "concepts/Text filters.md": "# Text filters\n\nThe capitalize filter turns the first letter of each word into a "
                                "capital letter.\n",
}


def test_a_question_about_what_no_note_says_is_not_answered_nor_filed(make_vault):
    v = open_vault(make_vault(dict(NOTES)), embedder="fake")
    v.index()
    for q in ("How tall is Vincent Traag?", "What is the population of Leiden?", "What is the capital of France?"):
        a = v.query(q)
        assert not a.answered and a.page is None, (q, a.text)
    assert not (v.root / "queries").exists() or not list((v.root / "queries").glob("*.md"))


def test_a_question_the_notes_do_answer_still_is(make_vault):
    v = open_vault(make_vault(dict(NOTES)), embedder="fake")
    v.index()
    a = v.query("Who created the Leiden algorithm?", write=False)
    assert a.answered and a.citations[0].path in ("concepts/Leiden Algorithm.md", "entities/Vincent Traag.md")
    b = v.query("莱顿算法是谁提出的？", write=False)  # another script: absent words mean nothing here
    assert b.question
