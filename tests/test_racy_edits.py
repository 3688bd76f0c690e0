"""`wikimem index` finds an edit that kept size and mtime (issue 35 item 12): a full scan hashes the
files whose ctime moved since the last full scan began, as git does for racily clean entries."""
from __future__ import annotations

import os

from wikimem.api import open_vault


def test_an_edit_keeping_size_and_mtime_is_found_by_index(make_vault):
    # Was: "0 changed": the scan trusted size and mtime
    root = make_vault({"SCHEMA.md": "# S\n", "notes/a.md": "# A\n\nalpha bravo\n"})
    v = open_vault(root, embedder="none")
    v.index()
    path = root / "notes/a.md"
    st = os.stat(path)
    path.write_text("# A\n\nalpha charl\n")  # same length
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime put back (a sync tool, touch -r)
    assert os.stat(path).st_size == st.st_size and os.stat(path).st_mtime_ns == st.st_mtime_ns
    report = open_vault(root, embedder="none").index()
    assert report.changed == 1
    assert [h.path for h in v.search("charl", mode="lexical").hits] == ["notes/a.md"]


def test_an_unchanged_vault_is_not_hashed_again(make_vault, monkeypatch):
    root = make_vault({"SCHEMA.md": "# S\n", **{f"n{i}.md": f"# N{i}\n" for i in range(5)}})
    open_vault(root, embedder="none").index()
    from wikimem.index import build
    from wikimem.vault.files import VaultFiles
    monkeypatch.setattr(build, "CTIME_SLACK_NS", 0)
    hashed = []
    real = VaultFiles.file_sha256
    monkeypatch.setattr(VaultFiles, "file_sha256", lambda self, rel: hashed.append(rel) or real(self, rel))
    report = open_vault(root, embedder="none").index()
    assert report.changed == 0 and hashed == []  # nothing changed since the last scan began
