"""Use counts (issue 39 item 5): pages returned, opened and cited are counted in the cache (never in
notes), survive a rebuild, cost a failing disk nothing, and feed prime's "Used most" layer."""
from __future__ import annotations

import hashlib
import sqlite3

import pytest

from wikimem.api import open_vault
from wikimem.stores.usage import Usage

NOTES = {
    "SCHEMA.md": "# S\n",
    "concepts/BM25.md": "# BM25\n\nBM25 ranks documents by term frequency and inverse document frequency.\n",
    "concepts/Leiden.md": "# Leiden\n\nThe Leiden algorithm finds communities in the link graph.\n",
    "concepts/FAISS.md": "# FAISS\n\nFAISS searches vectors by inner product.\n",
}


@pytest.fixture
def vault(make_vault):
    v = open_vault(make_vault(NOTES), embedder="fake")
    v.index()
    yield v
    v.close()


def _notes_hash(root) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(root.rglob("*.md"))
                                   if ".wikimem" not in p.parts)).hexdigest()


def test_returned_opened_and_cited_are_counted_in_the_cache_only(vault):
    before = _notes_hash(vault.root)
    vault.search("BM25 term frequency")
    vault.search("BM25")
    vault.read_page("concepts/BM25.md")
    answer = vault.query("What does BM25 rank by?", write=False)
    assert answer.citations
    uses = vault.cache.usage.counts()
    bm25 = uses["concepts/BM25.md"]
    assert bm25.returned == 2 and bm25.opened == 1 and bm25.cited == 1
    assert "concepts/Leiden.md" not in uses or uses["concepts/Leiden.md"].opened == 0
    assert _notes_hash(vault.root) == before  # no note changed
    assert (vault.root / ".wikimem" / "usage.sqlite").is_file()


def test_internal_searches_are_not_uses(vault):
    vault.prime_context(prompt="BM25 term frequency")  # prime's relevance search
    vault.write_page("concepts/New.md", "# New\n\nBM25 again.\n")  # the writer's similarity check
    assert "concepts/BM25.md" not in vault.cache.usage.counts()


def test_counts_survive_a_rebuild_and_a_reopen(vault):
    vault.read_page("concepts/Leiden.md")
    vault.index(rebuild=True)
    vault.close()
    again = open_vault(vault.root, embedder="fake")
    try:
        assert again.cache.usage.counts()["concepts/Leiden.md"].opened == 1
    finally:
        again.close()


def test_prime_briefs_the_pages_used_most_but_not_as_of(vault):
    for _ in range(2):
        vault.read_page("concepts/Leiden.md")
    text = vault.prime_context(prompt="vectors inner product").to_text()
    assert "## Used most" in text and "[[Leiden]]" in text
    assert "## Used most" not in vault.prime_context(prompt="vectors", as_of="2030-01-01").to_text()


def test_a_damaged_or_unwritable_counts_file_costs_nothing(tmp_path):
    path = tmp_path / "usage.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    usage = Usage(path, lambda: True)
    usage.count("opened", ["a.md"])
    usage.flush()  # the damaged file is replaced, the counts of this flush dropped
    usage.count("opened", ["a.md"])
    usage.flush()
    assert usage.counts()["a.md"].opened == 1
    readonly = Usage(tmp_path / "ro.sqlite", lambda: False)
    readonly.count("returned", ["a.md"])
    readonly.flush()
    assert not (tmp_path / "ro.sqlite").exists() and readonly.counts() == {}
    with pytest.raises(ValueError):
        usage.count("liked", ["a.md"])


def test_counts_gather_in_memory_and_flush_on_a_timer(tmp_path):
    now = [1000.0]
    usage = Usage(tmp_path / "u.sqlite", lambda: True, clock=lambda: now[0])
    usage.count("returned", ["a.md", "a.md", "b.md"])  # one search naming a page twice counts it once
    assert not (tmp_path / "u.sqlite").exists()  # not written yet
    now[0] += 6
    usage.count("returned", ["a.md"])  # due: written
    with sqlite3.connect(tmp_path / "u.sqlite") as db:
        assert dict(db.execute("SELECT path, returned FROM uses")) == {"a.md": 2, "b.md": 1}
    assert [u.path for u in usage.most_used(5)] == ["a.md", "b.md"]
