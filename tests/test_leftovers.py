"""Issue 27 item 18: temp files a SIGKILL left behind (.wikimem-*.tmp in note folders, the vault
root and .obsidian/) are reported by doctor and swept by the next full build once they are stale."""
import os
import time

from wikimem.api import open_vault
from wikimem.doctor import check_leftovers


def test_stale_temp_files_are_reported_and_swept(make_vault):
    root = make_vault({"notes/a.md": "# A\n", ".obsidian/graph.json": "{}"})
    old = [root / "notes/.wikimem-abc123.tmp", root / ".wikimem-x_9.tmp", root / ".obsidian/.wikimem-q1.tmp"]
    fresh = root / "notes/.wikimem-fresh1.tmp"  # a write under way in another process: left alone
    for path in (*old, fresh):
        path.write_text("half a note")
    past = time.time() - 3600
    for path in old:
        os.utime(path, (past, past))
    v = open_vault(root, embedder="none")
    check = check_leftovers(v)
    assert check.status == "warn" and "4 temp file(s)" in check.detail
    report = v.index()
    assert any("removed 3 temp file(s)" in n for n in report.notices)
    assert not any(p.exists() for p in old) and fresh.exists()
    assert (root / "notes/a.md").exists() and (root / ".obsidian/graph.json").exists()
