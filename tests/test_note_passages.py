"""A note's passages: paragraphs and list items, embedded and held for re-ranking, never searched."""
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikimem.api import open_vault
from wikimem.index.passages import blocks, passage_id, passages
from wikimem.stores.local.vectors import HELD_BIT, VectorIndex, is_held
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


def test_a_fenced_block_is_read_verbatim():
    text = "Install it.\n\n```sh\n# from PyPI\npip install x\n\n# or from source\nmake\n```\n\nThen run it.\n"
    assert blocks(text) == ["Install it. ```sh # from PyPI pip install x # or from source make ```", "Then run it."]
    assert blocks("Text.\n\n~~~\nnever closed\n\n# still code") == ["Text. ~~~ never closed # still code"]
    assert blocks("Run:\n```tar xf a.tar```\n\n# Next\n\nMore.") == ["Run: ```tar xf a.tar```", "More."]


def test_a_fence_in_a_nested_list_item_and_text_after_a_fence():
    text = "- Install:\n\n    ```\n    - not an item\n\n    pip install x\n    ```\n- Next step\n"
    assert blocks(text) == ["- Install: ``` - not an item pip install x ```", "- Next step"]
    assert blocks("Some text\n```\ncode\n```\nmore text") == ["Some text ``` code ```", "more text"]


def test_crlf_line_endings_break_paragraphs_too():
    assert blocks("One.\r\n\r\nTwo.\r\n- three\r\n") == ["One.", "Two.", "- three"]


def test_a_number_opens_a_list_item_only_as_commonmark_says():
    assert blocks("Released in\n2024. A good year.\n") == ["Released in 2024. A good year."]
    assert blocks("Steps:\n1. first\n2. second\n") == ["Steps:", "1. first", "2. second"]


def test_repeated_blocks_count_once():
    assert passages(_chunk("- same\n\n- same\n"), "all") == []


_LINE = st.text(alphabet=st.sampled_from("ab -*`#1.\t~\r"), min_size=0, max_size=12)


def _outside_fences(lines):
    """The reference model: lines that are not headings, with fenced blocks (```/~~~, closed by a
    line of the same character at least as long) kept whole."""
    kept, fence = [], None
    for line in lines:
        stripped = line.strip()
        if fence:
            kept.append(line)
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = None
            continue
        opening = re.match(r"\s*(`{3,}|~{3,})", line)
        if opening and not (opening.group(1)[0] == "`" and "`" in line[opening.end():]):
            fence = opening.group(1)
            kept.append(line)
        elif not re.match(r" {0,3}#{1,6}(?:[ \t]|$)", line):
            kept.append(line)
    return kept


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE, max_size=12))
def test_blocks_lose_no_words_but_headings_and_wordless_blocks(lines):
    text = "\n".join(lines)
    got = blocks(text)
    assert all("\n" not in b and "\r" not in b for b in got)
    expected = "\n".join(_outside_fences(text.replace("\r\n", "\n").replace("\r", "\n").split("\n")))
    wordy = re.compile(r"[^\W_]")  # a block of no letter or digit ("---", "- ") is dropped, nothing else
    assert [w for w in " ".join(got).split() if wordy.search(w)] == [w for w in expected.split() if wordy.search(w)]
    assert all(wordy.search(b) for b in got)


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
    top = result.hits[0]
    assert top.passage == "- zebra crossing lights at night"  # the item that matched, without the title prefix
    assert top.components["vector_passage"] > top.components["vector_whole"]
    assert top.to_dict()["passage"] == top.passage
    held.close()


def test_the_cli_shows_the_nearest_passage_as_the_snippet(make_vault, monkeypatch):
    from typer.testing import CliRunner
    from wikimem.cli import app
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    root = make_vault({"long.md": "# long\n\n" + _items(["apple", "pear", "plum", "fig"])
                       + "\n\n- zebra crossing lights at night\n"})
    CliRunner().invoke(app, ["index", str(root)])
    got = CliRunner().invoke(app, ["search", "zebra crossing lights at night", "--vault", str(root), "--explain"])
    assert got.exit_code == 0, got.output
    lines = got.output.splitlines()
    assert lines[1].strip() == "- zebra crossing lights at night"  # not the page's first 240 characters
    assert "vector_passage=" in got.output


