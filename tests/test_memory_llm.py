"""remember --from with a language model, against a fake OpenAI-compatible server on 127.0.0.1."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from test_memory import TRANSCRIPT, memories
from test_writer import vault  # noqa: F401 - the shared fresh-vault fixture


@pytest.fixture
def server():
    state = {"reply": "", "status": 200, "requests": []}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state["requests"].append(body)
            payload = ({"choices": [{"index": 0, "message": {"role": "assistant", "content": state["reply"]}}]}
                       if state["status"] == 200 else {"error": "boom"})
            data = json.dumps(payload).encode()
            self.send_response(state["status"])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield state
    httpd.shutdown()
    httpd.server_close()


def run(vault, server, **kw):
    return vault.remember_from("raw/transcripts/chat.md", llm="openai", llm_model="tiny", llm_url=server["url"], **kw)


def test_llm_proposals_cite_real_turns_only(vault, server):
    (vault.root / "raw/transcripts/chat.md").write_text(TRANSCRIPT)
    server["reply"] = ("[S1-1] persona: Sam prefers short answers without emoji.\n"
                       "- [S1-4] decision: Sam's team uses PostgreSQL for the billing service.\n"
                       "[S9-9] persona: an invented turn that must be dropped.\n"
                       "some chatter the parser ignores")
    results = run(vault, server, dry_run=True)
    assert [(r.action, r.kind, r.source) for r in results] == [
        ("would-write", "persona", "[[chat#^S1-1]]"), ("would-write", "decision", "[[chat#^S1-4]]")]
    assert memories(vault) == []
    prompt = server["requests"][0]["messages"][1]["content"]
    assert "[S1-3] Sam: What is the weather like in Paris?" in prompt
    written = run(vault, server)
    assert [r.action for r in written] == ["written", "written"] and len(memories(vault)) == 2
    assert vault.parse_file(written[1].path).body.strip() == "Sam's team uses PostgreSQL for the billing service."


def test_llm_failure_falls_back_to_extractive_with_a_warning(vault, server):
    (vault.root / "raw/transcripts/chat.md").write_text(TRANSCRIPT)
    server["status"] = 500
    results = run(vault, server, dry_run=True)
    assert len(results) == 4 and all("extractively instead" in r.warnings[0] for r in results)


def test_remember_takes_llm_timeout_for_the_judge_and_refuses_a_bad_one(vault, monkeypatch):  # noqa: F811
    # Was: `remember` had no --llm-timeout (the API and settings took it; the command did not)
    from typer.testing import CliRunner

    from wikimem import llm as llm_mod
    from wikimem.cli import app
    seen = []

    def complete(kind, model, url, api_key, messages, timeout, *args, **kwargs):
        seen.append(timeout)
        raise llm_mod.LLMError("the model is away")
    monkeypatch.setattr(llm_mod, "complete", complete)
    runner = CliRunner()
    base = ["remember", "-V", str(vault.root), "--llm", "openai", "--llm-url", "http://127.0.0.1:9", "--llm-model", "m"]
    assert runner.invoke(app, [*base, "Ann's team meets on Mondays at 10."]).exit_code == 0
    result = runner.invoke(app, [*base, "Ann's team meets on Tuesdays at 10.", "--llm-timeout", "2.5"])
    assert result.exit_code == 0, result.output
    assert seen and seen[-1] == 2.5, seen
    bad = runner.invoke(app, [*base, "Ann likes tea.", "--llm-timeout", "-1"])
    assert bad.exit_code == 2 and "positive number" in bad.output
