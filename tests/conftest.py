"""Shared test helpers: small vaults built in tmp_path, the tricky-syntax fixture, golden files."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
GOLDEN = HERE / "golden"
EXAMPLES = HERE.parent / "examples"


def write_vault(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
    return root


@pytest.fixture
def make_vault(tmp_path):
    def make(files: dict[str, str | bytes], name: str = "vault") -> Path:
        return write_vault(tmp_path / name, files)
    return make


@pytest.fixture
def tricky_vault(tmp_path) -> Path:
    """The tricky-syntax fixture plus the files git should not carry: CRLF, BOM, non-UTF-8,
    binary, a 6 MB note, a symlink loop, an Obsidian config folder and an ignored folder."""
    root = tmp_path / "tricky"
    shutil.copytree(FIXTURES / "tricky", root)
    (root / "notes" / "crlf.md").write_bytes(b"---\r\ntitle: CRLF note\r\n---\r\n# CRLF\r\n\r\nLine [[Target]]\r\n")
    (root / "notes" / "bom.md").write_bytes(b"\xef\xbb\xbf# BOM note\n\nSee [[Target]].\n")
    (root / "notes" / "latin1.md").write_bytes("caf\xe9 [[Target]]\n".encode("latin-1"))
    (root / "notes" / "binary.md").write_bytes(b"\x00\x01\x02 not text")
    (root / "notes" / "huge.md").write_bytes(b"# Huge\n" + b"word " * (6 * 1024 * 1024 // 5 + 10))
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "workspace.md").write_text("[[ShouldNotBeSeen]]")
    (root / "ignored").mkdir()
    (root / "ignored" / "skip.md").write_text("[[ShouldNotBeSeen]]")
    (root / ".wikimemignore").write_text("# comment\nignored/\n*.tmp.md\n")
    (root / "notes" / "scratch.tmp.md").write_text("ignored by pattern")
    os.symlink("..", root / "sub" / "loop")  # sub/loop -> tricky/ : a symlink loop
    return root


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="(Re)write tests/golden/*.json from the current output instead of comparing.")


_UPDATE_GOLDEN = {"on": False}


def pytest_configure(config):
    # read once, before the autouse fixture below clears WIKIMEM_* for every test
    _UPDATE_GOLDEN["on"] = bool(config.getoption("--update-golden") or os.environ.get("WIKIMEM_UPDATE_GOLDEN"))


@pytest.fixture(autouse=True)
def _clean_wikimem_env(monkeypatch):
    """A developer's WIKIMEM_* settings (embedder, vault, weights...) must not change outcomes;
    a test that wants one sets it itself."""
    for key in list(os.environ):
        if key.startswith("WIKIMEM_"):
            monkeypatch.delenv(key)


def golden(name: str, data) -> None:
    """Compare ``data`` with tests/golden/<name>.json. A missing golden file fails; only
    ``pytest --update-golden`` (or WIKIMEM_UPDATE_GOLDEN=1) writes it."""
    path = GOLDEN / f"{name}.json"
    text = json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
    if _UPDATE_GOLDEN["on"]:
        path.write_text(text, encoding="utf-8")
    elif not path.exists():
        pytest.fail(f"golden file {path} is missing; run pytest --update-golden to write it, then review the diff")
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(text), f"differs from golden {path.name}"
