"""remember with an LLM judge (issue 53): recorded replies from a loopback fake Ollama /
OpenAI-compatible server; every answer is checked (the id shown, active, same kind) before anything
is written, and a wrong id or a malformed reply falls back to the structural rule."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from fake_http import FakeJSONServer, chat_reply
from wikimem.api import open_vault


class Judge(FakeJSONServer):
    def __init__(self):
        super().__init__()
        self.reply = '{"event": "ADD"}'

    def respond(self, path, body):
        return chat_reply(path, body, self.reply)


@pytest.fixture
def judge():
    with Judge() as server:
        yield server


@pytest.fixture
def vault(make_vault):
    v = open_vault(make_vault({"SCHEMA.md": "# S\n"}), embedder="fake")
    v.index()
    return v


def ask(vault, judge, fact, kind="openai", **kw):
    url = judge.url + ("/v1" if kind == "openai" else "")
    return vault.remember(fact, llm=kind, llm_model="tiny", llm_url=url, **kw)


def shown(judge):
    """The memories the last request showed the model: id -> text."""
    body = judge.requests[-1][1]
    data = json.loads(body["messages"][-1]["content"])
    return data["new_fact"], {m["id"]: m["text"] for m in data["memories"]}


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_update_with_a_shown_id_supersedes_it(vault, judge, kind):
    first = vault.remember("The backend uses Python 3.11.")
    judge.reply = '```json\n{"event": "UPDATE", "id": "0"}\n```'  # fenced, as models often answer
    second = ask(vault, judge, "The backend uses Go 1.22.", kind)
    new_fact, memories = shown(judge)
    assert new_fact == "The backend uses Go 1.22." and memories == {"0": "The backend uses Python 3.11."}
    assert second.action == "written" and second.supersedes == first.path and second.judge == "llm"
    assert vault.parse_file(first.path).status == "superseded"


def test_add_keeps_both_even_where_the_rule_would_supersede(vault, judge):
    first = vault.remember("Grafana runs on port 3000.")
    judge.reply = '{"event": "ADD"}'
    second = ask(vault, judge, "Grafana runs on port 3001.")
    assert second.supersedes is None and second.possible_update == []
    assert vault.parse_file(first.path).status != "superseded"


def test_duplicate_names_the_existing_memory(vault, judge):
    first = vault.remember("Ana is the product owner for checkout.")
    judge.reply = '{"event": "DUPLICATE", "id": "0"}'
    again = ask(vault, judge, "Checkout's product owner is Ana.")
    assert again.action == "duplicate" and again.path == first.path
    assert len(list((vault.root / "memories").iterdir())) == 1


@pytest.mark.parametrize("reply, why", [
    ('{"event": "UPDATE", "id": "7"}', "not shown"),  # an id it was not given
    ('{"event": "UPDATE", "id": "memories/invented.md"}', "not shown"),
    ("Sure! The new fact updates the first memory.", "not understood"),  # not JSON
    ('{"event": "REPLACE", "id": "0"}', "not understood"),  # not one of the events
    ('{"event": "DUPLICATE"}', "not shown"),  # no id
])
def test_a_wrong_or_malformed_answer_falls_back_to_the_rule(vault, judge, reply, why):
    first = vault.remember("The production database is PostgreSQL 14.")
    judge.reply = reply
    second = ask(vault, judge, "The production database is now PostgreSQL 16.")
    # the rule decided: a true update supersedes
    assert second.action == "written" and second.supersedes == first.path and second.judge == "rule"
    assert any(why in w and "rule decided instead" in w for w in second.warnings)


def test_a_server_that_fails_falls_back_to_the_rule(vault):
    from fake_http import free_port
    first = vault.remember("Leo reports to Hannah.")
    second = vault.remember("Leo reports to Felix now.", llm="openai", llm_model="tiny",
                            llm_url=f"http://127.0.0.1:{free_port()}/v1")
    assert second.supersedes == first.path and any("rule decided instead" in w for w in second.warnings)


def test_an_id_that_is_no_longer_an_active_memory_of_the_kind_is_refused(vault, judge):
    from wikimem.knowledge.memory_judge import judge as llm_judge
    old = vault.remember("Grafana runs on port 3000.")
    new = vault.remember("Grafana runs on port 3001.")  # supersedes old
    other = vault.remember("The team prefers rebase over merge.", kind="decision")
    judge.reply = '{"event": "UPDATE", "id": "0"}'
    for path in (old.path, other.path):
        verdict, warning = llm_judge(vault.ctx, "Grafana runs on port 3002.", "episodic", [path],
                                     llm="openai", model="tiny", url=judge.url + "/v1")
        assert verdict is None and "not an active episodic memory" in warning
    verdict, warning = llm_judge(vault.ctx, "Grafana runs on port 3002.", "episodic", [new.path],
                                 llm="openai", model="tiny", url=judge.url + "/v1")
    assert verdict.event == "UPDATE" and verdict.path == new.path and warning is None


def test_the_memory_llm_setting_and_the_cli_flag(vault, judge, monkeypatch):
    from wikimem.cli import app
    first = vault.remember("The backend uses Python 3.11.")
    judge.reply = '{"event": "UPDATE", "id": "0"}'
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    out = CliRunner().invoke(app, ["remember", "The backend uses Go 1.22.", "--llm", "openai", "--llm-model", "tiny",
                                   "--llm-url", judge.url + "/v1", "--json", "-V", str(vault.root)])
    assert out.exit_code == 0, out.output
    res = json.loads(out.output)
    assert res["supersedes"] == first.path and res["judge"] == "llm"
    # the setting alone turns the judge on (no flag)
    (vault.root / ".wikimem.toml").write_text(f'memory_llm = "openai"\nllm_model = "tiny"\nllm_url = "{judge.url}/v1"\n')
    judge.reply = '{"event": "ADD"}'
    v2 = open_vault(vault.root, embedder="fake")
    n = len(judge.requests)
    res2 = v2.remember("The backend uses Rust 1.80.")
    assert len(judge.requests) == n + 1 and res2.judge == "llm" and res2.supersedes is None
