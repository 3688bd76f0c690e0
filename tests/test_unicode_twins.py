"""NFC/NFD twin names (issue 35 item 11): both are indexed, a link to them is reported ambiguous
(WM104) and resolves as stated: to the one spelled as the link is, else the NFC one."""
from __future__ import annotations

import sys
import unicodedata

import pytest

from wikimem.api import open_vault

NFC, NFD = unicodedata.normalize("NFC", "Café"), unicodedata.normalize("NFD", "Café")
pytestmark = pytest.mark.skipif(sys.platform == "darwin", reason="macOS keeps one file for both forms")


def test_twins_are_reported_and_resolution_is_deterministic(make_vault):
    root = make_vault({"SCHEMA.md": "# S\n", f"{NFC}.md": "# Composed\n", f"{NFD}.md": "# Decomposed\n",
                       "a.md": f"# A\n\n[[{NFC}]]\n", "b.md": f"# B\n\n[[{NFD}]]\n"})
    v = open_vault(root, embedder="none")
    v.index()
    pages = v.pages()
    assert [l.resolved for l in pages["a.md"].links] == [f"{NFC}.md"]
    assert [l.resolved for l in pages["b.md"].links] == [f"{NFD}.md"]
    # Was: no finding, [[Café]] silently picked one
    found = [f for f in v.lint().findings if f.code == "WM104"]
    assert sorted(f.path for f in found) == ["a.md", "b.md"]
    assert all("Unicode forms" in f.message for f in found)


def test_a_link_typed_in_the_other_form_finds_the_only_file(make_vault):
    root = make_vault({"SCHEMA.md": "# S\n", f"{NFD}.md": "# Decomposed\n", "a.md": f"# A\n\n[[{NFC}]]\n"})
    v = open_vault(root, embedder="none")
    v.index()
    assert [l.resolved for l in v.pages()["a.md"].links] == [f"{NFD}.md"]
