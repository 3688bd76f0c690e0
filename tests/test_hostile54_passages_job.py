"""A hostile and a careless user against the detached passages job (index/passages_job.py): its
files in ``.wikimem`` made symlinks, folders, FIFOs; a job that cannot start; a job that is stopped;
the embedder switched under a running job. The fake embedder (fast) with ``index_passages_min = 1``,
so every first build hands its held passages to a real detached job; waits poll with a generous
timeout, never a tight clock."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wikimem.api import open_vault
from wikimem.index.passages_job import LOCK, job_pid, read_state

ROOT = Path(__file__).parent.parent
TIMEOUT = 120.0  # a fake-embedder job here ends in ~1 s: only a hang fails
WORDS = "river mountain cache vector index search passage lexical graph note vault embed model token batch".split()
PRECIOUS = "# Precious\n\nA note of the user's, outside the cache: not one byte may change.\n"


def make(tmp_path: Path, count: int = 6) -> Path:
    root = tmp_path / "vault"
    for i in range(count):
        parts = [f"## Part {j}\n\n" + " ".join(WORDS[(i * 5 + j * 3 + k * k) % len(WORDS)] for k in range(20)) + ".\n\n"
                 f"- item {WORDS[(i + j) % len(WORDS)]}\n- item two {j}" for j in range(4)]
        path = root / "notes" / f"n{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {i}\n\n" + "\n\n".join(parts), encoding="utf-8")
    return root


def cache(root: Path) -> Path:
    (root / ".wikimem").mkdir(exist_ok=True)
    return root / ".wikimem"


def index(root: Path, passages: str = "background", **overrides):
    vault = open_vault(root, embedder="fake", index_passages_min=1, **overrides)
    try:
        return vault.index(passages=passages)
    finally:
        vault.close()


def until(check, what: str, timeout: float = TIMEOUT):
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s: {what}"
        time.sleep(0.1)
    return value


def complete(root: Path, **overrides) -> dict:
    """The status once no job runs: every held passage must be in."""
    until(lambda: job_pid(root) is None, "the passages job ends")
    vault = open_vault(root, embedder="fake", **overrides)
    try:
        info = vault.status()
    finally:
        vault.close()
    assert info["passage_coverage"] == 1.0 and info["vector_coverage"] == 1.0, info
    return info


def in_subprocess(code: str, root: Path, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """``code`` run with the vault's path as sys.argv[1], in a process of its own: a hang is a timeout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WIKIMEM_EMBEDDER": "fake"}
    return subprocess.run([sys.executable, "-c", code, str(root)], env=env, capture_output=True, text=True, check=False,
                          timeout=timeout)


# -- the job's files ---------------------------------------------------------------------------------
def test_a_lock_file_symlinked_to_a_note_is_never_written_through(tmp_path):
    root = make(tmp_path)
    outside = tmp_path / "precious.md"
    outside.write_text(PRECIOUS, encoding="utf-8")
    os.symlink(outside, cache(root) / LOCK)  # the pid was written over it: the note truncated
    inside = root / "notes" / "n0.md"
    before = inside.read_bytes()
    report = index(root)
    assert report.passages_job is not None and report.passages_job["started"] is True
    complete(root)
    assert outside.read_text(encoding="utf-8") == PRECIOUS
    assert not (root / ".wikimem" / LOCK).is_symlink() and (root / ".wikimem" / LOCK).is_file()
    os.unlink(root / ".wikimem" / LOCK)  # and a link to a note of the vault itself
    os.symlink(inside, root / ".wikimem" / LOCK)
    inside.write_bytes(before + b"\nOne more line.\n")
    index(root)
    complete(root)
    assert inside.read_bytes() == before + b"\nOne more line.\n"


def test_a_lock_or_log_hard_linked_to_a_note_is_never_written_into(tmp_path):
    root = make(tmp_path)
    lock_note, log_note = root / "notes" / "n1.md", root / "notes" / "n2.md"
    lock_before, log_before = lock_note.read_bytes(), log_note.read_bytes()
    os.link(lock_note, cache(root) / LOCK)  # the same file under two names: O_NOFOLLOW does not see it
    (root / ".wikimem" / "logs").mkdir()
    os.link(log_note, root / ".wikimem" / "logs" / "passages.log")
    index(root)
    complete(root)
    assert lock_note.read_bytes() == lock_before and log_note.read_bytes() == log_before
    assert os.stat(root / ".wikimem" / LOCK).st_nlink == 1


def test_the_log_and_the_state_file_are_never_written_through_a_symlink(tmp_path):
    root = make(tmp_path)
    outside = tmp_path / "precious.md"
    outside.write_text(PRECIOUS, encoding="utf-8")
    (cache(root) / "logs").mkdir()
    os.symlink(outside, root / ".wikimem" / "logs" / "passages.log")  # the job's log appended to it
    other = tmp_path / "other.md"
    other.write_text(PRECIOUS, encoding="utf-8")
    os.symlink(other, root / ".wikimem" / f".passages.json.{os.getpid()}.tmp")  # this process's temp name
    index(root)
    complete(root)
    assert outside.read_text(encoding="utf-8") == PRECIOUS and other.read_text(encoding="utf-8") == PRECIOUS
    log = root / ".wikimem" / "logs" / "passages.log"
    assert not log.is_symlink() and "passages job done" in log.read_text(encoding="utf-8")
    assert not (root / ".wikimem" / "passages.json").is_symlink()
    assert read_state(root)["state"] == "done"


