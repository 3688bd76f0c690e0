"""remember's rule of issue 53: a fact supersedes another only when both name the same subject and
attribute and only the value differs; word order matters; where unsure, both are kept and the
earlier one is returned as a possible_update; a fact is at most 2,000 characters."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.errors import UsageError
from wikimem.knowledge.factslots import judge


@pytest.fixture
def vault(make_vault):
    v = open_vault(make_vault({"SCHEMA.md": "# S\n"}), embedder="fake")
    v.index()
    return v


def active(vault, path):
    return vault.parse_file(path).status != "superseded"


def test_the_agent_builders_run_keeps_every_distinct_fact_and_catches_the_updates(vault):
    # Was: Firefox hid zsh, then fish hid Firefox; helix, PostgreSQL 16 and zsh -> fish were missed
    zsh = vault.remember("Dana prefers zsh as her shell.")
    firefox = vault.remember("Dana prefers Firefox as her browser.")
    assert firefox.supersedes is None and active(vault, zsh.path)
    fish = vault.remember("Dana prefers fish as her shell now.")
    assert fish.supersedes == zsh.path and active(vault, firefox.path)
    vim = vault.remember("Dana prefers vim as her text editor.")
    helix = vault.remember("Dana now prefers helix as her text editor.")
    assert helix.supersedes == vim.path
    assert active(vault, firefox.path) and active(vault, fish.path)


@pytest.mark.parametrize("old, new", [
    ("The production database is PostgreSQL 14.", "The production database is now PostgreSQL 16."),
    ("支付服务部署在上海机房。", "支付服务现在部署在深圳机房。"),
    ("Priya is the tech lead of the mobile team.", "The tech lead of the mobile team is now Sven."),
    ("Alice prefers tabs over spaces.", "Alice prefers spaces over tabs."),
])
def test_updates_the_issue_names_supersede(vault, old, new):
    first = vault.remember(old)
    second = vault.remember(new)
    assert second.action == "written" and second.supersedes == first.path


@pytest.mark.parametrize("old, new", [
    ("Python 3.11 is used by the backend.", "Python 3.11 is used by the frontend."),
    ("Dana prefers zsh as her shell.", "Dana prefers Firefox as her browser."),
    ("Service auth listens on port 8001.", "Service billing listens on port 8001."),
])
def test_distinct_facts_of_one_shape_are_never_superseded(vault, old, new):
    first = vault.remember(old)
    second = vault.remember(new)
    assert second.action == "written" and second.supersedes is None and active(vault, first.path)


def test_reversed_order_is_not_a_duplicate():
    # Was: "Alice prefers spaces over tabs." called a duplicate of "...tabs over spaces." and never stored
    assert judge("Alice prefers tabs over spaces.", "Alice prefers spaces over tabs.") == "update"
    assert judge("李娜喜欢喝咖啡胜过喝茶。", "李娜喜欢喝茶胜过喝咖啡。") == "update"
    assert judge("Alice prefers tabs over spaces.", "Alice prefers tabs over spaces!") == "duplicate"


def test_unsure_pairs_are_kept_and_named_as_possible_updates(vault):
    first = vault.remember("The backend uses Python 3.11.")
    second = vault.remember("The backend uses Django 4.2.")
    assert second.action == "written" and second.supersedes is None
    assert second.possible_update == [first.path] and active(vault, first.path)
    assert second.to_dict()["possible_update"] == [first.path]


def test_cli_prints_the_possible_update_line(vault, monkeypatch):
    from wikimem.cli import app
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    r = CliRunner()
    assert r.invoke(app, ["remember", "The backend uses Python 3.11.", "-V", str(vault.root)]).exit_code == 0
    out = r.invoke(app, ["remember", "The backend uses Django 4.2.", "-V", str(vault.root)])
    assert out.exit_code == 0 and "possible update of memories/" in out.output
    js = r.invoke(app, ["remember", "The backend uses Flask 3.", "--json", "-V", str(vault.root)])
    assert len(json.loads(js.output)["possible_update"]) >= 1


def test_a_twenty_thousand_character_fact_is_refused(vault, monkeypatch):
    with pytest.raises(UsageError, match="2,000 characters"):
        vault.remember("x" * 20_000)
    assert not (vault.root / "memories").exists() or not list((vault.root / "memories").iterdir())
    from wikimem.cli import app
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    out = CliRunner().invoke(app, ["remember", "y" * 20_000, "-V", str(vault.root)])
    assert out.exit_code == 2 and "2,000 characters" in out.output


def test_the_held_out_split_meets_the_precision_target():
    # the figure the benchmark reports, held here so a rule change that loses it fails
    import pathlib
    from wikimem.knowledge.memory import fact_label
    pairs = json.loads((pathlib.Path(__file__).parents[1] / "benchmarks/memory_everyday.json").read_text())["pairs"]
    rows = [(p["label"], fact_label("different", p["new"], p["old"])) for p in pairs if p["split"] == "heldout"]
    said = [t for t, s in rows if s == "update"]
    assert said and sum(t == "update" for t in said) / len(said) >= 0.98
    assert not [t for t, s in rows if s == "duplicate" and t != "duplicate"]


@pytest.mark.parametrize("old, new", [
    ("Tom manages the data team.", "Tom manages the infra team."),  # may manage both
    ("Priya is an engineer.", "Sven is an engineer."),  # an indefinite role has many holders
    ("Sam likes dogs.", "Sam prefers dogs."),  # another verb: not the same words
    ("Nina is allergic to peanuts.", "Nina is allergic to shellfish."),
    ("Project Falcon is led by Priya.", "Project Heron is led by Priya."),  # a passive: whose attribute?
    ("The user prefers pnpm over npm.", "The user prefers pnpm over yarn."),
])
def test_unsure_or_distinct_pairs_never_supersede_nor_merge(old, new):
    assert judge(old, new) in (None, "distinct")
