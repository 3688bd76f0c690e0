"""A full disk is never taken for a damaged cache, and MCP says it in words (issue 47 item 15)."""
from __future__ import annotations

import errno
import sqlite3

import pytest

from support_tool_failure import tool_failure
from wikimem.api import open_vault
from wikimem.errors import DiskFullError, describe_os_error


def _full(v) -> None:
    """The manifest may grow no more: SQLite answers SQLITE_FULL ("database or disk is full"), as on a
    full disk, and rolls the transaction back by itself."""
    db = v.ctx.cache.db
    db.execute(f"PRAGMA max_page_count={db.execute('PRAGMA page_count').fetchone()[0]}")


@pytest.mark.local_store  # fills SQLite's page quota: PostgreSQL's full disk is its server's
def test_a_full_disk_is_not_taken_for_cache_damage(make_vault):
    root = make_vault({"a.md": "# A\n\nzebra crossing\n"})
    v = open_vault(root, embedder="fake")
    v.index()
    _full(v)
    (root / "b.md").write_text("# B\n\n" + " ".join(f"word{i}" for i in range(20_000)) + "\n")
    # was: "the cache is damaged (cannot rollback - no transaction is active); rebuilding it"
    with pytest.raises(DiskFullError, match="not damaged"):
        v.index()
    assert [h.path for h in v.search("zebra", mode="lexical").hits] == ["a.md"]  # the cache as it was
    v.ctx.cache.db.execute("PRAGMA max_page_count=1073741823")  # space again
    report = v.index()
    assert not any("rebuilding the cache" in n for n in report.notices)
    assert [h.path for h in v.search("word5", mode="lexical").hits] == ["b.md"]


@pytest.mark.parametrize("exc, words", [
    (OSError(errno.ENOSPC, "No space left on device", "/v/.wikimem/manifest.sqlite"), "the disk is full"),
    (OSError(errno.EROFS, "Read-only file system", "/v/notes/a.md"), "read-only"),
    (sqlite3.OperationalError("attempt to write a readonly database"), "read-only"),
    (sqlite3.OperationalError("database or disk is full"), "the disk is full"),
])
def test_mcp_says_a_full_disk_and_a_read_only_cache_in_words(exc, words):
    said = tool_failure(exc)
    assert words in said and "Errno" not in said
    assert words in describe_os_error(exc)


@pytest.mark.parametrize("exc, trouble", [
    (OSError(errno.ENOSPC, "No space left on device"), "full"),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), "full"),
    (OSError(errno.EIO, "Input/output error"), "failing"),
    (sqlite3.OperationalError("database or disk is full"), "full"),
    (sqlite3.OperationalError("disk I/O error"), "failing"),
    (sqlite3.DatabaseError("database disk image is malformed"), None),  # damage: rebuilt
    (OSError(errno.EACCES, "Permission denied"), None),
])
def test_one_predicate_tells_a_full_or_failing_disk_from_damage(exc, trouble):
    """The stores (may this error rebuild the cache?) and the messages ask the same question."""
    from wikimem.errors import disk_trouble
    from wikimem.stores.sidefiles import not_damage
    assert disk_trouble(exc) == trouble
    assert not_damage(exc) is (trouble is not None)
