"""An attachment (or raw/ file) that cannot be read while a build hashes it: hashed again by a later
build, never reported missing by lint nor stale for ever, and lint's raw/ ledger (WM506) keeps
working for it, also when an older version recorded it without a hash."""
from __future__ import annotations

import pytest

from conftest import write_vault
from wikimem.api import Vault, open_vault
from wikimem.vault.files import VaultFiles

from support_built_vault import built  # noqa: F401, F811 - the shared built-vault fixture

pytestmark = pytest.mark.adversarial


@pytest.fixture
def _no_embedder(monkeypatch):
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "none")


def test_an_attachment_unreadable_during_one_build_is_hashed_by_the_next(built, monkeypatch):
    # Was: a raw/ file that could not be opened while a build hashed it (permission denied, gone for a
    # moment) was stored with sha256 "" and its current size and mtime, was not reported as skipped, and
    # was never hashed again (chmod back does not change the mtime), although file_sha256 promises "it is
    # then re-hashed on the next build". Lint's raw/ ledger then recorded "" for it, which switched off
    # WM506 (raw source changed) for that file for good: a later edit of it was never reported.
    root, _ = built
    asset = root / "raw" / "assets" / "pic.png"
    asset.parent.mkdir(parents=True)
    asset.write_bytes(b"\x89PNG original bytes")
    from wikimem.vault import files as files_mod
    real_open = files_mod._open_regular

    def denied(rel, path, *args, **kwargs):  # chmod 000 (the tests may run as root, where chmod does not deny)
        if rel.endswith("pic.png"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(rel, path, *args, **kwargs)
    monkeypatch.setattr(files_mod, "_open_regular", denied)
    vault = open_vault(root, embedder="fake")
    first = vault.index()
    monkeypatch.undo()
    vault.index()  # readable again
    sha = dict(vault.cache.db.execute("SELECT path, sha256 FROM files"))["raw/assets/pic.png"]
    assert sha, f"never re-hashed; the first build skipped: {first.skipped}"
    vault.lint(select=["WM506"])  # the ledger records the file as first seen
    asset.write_bytes(b"\x89PNG tampered bytes")
    assert [f.code for f in vault.lint(select=["WM506"]).findings] == ["WM506"]


@pytest.mark.usefixtures("_no_embedder")
def test_an_unreadable_attachment_is_not_missing_to_lint_nor_stale_for_ever(tmp_path, monkeypatch):
    # Now (510da94): the attachment is left out of the manifest, so lint says WM106 "attachment
    # 'img.png' not found" for a file that is there, and status lists it in stale_files after
    # every build (doctor: "run wikimem index", which cannot help). iCloud/OneDrive online-only
    # files and permission changes do this. Since the same change re-hashes a row recorded with
    # an empty hash, recording it with "" (as before) would do.
    root = write_vault(tmp_path / "v", {"a.md": "# A\n\n![[img.png]]\n", "img.png": b"\x89PNG\x00\x01"})
    orig = VaultFiles.file_sha256
    monkeypatch.setattr(VaultFiles, "file_sha256", lambda self, rel: "" if rel == "img.png" else orig(self, rel))
    v = Vault(root)
    v.index()
    codes = [(f.code, f.message) for f in v.lint(()).findings]
    assert not [c for c in codes if c[0] == "WM106"], codes
    assert "img.png" not in (v.status().get("stale_files") or [])


def test_an_attachment_an_older_version_recorded_without_a_hash_is_hashed_again(tmp_path):
    """The previous version stored sha256 "" for an attachment it could not read, and lint's raw/
    ledger "" for it; neither was ever filled in (WM506 off for that file for good)."""
    import json

    root = write_vault(tmp_path / "v", {"SCHEMA.md": "# S\n", "raw/assets/pic.png": b"\x89PNG original"})
    v = open_vault(root, embedder="fake")
    v.index()
    with v.cache.transaction() as db:  # as the previous version left it
        db.execute("UPDATE files SET sha256 = '' WHERE path = 'raw/assets/pic.png'")
    (v.cache.dir / "lint-raw-ledger.json").write_text(json.dumps({"raw/assets/pic.png": ""}), encoding="utf-8")
    v.index()
    assert dict(v.cache.db.execute("SELECT path, sha256 FROM files"))["raw/assets/pic.png"]
    v.lint(select=["WM506"])  # records the file's hash now
    (root / "raw/assets/pic.png").write_bytes(b"\x89PNG tampered")
    assert [f.code for f in v.lint(select=["WM506"]).findings] == ["WM506"]
    v.close()
