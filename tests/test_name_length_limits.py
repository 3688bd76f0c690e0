"""File names near the 255-byte limit: a note with a long valid name can be edited (the temp file
name must fit too), source pages and conversation notes cut long CJK titles by bytes, not
characters, and a name over 255 bytes is a clean error."""
from __future__ import annotations

import pytest

from conftest import write_vault
from wikimem.api import Vault, open_vault
from wikimem.errors import WikimemError

pytestmark = pytest.mark.adversarial


def _open(root):
    return open_vault(root, embedder="fake")


@pytest.fixture
def _no_embedder(monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "none")


def test_frontmatter_edit_of_a_note_with_a_long_valid_name_works(make_vault):
    # Was: vault/files.atomic_write_bytes names its temp file ".<name>.<8 random>.tmp", 14 bytes
    # longer than the note's own name. A note whose name is 242..255 bytes (legal on every file
    # system; 81 CJK characters) can be read but never written: OSError "File name too long" from
    # update_frontmatter / supersede / write_page (the same trap makes `wikimem query` fail on an
    # 80-character Chinese question, whose queries/<slug>.md is 243 bytes).
    long_name = "concepts/" + "长" * 81 + ".md"  # 246 bytes: a valid file name
    root = make_vault({"SCHEMA.md": "# S\n", long_name: "---\ntitle: Long\n---\n# Long\n"})
    v = _open(root)
    try:
        v.update_frontmatter(long_name, {"status": "draft"})
    finally:
        v.close()
    assert "status: draft" in (root / long_name).read_text(encoding="utf-8")


def test_ingest_of_an_article_with_a_long_chinese_title_works(tmp_path):
    # Was: ingest/sources._write_source_page cuts the source page's name at 100 *characters*;
    # 87 CJK characters are 261 bytes, over the 255-byte name limit, so ingesting an ordinary
    # Chinese web page fails with "File name too long" after raw/articles/ already received the
    # copy and its text note (reported with raw: [] and no source page).
    title = "关于城市社区堆肥项目在二零二五年春季的实施效果评估与居民参与度调查研究报告" * 2 + "以及后续改进建议和经验总结"
    root = write_vault(tmp_path / "v", {"SCHEMA.md": "# S\n"})
    src = tmp_path / "article.html"
    src.write_text(f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
                   "<p>堆肥应该每周翻堆一次，这样微生物可以获得足够的氧气。</p></body></html>", encoding="utf-8")
    v = _open(root)
    try:
        report = v.ingest([str(src)])
    finally:
        v.close()
    item = report.items[0]
    assert item.status == "added", item.message
    assert item.page and (root / item.page).exists()


@pytest.mark.usefixtures("_no_embedder")
def test_a_conversation_with_a_long_cjk_title_is_imported(tmp_path):
    # Now: note_path cuts the title at 80 *characters* (fit_name was applied to source and query
    # pages only); 80 CJK characters + date + id are 263 bytes, over the 255-byte name limit, so
    # abspath refuses it and the conversation is reported "refused" and never imported.
    from wikimem.ingest.conversations import write_sessions
    from wikimem.ingest.transcript import Session, Turn
    root = write_vault(tmp_path / "v", {"index.md": "# Index\n"})
    v = Vault(root)
    session = Session(title="关于堆肥" * 20, turns=[Turn("User", "你好"), Turn("Assistant", "你好！")],
                      date="2024-05-01T10:00:00", extra={"session_id": "abcdef1234567890"})
    results = write_sessions(v, [session])
    assert [r.status for r in results] == ["added"], results


def test_a_path_with_a_name_over_255_bytes_is_a_clean_error(make_vault):
    """Was: a bare OSError (File name too long) from read_page."""
    root = make_vault({"SCHEMA.md": "# S\n"})
    v = _open(root)
    try:
        with pytest.raises(WikimemError, match="255 bytes"):
            v.files.read_note("concepts/" + "x" * 5000 + ".md")
    finally:
        v.close()
