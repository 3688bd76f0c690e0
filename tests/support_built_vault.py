"""A small vault indexed once with the fake embedder, and its search results (the ``built`` fixture),
for tests that damage its cache or feed it bad input (moved from test_hostile_cache_s8.py).
Import ``built`` into a test module to use the fixture."""
from __future__ import annotations

import pytest

from wikimem.api import open_vault

from conftest import write_vault


BASE = {
    "a/Alpha.md": "# Alpha\n\nAlpha is a letter. [[Beta]] links here.\n",
    "a/Beta.md": "---\ntags: [second]\n---\n# Beta\n\nBeta is the second letter. [[Alpha]]\n",
    "b/Gamma.md": "# Gamma\n\nGamma radiation and more words.\n\n## Part\n\nOmega words live here.\n",
}


QUERIES = ["alpha letter", "radiation", "omega words", "second"]


def _results(vault):
    return [(q, h.chunk_id, round(h.score, 6)) for q in QUERIES for h in vault.search(q, limit=5).hits]


@pytest.fixture
def built(tmp_path):
    root = write_vault(tmp_path / "vault", BASE)
    vault = open_vault(root, embedder="fake")
    vault.index()
    expected = _results(vault)
    vault.close()
    return root, expected
