"""wikimem doctor: a healthy vault passes; each thing broken on purpose is reported as a failing
check carrying the command that fixes it, and the command exits 1."""
from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from wikimem.api import open_vault
from wikimem.cli import app
from wikimem.doctor import diagnose

runner = CliRunner()
FILES = {"a.md": "# A\n\nSee [[b]].\n", "b.md": "# B\n\nBack to [[a]].\n"}


@pytest.fixture
def healthy(make_vault):
    root = make_vault(FILES)
    v = open_vault(root, embedder="fake")
    v.index()
    v.close()
    return root


def checks(report) -> dict:
    return {c.name: c for c in report.checks}


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_healthy_vault_passes(healthy):
    report = diagnose(healthy, embedder="fake")
    found = checks(report)
    assert report.ok, [c for c in report.checks if c.status == "fail"]
    for name in ("python", "dependencies", "vault", "config", "cache", "embedder", "lock", "watcher", "disk"):
        assert found[name].status == "ok", found[name]
    assert "fake" in found["embedder"].detail and "dimensional" in found["embedder"].detail
    assert report.versions["igraph"] and report.versions["faiss-cpu"]
    result = runner.invoke(app, ["doctor", str(healthy), "--embedder", "fake", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ok"] is True


def test_missing_vault_path(tmp_path):
    missing = tmp_path / "nowhere"
    report = diagnose(missing)
    vault = checks(report)["vault"]
    assert vault.status == "fail" and vault.fix == f"wikimem init {missing}"
    result = runner.invoke(app, ["doctor", str(missing)])
    assert result.exit_code == 1 and f"wikimem init {missing}" in result.stdout


@pytest.mark.local_store
def test_corrupt_manifest(healthy):
    v = open_vault(healthy, embedder="fake")
    manifest = v.cache.manifest_path
    v.close()
    for suffix in ("-wal", "-shm"):
        (manifest.parent / (manifest.name + suffix)).unlink(missing_ok=True)
    manifest.write_bytes(b"this is not a database" * 100)
    cache = checks(diagnose(healthy, embedder="fake"))["cache"]
    assert cache.status == "fail" and "corrupt" in cache.detail
    assert cache.fix == f"wikimem index {healthy} --rebuild"
    # the fix works
    result = runner.invoke(app, ["index", str(healthy), "--rebuild", "--embedder", "fake"])
    assert result.exit_code == 0, result.output
    assert diagnose(healthy, embedder="fake").ok


@pytest.mark.local_store
def test_damaged_vector_index(healthy):
    faiss_file = healthy / ".wikimem" / "vectors.faiss"
    data = bytearray(faiss_file.read_bytes())
    data[-8:] = b"\xff" * 8
    faiss_file.write_bytes(bytes(data))
    cache = checks(diagnose(healthy, embedder="fake"))["cache"]
    assert cache.status == "fail" and "faiss" in cache.detail and cache.fix == f"wikimem index {healthy}"


def test_never_indexed(make_vault):
    root = make_vault(FILES)
    cache = checks(diagnose(root, embedder="fake"))["cache"]
    assert cache.status == "fail" and cache.fix == f"wikimem index {root}"


@pytest.mark.local_store
def test_stale_lock(healthy):
    (healthy / ".wikimem" / "lock").write_text(str(dead_pid()))
    report = diagnose(healthy, embedder="fake")
    lock = checks(report)["lock"]
    assert not report.ok and lock.status == "fail" and "stale" in lock.detail
    assert lock.fix == f"wikimem index {healthy}"
    open_vault(healthy, embedder="fake").index()  # the fix: a build takes the lock and lets go cleanly
    assert checks(diagnose(healthy, embedder="fake"))["lock"].status == "ok"


def test_unreachable_embedder_url(healthy):
    with socket.socket() as s:  # a port nobody listens on: bound, then closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (healthy / ".wikimem" / "config.toml").write_text(
        f'embedder = "ollama"\nembed_model = "nomic"\nembed_url = "http://127.0.0.1:{port}"\n')
    report = diagnose(healthy)
    found = checks(report)
    endpoint = found["embedder endpoint"]
    assert endpoint.status == "fail" and f"127.0.0.1:{port}" in endpoint.detail and "ollama serve" in endpoint.fix
    assert found["embedder"].status == "skip"
    result = runner.invoke(app, ["doctor", str(healthy), "--json"])
    assert result.exit_code == 1
    assert "embedder endpoint" in json.loads(result.stdout)["failed"]


def test_bad_config(healthy):
    (healthy / ".wikimem" / "config.toml").write_text("no_such_setting = 1\n")
    config = checks(diagnose(healthy))["config"]
    assert config.status == "fail" and "config.toml" in config.fix


def test_stale_watcher_pid_file(healthy):
    (healthy / ".wikimem" / "watch.pid").write_text(f"{dead_pid()}\n")
    watcher = checks(diagnose(healthy, embedder="fake"))["watcher"]
    assert watcher.status == "fail" and "--stop" in watcher.fix


@pytest.mark.local_store  # a stale lock file: PostgreSQL's writer lock is an advisory lock its server frees
def test_text_output_shows_fixes(healthy):
    (healthy / ".wikimem" / "lock").write_text(str(dead_pid()))
    result = runner.invoke(app, ["doctor", str(healthy), "--embedder", "fake"])
    assert result.exit_code == 1
    assert "fail" in result.stdout and f"fix: wikimem index {healthy}" in result.stdout
    v = open_vault(healthy, embedder="fake")
    assert v.doctor().ok is False
