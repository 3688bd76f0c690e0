"""Frontmatter parsing and minimal-diff updates."""
import pytest

from wikimem.api import open_vault
from wikimem.errors import ConflictError, WikimemError
from wikimem.parse import frontmatter as fm
from wikimem.parse import parse_page


def test_dates_are_normalised():
    page = parse_page("concepts/x.md", "---\ncreated: 2026-01-02\nwhen: 2026-01-02 10:30:00\n---\nbody")
    assert page.frontmatter.data == {"created": "2026-01-02", "when": "2026-01-02T10:30:00"}
    assert page.created == "2026-01-02" and page.type == "concept"


def test_update_touches_only_changed_keys():
    raw = "title: A  # a comment\nweird_key: {nested: [1, 2]}\ntags:\n  - x\n  - y\nstatus: active\n"
    data = fm.parse(f"---\n{raw}---\n")[0].data
    new = fm.update(raw, data, {"status": "superseded", "superseded_by": "[[B]]", "tags": None})
    assert new == "title: A  # a comment\nweird_key: {nested: [1, 2]}\nstatus: superseded\nsuperseded_by: '[[B]]'\n"


def test_update_frontmatter_keeps_bytes_crlf_and_order(make_vault):
    original = b"---\r\nzeta: 1\r\nalpha: two   # keep me\r\n---\r\n# Body\r\n\r\ntext\r\n"
    root = make_vault({"concepts/a.md": original})
    vault = open_vault(root)
    page = vault.update_frontmatter("concepts/a.md", {"status": "draft"})
    data = (root / "concepts/a.md").read_bytes()
    assert data == b"---\r\nzeta: 1\r\nalpha: two   # keep me\r\nstatus: draft\r\n---\r\n# Body\r\n\r\ntext\r\n"
    assert list(page.frontmatter.data) == ["zeta", "alpha", "status"]


def test_update_frontmatter_on_note_without_one(make_vault):
    root = make_vault({"n.md": "just text\n"})
    open_vault(root).update_frontmatter("n.md", {"title": "T"})
    assert (root / "n.md").read_text() == "---\ntitle: T\n---\njust text\n"


def test_update_refuses_malformed_yaml_and_stale_hash(make_vault):
    root = make_vault({"bad.md": "---\ntitle: [x\n---\nbody\n", "ok.md": "---\na: 1\n---\n"})
    vault = open_vault(root)
    with pytest.raises(WikimemError, match="malformed"):
        vault.update_frontmatter("bad.md", {"a": 1})
    with pytest.raises(ConflictError):
        vault.update_frontmatter("ok.md", {"a": 2}, expected_sha256="0" * 64)
    assert (root / "bad.md").read_text() == "---\ntitle: [x\n---\nbody\n"
