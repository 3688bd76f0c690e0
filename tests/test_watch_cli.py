"""The check used to judge watch mode, through the command line exactly as a user types it:
``wikimem index .``, ``wikimem watch --daemon``, an appended line found by ``wikimem search TOKEN
--mode lexical --json``, a rename and a delete followed, ``wikimem watch --stop``. The 2 s budget
from write to searchable is a benchmark's figure (benchmarks/bench_watch.py); here a generous
ceiling without the CLI's own start-up, in ``test_appended_line_is_searchable_soon_after_the_write``."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_watch_support import until

from wikimem.watch import control

ROOT = Path(__file__).parent.parent


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_") or k in ("WIKIMEM_STORE", "WIKIMEM_DATABASE_URL")}
    env.update(WIKIMEM_EMBEDDER="fake", PYTHONPATH=str(ROOT))
    return env


def wikimem(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "wikimem.cli", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc


def search_paths(cwd: Path, token: str) -> list[str]:
    proc = wikimem(cwd, "search", token, "--mode", "lexical", "--json", check=False)
    assert proc.returncode in (0, 1), proc.stderr
    return [hit["path"] for hit in json.loads(proc.stdout)["hits"]]


def wait_for(cwd: Path, token: str, expected: list[str], within: float) -> float:
    """Seconds from now until a CLI search for ``token`` returns ``expected``."""
    start = time.monotonic()
    while True:
        found = search_paths(cwd, token)
        elapsed = time.monotonic() - start
        if found == expected:
            return elapsed
        assert elapsed < within, f"{token}: {found} after {elapsed:.1f} s, expected {expected}"


@pytest.fixture
def vault(make_vault):
    return make_vault({"notes/alpha.md": "# Alpha\n\nFirst note. [[Beta]]\n",
                       "notes/beta.md": "# Beta\n\nSecond note.\n"})


def test_index_daemon_search_rename_delete_stop(vault):
    wikimem(vault, "index", ".")
    started = wikimem(vault, "watch", "--daemon", "--json")
    pid = json.loads(started.stdout)["pid"]
    try:
        assert json.loads(started.stdout)["ready"]
        assert (vault / ".wikimem/watch.pid").read_text().strip() == str(pid)
        status = json.loads(wikimem(vault, "watch", "--status", "--json").stdout)
        assert status["running"] and status["pid"] == pid

        with open(vault / "notes/alpha.md", "a") as fh:
            fh.write("\nThe token quixotrel appears here.\n")
        took = wait_for(vault, "quixotrel", ["notes/alpha.md"], within=30)
        print(f"appended line found by the CLI search {took:.2f} s after the write")
        os.rename(vault / "notes/alpha.md", vault / "notes/gamma.md")
        wait_for(vault, "quixotrel", ["notes/gamma.md"], within=30)
        os.remove(vault / "notes/gamma.md")
        wait_for(vault, "quixotrel", [], within=30)

        second = wikimem(vault, "watch", "--daemon", check=False)
        assert second.returncode == 1 and f"pid {pid}" in second.stderr
        # the search sees the delete as soon as it commits; the status file is rewritten just after,
        # and an embedding slice (nothing to embed) may still run before the watcher is idle again
        assert until(lambda: (control.read_status(vault).get("last_build") or {}).get("removed") == 1
                      and control.read_status(vault).get("state") == "idle"), control.read_status(vault)
        status = json.loads(wikimem(vault, "watch", "--status", "--json").stdout)
        assert status["last_build"]["removed"] == 1 and status["state"] == "idle"
    finally:
        stopped = wikimem(vault, "watch", "--stop", "--json")
    assert json.loads(stopped.stdout) == {"stopped": True, "pid": pid, "was_running": True}
    assert control.holder(vault) is None
    with pytest.raises(ProcessLookupError):
        for _ in range(600):  # reaped by init: gone, not a zombie we could still signal
            os.kill(pid, 0)
            time.sleep(0.05)
    status = json.loads(wikimem(vault, "watch", "--status", "--json").stdout)
    assert not status["running"] and status["state"] == "stopped"
    again = wikimem(vault, "watch", "--stop")
    assert "no watcher is running" in again.stdout


def test_appended_line_is_searchable_soon_after_the_write(vault):
    """Write to searchable without the CLI search's own start-up: a search process started before
    the write keeps asking (the API, the same cache files the CLI reads). Best of three appends
    under a 20 s ceiling, 10x the 2 s budget (issue 47 item 3: no tight wall-clock bound on two
    loaded cores); the budget itself is measured by benchmarks/bench_watch.py. A watcher that only
    finds edits by its periodic full reconcile, or never, still fails."""
    wikimem(vault, "index", ".")
    wikimem(vault, "watch", "--daemon")
    try:
        code = ("import sys, time; from wikimem.api import open_vault\n"
                "v = open_vault(sys.argv[1], embedder='fake'); v.search('warm', mode='lexical')\n"
                "print('ready', flush=True)\n"
                "for token in sys.stdin:\n"
                "    token, t = token.strip(), time.monotonic()\n"
                "    while not v.search(token, mode='lexical').hits:\n"
                "        assert time.monotonic() - t < 60; time.sleep(0.01)\n"
                "    print(time.monotonic() - t, flush=True)\n")
        proc = subprocess.Popen([sys.executable, "-c", code, str(vault)], env=_env(), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "ready"
            times = []
            for token in ("plumbrine", "quillodex", "marrowfen"):
                with open(vault / "notes/beta.md", "a") as fh:
                    fh.write(f"\n{token}\n")
                proc.stdin.write(token + "\n")
                proc.stdin.flush()
                times.append(float(proc.stdout.readline()))
                if times[-1] < 2.0:  # the budget met once: enough
                    break
            print(f"write to searchable: {', '.join(f'{t:.2f}' for t in times)} s")
            assert min(times) < 20.0, times
        finally:
            proc.stdin.close()
            proc.wait(30)
    finally:
        wikimem(vault, "watch", "--stop")


def test_bad_arguments_are_usage_errors(vault, tmp_path):
    wikimem(vault, "index", ".")
    assert wikimem(vault, "watch", "--daemon", "--stop", check=False).returncode == 2
    assert wikimem(vault, "watch", "--debounce-ms", "-5", check=False).returncode == 2
    missing = wikimem(vault, "watch", str(tmp_path / "nope"), "--status", check=False)
    assert missing.returncode == 1 and "not found" in missing.stderr and "Traceback" not in missing.stderr
    status = wikimem(vault, "watch", "--status")
    assert "not running" in status.stdout


def test_daemon_starts_from_a_folder_holding_a_wikimem_folder(vault, tmp_path, monkeypatch):
    """Was: the daemon ran as `python -m wikimem.cli` in the user's folder, and a folder named
    `wikimem` there (a fresh clone's parent) shadowed the installed package: it exited at start
    with "cannot import name '__version__'"."""
    wikimem(vault, "index", ".")
    here = tmp_path / "parent"
    (here / "wikimem").mkdir(parents=True)
    (here / "wikimem" / "__init__.py").write_text("raise ImportError('the shadowing clone was imported')\n")
    monkeypatch.chdir(here)
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "fake")
    started = control.spawn_daemon(vault, [])
    try:
        assert started["ready"], started
    finally:
        assert control.stop(vault)["stopped"]
