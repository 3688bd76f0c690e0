"""``wikimem index`` returns once every chunk is searchable and leaves a note's held passages to one
detached job (index/passages_job.py), through the command line as a user types it. The threshold
is lowered with the setting (``WIKIMEM_INDEX_PASSAGES_MIN``) so a vault of ~1,000 passages (~10 s
of the e5 model's int8 passages here) goes to the background; every wait polls with a generous
timeout, never a tight clock."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wikimem.index.passages_job import job_pid

pytestmark = pytest.mark.slow  # ~3 min of the e5 model on 2 cores: real builds, real background jobs

ROOT = Path(__file__).parent.parent
WORDS = ("river mountain cache vector index search passage lexical graph note vault embed model quantise "
         "token batch commit writer lock watcher server ranking query answer source page link tag folder "
         "alias heading chunk").split()
QUERIES = ("quantise the token batch", "writer lock commit", "river mountain", "graph of links and tags")
TIMEOUT = 600.0  # seconds a background job may take here (measured ~10-20 s): only a hang fails


@pytest.fixture(autouse=True)
def _needs_e5():
    from wikimem.config import Settings
    from wikimem.embed import get_embedder
    try:
        get_embedder(Settings())
    except Exception as exc:  # noqa: BLE001 - the model is not installed here
        pytest.skip(f"the e5 model is not available: {exc}")


def notes(count: int) -> dict[str, str]:
    """Notes of eight sections, each a paragraph and a list: ~24 held passages a note."""
    files = {}
    for i in range(count):
        parts = []
        for j in range(8):
            words = " ".join(WORDS[(i * 7 + j * 3 + k * k) % len(WORDS)] for k in range(25))
            parts.append(f"## Part {j}\n\n{words}.\n\n- item {WORDS[(i + j) % len(WORDS)]} {j}\n"
                         f"- item {WORDS[(i * j) % len(WORDS)]} two")
        files[f"notes/t{i}.md"] = f"# Topic {i}\n\n" + "\n\n".join(parts)
    return files


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _env(**extra: str) -> dict[str, str]:
    keep = ("WIKIMEM_STORE", "WIKIMEM_DATABASE_URL")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_") or k in keep}
    env.update(PYTHONPATH=str(ROOT), **extra)
    return env


def wikimem(root: Path, *args: str, env: dict[str, str] | None = None, check: bool = True):
    proc = subprocess.run([sys.executable, "-m", "wikimem.cli", *args, str(root)] if args[0] != "search" else
                          [sys.executable, "-m", "wikimem.cli", *args, "--vault", str(root)],
                          env=env or _env(WIKIMEM_INDEX_PASSAGES_MIN="10"), capture_output=True, text=True,
                          timeout=TIMEOUT)
    if check:
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc


def index_json(root: Path, *args: str, **env: str) -> dict:
    return json.loads(wikimem(root, "index", "--json", *args, env=_env(WIKIMEM_INDEX_PASSAGES_MIN="10", **env)).stdout)


def status(root: Path) -> dict:
    return json.loads(wikimem(root, "status", "--json").stdout)


def until(check, what: str, timeout: float = TIMEOUT, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s: {what}"
        time.sleep(every)


def landed(root: Path) -> dict:
    """Status once the job has ended and every held passage is in."""
    def done():
        info = status(root)
        job = info.get("passages_job") or {}
        return info if not job.get("running") and info["passage_coverage"] == 1.0 else None
    return until(done, "the background job embeds every passage")


def ranking(root: Path) -> list[list[tuple[str, str, float]]]:
    out = []
    for query in QUERIES:
        hits = json.loads(wikimem(root, "search", query, "--json", "--limit", "8").stdout)["hits"]
        out.append([(h["path"], " > ".join(h.get("heading_path") or []), round(h["score"], 5)) for h in hits])
    return out


def same_ranking(found: list, expected: list) -> bool:
    """Ranks exactly, scores to a tolerance (the PostgreSQL store's float sums differ in the 6th digit)."""
    return [[h[:2] for h in q] for q in found] == [[h[:2] for h in q] for q in expected] and all(
        abs(a[2] - b[2]) <= 1e-4 for qa, qb in zip(found, expected) for a, b in zip(qa, qb))


def pid_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"  # exited, not yet reaped
    except OSError:
        return True


def searchable(report: dict) -> bool:
    """Every vector a search scans is in (chunks); only held passages may be missing."""
    return report["vectors"] - report["passages_held"] == report["vectors_wanted"] - report["passages_wanted"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> list:
    """The ranking of the same vault built with ``--wait`` (everything embedded before returning)."""
    root = write(tmp_path_factory.mktemp("reference") / "vault", notes(40))
    report = json.loads(wikimem(root, "index", "--json", "--wait",
                                env=_env(WIKIMEM_INDEX_PASSAGES_MIN="10", WIKIMEM_STORE="local")).stdout)
    assert report["passages_job"] is None and report["passages_held"] == report["passages_wanted"] > 500
    env = _env(WIKIMEM_STORE="local")
    return [[(h["path"], " > ".join(h.get("heading_path") or []), round(h["score"], 5))
             for h in json.loads(subprocess.run([sys.executable, "-m", "wikimem.cli", "search", q, "--json", "--limit",
                                                 "8", "--vault", str(root)], env=env, capture_output=True, text=True,
                                                timeout=TIMEOUT).stdout)["hits"]] for q in QUERIES]


def test_small_vault_embeds_its_passages_before_returning(tmp_path):
    root = write(tmp_path / "vault", notes(3))
    report = json.loads(wikimem(root, "index", "--json", env=_env()).stdout)  # the default threshold
    assert 0 < report["passages_wanted"] < 1000
    assert report["passages_held"] == report["passages_wanted"] and report["passages_job"] is None
    assert job_pid(root) is None and status(root)["passages_job"] is None


def test_index_returns_searchable_and_the_job_lands_the_passages(tmp_path, reference):
    root = write(tmp_path / "vault", notes(40))
    proc = wikimem(root, "index")
    assert "note passages (re-ranking only) started in the background (pid" in proc.stdout
    assert "`wikimem status`" in proc.stdout
    info = status(root)
    assert info["vector_coverage"] == 1.0  # every chunk searchable by meaning at once
    job = info["passages_job"]
    assert job["pid"] > 0 and job["log"].endswith("passages.log")
    assert ranking(root)[0]  # a search works while the passages are pending
    text = wikimem(root, "status").stdout
    assert "passages job" in text and f"(pid {job['pid']})" in text and "note passages" in text
    final = landed(root)
    assert final["passages_job"]["state"] == "done" and final["degraded"] == []
    assert final["passages_job"]["embedded"] > 0
    assert "done (pid" in wikimem(root, "status").stdout
    assert same_ranking(ranking(root), reference)  # the same ranking as a build that waited for everything


def test_json_reports_the_job(tmp_path):
    root = write(tmp_path / "vault", notes(40))
    report = index_json(root)
    job = report["passages_job"]
    assert job["started"] is True and isinstance(job["pid"], int)
    assert job["passages"] == report["passages_wanted"] - report["passages_held"] > 0
    assert Path(job["log"]).parent == root / ".wikimem" / "logs"
    assert searchable(report) and "passages_partial" in report["degraded"]
    report = index_json(root, "--wait")  # and --wait while it runs waits for it
    assert report["passages_held"] == report["passages_wanted"] and report["passages_job"] is None
    assert report["embedded_now"] == 0  # the job embedded them; this command waited
    assert job_pid(root) is None and status(root)["passages_job"]["pid"] == job["pid"]


def test_one_job_at_a_time_and_no_one_else_embeds_its_passages(tmp_path):
    root = write(tmp_path / "vault", notes(40))
    first = index_json(root)["passages_job"]
    second = index_json(root)  # while the job runs
    assert job_pid(root) == first["pid"], "the job ended too soon for this test"
    assert second["passages_job"]["started"] is False and second["passages_job"]["pid"] == first["pid"]
    assert second["embedded_now"] == 0  # not one held passage embedded beside the job
    assert "already running" in wikimem(root, "index").stdout
    from wikimem.api import open_vault
    vault = open_vault(root)
    try:  # a watcher's or a server's step (embed everything missing) leaves them to the job too
        assert vault.embed_pending().embedded_now == 0
        # and a write-back's or a Python caller's build (passages="all") neither embeds them nor waits for the job
        (root / "notes" / "t0.md").write_text("# Topic 0\n\nOne short paragraph now.\n\n- and a list\n", encoding="utf-8")
        report = vault.index(paths=["notes/t0.md"])
        assert report.passages_job is not None and report.passages_job["pid"] == first["pid"]
        assert job_pid(root) == first["pid"], "the job ended too soon for this test"
    finally:
        vault.close()
    assert job_pid(root) == first["pid"]
    assert landed(root)["passages_job"]["pid"] == first["pid"]


def test_the_wait_setting_and_flag_keep_everything_in_the_foreground(tmp_path):
    root = write(tmp_path / "vault", notes(40))
    report = index_json(root, WIKIMEM_INDEX_PASSAGES="wait")
    assert report["passages_job"] is None and report["passages_held"] == report["passages_wanted"]
    assert job_pid(root) is None and status(root)["passages_job"] is None


def test_killed_job_loses_nothing_and_the_next_index_completes(tmp_path):
    root = write(tmp_path / "vault", notes(70))
    pid = index_json(root)["passages_job"]["pid"]
    seen = until(lambda: (lambda s: s if 0 < s["passage_coverage"] < 1.0 else None)(status(root)),
                 "the job commits its first passages")
    os.kill(pid, signal.SIGKILL)
    until(lambda: job_pid(root) is None, "the killed job's lock is free")
    info = status(root)
    assert info["passages_job"]["state"] == "died" and info["passages_job"]["running"] is False
    held_then, wanted = info["passages_job"]["passages_held"], info["passages_job"]["passages_wanted"]
    assert seen["passage_coverage"] * wanted <= held_then + 1 < wanted + 1
    report = index_json(root, "--wait")
    assert report["passages_held"] == report["passages_wanted"] == wanted
    assert report["embedded_now"] <= wanted - held_then  # what the job committed was not embedded again


def test_rebuild_while_the_job_runs(tmp_path, reference):
    root = write(tmp_path / "vault", notes(40))
    pid = index_json(root)["passages_job"]["pid"]
    rebuilt = index_json(root, "--rebuild")
    assert job_pid(root) == pid, "the job ended too soon for this test"
    assert rebuilt["passages_job"] == {**rebuilt["passages_job"], "pid": pid, "started": False}
    assert searchable(rebuilt)
    final = landed(root)
    assert final["passages_job"]["state"] == "done" and final["degraded"] == []
    assert final["vectors"] == final["passages_job"]["passages_wanted"] + final["chunks"]
    assert same_ranking(ranking(root), reference)


def test_deleted_cache_stops_the_job_and_nothing_comes_back(tmp_path):
    root = write(tmp_path / "vault", notes(40))
    pid = index_json(root)["passages_job"]["pid"]
    shutil.rmtree(root / ".wikimem")
    until(lambda: pid_gone(pid), "the job stops once its cache folder is gone")
    time.sleep(0.5)
    assert not (root / ".wikimem").exists(), sorted(str(p) for p in (root / ".wikimem").rglob("*"))  # it wrote nothing after
    report = index_json(root, "--wait")
    assert report["passages_held"] == report["passages_wanted"] > 0
