"""Time in a vault (issue 39): validity from frontmatter, log.md and successors; ``--as-of`` on search,
query, prime and history (API, CLI, MCP); a chain whose dates are wrong is a lint finding."""
from __future__ import annotations

import json
import os
import shutil

import pytest
from hypothesis import given, strategies as st
from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.cli import app
from wikimem.errors import UsageError
from wikimem.knowledge import versions
from wikimem.mcp.tools import Tools
from wikimem.search.timeline import as_of_moment, build_timeline, log_supersedes, moment

DAYS = ["2026-01-10T09:00:00", "2026-02-15T10:00:00", "2026-03-20T11:00:00"]


@pytest.fixture
def updated_fact(make_vault, monkeypatch):
    """One fact remembered three times (ports 8001, 8002, 8003) on three days: each supersedes the last."""
    clock = iter([DAYS[0], DAYS[1], DAYS[1], DAYS[2], DAYS[2]])  # created, then superseded_on + created
    monkeypatch.setattr(versions, "now", lambda: next(clock))
    v = open_vault(make_vault({"SCHEMA.md": "# S\n"}), embedder="fake")
    v.index()
    paths = [v.remember(f"Service auth uses port {port}.").path for port in (8001, 8002, 8003)]
    yield v, paths
    v.close()


def _memories(result) -> list[str]:
    return [h.path for h in result.hits if h.path.startswith("memories/")]


@pytest.mark.parametrize("day, version", [("2026-01-10", 0), ("2026-02-14", 0), ("2026-02-15", 1),
                                          ("2026-03-19", 1), ("2026-03-20", 2), ("2026-12-31", 2),
                                          ("2026-02-15T09:59", 0), ("2026-02-15T10:00", 1)])
def test_as_of_returns_the_version_valid_then(updated_fact, day, version):
    v, paths = updated_fact
    result = v.search("auth port", as_of=day)
    assert _memories(result) == [paths[version]]
    hit = result.hits[0]
    assert hit.version["version"] == version + 1 and hit.version["of"] == 3
    assert hit.version["current"] == paths[2]


def test_before_the_first_version_nothing_and_default_search_hides_old_versions(updated_fact):
    v, paths = updated_fact
    assert _memories(v.search("auth port", as_of="2026-01-09")) == []
    assert _memories(v.search("auth port")) == [paths[2]]
    assert v.search("auth port").hits[0].version is None  # a plain search adds nothing
    assert set(_memories(v.search("auth port", include_superseded=True, limit=5))) == set(paths)


def test_supersede_records_when_and_restore_removes_it(updated_fact):
    v, paths = updated_fact
    front = v.parse_file(paths[0]).frontmatter
    assert front.get("superseded_on") == DAYS[1] and front.get("status") == "superseded"
    v.restore(paths[1])
    assert "superseded_on" not in v.parse_file(paths[1]).frontmatter.data


def test_history_and_prime_as_of(updated_fact):
    v, paths = updated_fact
    h = v.history(paths[2], as_of="2026-02-20")
    assert [x.path for x in h.versions] == paths
    assert h.valid_then == (paths[1],)
    assert [(x.valid_from, x.valid_until) for x in h.versions] == [(DAYS[0], DAYS[1]), (DAYS[1], DAYS[2]), (DAYS[2], None)]
    assert not h.git and all(x.commits == () for x in h.versions)  # not a git repository: nothing added
    then = v.prime_context(as_of="2026-02-20").to_text()
    assert "port 8002" in then and "port 8003" not in then and "port 8001" not in then
    assert "port 8003" in v.prime_context().to_text()


def test_query_as_of_answers_from_then_and_is_never_filed(updated_fact):
    v, paths = updated_fact
    answer = v.query("Which port does service auth use?", write=False, as_of="2026-02-01")
    assert "8001" in answer.text and "8003" not in answer.text
    with pytest.raises(UsageError, match="--no-write"):
        v.query("Which port does service auth use?", as_of="2026-02-01")


