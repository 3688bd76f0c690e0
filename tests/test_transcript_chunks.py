"""A transcript note whose turns repeat word for word still gets one chunk per turn, each with its own
id (issue 10 item 3)."""
import pytest

from wikimem.parse import chunk_page, parse_page

from support_vault_checks import GOOD, everything

pytestmark = pytest.mark.adversarial


def test_transcript_with_repeated_turns_indexes(make_vault):
    text = ("---\nkind: transcript\n---\n# Chat\n\n**Ann**: Ready?\n\n**Bob**: Yes.\n\n**Ann**: Sure?\n\n"
            "**Bob**: Yes.\n\n**Ann**: Good.\n")
    root = make_vault({**GOOD, "raw/transcripts/chat.md": text})
    v, report, status, summary = everything(root)
    chunks = chunk_page(parse_page("raw/transcripts/chat.md", text))
    assert chunks[1].text == chunks[3].text  # the case: the same turn text twice
    assert len(chunks) == 5 and len({c.id for c in chunks}) == 5
    assert v.cache.db.execute("SELECT count(*) FROM chunks WHERE path='raw/transcripts/chat.md'").fetchone()[0] == 5
