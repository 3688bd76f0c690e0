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

# What a user's commands leave inside a vault folder of the repo (the README's first command indexes
# examples/ in place; a watcher or an Obsidian session leaves more): never copied into a test's vault,
# so a test reads the vault as the repo holds it whatever ran before it.
GENERATED = (".wikimem", ".trash", ".hypothesis", "__pycache__", "*.pyc", "workspace.json", "workspace-mobile.json",
             "graph.json.bak", ".DS_Store")


def copy_vault(source: Path, target: Path, *also_ignore: str) -> Path:
    """Copy a vault folder of the repo (examples/, a fixture) into ``target`` without the generated files."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*GENERATED, *also_ignore))
    return target


def indexed_examples(root: Path):
    """The bundled examples/ vault copied to ``root`` and indexed with the fake embedder (a Vault)."""
    from wikimem.api import open_vault
    copy_vault(EXAMPLES, root)
    vault = open_vault(root, embedder="fake")
    vault.index()
    return vault


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
    copy_vault(FIXTURES / "tricky", root)
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
    parser.addoption("--store", choices=("local", "postgres"), default="local",
                     help="Run every test on these derived stores: postgres gives each test a new database "
                          "on the throwaway server (tests/pg_server.py), as WIKIMEM_STORE/WIKIMEM_DATABASE_URL.")


_UPDATE_GOLDEN = {"on": False}


def pytest_collection_modifyitems(config, items):
    if config.getoption("--store") != "postgres":
        return
    skip = pytest.mark.skip(reason="looks into the local cache folder's files, which a PostgreSQL store has not")
    for item in items:
        if item.get_closest_marker("local_store") is not None:
            item.add_marker(skip)
        todo = item.get_closest_marker("postgres_todo")
        if todo is not None:
            item.add_marker(pytest.mark.skip(reason=f"not yet on the PostgreSQL store: {todo.args[0]}"))


def pytest_configure(config):
    # read once, before the autouse fixture below clears WIKIMEM_* for every test
    _UPDATE_GOLDEN["on"] = bool(config.getoption("--update-golden") or os.environ.get("WIKIMEM_UPDATE_GOLDEN"))


@pytest.fixture(autouse=True)
def _clean_wikimem_env(monkeypatch, request):
    """A developer's WIKIMEM_* settings (embedder, vault, weights...) must not change outcomes;
    a test that wants one sets it itself. With ``--store postgres`` every vault's stores are on
    a database of its own (the same suite on the second implementation of the stores)."""
    for key in list(os.environ):
        if key.startswith("WIKIMEM_"):
            monkeypatch.delenv(key)
    if request.config.getoption("--store") == "postgres":
        monkeypatch.setenv("WIKIMEM_STORE", "postgres")
        monkeypatch.setenv("WIKIMEM_DATABASE_URL", request.getfixturevalue("pg_database"))


# Scores in golden files are compared to this tolerance: another CPU or BLAS build (AVX-512 against
# AVX2, numpy's or faiss's own kernels) moves them in the 7th or 8th digit. Everything else, the order
# of hits included, is compared exactly.
GOLDEN_REL = 1e-5
GOLDEN_ABS = 1e-6


def _round_floats(data, digits: int = 6):
    if isinstance(data, float):
        return round(data, digits)
    if isinstance(data, dict):
        return {key: _round_floats(value, digits) for key, value in data.items()}
    if isinstance(data, list):
        return [_round_floats(value, digits) for value in data]
    return data


def golden_difference(expected, actual, where: str = "$") -> str | None:
    """Where ``actual`` differs from ``expected``, or None: floats to GOLDEN_REL/GOLDEN_ABS (a float
    stored rounded in the file still matches), lists in order (ranks exactly), everything else exactly."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return None if expected is actual else f"{where}: {expected!r} != {actual!r}"
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        if isinstance(expected, int) and isinstance(actual, int):
            return None if expected == actual else f"{where}: {expected!r} != {actual!r}"
        tolerance = max(GOLDEN_ABS, GOLDEN_REL * max(abs(expected), abs(actual)))
        return None if abs(expected - actual) <= tolerance else f"{where}: {expected!r} != {actual!r}"
    if type(expected) is not type(actual):
        return f"{where}: {expected!r} != {actual!r}"
    if isinstance(expected, dict):
        if expected.keys() != actual.keys():
            return f"{where}: keys {sorted(expected)} != {sorted(actual)}"
        for key in expected:
            found = golden_difference(expected[key], actual[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list):
        if len(expected) != len(actual):
            return f"{where}: {len(expected)} items != {len(actual)}"
        for i, (a, b) in enumerate(zip(expected, actual)):
            found = golden_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if expected == actual else f"{where}: {expected!r} != {actual!r}"


def golden(name: str, data) -> None:
    """Compare ``data`` with tests/golden/<name>.json: ranks and text exactly, scores to a tolerance.
    A missing golden file fails; only ``pytest --update-golden`` (or WIKIMEM_UPDATE_GOLDEN=1) writes it."""
    path = GOLDEN / f"{name}.json"
    actual = json.loads(json.dumps(data, ensure_ascii=False))
    if _UPDATE_GOLDEN["on"]:
        text = json.dumps(_round_floats(actual), ensure_ascii=False, indent=2, sort_keys=True) + "\n"
        path.write_text(text, encoding="utf-8")
    elif not path.exists():
        pytest.fail(f"golden file {path} is missing; run pytest --update-golden to write it, then review the diff")
    found = golden_difference(json.loads(path.read_text(encoding="utf-8")), actual)
    assert found is None, f"differs from golden {path.name}: {found}"


# the throwaway PostgreSQL + pgvector of the team-store tests (started only when a test asks)
from pg_server import pg_database, pg_url  # noqa: E402,F401
