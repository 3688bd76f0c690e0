"""The query pages `wikimem query` writes back (queries/<q>.md): they pass wikimem's own frontmatter
lint, and a hand-edited one with a scalar where a list belongs breaks neither a later query nor lint.
Each "Was:" says what happened before the fix."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from conftest import write_vault
from wikimem.api import Vault
from wikimem.cli import app

runner = CliRunner()


COMPOST = "# Compost\n\nCompost feeds the soil. Turn the heap weekly.\n"


@pytest.fixture(autouse=True)
def _fake_embedder(monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")


def _open(root):
    v = Vault(root)
    v.index()
    return v


def _cli(*args: str):
    result = runner.invoke(app, list(args))
    assert "Traceback" not in (result.output or ""), result.output
    return result


def test_a_query_page_wikimem_writes_passes_its_own_frontmatter_lint(tmp_path):
    # Was: `wikimem query` files queries/<q>.md with sources "[[Compost]] sha256:<hex>", and WM204
    # then reports an *error* on it: field 'sources[0]': "[[Compost]] sha256:..." does not match
    # ^\[\[.+\]\]$ (schema/page-common.json), so `wikimem lint` exits 1 on every vault that was queried.
    root = write_vault(tmp_path / "v", {"Compost.md": COMPOST})
    v = _open(root)
    try:
        answer = v.query("What is compost?")
        assert answer.page
        report = v.lint([answer.page], select=["WM204"])
    finally:
        v.close()
    assert [f.message for f in report.findings] == []


@pytest.mark.adversarial
@pytest.mark.parametrize("field", ["sources: 7", "also_asked: 5"])
def test_a_query_page_with_a_scalar_list_field_does_not_break_query(tmp_path, field):
    # Was: one hand-edited query page with `sources: 7` or `also_asked: 5` makes every later
    # `wikimem query` fail: "error: unexpected TypeError: 'int' object is not iterable (a wikimem bug:
    # please report it ...)" from qa/writeback.find_same (list(...) / map(...) over an int).
    root = write_vault(tmp_path / "v", {
        "Compost.md": COMPOST,
        "queries/What is compost.md": f"---\ntype: query\nquestion: What is compost\n{field}\n---\n"
                                      "# What is compost\n\nold answer\n",
    })
    _open(root).close()
    result = _cli("query", "What is compost?", "-V", str(root), "--json")
    assert "unexpected TypeError" not in result.output
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["page"]


@pytest.mark.adversarial
def test_lint_survives_a_query_page_whose_sources_is_not_a_list(tmp_path):
    # Was: `wikimem lint --json` on a vault with one query page carrying `sources: 7` prints
    # {"error": "unexpected TypeError: 'int' object is not iterable (a wikimem bug ...)"} and no
    # findings at all: lint/rules/graph.py _cited_hashes iterates the int (rule WM408).
    root = write_vault(tmp_path / "v", {
        "Compost.md": COMPOST,
        "queries/Q.md": "---\ntype: query\nquestion: What is compost\nsources: 7\n---\n# Q\n\n[[Compost]]\n",
    })
    _open(root).close()
    result = _cli("lint", str(root), "--json")
    assert "unexpected TypeError" not in result.output
    data = json.loads(result.stdout)
    assert "error" not in data, data
    assert any(f["path"] == "queries/Q.md" and f["code"] == "WM204" for f in data["findings"])