def _held_ids(vault) -> set[int]:
    index = vault.cache.vectors(vault.cache.embedder().identity.dim)
    return {int(i) for i in index.ids().tolist() if is_held(i)}


def _held_rows(vault) -> set[int]:
    return {r[0] for r in vault.cache.db.execute(f"SELECT pid FROM passages WHERE pid >= {HELD_BIT}")}


def test_a_chunk_with_some_passages_embedded_ranks_by_its_whole_vector(make_vault):
    from wikimem.index.embedding import embed_missing, sync_vectors
    from wikimem.model import BuildReport
    vault = open_vault(make_vault({"long.md": "# long\n\n" + _items(["apple", "pear", "plum"])}), embedder="fake")
    vault.index(embed=False)
    embedder = vault.cache.embedder()
    state = sync_vectors(vault.cache, embedder, rebuild=False)
    held = sorted(v for v in state.missing if is_held(v))
    state.missing = [v for v in state.missing if not is_held(v)] + held[:1]  # one passage of three
    embed_missing(vault.cache, embedder, state, 8, None, BuildReport())
    hit = vault.search("plum thing", mode="vector").hits[0]
    index = vault.cache.vectors(embedder.identity.dim)
    vid = vault.cache.manifest.vids_by_id([hit.chunk_id])[hit.chunk_id]
    whole = float(np.dot(embedder.embed_query("plum thing"), index.vectors([vid])[vid]))
    assert hit.components["vector"] == pytest.approx(whole, abs=1e-5)
    vault.index()  # all three: the mean of the whole and the best passage
    assert vault.search("plum thing", mode="vector").hits[0].components["vector"] != pytest.approx(whole, abs=1e-5)


def test_coverage_tells_missing_chunks_from_missing_passages(make_vault):
    from wikimem.index.embedding import embed_missing, sync_vectors
    from wikimem.model import BuildReport
    vault = open_vault(make_vault({"long.md": "# long\n\n" + _items(["apple", "pear", "plum"])}), embedder="fake")
    vault.index(embed=False)
    state = sync_vectors(vault.cache, vault.cache.embedder(), rebuild=False)
    state.missing = [v for v in state.missing if not is_held(v)]  # embed the chunks, not the passages
    embed_missing(vault.cache, vault.cache.embedder(), state, 8, None, BuildReport())
    info = vault.status()
    assert info["vector_coverage"] == 1.0 and info["passage_coverage"] == 0.0
    assert info["degraded"] == ["passages_partial"]
    result = vault.search("plum thing")
    assert result.coverage == 1.0 and result.degraded == ("passages_partial",) and result.hits
    report = vault.index()
    assert report.degraded == [] and report.passages_held == report.passages_wanted == 3
    assert vault.status()["passage_coverage"] == 1.0 and vault.search("plum thing").degraded == ()


def test_an_edit_replaces_a_notes_held_passages(make_vault):
    root = make_vault({"long.md": "# long\n\n" + _items(["apple", "pear", "plum"])})
    vault = open_vault(root, embedder="fake")
    vault.index()
    before = _held_ids(vault)
    assert before and before == _held_rows(vault)
    (root / "long.md").write_text("# long\n\n" + _items(["apple", "quince", "grape", "melon"]), encoding="utf-8")
    vault.index()
    after = _held_ids(vault)
    assert after == _held_rows(vault) and len(after) == 4 and after != before
    (root / "long.md").write_text("# long\n\nOne paragraph only.\n", encoding="utf-8")
    vault.index()
    assert _held_ids(vault) == set() == _held_rows(vault)


