"""Hostile pass (session 8, third part): the agent-facing tools other than write_page (search,
read_page, list_pages, lint, query write-back) and the lint / query commands on tricky vaults.

Every test here failed when it was written; each says what happened then ("Was: ...")."""
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


# -- query write-back and lint ------------------------------------------------------------------
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


# -- wikilinks handed to agents ---------------------------------------------------------------------
def test_the_wikilink_given_for_a_page_sharing_its_name_reaches_that_page(tmp_path):
    # Was: search / list_pages / read_page give "[[Dup]]" as the link for b/Dup.md while a/Dup.md
    # exists; an agent writing it links a/Dup.md (lint WM104: "[[Dup]] is ambiguous"). The query
    # answer itself cites [[b/Dup]] correctly; agent/pages.wikilink only looks at the file name.
    root = write_vault(tmp_path / "v", {"a/Dup.md": "# Dup\n\nfirst\n", "b/Dup.md": "# Dup\n\nsecond marker\n"})
    v = _open(root)
    try:
        from wikimem.mcp import Tools
        hits = [h for h in Tools(v).search("second marker", top_k=5)["hits"] if h["path"] == "b/Dup.md"]
        listed = {p["path"]: p["wikilink"] for p in v.list_pages()["pages"]}
        page = v.read_page("b/Dup.md")
    finally:
        v.close()
    assert hits
    assert hits[0]["wikilink"] != "[[Dup]]"
    assert listed["b/Dup.md"] != "[[Dup]]" and listed["a/Dup.md"] != listed["b/Dup.md"]
    assert page["wikilink"] != "[[Dup]]"


# -- read_page heading selection ----------------------------------------------------------------------
@pytest.mark.parametrize("heading", ["C# and F#", "Input -> Output"])
def test_read_page_selects_a_heading_taken_verbatim_from_its_own_headings_list(tmp_path, heading):
    # Was: read_page(path, heading="C# and F#") -> UsageError: no heading 'C# and F#' in this page
    # (headings: H, C# and F#, Input -> Output) -- _section splits the wanted text on every '#'
    # and '>' as a path separator, so such a heading can never be read alone.
    root = write_vault(tmp_path / "v", {
        "H.md": "# H\n\n## C# and F#\n\nlangs\n\n## Input -> Output\n\npipes\n"})
    v = _open(root)
    try:
        assert heading in [h["text"] for h in v.read_page("H.md")["headings"]]
        section = v.read_page("H.md", heading=heading)
    finally:
        v.close()
    assert section["content"].startswith(f"## {heading}")


# -- list_pages -----------------------------------------------------------------------------------------
def test_list_pages_with_a_huge_offset_is_an_empty_page_or_a_usage_error(tmp_path):
    # Was: list_pages(offset=2**63) (the MCP tool allows any offset >= 0) -> OverflowError: Python
    # int too large to convert to SQLite INTEGER, which the server reports as "internal error in
    # list_pages"; agent/pages.list_pages passes the offset straight to SQL.
    from wikimem.errors import WikimemError
    root = write_vault(tmp_path / "v", {"A.md": "# A\n"})
    v = _open(root)
    try:
        try:
            data = v.list_pages(offset=2**63)
        except WikimemError:
            return
    finally:
        v.close()
    assert data["pages"] == [] and data["next_offset"] is None


def test_list_pages_tag_that_is_only_a_hash_does_not_list_every_page(tmp_path):
    # Was: list_pages(tag="#") strips the '#' to an empty tag, drops the filter, and returns all
    # pages (total 2 here) as if they all carried the tag.
    root = write_vault(tmp_path / "v", {"A.md": "# A\n", "B.md": "---\ntags: [x]\n---\n# B\n"})
    v = _open(root)
    try:
        from wikimem.errors import WikimemError
        try:
            data = v.list_pages(tag="#")
        except WikimemError:
            return
    finally:
        v.close()
    assert data["total"] == 0, data


# -- MCP lint on a path that does not exist -------------------------------------------------------
def test_mcp_lint_on_a_missing_path_is_an_error_not_a_clean_report(tmp_path):
    # Was: the lint tool with paths=["nope.md"] returns findings [] / summary.findings 0 (looks
    # clean) for a typo, while `wikimem lint VAULT/nope.md` exits 2 "no such file or folder";
    # mcp.Tools.lint only checks the path stays in the vault.
    from wikimem.errors import WikimemError
    from wikimem.mcp import Tools
    root = write_vault(tmp_path / "v", {"A.md": "# A\n\n[[Missing]]\n"})
    v = _open(root)
    try:
        with pytest.raises(WikimemError, match="nope.md"):
            Tools(v).lint(paths=["nope.md"])
    finally:
        v.close()
