"""Issue 28 item 14: a vault with a lexical index but no vectors yet answers a search at once from
the lexical side (saying so), instead of waiting for the model to load (seconds; more on first use).

No wall-clock bound (issue 47 item 3): the model's load blocks until the test releases it, so a search
that waited for it could only return after the release; the search must return before."""
import threading

from wikimem import embed
from wikimem.api import open_vault


def test_a_search_before_any_vector_does_not_wait_for_the_model(make_vault, monkeypatch):
    root = make_vault({f"n{i}.md": f"# Note {i}\n\nquillodex topic {i}\n" for i in range(20)})
    open_vault(root, embedder="fake").index(embed=False)  # e.g. `wikimem index --no-embed`
    real = embed.get_embedder
    released = threading.Event()

    def blocked(settings):
        released.wait(120)  # a model that takes long to load (first-use conversion, a cold disk)
        return real(settings)

    monkeypatch.setattr(embed, "get_embedder", blocked)
    v = open_vault(root, embedder="fake")
    answer = {}
    searcher = threading.Thread(target=lambda: answer.setdefault("result", v.search("quillodex")), daemon=True)
    searcher.start()
    searcher.join(60)  # generous: the search itself takes milliseconds
    returned_before_the_model = not searcher.is_alive()
    released.set()
    searcher.join(60)
    assert returned_before_the_model, "the search waited for the model to load"
    result = answer["result"]
    assert result.hits and "vectors_partial" in result.degraded
    assert any("lexical" in n for n in result.notices)
