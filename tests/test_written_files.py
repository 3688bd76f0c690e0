"""Issue 26 items 6-7: files wikimem creates get the user's umask; the cache folder ignores itself in git."""
import os
import stat
import subprocess
import sys

import pytest

from wikimem.api import init_vault, open_vault
from wikimem.vault.files import atomic_write_bytes, process_umask


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_process_umask_reads_the_real_one():
    code = "import os; os.umask(0o027); from wikimem.vault.files import process_umask; print(oct(process_umask()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0o27"


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield 0o022
    os.umask(old)


def test_a_new_file_gets_the_umask_and_a_replaced_one_keeps_its_mode(tmp_path, umask_022):
    # Was: mkstemp's 0600 was kept by the rename, so every note wikimem created was private
    assert process_umask() == 0o022
    target = tmp_path / "new.md"
    atomic_write_bytes(target, b"x")
    assert _mode(target) == 0o644
    os.chmod(target, 0o640)
    atomic_write_bytes(target, b"y")
    assert _mode(target) == 0o640 and target.read_bytes() == b"y"


def test_notes_log_and_index_written_by_wikimem_are_not_private(tmp_path, umask_022):
    root = tmp_path / "v"
    init_vault(root)
    v = open_vault(root, embedder="none")
    v.remember("The user prefers tea over coffee", kind="persona")
    v.query("what does the user prefer to drink")
    created = [p for p in root.rglob("*.md") if ".wikimem" not in p.parts]
    written = [p for p in created if p.parent.name in ("memories", "queries") or p.name in ("log.md", "index.md")]
    assert len(written) >= 3
    assert {p.name: _mode(p) for p in written} == {p.name: 0o644 for p in written}


def test_the_cache_folder_tells_git_to_ignore_it(tmp_path):
    # Was: `git add -A` in a vault committed the 50 MB cache with its WAL files
    root = tmp_path / "v"
    root.mkdir()
    (root / "a.md").write_text("# A\n")
    open_vault(root, embedder="none").index()
    assert (root / ".wikimem" / ".gitignore").read_text().splitlines()[-1] == "*"
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    listed = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True, check=True)
    assert listed.stdout.split() == ["a.md"]
