"""What an agent sees of its memories (issue 53): created and conflicts_with on every memory hit
(API, MCP), prime_context marking open conflicts and briefing recent facts while budget is left,
`recall` / `wikimem memories`, and an as-of date between a new version's created and the
supersede holding one version."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from wikimem.api import open_vault


@pytest.fixture
def vault(make_vault):
    v = open_vault(make_vault({"SCHEMA.md": "# S\n"}), embedder="fake")
    v.index()
    return v


def pair(vault):
    old = vault.remember("The backend uses Python 3.11.")
    new = vault.remember("The backend uses Django 4.2.")
    assert new.possible_update == [old.path]
    return old, new


def test_memory_hits_carry_created_and_conflicts_with(vault):
    # Was: no date on any hit, nothing telling the agent two active facts contradict
    old, new = pair(vault)
    hits = {h.path: h for h in vault.search("backend uses", mode="lexical").hits}
    assert hits[old.path].created and hits[new.path].created >= hits[old.path].created
    assert hits[old.path].conflicts_with == (new.path,) and hits[new.path].conflicts_with == (old.path,)
    assert hits[new.path].to_dict()["conflicts_with"] == [old.path]
    from wikimem.mcp.tools import Tools
    mcp = {h["path"]: h for h in Tools(vault).search("backend uses", mode="lexical")["hits"]}
    assert mcp[old.path]["conflicts_with"] == [new.path] and mcp[old.path]["created"] == hits[old.path].created
    # one supersede settles it: the conflict is gone
    vault.supersede(old.path, new.path)
    hits = {h.path: h for h in vault.search("backend uses", mode="lexical").hits}
    assert old.path not in hits and hits[new.path].conflicts_with == ()


def test_prime_marks_a_conflicting_pair(vault):
    old, new = pair(vault)
    text = vault.prime_context(budget_tokens=1500).text
    line = next(x for x in text.splitlines() if "Django 4.2" in x)
    assert "CONFLICT" in line and "Python 3.11" in line


def test_prime_briefs_every_recent_fact_the_budget_holds(vault):
    # Was: facts cut at 20 whatever the budget, and "N more did not fit" said of facts that would have
    for i in range(30):
        vault.remember(f"Service number {i} owns queue q{i}x and nothing else.")
    b = vault.prime_context(budget_tokens=4000)
    facts = [i for i in b.items if i.kind == "fact"]
    assert len(facts) == 30 and b.tokens < 4000 and "did not fit" not in b.text
    small = vault.prime_context(budget_tokens=300)
    n = sum(1 for i in small.items if i.kind == "fact")
    assert n < 30 and f"{30 - n} more facts did not fit" in small.text


def test_a_superseded_fact_is_never_briefed_as_used_most(vault):
    # Was: briefed from the cache's status while the note already said superseded (a person marked
    # it in Obsidian, or another process did, and no build ran since)
    old = vault.remember("Grafana runs on port 3000.")
    for _ in range(3):
        vault.read_page(old.path)  # used: opened three times
    note = vault.root / old.path
    note.write_text(note.read_text().replace("---\n", "---\nstatus: superseded\n", 1))
    b = vault.prime_context(budget_tokens=1500)
    assert all(i.path != old.path for i in b.items) and "port 3000" not in b.text


def test_recall_lists_current_memories_with_dates_and_what_they_replaced(vault):
    a = vault.remember("Grafana runs on port 3000.")
    b = vault.remember("Grafana runs on port 3001.")
    c = vault.remember("Always answer in English.", kind="instruction")
    rows = vault.memories()
    assert {r["path"] for r in rows} == {b.path, c.path}
    row = next(r for r in rows if r["path"] == b.path)
    assert row["replaced"] == [a.path] and row["created"] and row["kind"] == "episodic"
    assert [r["path"] for r in vault.memories(kind="instruction")] == [c.path]
    assert [r["path"] for r in vault.memories(about="grafana")] == [b.path]
    every = vault.memories(include_all=True)
    assert next(r for r in every if r["path"] == a.path)["status"] == "superseded"
    assert vault.memories(as_of="2000-01-01") == []
    from wikimem.mcp.tools import Tools
    got = Tools(vault).recall(kind="episodic")
    assert got["count"] == 1 and got["memories"][0]["path"] == b.path


def test_cli_memories(vault, monkeypatch):
    from wikimem.cli import app
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    pair(vault)
    r = CliRunner()
    out = r.invoke(app, ["memories", "-V", str(vault.root)])
    assert out.exit_code == 0 and "Django 4.2" in out.output and "conflicts with" in out.output
    js = r.invoke(app, ["memories", "--json", "--kind", "episodic", "-V", str(vault.root)])
    assert js.exit_code == 0 and len(json.loads(js.output)) == 2
    bad = r.invoke(app, ["memories", "--kind", "nope", "-V", str(vault.root)])
    assert bad.exit_code == 2 and "unknown memory kind" in bad.output
    bad = r.invoke(app, ["memories", "--as-of", "yesterday", "-V", str(vault.root)])
    assert bad.exit_code == 2 and "--as-of" in bad.output


def test_as_of_between_the_new_versions_created_and_the_supersede_holds_one_version(make_vault):
    # Was: both versions returned on 2026-03-02 (the new one existed, the old not yet marked replaced)
    root = make_vault({
        "SCHEMA.md": "# S\n",
        "memories/auth-port-old.md": "---\ntype: memory\ncreated: 2026-03-01T09:00:00\nstatus: superseded\n"
                                     "superseded_by: \"[[auth-port-new]]\"\nsuperseded_on: 2026-03-03T10:00:00\n---\n"
                                     "Service auth uses port 8001.\n",
        "memories/auth-port-new.md": "---\ntype: memory\ncreated: 2026-03-02T09:00:00\nsupersedes: \"[[auth-port-old]]\"\n"
                                     "---\nService auth uses port 8002.\n"})
    v = open_vault(root, embedder="fake")
    v.index()
    paths = lambda day: sorted(h.path for h in v.search("service auth port", mode="lexical", as_of=day).hits)  # noqa: E731
    assert paths("2026-03-01") == ["memories/auth-port-old.md"]
    assert paths("2026-03-02") == ["memories/auth-port-new.md"]
    assert paths("2026-03-04") == ["memories/auth-port-new.md"]
    assert [r["path"] for r in v.memories(as_of="2026-03-02")] == ["memories/auth-port-new.md"]


def test_cli_search_shows_a_memorys_date_and_conflict(vault, monkeypatch):
    from wikimem.cli import app
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    old, new = pair(vault)
    out = CliRunner().invoke(app, ["search", "backend uses", "--mode", "lexical", "-V", str(vault.root)])
    assert out.exit_code == 0 and "remembered 20" in out.output and f"conflicts with {old.path}" in out.output
