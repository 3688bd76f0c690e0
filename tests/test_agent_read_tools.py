"""The agent-facing read tools on tricky input: the wikilink given for a page sharing its name with
another, read_page's heading selection (headings holding '#' or '>', headings of separators only),
list_pages with a huge offset or a tag of only '#', the MCP lint tool on a missing path."""
from __future__ import annotations

import pytest

from conftest import write_vault
from wikimem.api import Vault
from wikimem.errors import UsageError

pytestmark = pytest.mark.adversarial


@pytest.fixture
def _fake_embedder(monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")


@pytest.fixture
def _no_embedder(monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "none")


def _open(root):
    v = Vault(root)
    v.index()
    return v


# -- wikilinks handed to agents ---------------------------------------------------------------------
@pytest.mark.usefixtures("_fake_embedder")
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
@pytest.mark.usefixtures("_fake_embedder")
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


@pytest.mark.usefixtures("_no_embedder")
@pytest.mark.parametrize("heading", ["#", "##", ">", "# > #"])
def test_read_page_heading_of_only_separators_is_a_usage_error(tmp_path, heading):
    # Now: IndexError (parts is empty once no heading's text is "#"; `if not parts` became
    # `if not parts and not exact`). Before 2456c07: UsageError("empty heading").
    root = write_vault(tmp_path / "v", {"n.md": "# A\n\ntext\n\n## B\n\nmore\n"})
    v = Vault(root)
    v.index()
    with pytest.raises(UsageError):
        v.read_page("n.md", heading=heading)


# -- list_pages -----------------------------------------------------------------------------------------
@pytest.mark.usefixtures("_fake_embedder")
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


@pytest.mark.usefixtures("_fake_embedder")
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
@pytest.mark.usefixtures("_fake_embedder")
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
