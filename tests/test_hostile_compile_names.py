"""compile on raw/ files a person named outside Obsidian: a name holding | # ^ [ ] cannot be a
[[wikilink]] (Obsidian reads # as a heading, | as shown text, ^ as a block). Citing one wrote a broken
link (lint WM105) and, read back by the citation parser, tracked the source as never compiled."""
import hashlib

import pytest

from wikimem.api import init_vault, open_vault

SOURCE = "# notes\n\n- Commit staged files to the repository with a message.\n- Push commits to a remote repository.\n"
BAD = ["C# and Git.md", "a|b Git.md", "[draft] Git.md", "中文 笔记^1.md"]


@pytest.fixture
def vault(tmp_path):
    root = tmp_path / "v"
    init_vault(root)
    for name in BAD + ["plain Git.md"]:
        (root / "raw" / "articles" / name).write_text(SOURCE.replace("notes", name[:-3]), encoding="utf-8")
    (root / "concepts" / "Repository.md").write_text("---\ntitle: Repository\ntype: concept\n---\n# Repository\n\n"
                                                     "My notes.\n", encoding="utf-8")
    return open_vault(root, embedder="fake")


def test_an_unlinkable_source_is_left_out_and_said(vault):
    raw = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (vault.root / "raw").rglob("*.md")}
    report = vault.compile()
    page = (vault.root / "concepts" / "Repository.md").read_text(encoding="utf-8")
    assert "[[raw/articles/plain Git]]" in page
    for name in BAD:
        assert name[:-3] not in page
        assert any(n.startswith(f"raw/articles/{name}: not compiled") and "rename it" in n for n in report.notices)
    lint = vault.lint(["concepts"], select=["WM1"])
    assert [f for f in lint.findings if f.path == "concepts/Repository.md"] == []
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in raw} == raw  # raw/ untouched
    again = vault.compile()
    assert again.changed == []
    assert {s.path: s.status for s in again.sources}["raw/articles/plain Git.md"] == "compiled"