def test_a_log_folder_symlinked_elsewhere_is_not_written_into(tmp_path):
    root = make(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, cache(root) / "logs")
    index(root)
    complete(root)
    assert list(elsewhere.iterdir()) == []
    assert "passages job done" in (root / ".wikimem" / "logs" / "passages.log").read_text(encoding="utf-8")


READ_STATE = "import sys, json; from wikimem.index.passages_job import read_state; print(json.dumps(read_state(sys.argv[1])))"


@pytest.mark.parametrize("what", ["lock_fifo", "state_fifo", "state_dev_zero", "state_nested_deep"])
def test_status_of_a_strange_job_file_answers(tmp_path, what):
    root = make(tmp_path, count=1)
    folder = cache(root)
    if what == "lock_fifo":
        os.mkfifo(folder / LOCK)  # open(O_RDONLY) of a FIFO waits for a writer: status hung
    elif what == "state_fifo":
        os.mkfifo(folder / "passages.json")
    elif what == "state_dev_zero":
        os.symlink("/dev/zero", folder / "passages.json")  # read without end
    else:
        (folder / "passages.json").write_text("[" * 100_000, encoding="utf-8")  # a RecursionError, not a ValueError
    proc = in_subprocess(READ_STATE, root)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) is None  # no job, no state of one


def test_index_beside_a_fifo_lock_neither_hangs_nor_leaves_the_passages(tmp_path):
    root = make(tmp_path)
    os.mkfifo(cache(root) / LOCK)
    code = ("import sys; from wikimem.api import open_vault; v = open_vault(sys.argv[1], index_passages_min=1); "
            "print(v.index(passages='background').passages_job is not None)")
    proc = in_subprocess(code, root, timeout=TIMEOUT)
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr
    complete(root)


# -- a job that cannot start ---------------------------------------------------------------------------
@pytest.mark.parametrize("what", ["lock_is_a_folder", "logs_is_a_file", "log_is_a_folder"])
def test_a_job_file_in_the_way_is_replaced_and_the_job_runs(tmp_path, what):
    root = make(tmp_path)
    folder = cache(root)
    if what == "lock_is_a_folder":
        (folder / LOCK).mkdir()
        (folder / LOCK / "x").write_text("x")
    elif what == "logs_is_a_file":
        (folder / "logs").write_text("not a folder")
    else:
        (folder / "logs" / "passages.log").mkdir(parents=True)
    report = index(root)  # raised IsADirectoryError / FileExistsError once the chunks were in
    assert report.passages_job is not None and report.passages_job["started"] is True
    complete(root)


def test_a_job_that_cannot_start_leaves_the_passages_embedded_here(tmp_path, monkeypatch):
    root = make(tmp_path)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python-here"))
    report = index(root)  # raised FileNotFoundError after the chunk stage: no passages, no job
    assert report.passages_job is None
    assert report.passages_held == report.passages_wanted > 0
    assert any("could not start the background passages job" in n for n in report.notices), report.notices
    job = read_state(root)
    assert job["running"] is False and job["state"] == "failed" and "could not start" in job["reason"]
    complete(root)