def test_switching_passage_modes_adds_and_drops_held_vectors(make_vault):
    root = make_vault({"long.md": "# long\n\n" + _items(["apple", "pear", "plum"])})
    v = open_vault(root, embedder="fake", embed_passages="transcripts")
    v.index()
    assert _held_ids(v) == set()
    v.close()
    v = open_vault(root, embedder="fake", embed_passages="all")
    v.index()
    assert len(_held_ids(v)) == 3 == len(_held_rows(v))
    v.close()
    v = open_vault(root, embedder="fake", embed_passages="transcripts")
    v.index()
    assert _held_ids(v) == set() == _held_rows(v)


@pytest.mark.local_store
def test_another_process_reads_held_vectors_from_a_delta(make_vault):
    import json
    import subprocess
    import sys
    files = {f"n{i}.md": f"# n{i}\n\n" + _items([f"w{i}a", f"w{i}b"]) for i in range(40)}
    root = make_vault(files)
    vault = open_vault(root, embedder="fake")
    vault.index()
    (root / "n3.md").write_text("# n3\n\n" + _items(["fresh", "newer", "newest"]), encoding="utf-8")
    vault.index()
    meta = vault.cache.meta()
    assert meta["vectors_delta"] and any(is_held(i) for i in meta["vectors_delta"]["add"])  # saved as a delta
    mine = sorted(vault.cache.vectors(vault.cache.embedder().identity.dim).ids().tolist())
    code = ("import json, sys\nfrom wikimem.api import open_vault\n"
            "v = open_vault(sys.argv[1], embedder='fake')\n"
            "ix = v.cache.vectors(v.cache.embedder().identity.dim)\n"
            "print(json.dumps(sorted(ix.ids().tolist())))\n")
    out = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == mine


def test_an_edit_that_changes_no_vector_clears_the_pending_flags(make_vault):
    """A lexical-first build marks vectors pending; when the vectors turn out complete (only the
    frontmatter changed), the background step must say so (found by a review: the flag stuck)."""
    root = make_vault({"long.md": "---\ntags: [a]\n---\n# long\n\n" + _items(["apple", "pear", "plum"])})
    vault = open_vault(root, embedder="fake")
    vault.index()
    (root / "long.md").write_text("---\ntags: [b]\n---\n# long\n\n" + _items(["apple", "pear", "plum"]),
                                  encoding="utf-8")
    vault.index(embed=False)
    assert vault.status()["degraded"] == ["vectors_partial"]  # not known yet
    vault.embed_pending()
    assert vault.status()["degraded"] == [] and vault.search("plum thing").degraded == ()


def test_an_id_added_twice_is_one_id_in_the_delta(tmp_path):
    index = VectorIndex(tmp_path / "v.faiss", 3)
    index.add([1], np.eye(3, dtype=np.float32)[:1])
    index.save()
    index.add([2, 2], np.eye(3, dtype=np.float32)[1:3])  # FAISS takes an id twice
    assert index.delta() == ([2], [])


