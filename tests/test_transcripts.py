"""Transcript import: one note per session, verbatim turns, turn ids as block ids, exchange chunks."""
import pytest

from wikimem.api import open_vault
from wikimem.errors import ConflictError, ReadOnlyError
from wikimem.ingest import Session, Turn, session_note
from wikimem.parse import chunk_transcript, parse_page

SESSION = Session(
    title="Ana and Bo, session 3",
    number=3,
    date="2023-05-08T13:56:00",
    label="1:56 pm on 8 May, 2023",
    participants=("Ana", "Bo"),
    source="test",
    turns=[
        Turn("Ana", "Hey Bo! I went to the **pottery** class yesterday.", "D3:1"),
        Turn("Bo", "Nice! What did you make?", "D3:2"),
        Turn("Ana", "**A bowl**, look:\nsecond line", "D3:3", attachments=("a photo of a blue bowl",)),
        Turn("Bo", "Lovely.", "D3:4"),
        Turn("Ana", "Thanks!", "D3:5"),
    ],
)


def test_note_keeps_turns_verbatim_with_ids():
    text = session_note(SESSION)
    assert text.startswith("---\ntitle: Ana and Bo, session 3\ntype: source\nkind: transcript\nsession: 3\n")
    assert "# Ana and Bo, session 3 · 1:56 pm on 8 May, 2023" in text
    assert "**Ana**: Hey Bo! I went to the **pottery** class yesterday. ^D3-1" in text
    assert "**Ana**: \\*\\*A bowl**, look:\nsecond line [image: a photo of a blue bowl] ^D3-3" in text
    page = parse_page("raw/transcripts/s3.md", text)
    assert [b.id for b in page.blocks] == ["D3-1", "D3-2", "D3-3", "D3-4", "D3-5"]
    assert page.frontmatter.get("participants") == ["Ana", "Bo"] and page.type == "source"


def test_exchange_chunks_cover_every_turn():
    page = parse_page("raw/transcripts/s3.md", session_note(SESSION))
    pairs = chunk_transcript(page, window=2, stride=2, context_turns=0)
    assert [c.blocks for c in pairs] == [("D3-1", "D3-2"), ("D3-3", "D3-4"), ("D3-5",)]
    assert pairs[0].speakers == ("Ana", "Bo") and pairs[0].date == "2023-05-08T13:56:00"
    assert "".join(c.text for c in pairs) == page.body  # no overlap: the chunks tile the body
    overlapping = chunk_transcript(page, window=3, stride=1)
    assert [c.blocks for c in overlapping] == [("D3-1", "D3-2", "D3-3"), ("D3-2", "D3-3", "D3-4"),
                                               ("D3-3", "D3-4", "D3-5")]


def test_import_search_and_immutability(make_vault):
    vault = open_vault(make_vault({"index.md": "# Index\n"}), embedder="fake")
    [rel] = vault.import_transcripts([SESSION])
    assert rel == "raw/transcripts/2023-05-08 Ana and Bo, session 3.md"
    with pytest.raises(ConflictError):
        vault.import_transcripts([SESSION])  # never overwrites a source
    with pytest.raises(ReadOnlyError):
        vault.write_page(rel, "changed", expected_sha256="x")
    vault.index()
    hit = vault.search("pottery class", per_page=0).hits[0]
    assert hit.path == rel and hit.blocks == ("D3-1",) and "pottery" in hit.text
    assert [c.blocks for c in vault.chunks(vault.parse_file(rel))] == [(f"D3-{i}",) for i in range(1, 6)]


def test_context_turns_are_indexed_but_not_claimed():
    page = parse_page("raw/transcripts/s3.md", session_note(SESSION))
    single = chunk_transcript(page, window=1, stride=1, context_turns=1)
    assert [c.blocks for c in single] == [("D3-1",), ("D3-2",), ("D3-3",), ("D3-4",), ("D3-5",)]
    second = single[1]
    assert second.text.startswith("**Bo**") and "pottery" not in second.text  # shown: the turn only
    assert "pottery" in second.context  # ranked with the question it answers
    embedded = second.index_text()
    assert "pottery" in embedded and "^D3" not in embedded and "**" not in embedded
    assert single[0].context == ""


