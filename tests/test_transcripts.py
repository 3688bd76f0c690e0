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
        vault.write_note(rel, "changed", expected_sha256="x")
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
    from wikimem.search import _vector_query
    assert _vector_query("What did Ana's friend tell Bob?", ["Ana", "Bob Lee"], Settings()) == "What did friend tell"
    assert _vector_query("Ana", ["Ana"], Settings()) == "Ana"  # nothing would be left: unchanged
    assert _vector_query("What did Ana say?", ["Ana"], Settings(speaker_strip=False)) == "What did Ana say?"
    assert _vector_query("What did Ana say?", [], Settings()) == "What did Ana say?"
