"""Ollama and OpenAI-compatible embedders against a fake HTTP server on 127.0.0.1."""
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from wikimem.api import open_vault
from wikimem.config import Settings
from wikimem.embed import get_embedder
from wikimem.errors import ConfigError, EmbedderError


class FakeServer:
    """Answers /api/embed (Ollama) and /v1/embeddings (OpenAI). ``dim`` and ``models`` are mutable."""

    def __init__(self):
        self.dim = 8
        self.models = {"good-model"}
        self.requests = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, body, self.headers.get("Authorization")))
                if body.get("model") not in server.models:
                    self._send(404, {"error": f"model '{body.get('model')}' not found"})
                    return
                texts = body["input"]
                vecs = [[float(len(t) % 7 + i) for i in range(server.dim)] for t in texts]
                if self.path == "/api/embed":
                    self._send(200, {"model": body["model"], "embeddings": vecs})
                elif self.path == "/v1/embeddings":
                    self._send(200, {"data": [{"index": i, "embedding": v} for i, v in reversed(list(enumerate(vecs)))]})
                else:
                    self._send(404, {"error": "no route"})

            def _send(self, code, payload):
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    with FakeServer() as s:
        yield s


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


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
        get_embedder(Settings(embedder=kind, embed_model="m", embed_url=f"http://127.0.0.1:{_free_port()}",
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
        f'embedder = "ollama"\nembed_model = "m"\nembed_url = "http://127.0.0.1:{_free_port()}"\nembed_timeout = 2\n')
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
