"""remember --llm against a judge that calls a changed fact a duplicate: DUPLICATE leaves the new fact
unwritten, so a verdict that would hide a new value (the rule reads an update, or the values differ)
is not taken; the rule decides and the warning says why. A paraphrase the model calls a duplicate
still is one."""
import pytest

from fake_http import FakeJSONServer, chat_reply
from wikimem.api import open_vault


class Judge(FakeJSONServer):
    reply = '{"event": "DUPLICATE", "id": "0"}'

    def respond(self, path, body):
        return chat_reply(path, body, self.reply)


@pytest.fixture
def vault(make_vault):
    v = open_vault(make_vault({"SCHEMA.md": "# S\n"}), embedder="fake")
    v.index()
    return v


@pytest.mark.parametrize("old,new", [
    ("The deploy window is Thursday mornings.", "The deploy window is Friday mornings."),
    ("The API rate limit is 100 requests per minute.", "The API rate limit is 250 requests per minute."),
    ("测试环境的数据库是 PostgreSQL 14。", "测试环境的数据库是 PostgreSQL 16。"),
])
def test_a_duplicate_verdict_that_hides_a_new_value_is_not_taken(vault, old, new):
    first = vault.remember(old)
    with Judge() as judge:
        r = vault.remember(new, llm="openai", llm_model="tiny", llm_url=judge.url + "/v1")
    assert r.action == "written" and r.judge == "rule", r
    assert any("called it a duplicate" in w for w in r.warnings), r.warnings
    assert (vault.root / r.path).read_text(encoding="utf-8").rstrip().endswith(new)
    assert r.supersedes == first.path or first.path in r.possible_update


def test_a_paraphrase_called_a_duplicate_still_is_one(vault):
    first = vault.remember("Ana is the product owner for checkout.")
    with Judge() as judge:
        r = vault.remember("Checkout's product owner is Ana.", llm="openai", llm_model="tiny", llm_url=judge.url + "/v1")
    assert r.action == "duplicate" and r.path == first.path and r.judge == "llm"