def test_mcp_search_query_and_history_take_as_of(updated_fact):
    v, paths = updated_fact
    tools = Tools(v)
    found = tools.search("auth port", as_of="2026-03-01")
    memories = [h for h in found["hits"] if h["path"].startswith("memories/")]
    assert [h["path"] for h in memories] == [paths[1]] and memories[0]["version"]["version"] == 2
    assert "8002" in tools.query("Which port does service auth use?", write=True, as_of="2026-03-01")["answer"]
    assert not (v.root / "queries").exists()  # an as-of answer is given, not filed
    assert tools.history(paths[0], as_of="2026-03-01").to_dict()["valid_then"] == [paths[1]]


def test_cli_as_of_and_a_bad_date(updated_fact):
    v, paths = updated_fact
    runner = CliRunner()
    res = runner.invoke(app, ["search", "auth", "port", "--as-of", "2026-02-20", "--vault", str(v.root),
                              "--json"], env={"WIKIMEM_EMBEDDER": "fake"})
    assert res.exit_code == 0, res.output
    hits = [h for h in json.loads(res.stdout)["hits"] if h["path"].startswith("memories/")]
    assert [h["path"] for h in hits] == [paths[1]] and hits[0]["version"]["valid_until"] == DAYS[2]
    res = runner.invoke(app, ["search", "auth", "--as-of", "2026-13-01", "--vault", str(v.root)],
                        env={"WIKIMEM_EMBEDDER": "fake"})
    assert res.exit_code == 2 and "--as-of wants a date" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["history", paths[0], "--as-of", "2026-03-21", "--vault", str(v.root)],
                        env={"WIKIMEM_EMBEDDER": "fake"})
    assert res.exit_code == 0 and "(valid then)" in res.output


# -- validity from older vaults ------------------------------------------------------------------
def test_end_dates_from_frontmatter_then_log_then_successor_else_open():
    facts = [("a.md", "2026-01-01", "superseded", "2026-02-01"),  # its own superseded_on
             ("b.md", "2026-02-01", "superseded", None),          # log.md says when
             ("c.md", "2026-03-05", "superseded", None),          # its successor's created
             ("d.md", "2026-04-01", "active", None),
             ("x.md", None, "superseded", None),                  # no date anywhere: open-ended
             ("y.md", None, "active", None)]
    log = "# Log\n- 2026-03-01 12:30 · supersede · b.md → c.md · by Ann\n"
    t = build_timeline(facts, [("b.md", "a.md"), ("c.md", "b.md"), ("d.md", "c.md"), ("y.md", "x.md")], log)
    assert (t.pages["a.md"].valid_until, t.pages["a.md"].until_from) == ("2026-02-01T00:00:00", "frontmatter")
    assert (t.pages["b.md"].valid_until, t.pages["b.md"].until_from) == ("2026-03-01T12:30:00", "log")
    assert (t.pages["c.md"].valid_until, t.pages["c.md"].until_from) == ("2026-04-01T00:00:00", "successor")
    assert t.pages["x.md"].valid_until is None and t.counts() == {"frontmatter": 1, "log": 1, "successor": 1, "open": 1}
    assert t.pages["y.md"].valid_from is None  # no created and nothing dated before it: from the start
    assert t.valid_on("2026-03-06T00:00:00") == {"c.md", "x.md", "y.md"}
    assert t.valid_on("2026-03-02T00:00:00") == {"x.md", "y.md"}  # b ended (log), c not yet created: a gap
    assert t.chain("c.md") == ["a.md", "b.md", "c.md", "d.md"]


def test_log_lines_and_moments():
    assert log_supersedes("- 2026-05-01 09:15 · supersede · old.md → new.md\n- junk · supersede") == \
        {("old.md", "new.md"): "2026-05-01T09:15:00"}
    assert moment("2026-05-01") == "2026-05-01T00:00:00"
    assert moment("2026-05-01", end_of_day=True) == "2026-05-01T23:59:59"
    assert moment("2026-05-01 08:00:00+02:00") == "2026-05-01T08:00:00"
    assert moment("2026-02-30") is None and moment("soon") is None and moment(None) is None
    for bad in ("2026-1-1", "2026-01-01T9", "yesterday", "2026-01-01T25:00"):
        with pytest.raises(UsageError):
            as_of_moment(bad)


