"""Search as steps over typed candidates (issue 29 item 4) and hits' deep links (issue 30 item 2)."""
from __future__ import annotations

from urllib.parse import unquote

import pytest

from wikimem.api import open_vault
from wikimem.config import Settings
from wikimem.search import evidence, obsidian_uri
from wikimem.search.candidates import Candidate
from wikimem.search.steps import STEPS, Facts, NeighbourContext, SpeakerBoost, run_steps


def facts(**kw) -> Facts:
    base = dict(query="what did Ana make", mode="hybrid", settings=Settings(), cache=None)
    return Facts(**{**base, **kw})


def test_candidate_components_keep_their_names():
    c = Candidate("c1", "a.md", bm25_rank=1, bm25=3.5, fused=0.123456789)
    assert list(c.components()) == ["bm25_rank", "bm25", "vector_rank", "vector", "vector_whole", "vector_passage",
                                     "fused", "graph", "speaker", "context"]
    assert c.components()["fused"] == 0.12345679 and c.found_by == ("lexical",)
    c.imputed, c.translation_of = 0.2, "en/a.md"
    assert list(c.components())[-2:] == ["imputed", "translation_of"]
    assert Candidate("g", "b.md", graph=0.3).found_by == ("graph",)
    # the context lift comes before the speaker boost
    c = Candidate("t", "s.md", fused=0.5, graph=0.1, context=0.2, speaker=0.5)
    assert c.score == round((0.5 + 0.1 + 0.2) * 1.5, 10)


def test_steps_are_switched_on_by_what_the_candidates_hold():
    on = {type(s).__name__ for s in STEPS if s.applies(facts())}
    assert on == {"ShortTextPrior", "QueryPagesBelowCited", "GraphPullIn"}  # no turns, one script
    on = {type(s).__name__ for s in STEPS if s.applies(facts(turns=True, two_scripts=True, vectors_of=dict))}
    assert on == {"ShortTextPrior", "ImputeLexical", "TranslationsBelowOriginals", "QueryPagesBelowCited",
                  "SpeakerBoost", "GraphPullIn", "NeighbourContext"}
    lexical = {type(s).__name__ for s in STEPS if s.applies(facts(mode="lexical", turns=True, two_scripts=True))}
    assert lexical == {"SpeakerBoost", "NeighbourContext"}  # the language and graph steps are hybrid only
    assert not SpeakerBoost().applies(facts(turns=True, settings=Settings(speaker_boost=0)))


def test_transcript_steps_touch_turns_only_and_say_so():
    cands = {"t0": Candidate("t0", "s.md", speakers=("Bo",), ordinal=0, fused=1.0),
             "t1": Candidate("t1", "s.md", speakers=("Ana",), ordinal=1, fused=0.2),
             "n": Candidate("n", "note.md", fused=0.2)}
    got = run_steps(cands, facts(mode="lexical", turns=True), [SpeakerBoost(), NeighbourContext()])
    assert got["t1"].speaker == 0.5 and got["t1"].context == 0.4 and got["t1"].steps == ["speaker", "context"]
    assert got["t0"].steps == [] and got["n"].steps == [] and got["n"].score == 0.2


def test_a_translation_step_names_itself_only_when_it_moved_a_score(monkeypatch):
    import numpy as np
    monkeypatch.setattr(evidence, "TWIN_SIMILARITY", 0.9)
    unit = {"en": np.array([1.0, 0.0]), "zh": np.array([1.0, 0.0])}
    cands = {"en": Candidate("en", "en/a.md", fused=0.5), "zh": Candidate("zh", "zh/a.md", fused=0.9, foreign=True)}
    from wikimem.search.steps import TranslationsBelowOriginals
    got = TranslationsBelowOriginals().apply(cands, facts(two_scripts=True, vectors_of=lambda ids: {i: unit[i] for i in ids}))
    assert got["zh"].translation_of == "en/a.md" and got["zh"].fused < 0.5 and got["zh"].steps == ["translation"]


def test_turns_are_never_foreign(make_vault):
    """Moved from test_ranking_evidence (its page-evidence half went with the removed step)."""
    from wikimem.ingest import Session, Turn, session_note
    session = Session(title="Ana and Bo, session 1", number=1, date="2023-05-08T13:56:00", label="",
                      participants=("Ana", "Bo"), source="test",
                      turns=[Turn("Ana", f"我去了陶艺课 pottery {i}", f"D1:{i}") for i in range(1, 4)])
    v = open_vault(make_vault({"raw/transcripts/s1.md": session_note(session)}), embedder="fake")
    v.index()
    turns = [r[0] for r in v.cache.db.execute("SELECT id FROM chunks WHERE speakers != '[]'")]
    assert turns and evidence.foreign(v.cache.manifest, "pottery class", turns) == set()
    v.close()


# -- deep links ----------------------------------------------------------------------------------
PAGE = ("---\ntitle: Plan\ntags: [x]\n---\n# Plan\n\nIntro paragraph about the zebra plan.\n\n"
        "## Budget\n\n" + "\n\n".join(f"Budget line {i} with enough words to make a real paragraph of text here."
                                     for i in range(12)) + "\n\n## Risks\n\nThe quokka risk is weather. " + "Storms and heat and wind and rain all count. " * 14
        + "\nA second line.\n")


@pytest.fixture
def linked(make_vault):
    root = make_vault({"notes/plan.md": PAGE, "notes/crlf.md": "x"})
    (root / "notes" / "crlf.md").write_bytes(b"---\r\na: 1\r\n---\r\n# C\r\n\r\nOne.\r\n\r\n## Sub\r\n\r\nthe walrus here\r\n")
    v = open_vault(root, embedder="fake")
    v.index()
    yield v
    v.close()


def _file_lines(v, path):
    return (v.root / path).read_bytes().decode().replace("\r\n", "\n").split("\n")


def test_hits_carry_their_lines_in_the_file(linked):
    for query, path in (("quokka risk weather", "notes/plan.md"), ("zebra plan intro", "notes/plan.md"),
                        ("walrus", "notes/crlf.md")):
        hit = linked.search(query, mode="lexical", limit=1).hits[0]
        lines = _file_lines(linked, path)
        assert hit.path == path and 1 <= hit.start_line <= hit.line <= hit.end_line
        shown = "\n".join(lines[hit.start_line - 1:hit.end_line])
        assert shown == hit.text.strip(), (query, hit.start_line, hit.end_line)  # frontmatter counted
    hit = linked.search("quokka risk weather", mode="lexical", limit=1).hits[0]
    assert _file_lines(linked, "notes/plan.md")[hit.end_line - 1] == "A second line."
    assert hit.to_dict()["start_line"] == hit.start_line and hit.to_dict()["steps"] == []


def test_uri_opens_the_heading(linked):
    hit = linked.search("quokka risk weather", mode="lexical", limit=1).hits[0]
    assert hit.heading_path[-1] == "Risks"
    assert hit.uri == "obsidian://open?vault=vault&file=notes%2Fplan%23Risks"
    assert unquote(hit.uri.split("file=")[1]) == "notes/plan#Risks"
    top = linked.search("zebra plan intro", mode="lexical", limit=1).hits[0]
    assert top.heading_path == ("Plan",) and top.uri.endswith("file=notes%2Fplan")  # the page's own title: no anchor
    assert obsidian_uri("My Vault", "a b.md", "H & 1") == "obsidian://open?vault=My%20Vault&file=a%20b%23H%20%26%201"