# -- the process ---------------------------------------------------------------------------------------
def _state_letter(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_a_long_lived_caller_reaps_the_job_it_started(tmp_path):
    root = make(tmp_path)
    vault = open_vault(root, embedder="fake", index_passages_min=1)
    try:
        pid = vault.index(passages="background").passages_job["pid"]
        # this process lives on (a Python program, a server): the ended job must not stay a zombie
        until(lambda: _state_letter(pid) is None, f"the ended job {pid} is reaped (state {_state_letter(pid)})", timeout=60)
    finally:
        vault.close()


HOLD_LOCK = ("import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644); "
             "fcntl.flock(fd, fcntl.LOCK_EX); os.ftruncate(fd, 0); os.pwrite(fd, str(os.getpid()).encode(), 0); "
             "print('held', flush=True); time.sleep(600)")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_wait_for_a_stopped_job_is_an_error_not_a_hang(tmp_path):
    root = make(tmp_path)
    index(root, passages="wait")  # built; then a job (as the kernel sees one: the lock's holder) stopped
    (root / "notes" / "n9.md").write_text("# Nine\n\n" + " ".join(WORDS) + ".\n\n- a list\n- of two\n", encoding="utf-8")
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(root / ".wikimem" / LOCK)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert job_pid(root) == holder.pid
        os.kill(holder.pid, signal.SIGSTOP)
        until(lambda: _state_letter(holder.pid) in ("T", "t"), "the holder is stopped")
        code = ("import sys; from wikimem.api import open_vault; from wikimem.errors import LockError\n"
                "v = open_vault(sys.argv[1], index_passages_min=1)\n"
                "try:\n    v.index(passages='wait')\nexcept LockError as exc:\n    print('LockError', exc)")
        proc = in_subprocess(code, root, timeout=60)  # waited for ever
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("LockError") and f"kill -CONT {holder.pid}" in proc.stdout
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        os.kill(holder.pid, signal.SIGCONT)
        holder.wait()


# -- the settings change under a running job -----------------------------------------------------------
class _OtherFake:
    """The fake embedder in another dimension: "another model" for the cache (another identity key)."""

    def __new__(cls):
        from wikimem.embed.fake import FakeEmbedder
        return FakeEmbedder(dim=32)


def test_a_job_of_the_old_embedder_never_puts_its_vectors_back(tmp_path):
    """The user switches the embedder (fake -> e5, or back) and runs `index` while the job of the old
    one runs: the old job synced the cache to its own model and saved, so the new build's vectors
    were replaced by the old model's and status called the passages complete."""
    root = make(tmp_path)
    vault = open_vault(root, embedder="fake", index_passages_min=1)
    try:
        with vault.ctx.cache.writer_lock(wait=30):  # the job starts and waits for this commit
            job = vault.index(passages="background").passages_job
            assert job is not None and job["started"] is True
            vault.ctx.cache._embedder = _OtherFake()  # the setting changed: this build is the other model's
            vault.index(passages="all")
            new_key = vault.ctx.cache.meta()["embedder"]
        assert new_key.endswith(":32")
        until(lambda: job_pid(root) is None, "the old embedder's job ends")
        assert vault.ctx.cache.meta()["embedder"] == new_key  # the old job put the 64-dim vectors back
        state = read_state(root)
        assert state["state"] == "stopped" and "this job embeds with" in state["reason"]
        report = vault.index(passages="wait")  # the new embedder's build finishes what the job left
        assert report.passages_held == report.passages_wanted > 0 and report.embedder == new_key
        assert vault.ctx.cache.meta()["embedder"] == new_key
    finally:
        vault.close()


JOB_COMMITTING = ("import fcntl, os, sys, time; from wikimem.api import open_vault\n"
                  "fd = os.open(os.path.join(sys.argv[1], '.wikimem', 'passages.lock'), os.O_RDWR | os.O_CREAT, 0o644)\n"
                  "fcntl.flock(fd, fcntl.LOCK_EX); os.ftruncate(fd, 0); os.pwrite(fd, str(os.getpid()).encode(), 0)\n"
                  "v = open_vault(sys.argv[1], embedder='fake')\n"
                  "with v.ctx.cache.writer_lock(wait=30):\n"
                  "    print('committing', flush=True); time.sleep(3)\n"
                  "time.sleep(600)\n")


def test_index_beside_a_job_that_commits_waits_for_the_commit(tmp_path):
    """The job commits under the writer lock every few seconds; `wikimem index` (no wait) run then
    failed with "another wikimem process (pid <the job>) is updating": as beside a watcher, it waits."""
    root = make(tmp_path)
    index(root, passages="wait")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    job = subprocess.Popen([sys.executable, "-c", JOB_COMMITTING, str(root)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert job.stdout.readline().strip() == "committing"
        (root / "notes" / "n0.md").write_text("# Note 0\n\nEdited while the job commits.\n", encoding="utf-8")
        vault = open_vault(root, embedder="fake")
        try:
            report = vault.index()  # wait=0.0, as the command line calls it
        finally:
            vault.close()
        assert report.changed == 1
    finally:
        job.kill()
        job.wait()


def test_a_dead_jobs_pid_taken_by_a_live_process_is_not_a_running_job(tmp_path):
    """PID reuse: the state file says running with a pid a live process has now (this one); the
    lock is free, so the job is not running and status says it died (a guard: held before too)."""
    root = make(tmp_path, count=1)
    folder = cache(root)
    (folder / LOCK).write_text(str(os.getpid()), encoding="ascii")
    (folder / "passages.json").write_text(json.dumps({"pid": os.getpid(), "state": "running"}), encoding="utf-8")
    assert job_pid(root) is None
    state = read_state(root)
    assert state["running"] is False and state["state"] == "died"


def test_embed_passages_none_beside_a_job_leaves_no_passages_wanted(tmp_path):
    """The user sets embed_passages = "none" while the job has every held passage still to do, and
    runs index: status said passage coverage 0.0 and passages_partial (meta kept the 952 wanted
    of the build before) though no passage is wanted any more."""
    root = make(tmp_path)
    cache(root)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(root / ".wikimem" / LOCK)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"  # a job runs: this build leaves every held passage to it
        report = index(root)
        assert report.passages_held == 0 < report.passages_wanted
        report = index(root, embed_passages="none")
        assert report.passages_wanted == 0
        vault = open_vault(root, embedder="fake", embed_passages="none")
        try:
            info = vault.status()
        finally:
            vault.close()
        assert info["passages"] == 0 and info["passage_coverage"] is None and info["degraded"] == [], info
    finally:
        holder.kill()
        holder.wait()
