"""A hostile pass on the LLM client (wikimem/llm.py) that query, compile and remember share: a server
that trickles its reply a byte at a time, and one that answers with megabytes. ``--llm-timeout`` bounds
the whole reply, and a reply past the size bound is refused unread; both fall back with a notice."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from wikimem.api import open_vault
from wikimem.llm import MAX_REPLY_BYTES

from conftest import indexed_examples
from fake_http import chat_reply

QUESTION = "Which FAISS index lets vectors be removed by id?"


class Hostile:
    """POST answers: ``mode`` "trickle" sends a valid chat reply one byte every ``gap`` seconds,
    "huge" sends a valid chat reply whose text is larger than the client's bound."""

    def __init__(self, mode: str, gap: float = 0.2):
        self.mode, self.gap = mode, gap
        self.stop = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                text = "x" * (MAX_REPLY_BYTES + 1000) if owner.mode == "huge" else "IndexIDMap2 [1]." + " " * 200
                data = json.dumps(chat_reply(self.path, body, text)[1]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    if owner.mode == "huge":
                        self.wfile.write(data)
                        return
                    for i in range(len(data)):
                        if owner.stop.is_set():
                            return
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        time.sleep(owner.gap)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def vault(tmp_path_factory):
    return indexed_examples(tmp_path_factory.mktemp("hostile-llm") / "examples")


KINDS = [("ollama", ""), ("openai", "/v1")]


@pytest.mark.parametrize("kind,base", KINDS)
def test_a_trickling_server_is_cut_off_at_the_timeout(vault, kind, base):
    # ~300 bytes at 0.2 s each: a minute for the whole reply; each byte arrives well inside a 1 s read timeout
    with Hostile("trickle") as server:
        started = time.monotonic()
        answer = vault.query(QUESTION, write=False, llm=kind, llm_model="tiny", llm_url=server.url + base,
                             llm_timeout=1.0)
        took = time.monotonic() - started
    assert took < 20, took  # measured ~1.5 s; the whole reply would take ~60 s
    assert answer.mode == "extractive" and answer.answered
    assert any("within 1 s" in n and "answered extractively instead" in n for n in answer.notices), answer.notices


@pytest.mark.parametrize("kind,base", KINDS)
def test_a_huge_reply_is_refused_not_filed(vault, kind, base):
    with Hostile("huge") as server:
        answer = vault.query(QUESTION, llm=kind, llm_model="tiny", llm_url=server.url + base, llm_timeout=30.0)
    assert answer.mode == "extractive" and answer.answered
    assert any("larger than" in n for n in answer.notices), answer.notices
    assert len(answer.text) < 100_000
    if answer.page:
        assert (vault.root / answer.page).stat().st_size < 100_000


def test_a_trickling_server_does_not_hold_remember_from(tmp_path):
    """remember --from with a model: the same client, the same bound, the extractive proposals instead."""
    from wikimem.api import init_vault
    init_vault(tmp_path / "v")
    (tmp_path / "v" / "raw" / "transcripts" / "chat.md").write_text(
        "# chat\n\n**Ana** (2026-01-02 10:00): I always use tabs for Go code. ^t1\n\n"
        "**assistant** (2026-01-02 10:01): Noted. ^t2\n", encoding="utf-8")
    v = open_vault(tmp_path / "v", embedder="fake")
    with Hostile("trickle") as server:
        started = time.monotonic()
        results = v.remember_from("raw/transcripts/chat.md", dry_run=True, llm="openai", llm_model="tiny",
                                  llm_url=server.url + "/v1", timeout=1.0)
        took = time.monotonic() - started
    assert took < 20, took
    assert any("within 1 s" in w for r in results for w in r.warnings) or not results


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf")])
def test_a_timeout_that_is_no_positive_number_is_a_usage_error(vault, timeout):
    """--llm-timeout -1 reached httpx and came back as "unexpected ValueError ... a wikimem bug"."""
    from wikimem.errors import UsageError
    with pytest.raises(UsageError, match="positive number of seconds"):
        vault.query(QUESTION, write=False, llm="ollama", llm_model="tiny", llm_url="http://127.0.0.1:9",
                    llm_timeout=timeout)