def test_a_question_about_someone_prefers_their_own_turns(make_vault):
    session = Session(title="Ana and Bo, session 1", number=1, participants=("Ana", "Bo"), turns=[
        Turn("Bo", "Ana, did you finish researching adoption agencies for the family?", "D1:1"),
        Turn("Ana", "Yes, I researched adoption agencies all week.", "D1:2"),
    ])
    vault = open_vault(make_vault({"index.md": "# Index\n"}), embedder="fake")
    vault.import_transcripts([session])
    vault.index()
    hits = vault.search("What did Ana research about adoption agencies?", per_page=0).hits
    assert hits[0].blocks == ("D1-2",) and hits[0].components["speaker"] == 0.5
    plain = open_vault(vault.root, embedder="fake", speaker_boost=0)
    assert all(h.components["speaker"] == 0.0 for h in plain.search("What did Ana research?", per_page=0).hits)


def test_speaker_names_leave_the_vector_query():
    from wikimem.config import Settings
    from wikimem.search.rankers import transcript_query
    assert transcript_query("What did Ana's friend tell Bob?", ["Ana", "Bob Lee"], Settings()) == "What did friend tell"
    assert transcript_query("Ana", ["Ana"], Settings()) is None  # nothing would be left: the query as it is
    assert transcript_query("What did Ana say?", ["Ana"], Settings(speaker_strip=False)) is None
    assert transcript_query("What did Ana say?", [], Settings()) is None


def test_turns_are_also_embedded_sentence_pair_by_sentence_pair():
    from wikimem.index.passages import passages
    page = parse_page("raw/transcripts/s3.md", session_note(SESSION))
    first = chunk_transcript(page)[0]
    assert passages(first, "transcripts") == ["Ana: Hey Bo! I went to the pottery class yesterday."]
    long = parse_page("raw/transcripts/l.md", "# L\n\n**Dave**: That's amazing. Music brings people together. "
                                             "Look at my new vintage camera! ^D1-1\n")
    chunk = chunk_transcript(long)[0]
    assert passages(chunk, "transcripts") == ["Dave: That's amazing. Music brings people together.",
                                              "Dave: Music brings people together. Look at my new vintage camera!"]
    assert passages(chunk, "none") == []
    note = parse_page("notes/n.md", "# N\n\nOne. Two. Three.\n")
    from wikimem.parse import chunk_page
    plain = chunk_page(note)[0]
    assert passages(plain, "transcripts") == []
    assert passages(plain, "all") == ["N: One. Two.", "N: Two. Three."]


def test_a_buried_sentence_is_found_through_its_passage(make_vault):
    session = Session(title="Cal and Dave, session 1", number=1, participants=("Cal", "Dave"), turns=[
        Turn("Dave", "That is amazing, Cal! Music really does bring people together and foster creativity. "
                     "Glad you had such an inspiring talk with everyone at the studio last night. "
                     "Take a look at my vintage camera.", "D1:1"),
        Turn("Cal", "Music and creativity bring people together at the studio, that talk was inspiring.", "D1:2"),
        Turn("Dave", "Cameras are fun.", "D1:3"),
    ])
    vault = open_vault(make_vault({"index.md": "# Index\n"}), embedder="fake", speaker_boost=0)
    vault.import_transcripts([session])
    report = vault.index()
    assert report.vectors == report.vectors_wanted == report.chunks + 5 and report.coverage == 1.0
    status = vault.status()
    assert status["vector_coverage"] == 1.0 and status["passages"] == 5 and status["vectors"] == report.chunks + 5
    assert vault.search("look at my vintage camera", mode="vector", per_page=0).hits[0].blocks == ("D1-1",)
    vault.close()
    whole_only = open_vault(vault.root, embedder="fake", embed_passages="none", speaker_boost=0)
    report = whole_only.index()
    assert report.vectors == report.chunks and report.coverage == 1.0 and report.embedded_now == 0
    assert whole_only.search("look at my vintage camera", mode="vector", per_page=0).hits[0].blocks != ("D1-1",)


def test_passage_vectors_respect_filters(make_vault):
    vault = open_vault(make_vault({"notes/Camera.md": "# Camera\n\nMy vintage camera.\n"}), embedder="fake")
    vault.import_transcripts([Session(title="A and B", number=1, participants=("A", "B"), turns=[
        Turn("A", "Look at my vintage camera. It is old.", "D1:1")])])
    vault.index()
    assert {h.path for h in vault.search("vintage camera", mode="vector", folder="notes")} == {"notes/Camera.md"}
    assert {h.path[:4] for h in vault.search("vintage camera", mode="vector", folder="raw")} == {"raw/"}


