"""A note's passages: paragraphs and list items, embedded and held for re-ranking, never searched."""
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikimem.api import open_vault
from wikimem.index.passages import blocks, passage_id, passages
from wikimem.index.vectors import HELD_BIT, VectorIndex, is_held
from wikimem.model import Chunk

PAGE = """# tar

> Archiving utility.
> Often combined with a compression method.

- Create an archive from files:

`tar cf {{target.tar}} {{file1 file2}}`

- Extract a (compressed) archive file into the current directory verbosely:

`tar xvf {{source.tar[.gz|.bz2|.xz]}}`

## More

A paragraph that spans
two lines.

```
tar tf archive.tar
```
"""


def _chunk(text, title="tar", speakers=()):
    return Chunk(id="c" * 16, path="tar.md", title=title, heading_path=(), text=text, start=0, end=len(text),
                 speakers=speakers)


def test_blocks_are_paragraphs_and_list_items_with_their_code():
    assert blocks(PAGE) == [
        "> Archiving utility. > Often combined with a compression method.",
        "- Create an archive from files: `tar cf {{target.tar}} {{file1 file2}}`",
        "- Extract a (compressed) archive file into the current directory verbosely: `tar xvf {{source.tar[.gz|.bz2|.xz]}}`",
        "A paragraph that spans two lines. ``` tar tf archive.tar ```",
    ]


def test_list_items_without_blank_lines_are_blocks_of_their_own():
    assert blocks("Intro:\n- one thing\n- another thing\n1. a step\n") == [
        "Intro:", "- one thing", "- another thing", "1. a step"]


def test_note_passages_carry_the_title_and_one_block_is_no_passage():
    got = passages(_chunk(PAGE), "all")
    assert len(got) == 4 and all(p.startswith("tar: ") for p in got)
    assert passages(_chunk("# One\n\nJust one paragraph here.\n"), "all") == []
    assert passages(_chunk(PAGE), "transcripts") == [] and passages(_chunk(PAGE), "none") == []


def test_a_long_paragraph_is_cut_into_sentence_pairs():
    text = "First one. Second one. Third one.\n\n- item\n"
    assert passages(_chunk(text, title="T"), "all") == [
        "T: First one. Second one.", "T: Second one. Third one.", "T: - item"]


_LINE = st.text(alphabet=st.sampled_from("ab -*`#1.\t"), min_size=0, max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINE, max_size=12))
def test_blocks_lose_no_words_but_headings(lines):
    text = "\n".join(lines)
    kept = [line for line in lines if not re.match(r"#{1,6}[ \t]", line)]
    got = blocks(text)
    assert all("\n" not in b for b in got)
    assert " ".join(got).split() == " ".join(kept).split()


def test_held_ids_are_kept_apart_and_never_searched(tmp_path):
    index = VectorIndex(tmp_path / "v.faiss", 3)
    a, b = np.eye(3, dtype=np.float32)[:2]
    held = passage_id("c" * 16, 0, held=True)
    assert is_held(held) and held & HELD_BIT and not is_held(passage_id("c" * 16, 0))
    index.add([1, held], np.stack([a, b]))
    assert index.ntotal == 2 and sorted(index.ids().tolist()) == [1, held]
    assert index.search(b, 5) == [(1, 0.0)]  # the held vector matches b exactly, yet is not found
    assert np.allclose(index.vector_rows([held]), [b], atol=1e-3)
    ids, rows = index.searched()
    assert ids.tolist() == [1] and np.allclose(rows, [a])
    recorded = index.save()  # the checksum a reader verifies
    again = VectorIndex.load(tmp_path / "v.faiss", 3, recorded)
    assert sorted(again.ids().tolist()) == [1, held] and np.allclose(again.vectors([held])[held], b, atol=1e-3)
    again.remove([held])
    assert again.ids().tolist() == [1] and again.delta() == ([], [held])


def test_an_index_file_of_the_old_format_is_refused(tmp_path):
    import faiss
    old = faiss.IndexIDMap2(faiss.IndexFlatIP(3))
    (tmp_path / "v.faiss").write_bytes(faiss.serialize_index(old).tobytes())
    with pytest.raises(ValueError, match="older version"):
        VectorIndex.load(tmp_path / "v.faiss", 3)


def _items(n):
    return "\n\n".join(f"- {word} thing number {i}:\n\n`cmd {word}`" for i, word in enumerate(n))


def test_search_reranks_notes_by_their_best_passage(make_vault):
    root = make_vault({
        # many unrelated items and one that is exactly the question
        "long.md": "# long\n\n" + _items(["apple", "pear", "plum", "fig", "kiwi", "lime"])
                   + "\n\n- zebra crossing lights at night\n",
        "other.md": "# other\n\n" + _items(["zebra", "crossing", "lights"]),
    })
    whole = open_vault(root, embedder="fake", embed_passages="none")
    whole.index()
    before = {h.path: h.components["vector"] for h in whole.search("zebra crossing lights at night", mode="vector").hits}
    whole.close()
    held = open_vault(root, embedder="fake", embed_passages="all")
    held.index()
    n_held = held.cache.db.execute(f"SELECT count(*) FROM passages WHERE pid >= {HELD_BIT}").fetchone()[0]
    assert n_held == 7 + 3
    result = held.search("zebra crossing lights at night", mode="vector")
    after = {h.path: h.components["vector"] for h in result.hits}
    assert after["long.md"] > before["long.md"]  # its one matching item lifts it
    assert result.hits[0].path == "long.md"
