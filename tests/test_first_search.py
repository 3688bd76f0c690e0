"""Issue 28 item 14: a vault with a lexical index but no vectors yet answers a search at once from
the lexical side (saying so), instead of waiting for the model to load (seconds; more on first use)."""
import time

from wikimem import embed
from wikimem.api import open_vault


def test_a_search_before_any_vector_does_not_wait_for_the_model(make_vault, monkeypatch):
    root = make_vault({f"n{i}.md": f"# Note {i}\n\nquillodex topic {i}\n" for i in range(20)})
    open_vault(root, embedder="fake").index(embed=False)  # e.g. `wikimem index --no-embed`
    real = embed.get_embedder

    def slow(settings):
        time.sleep(3.0)  # a model that takes long to load (first-use conversion, a cold disk)
        return real(settings)

    monkeypatch.setattr(embed, "get_embedder", slow)
    v = open_vault(root, embedder="fake")
    started = time.monotonic()
    result = v.search("quillodex")
    took = time.monotonic() - started
    assert result.hits and "vectors_partial" in result.degraded and took < 2.5
    assert any("lexical" in n for n in result.notices)
