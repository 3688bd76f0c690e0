"""remember supersedes only an update of the same subject (issue 35 item 9), --no-supersede, restore
(undo a supersede, logged), and remembering a superseded fact again."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.knowledge.similarity import same_slot, same_words


@pytest.fixture
def vault(make_vault):
    v = open_vault(make_vault({"SCHEMA.md": "# S\n"}), embedder="fake")
    v.index()
    return v


@pytest.mark.parametrize("old, new", [
    ("Service auth uses port 8001.", "Service search uses port 8003."),  # the pair
    ("Alice prefers tabs for indentation.", "Bob prefers tabs for indentation."),
    ("For Python I indent with spaces.", "For Go I indent with tabs."),
    ("张伟住在上海。", "李娜住在上海。"),
    ("我们每周五发布到生产环境。", "我们每周五发布到测试环境。"),
])
def test_facts_of_one_shape_about_other_subjects_both_stay_active(vault, old, new):
    # Was: the second recorded as replacing the first, which then left search and prime
    first = vault.remember(old)
    second = vault.remember(new)
    assert second.action == "written" and second.supersedes is None
    assert vault.parse_file(first.path).status != "superseded"


@pytest.mark.parametrize("old, new", [
    ("Service auth uses port 8001.", "Service auth uses port 8002."),
    ("服务 auth 使用端口 8001。", "服务 auth 使用端口 8002。"),
])
def test_a_true_update_still_supersedes(vault, old, new):
    first = vault.remember(old)
    second = vault.remember(new)
    assert second.action == "written" and second.supersedes == first.path


def test_a_changed_value_is_never_a_duplicate():
    # Was (e5): "团队例会在周一..." -> "周二..." taken for a duplicate: the new fact was not written
    assert not same_words("团队例会在周一上午九点。", "团队例会在周二上午九点。")
    assert not same_words("认证服务归身份团队负责。", "认证服务归平台团队负责。")
    assert same_words("用户每天早上跑步五公里。", "用户每天早上都跑步五公里。")
    assert same_slot("codename A3 uses the red theme", "codename A3 now uses the orange theme")
    assert same_slot("The user drinks oat milk in their coffee.",
                     "The user switched from oat milk to soy milk in their coffee.")


def test_no_supersede_keeps_the_earlier_fact(vault):
    first = vault.remember("Service auth uses port 8001.")
    second = vault.remember("Service auth uses port 8002.", supersede=False)
    assert second.action == "written" and second.supersedes is None
    assert [p for p, _ in second.similar] == [first.path]
    assert vault.parse_file(first.path).status != "superseded"


def test_restore_undoes_a_supersede_and_logs_it(vault):
    first = vault.remember("Service auth uses port 8001.")
    second = vault.remember("Service auth uses port 8002.")
    assert vault.parse_file(first.path).status == "superseded"
    res = vault.restore(first.path)
    assert res.changed and res.new == second.path
    assert vault.parse_file(first.path).status != "superseded"
    assert "supersedes" not in vault.parse_file(second.path).frontmatter.data
    assert "restore" in (vault.root / "log.md").read_text()
    assert [h.path for h in vault.search("8001", mode="lexical").hits] == [first.path]
    assert not vault.restore(first.path).changed  # again: nothing to do


def test_remembering_a_superseded_fact_again_says_so(vault):
    # Was: a "-2" copy of the superseded fact
    first = vault.remember("Service auth uses port 8001.")
    vault.remember("Service auth uses port 8002.")
    again = vault.remember("Service auth uses port 8001.")
    assert again.action == "superseded" and again.path == first.path
    assert any("restore" in w for w in again.warnings)
    assert sorted(p.name for p in (vault.root / "memories").iterdir()) == sorted(
        [first.path.rsplit("/", 1)[-1], "service-auth-uses-port-8002.md"])


def test_cli_no_supersede_and_restore(vault, monkeypatch):
    from wikimem.cli import app
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    r = CliRunner()
    assert r.invoke(app, ["remember", "Service auth uses port 8001.", "-V", str(vault.root)]).exit_code == 0
    out = r.invoke(app, ["remember", "Service auth uses port 8002.", "--no-supersede", "--json", "-V", str(vault.root)])
    assert out.exit_code == 0 and '"supersedes": null' in out.output
    third = r.invoke(app, ["remember", "Service auth uses port 8003.", "--json", "-V", str(vault.root)])
    import json
    replaced = json.loads(third.output)["supersedes"]
    assert replaced
    res = r.invoke(app, ["restore", replaced, "--json", "-V", str(vault.root)])
    assert res.exit_code == 0 and '"changed": true' in res.output