def test_unknown_passage_mode_is_a_config_error(make_vault):
    from wikimem.errors import ConfigError
    with pytest.raises(ConfigError, match="embed_passages"):
        open_vault(make_vault({"a.md": "# A\n"}), embed_passages="sentences")


def test_a_turn_beside_a_strong_match_is_lifted_towards_it():
    from wikimem.search.steps import _add_neighbour_context
    light = {"t0": ("s.md", ("A",), 0), "t1": ("s.md", ("B",), 1), "t2": ("s.md", ("A",), 2),
             "t9": ("s.md", ("A",), 9), "p": ("note.md", (), 0), "p2": ("note.md", (), 1)}
    scores = {"t0": 0.2, "t1": 1.0, "t2": 0.1, "t9": 0.3, "p": 0.2, "p2": 1.0}
    parts = {cid: {"context": 0.0} for cid in scores}
    _add_neighbour_context(scores, parts, light, weight=0.5, span=2)
    assert parts["t0"]["context"] == 0.4 and parts["t2"]["context"] == 0.45  # halfway to t1
    assert parts["t1"]["context"] == 0.0  # the best turn keeps its score: never above its neighbours
    assert parts["t9"]["context"] == 0.0  # too far away
    assert parts["p"]["context"] == 0.0  # prose chunks are left alone


def test_neighbour_context_reorders_real_search(make_vault):
    session = Session(title="Cy and Di, session 1", number=1, participants=("Cy", "Di"), turns=[
        Turn("Di", "What did you make for the local church?", "D1:1"),
        Turn("Cy", "A stained glass window, it took weeks.", "D1:2"),
        Turn("Di", "I also like windows.", "D1:3"),
        Turn("Cy", "Unrelated chatter about the weather today.", "D1:4"),
        Turn("Di", "More unrelated chatter, the weather again.", "D1:5"),
        Turn("Cy", "Windows in the old town are pretty.", "D1:6"),
    ])
    vault = open_vault(make_vault({"index.md": "# Index\n"}), embedder="fake", speaker_boost=0, transcript_context=0)
    vault.import_transcripts([session])
    vault.index()
    hits = {h.blocks[0]: h for h in vault.search("what did Cy make for the local church", per_page=0).hits if h.blocks}
    assert hits["D1-1"].components["context"] == 0  # the best match keeps its score
    assert hits["D1-2"].components["context"] > 0  # the answer beside it is lifted towards it
    assert hits["D1-2"].score <= hits["D1-1"].score
    plain = open_vault(vault.root, embedder="fake", speaker_boost=0, transcript_context=0, neighbour_weight=0)
    assert all(h.components["context"] == 0 for h in plain.search("local church", per_page=0).hits)


def test_the_speaker_boost_multiplies_the_lifted_score(make_vault):
    """The lift is computed from unboosted scores (which exchange matters); the boost then picks
    the named speaker's turns within it. Boosting first would lift the other speaker's replies."""
    session = Session(title="Cyrus and Dina, session 1", number=1, participants=("Cyrus", "Dina"), turns=[
        Turn("Dina", "What did you make for the local church?", "D1:1"),
        Turn("Cyrus", "A stained glass window, it took weeks.", "D1:2"),
        Turn("Dina", "Nice.", "D1:3"),
    ])
    vault = open_vault(make_vault({"index.md": "# Index\n"}), embedder="fake", transcript_context=0)
    vault.import_transcripts([session])
    vault.index()
    hits = {h.blocks[0]: h for h in vault.search("what did Cyrus make for the local church", per_page=0).hits if h.blocks}
    question, answer, reply = hits["D1-1"], hits["D1-2"], hits["D1-3"]
    assert answer.components["speaker"] == 0.5 and question.components["speaker"] == 0.0
    base = {k: h.components["fused"] + h.components["graph"] for k, h in hits.items()}
    for key, hit in hits.items():
        assert hit.score == pytest.approx((base[key] + hit.components["context"]) * (1 + hit.components["speaker"]), abs=1e-6)
    best = max(base.values())
    assert reply.components["context"] == pytest.approx(0.5 * (best - base["D1-3"]), abs=1e-6)
