"""Stale compiled pages (issue 39 item 3): ``review`` lists a query page whose cited text changed within
one build, with the changed sentence; ``--refresh`` rewrites only the marked answer section; a source
page whose raw/ file changed and a page citing a superseded page are listed too; lint WM408, status,
MCP and the CLI say the same."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.cli import app
from wikimem.errors import UsageError
from wikimem.mcp.tools import Tools

BM25 = ("---\ntitle: BM25\n---\n# BM25\n\nBM25 ranks documents by term frequency and document length.\n"
        "Term frequency saturates: the tenth occurrence counts less than the second.\n")
QUESTION = "How does BM25 treat term frequency?"


@pytest.fixture
def answered(make_vault):
    v = open_vault(make_vault({"SCHEMA.md": "# S\n", "concepts/BM25.md": BM25,
                               "concepts/Other.md": "# Other\n\nNothing about ranking here.\n"}), embedder="fake")
    v.index()
    answer = v.query(QUESTION)
    assert answer.page and "saturates" in answer.text
    yield v, answer.page
    v.close()


def _edit(v, rel: str, old: str, new: str) -> None:
    path = v.root / rel
    path.write_text(path.read_text().replace(old, new))


def test_nothing_stale_until_a_cited_sentence_changes(answered):
    v, page = answered
    assert v.review().stale == [] and v.status()["stale_pages"] == 0
    _edit(v, "concepts/BM25.md", "the tenth occurrence counts less", "the tenth occurrence counts far less")
    report = v.review()  # no `wikimem index` in between: review brings the cache up to date itself
    assert [s.path for s in report.stale] == [page]
    reason = report.stale[0].reasons[0]
    assert reason.kind == "text-changed" and reason.path == "concepts/BM25.md"
    change = reason.changed[0]
    assert "counts less than the second" in change.old and "counts far less than the second" in change.new
    assert change.diff == ("+far",)
    assert v.status()["stale_pages"] == 1


def test_refresh_rewrites_only_the_marked_section_and_says_what_changed(answered):
    v, page = answered
    path = v.root / page
    path.write_text(path.read_text() + "\nA line a person added below the answer.\n")
    _edit(v, "concepts/BM25.md", "Term frequency saturates: the tenth occurrence counts less than the second.",
          "Term frequency saturates quickly: the third occurrence adds little.")
    report = v.refresh_stale([page])
    done = report.refreshed[0]
    assert done.status == "refreshed" and done.written == page
    assert any("tenth occurrence" in s for s in done.removed) and any("third occurrence" in s for s in done.added)
    text = path.read_text()
    assert "A line a person added below the answer." in text and "third occurrence adds little" in text
    assert report.stale == []  # fresh again


def test_refresh_refuses_nothing_and_skips_pages_that_are_not_stale(answered):
    v, page = answered
    with pytest.raises(UsageError, match="--all"):
        v.refresh_stale([])
    report = v.refresh_stale([page])
    assert report.refreshed[0].status == "skipped" and "not stale" in report.refreshed[0].detail
    assert v.refresh_stale(every=True).refreshed == []


def test_a_cited_page_gone_or_superseded(answered):
    v, page = answered
    (v.root / "concepts/BM25 v2.md").write_text("---\ntitle: BM25 v2\n---\n# BM25 v2\n\nNewer notes.\n")
    v.index()
    v.supersede("concepts/BM25.md", "concepts/BM25 v2.md")
    reasons = {r.kind: r for r in v.review().stale[0].reasons}
    assert reasons["superseded"].successor == "concepts/BM25 v2.md"
    (v.root / "concepts/BM25.md").unlink()
    kinds = {r.kind for r in v.review().stale[0].reasons}
    assert "missing" in kinds


def test_a_source_page_whose_raw_file_changed(make_vault, tmp_path):
    src = tmp_path / "leiden.md"
    src.write_text("# Leiden\n\nLeiden refines Louvain's partitions.\n")
    v = open_vault(make_vault({"SCHEMA.md": "# S\n"}), embedder="fake")
    v.index()
    item = v.ingest([src]).items[0]
    assert v.review().stale == []
    raw = next((v.root / "raw").rglob("leiden.md"))
    raw.write_text(raw.read_text() + "\nAn edit to an immutable source.\n")
    stale = v.review().stale
    assert [s.path for s in stale] == [item.page]
    assert [r.kind for r in stale[0].reasons] == ["file-changed"]
    refreshed = v.refresh_stale([item.page]).refreshed[0]
    assert refreshed.status == "skipped" and "by hand" in refreshed.detail  # only query pages are re-answered
    v.close()


def test_lint_mcp_and_cli_say_the_same(answered):
    v, page = answered
    _edit(v, "concepts/BM25.md", "counts less than", "counts much less than")
    findings = [f for f in v.lint(select=["WM408"]).findings]
    assert [f.path for f in findings] == [page] and "no longer reads so" in findings[0].message
    tools = Tools(v)
    listed = tools.review()
    assert [s["path"] for s in listed["stale"]] == [page]
    assert listed["stale"][0]["reasons"][0]["changed"][0]["diff"] == ["+much"]
    runner = CliRunner()
    res = runner.invoke(app, ["review", "--vault", str(v.root)], env={"WIKIMEM_EMBEDDER": "fake"})
    assert res.exit_code == 1 and "text-changed" in res.output and "+ Term frequency" in res.output
    res = runner.invoke(app, ["review", "--all", "--vault", str(v.root)], env={"WIKIMEM_EMBEDDER": "fake"})
    assert res.exit_code == 2 and "--refresh" in res.output
    res = runner.invoke(app, ["review", "--refresh", "--all", "--json", "--vault", str(v.root)],
                        env={"WIKIMEM_EMBEDDER": "fake"})
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["refreshed"][0]["status"] == "refreshed"