@given(st.lists(st.tuples(st.dates(), st.booleans()), min_size=1, max_size=8), st.dates())
def test_a_chain_has_at_most_one_version_valid_at_any_moment(versions_, day):
    """A straight chain whose dates only grow: at any moment exactly the version started last
    (none before the first)."""
    days = sorted({d for d, _ in versions_})
    paths = [f"v{i}.md" for i in range(len(days))]
    facts = [(p, d.isoformat(), "superseded" if i < len(days) - 1 else "active",
              days[i + 1].isoformat() if i < len(days) - 1 else None) for i, (p, d) in enumerate(zip(paths, days))]
    t = build_timeline(facts, [(paths[i + 1], paths[i]) for i in range(len(paths) - 1)])
    valid = t.valid_on(as_of_moment(day.isoformat()))
    started = [p for p, d in zip(paths, days) if d <= day]
    assert valid == ({started[-1]} if started else set())


def test_lint_flags_dates_in_the_wrong_order(make_vault):
    root = make_vault({
        "SCHEMA.md": "# S\n",
        "notes/old.md": "---\ncreated: 2026-03-01\nstatus: superseded\nsuperseded_by: \"[[new]]\"\n"
                        "superseded_on: 2026-02-01\n---\n# Old\n",
        "notes/new.md": "---\ncreated: 2026-02-01\nsupersedes: \"[[old]]\"\n---\n# New\n",
        "notes/odd.md": "---\nstatus: superseded\nsuperseded_on: last week\n---\n# Odd\n"})
    v = open_vault(root, embedder="fake")
    found = sorted((f.path, f.message) for f in v.lint(select=["WM306"]).findings)
    assert [p for p, _ in found] == ["notes/new.md", "notes/odd.md", "notes/old.md"]
    assert "before the version it supersedes" in found[0][1] and "is not a date" in found[1][1]
    assert "before it was created" in found[2][1]
    v.close()


def test_a_page_superseded_twice_is_a_lint_error_and_as_of_shows_both_claims(make_vault):
    root = make_vault({
        "SCHEMA.md": "# S\n",
        "notes/old.md": "---\ncreated: 2026-01-01\nstatus: superseded\n---\n# Old\n\nThe build uses make.\n",
        "notes/a.md": "---\ncreated: 2026-02-01\nsupersedes: \"[[old]]\"\n---\n# A\n\nThe build uses ninja.\n",
        "notes/b.md": "---\ncreated: 2026-02-03\nsupersedes: \"[[old]]\"\n---\n# B\n\nThe build uses bazel.\n"})
    v = open_vault(root, embedder="fake")
    v.index()
    assert {f.code for f in v.lint(select=["WM305"]).findings} == {"WM305"}
    # both claim to be current: an as-of search shows both (and old until the first claim), never one by chance
    def notes(day):
        return {h.path for h in v.search("build uses", as_of=day).hits if h.path.startswith("notes/")}
    assert notes("2026-02-02") == {"notes/a.md"}
    assert notes("2026-02-04") == {"notes/a.md", "notes/b.md"}
    assert notes("2026-01-15") == {"notes/old.md"}
    v.close()


def test_a_fact_updated_through_the_cli_and_mcp_is_dated_by_both(make_vault, monkeypatch):
    clock = iter([DAYS[0], DAYS[1], DAYS[1], DAYS[2], DAYS[2]])
    monkeypatch.setattr(versions, "now", lambda: next(clock))
    root = make_vault({"SCHEMA.md": "# S\n"})
    runner = CliRunner()
    env = {"WIKIMEM_EMBEDDER": "fake"}
    res = runner.invoke(app, ["remember", "Service auth uses port 8001.", "--vault", str(root), "--json"], env=env)
    assert res.exit_code == 0, res.output
    first = json.loads(res.stdout)["path"]
    v = open_vault(root, embedder="fake")
    tools = Tools(v)
    second = tools.remember("Service auth uses port 8002.")["path"]
    v.close()
    res = runner.invoke(app, ["remember", "Service auth uses port 8003.", "--vault", str(root), "--json"], env=env)
    third = json.loads(res.stdout)
    assert third["supersedes"] == second
    for day, want in (("2026-01-20", first), ("2026-03-01", second), ("2026-04-01", third["path"])):
        res = runner.invoke(app, ["search", "auth port", "--as-of", day, "--vault", str(root), "--json"], env=env)
        assert [h["path"] for h in json.loads(res.stdout)["hits"] if h["path"].startswith("memories/")] == [want]