def test_a_turns_passage_keeps_its_speaker_and_a_notes_loses_its_title(make_vault):
    from wikimem.ingest import Session, Turn
    root = make_vault({"notes/Ana.md": "# Ana\n\n- Ana: likes tea\n\n- zebra crossing lights at night\n"})
    vault = open_vault(root, embedder="fake")
    vault.import_transcripts([Session(
        title="Ana", number=1, date="2023-05-08T13:56:00", label="1 pm", participants=("Ana", "Bo"), source="test",
        turns=[Turn("Ana", "I walked home. The zebra crossing lights at night were broken.", "D1:1"),
               Turn("Bo", "Oh no. Did you call anyone?", "D1:2")])])
    vault.index()
    hits = {h.path: h for h in vault.search("zebra crossing lights at night", mode="vector", limit=10).hits}
    note = hits["notes/Ana.md"]
    assert note.passage == "- zebra crossing lights at night"
    turn = next(h for p, h in hits.items() if p.startswith("raw/"))
    assert turn.passage is not None and turn.passage.startswith("Ana: ")  # the speaker stays


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**62), max_size=40), st.lists(st.integers(0, 2**62), max_size=40))
def test_id_sets_as_sorted_arrays(a, b):
    from wikimem.stores.vectors import id_difference, sorted_ids
    b = b + a[: len(a) // 2]  # overlap
    sa, sb = sorted_ids(a), sorted_ids(b)
    assert sa.tolist() == sorted(set(a)) and sb.tolist() == sorted(set(b))
    assert id_difference(sa, sb).tolist() == sorted(set(a) - set(b))


def test_a_retitled_page_gets_new_vectors(make_vault):
    """The embedded text carries the page title; the chunk id does not (found by a hostile test:
    a frontmatter retitle kept the old title's vectors)."""
    root = make_vault({"a.md": "---\ntitle: Alpha\n---\n\n" + _items(["apple", "pear", "plum"])})
    vault = open_vault(root, embedder="fake")
    vault.index()
    before = {r[0] for r in vault.cache.db.execute("SELECT vid FROM chunks UNION ALL SELECT pid FROM passages")}
    (root / "a.md").write_text("---\ntitle: Zebra Quagga\n---\n\n" + _items(["apple", "pear", "plum"]), encoding="utf-8")
    report = vault.index()
    after = {r[0] for r in vault.cache.db.execute("SELECT vid FROM chunks UNION ALL SELECT pid FROM passages")}
    assert before.isdisjoint(after) and report.embedded_now == len(after)
    assert sorted(vault.cache.vectors(vault.cache.embedder().identity.dim).ids().tolist()) == sorted(after)


def test_cjk_sentences_end_after_their_marks_and_closing_quotes():
    from wikimem.index.passages import sentences
    assert sentences("他说「她说『好。』」然后走了。第三句。") == ["他说「她说『好。』」", "然后走了。", "第三句。"]
    assert sentences("他说‘好。’然后走了。") == ["他说‘好。’", "然后走了。"]
    assert sentences("真的吗？！好的。") == ["真的吗？！", "好的。"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab 。！？…」』”.!?;\n中"), max_size=30))
def test_sentences_lose_nothing_and_are_never_empty(text):
    from wikimem.index.passages import sentences
    got = sentences(text)
    assert all(s and s == s.strip() for s in got)
    assert "".join(got).replace(" ", "").replace("\n", "") == text.replace(" ", "").replace("\n", "")


def test_a_new_passage_cut_rewrites_the_passages_of_unchanged_pages(make_vault, monkeypatch):
    """Rebuild-equivalence when the cutting changes: passages.VERSION is part of the manifest's
    passage key, so unchanged pages do not keep passages cut the old way."""
    from wikimem.index import build as build_module
    from wikimem.index import passages as passages_module
    root = make_vault({"long.md": "# long\n\n" + _items(["apple", "pear", "plum"])})
    vault = open_vault(root, embedder="fake")
    vault.index()
    assert vault.cache.meta()["passages"] == f"all/{passages_module.VERSION}"
    monkeypatch.setattr(build_module, "PASSAGES_VERSION", passages_module.VERSION + 1)
    monkeypatch.setattr(build_module, "passages", lambda chunk, mode: ["long: one new cut", "long: another"])
    report = vault.index()
    texts = sorted(t for (t,) in vault.cache.db.execute("SELECT text FROM passages"))
    assert texts == ["long: another", "long: one new cut"] and report.embedded_now == 2
    assert vault.status()["degraded"] == []


@pytest.mark.local_store
@pytest.mark.parametrize("how", ["index", "embed_pending"])
def test_an_index_file_of_the_previous_format_is_found_and_rebuilt_from_the_vector_cache(make_vault, how):
    """A vault indexed by the previous version (WMVI2: held vectors in a FAISS index, the manifest
    recording no file format) is not read as it is: search says the vector side is unusable, and
    the next build, or a watcher's embed_pending, rebuilds the file from the vector cache with no
    model call."""
    from wikimem.stores.local.cachedir import fingerprint
    from wikimem.stores.local.vectors import checksum

    root = make_vault({"a.md": "# A\n\n- one item\n- another item\n", "b.md": "# B\n\ntext\n"})
    v = open_vault(root, embedder="fake")
    v.index()
    dim = v.cache.embedder().identity.dim
    ids = sorted(v.cache.vectors(dim).ids().tolist())
    hits = [h.chunk_id for h in v.search("another item").hits]
    faiss_path = root / ".wikimem" / "vectors.faiss"
    data = b"WMVI2\n" + faiss_path.read_bytes()[6:]
    faiss_path.write_bytes(data)
    with v.cache.transaction() as db:  # the manifest as the previous version left it
        v.cache.set_meta(db, artifacts={"faiss": {**fingerprint(faiss_path), "checksum": checksum((data,))}})
    v.close()
    with pytest.raises(ValueError, match="older version"):
        VectorIndex.load(faiss_path, dim)
    again = open_vault(root, embedder="fake")
    assert "vectors_damaged" in again.search("another item").degraded
    calls = []
    embedder = again.cache.embedder()
    real = embedder.embed_passages
    embedder.embed_passages = lambda texts: calls.append(len(texts)) or real(texts)
    report = again.index() if how == "index" else again.embed_pending()
    assert report.coverage == 1.0 and not calls
    assert sorted(again.cache.vectors(dim).ids().tolist()) == ids
    result = again.search("another item")
    assert not result.degraded and [h.chunk_id for h in result.hits] == hits


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "remove"]), st.lists(st.integers(0, 12), max_size=6)), max_size=25))
def test_the_held_store_behaves_like_a_map_of_ids_to_float16_vectors(steps):
    from wikimem.stores.local.vectors import HeldStore

    store, model = HeldStore(4), {}
    rng = np.random.default_rng(len(steps))
    for op, ids in steps:
        ids = [i | HELD_BIT for i in ids]
        if op == "add":
            vecs = rng.standard_normal((len(ids), 4)).astype(np.float32)
            store.add_with_ids(vecs, np.asarray(ids, dtype=np.int64))
            model.update(zip(ids, vecs.astype(np.float16).astype(np.float32)))  # a repeated id: its last vector
        else:
            assert store.remove_ids(np.asarray(ids, dtype=np.int64)) == len(set(ids) & set(model))
            for i in ids:
                model.pop(i, None)
        assert store.ntotal == len(model) and sorted(store.ids().tolist()) == sorted(model)
    for i, vec in model.items():
        assert np.array_equal(store.reconstruct(i), vec)
    if model:
        order = sorted(model)
        assert np.array_equal(store.reconstruct_batch(order), np.stack([model[i] for i in order]))
    with pytest.raises(RuntimeError):
        store.reconstruct(HELD_BIT | 99)
    with pytest.raises(RuntimeError):
        store.reconstruct_batch([HELD_BIT | 99])
    again = HeldStore.from_bytes(b"".join(store.parts()), 4)
    assert sorted(again.ids().tolist()) == sorted(model)
    assert all(np.array_equal(again.reconstruct(i), vec) for i, vec in model.items())
    with pytest.raises(ValueError):
        HeldStore.from_bytes(b"".join(store.parts())[:-1], 4)


def test_a_huge_code_block_is_a_passage_of_bounded_length():
    """A code block joins the block before it whole: a 300,000-character one was one passage
    embedded as ~200 windows. A passage is at most passages.MAX_CHARS."""
    from wikimem.index.passages import MAX_CHARS, passages
    from wikimem.model import Chunk
    code = "\n".join(f"step_{i} = compute({i})" for i in range(15000))
    text = f"Run the build script.\n\n```python\n{code}\n```\n\nThen check the output folder.\n"
    chunk = Chunk(id="c", path="big.md", title="Big", heading_path=(), text=text, start=0, end=len(text))
    got = passages(chunk, "all")
    assert len(got) >= 2 and all(len(p) <= MAX_CHARS for p in got)
    assert got[0].startswith("Big: Run the build script.")
