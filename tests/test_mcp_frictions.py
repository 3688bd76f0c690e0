"""Small frictions an agent builder met over MCP (issue 53 item 6): page arguments resolve names,
titles and aliases as the CLI's do; a compare-and-swap refusal carries the page's current sha256;
a page whose vectors are pending ranks by what it has; the MCP surface has recall."""
from __future__ import annotations

import hashlib

import pytest
from conftest import write_vault

from wikimem.api import open_vault

pytest.importorskip("mcp.client")
from test_mcp import serve  # noqa: E402

NOTES = {
    "SCHEMA.md": "# Schema\n",
    "concepts/BM25.md": "---\ntitle: Okapi BM25\naliases: [Best Match 25]\n---\n# Okapi BM25\n\nA ranking function.\n",
    "concepts/Other.md": "# Other\n\nSee [[BM25]].\n",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = write_vault(tmp_path_factory.mktemp("fr") / "vault", NOTES)
    with serve(root) as client:
        client.root = root
        yield client


@pytest.mark.parametrize("name", ["BM25", "Okapi BM25", "Best Match 25", "concepts/BM25"])
def test_read_page_resolves_names_titles_and_aliases(server, name):
    # Was: read_page("BM25") -> "not a note; only Markdown notes (.md)", though history("BM25") found it
    page = server.ok("read_page", {"path": name})
    assert page["path"] == "concepts/BM25.md"


def test_an_unknown_name_is_still_a_clear_error(server):
    assert "BM26" in server.error("read_page", {"path": "BM26"})


def test_a_compare_and_swap_refusal_carries_the_current_sha256(server):
    # Was: the refusal said the page changed, not what it is now (the REST API's 409 does)
    text = (server.root / "concepts/Other.md").read_bytes()
    current = hashlib.sha256(text).hexdigest()
    message = server.error("edit_page", {"path": "concepts/Other.md", "operation": "append", "content": "x",
                                         "expected_sha256": "0" * 64})
    assert f"current sha256: {current}" in message
    message = server.error("write_page", {"path": "concepts/Other.md", "content": "# Other\n",
                                          "expected_sha256": "1" * 64})
    assert f"current sha256: {current}" in message


def test_recall_over_mcp(server):
    server.ok("remember", {"fact": "Grafana runs on port 3000."})
    got = server.ok("recall", {})
    assert got["count"] >= 1 and any(m["fact"] == "Grafana runs on port 3000." and m["created"]
                                     for m in got["memories"])
    tools = {t.name: t for t in server.tools()}
    assert "memories/" in tools["search"].description and "superseded" in tools["search"].description.lower()
    assert "possible_update" in tools["remember"].description


def test_a_page_with_pending_vectors_ranks_by_what_it_has(make_vault):
    # Was: its vector side scored 0, so pages only near in meaning outranked the one page holding
    # every word of the query until its vectors were embedded
    files = {"SCHEMA.md": "# S\n"}
    for i in range(20):
        files[f"concepts/page{i}.md"] = (f"# Page {i}\n\nSearch ranking notes number {i} about indexing, retrieval "
                                         "and ranking of documents.\n")
    files["concepts/Zorblax.md"] = "# Zorblax\n\nZorblax is the ranking library we use for retrieval.\n"
    root = make_vault(files)
    v = open_vault(root, embedder="fake")
    v.index()
    (root / "concepts/Quuxle.md").write_text("# Quuxle\n\nQuuxle is the ranking library for retrieval of documents.\n")
    v.index(paths=["concepts/Quuxle.md"], embed=False)  # lexical commit; its vectors pending
    result = v.search("ranking library for retrieval quuxle")
    assert "vectors_partial" in result.degraded
    assert result.hits[0].path == "concepts/Quuxle.md" and "vector_pending" in result.hits[0].steps