def _git(cwd, *args):
    import subprocess
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_AUTHOR_NAME": "Ann Lee",
                        "GIT_AUTHOR_EMAIL": "ann@example.org", "GIT_COMMITTER_NAME": "Ann Lee",
                        "GIT_COMMITTER_EMAIL": "ann@example.org"})


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git binary")
def test_history_lists_a_pages_commits_when_the_vault_is_in_a_git_repository(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    vault = repo / "wiki"  # a vault in a subfolder of its repository
    (vault / "notes").mkdir(parents=True)
    (vault / "SCHEMA.md").write_text("# S\n")
    (vault / "notes" / "a.md").write_text("# A\n\none\ntwo\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "first")
    (vault / "notes" / "a.md").write_text("# A\n\none\nthree\nfour\n")
    _git(repo, "commit", "-qam", "edit a")
    v = open_vault(vault, embedder="fake")
    v.index()
    h = v.history("notes/a.md")
    assert h.git
    commits = h.versions[0].commits
    assert [(c.message, c.author, c.added, c.removed, c.path) for c in commits] == \
        [("edit a", "Ann Lee", 2, 1, "notes/a.md"), ("first", "Ann Lee", 4, 0, "notes/a.md")]
    assert not v.history("notes/a.md", commits=False).versions[0].commits
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))  # no git binary: nothing added, nothing fails
    assert v.history("notes/a.md").versions[0].commits == () and not v.history("notes/a.md").git
    v.close()


def test_as_of_leaves_out_pages_made_after_the_date_by_any_evidence(make_vault):
    """Issue 47 item 8: a query page asked today ranked first for ``--as-of`` yesterday. A page is
    dated by its ``created``, else ``asked``, else the log.md line that wrote it, else git."""
    import datetime as dt
    import subprocess
    root = make_vault({
        "SCHEMA.md": "# S\n",
        "concepts/Compost.md": "---\ncreated: 2026-01-01\n---\n# Compost\n\nCompost wants three parts brown "
                               "to one part green.\n",
        "notes/Logged.md": "# Logged\n\nA compost note an agent wrote, dated only by the log.\n",
        "notes/Committed.md": "# Committed\n\nA compost note dated only by git.\n",
        "notes/Undated.md": "# Undated\n\nA compost note with no date anywhere.\n",
        "log.md": "# Log\n\n- 2026-06-01 10:00 · write · notes/Logged.md\n"})
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@e", "-C", str(root)]
    subprocess.run(git[:-2] + ["init", "-q", str(root)], check=True)
    subprocess.run(git + ["add", "notes/Committed.md"], check=True)
    env = {"GIT_AUTHOR_DATE": "2026-08-01T12:00:00", "GIT_COMMITTER_DATE": "2026-08-01T12:00:00", "PATH": "/usr/bin:/bin"}
    subprocess.run(git + ["commit", "-q", "-m", "add"], check=True, env=env)
    v = open_vault(root, embedder="fake")
    v.index()
    asked = v.query("How much brown does compost want?")
    assert asked.page and asked.page.startswith("queries/")
    yesterday = (dt.date.today() - dt.timedelta(days=1)).isoformat()

    def found(as_of):
        return {h.path for h in v.search("compost", as_of=as_of, limit=20).hits}
    assert asked.page in found(dt.date.today().isoformat())
    assert asked.page not in found(yesterday)  # asked today
    assert "notes/Logged.md" not in found("2026-05-31") and "notes/Logged.md" in found("2026-06-01")
    assert "notes/Committed.md" not in found("2026-07-31") and "notes/Committed.md" in found("2026-08-01")
    assert {"concepts/Compost.md", "notes/Undated.md"} <= found("2026-02-01")
    assert "notes/Undated.md" in found("2020-01-01")  # no evidence: valid from the start of time
