"""The whole vault on PostgreSQL (issue 38): ``store = "postgres"`` indexes and searches examples/
with the same results as the local stores, follows edits incrementally, rebuilds beside the live
schema, keeps one writer at a time, and says which server it cannot reach (exit 2)."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from conftest import copy_vault
from wikimem.api import open_vault
from wikimem.cli import app
from wikimem.errors import LockError
from wikimem.stores import pg
from wikimem.stores.postgres import tables as pg_tables

ROOT = Path(__file__).resolve().parents[1]
QUERIES = [q["q"] for q in json.loads((ROOT / "benchmarks/heldout-examples.json").read_text())["queries"]]


def _copy(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    copy_vault(ROOT / "examples", root)
    return root


def _pages(result) -> list[tuple[str, str]]:
    return [(h.path, h.chunk_id) for h in result.hits]


@pytest.fixture
def both(tmp_path, pg_database):
    """examples/ indexed twice: on the local stores and on PostgreSQL (the fake embedder)."""
    local = open_vault(_copy(tmp_path, "local"), embedder="fake", store="local")
    remote = open_vault(_copy(tmp_path, "remote"), embedder="fake", store="postgres", database_url=pg_database,
                        vault_id="examples")
    local.index()
    report = remote.index()
    yield local, remote, report
    local.close()
    remote.close()


def test_the_same_results_as_the_local_stores_in_every_mode(both):
    local, remote, report = both
    assert report.chunks > 0 and report.coverage == 1.0
    assert not (remote.root / ".wikimem" / "manifest.sqlite").exists()  # nothing of it is local
    for mode in ("hybrid", "lexical", "vector"):
        differ = [q for q in QUERIES if _pages(local.search(q, mode=mode, limit=10)) !=
                  _pages(remote.search(q, mode=mode, limit=10))]
        assert differ == [], (mode, differ[:3])
    for query in ("tag:#search bm25", "path:concepts fusion", "-rank fusion", '"reciprocal rank"'):
        assert _pages(local.search(query)) == _pages(remote.search(query))
    assert _pages(local.search("rank", folder="concepts")) == _pages(remote.search("rank", folder="concepts"))


def test_an_edit_is_found_after_the_incremental_build(both):
    local, remote, _ = both
    note = remote.root / "concepts" / "Zebra crossings.md"
    note.write_text("# Zebra crossings\n\nA zebra crossing gives pedestrians the right of way.\n", encoding="utf-8")
    report = remote.index()
    assert report.added == 1 and report.unchanged > 10
    hits = remote.search("zebra pedestrians", limit=3).hits
    assert hits and hits[0].path == "concepts/Zebra crossings.md"
    note.unlink()
    remote.index()
    assert all(h.path != "concepts/Zebra crossings.md" for h in remote.search("zebra pedestrians").hits)


def test_what_a_search_remembers_ends_with_it(both):
    """A search asks the meta table and the vector counts once per snapshot (``PgCache.memo``); the
    next search asks again, so another process's write is seen at once."""
    _, remote, _ = both
    assert all(h.path != "concepts/Zebra crossings.md" for h in remote.search("zebra pedestrians").hits)
    vectors_before = remote.cache.meta()["vectors"]
    other = open_vault(remote.root, embedder="fake", store="postgres", database_url=remote.settings.database_url,
                       vault_id="examples")
    (remote.root / "concepts" / "Zebra crossings.md").write_text(
        "# Zebra crossings\n\nA zebra crossing gives pedestrians the right of way.\n", encoding="utf-8")
    other.index()
    other.close()
    assert remote.search("zebra pedestrians", limit=3).hits[0].path == "concepts/Zebra crossings.md"
    assert remote.search("zebra pedestrians", mode="vector", limit=20).hits
    assert remote.cache.meta()["vectors"] > vectors_before
    with remote.cache.snapshot():
        assert remote.cache.meta() == remote.cache.meta()


def test_a_rebuild_is_written_beside_and_swapped_in(both, pg_database):
    local, remote, _ = both
    before = _pages(remote.search("reciprocal rank fusion"))
    remote.index(rebuild=True)
    assert _pages(remote.search("reciprocal rank fusion")) == before
    with psycopg.connect(pg_database, autocommit=True) as db:
        names = [r[0] for r in db.execute("SELECT schema_name FROM information_schema.schemata "
                                          "WHERE schema_name LIKE 'wm\\_%'")]
    assert names == [pg_tables.schema_name("examples")]  # no half-built or old schema left behind


def test_one_writer_at_a_time(both):
    _, remote, _ = both
    cache = remote.cache
    entered = threading.Event()
    release = threading.Event()

    def hold():
        with cache.writer_lock():
            entered.set()
            release.wait(10)
    other = open_vault(remote.root, embedder="fake", store="postgres", database_url=remote.settings.database_url,
                       vault_id="examples")
    worker = threading.Thread(target=hold)
    worker.start()
    try:
        assert entered.wait(10)
        with pytest.raises(LockError, match="another wikimem process is updating examples"):
            with other.cache.writer_lock():
                pass
    finally:
        release.set()
        worker.join()
    with other.cache.writer_lock():  # released with its holder
        pass
    other.close()


def test_a_database_that_cannot_be_reached_is_one_line_and_exit_2(tmp_path, monkeypatch):
    root = _copy(tmp_path, "down")
    monkeypatch.setenv("WIKIMEM_STORE", "postgres")
    monkeypatch.setenv("WIKIMEM_DATABASE_URL", "postgresql://wiki:s3cret@127.0.0.1:9/team?connect_timeout=2")
    result = CliRunner().invoke(app, ["search", "rank", "--vault", str(root)])
    assert result.exit_code == 2, result.output
    assert "127.0.0.1:9/team" in result.output and "s3cret" not in result.output
    assert "Traceback" not in result.output


def test_a_schema_of_version_1_is_migrated_with_its_vectors(both):
    """Version 1 kept every vector in one table; version 2 partitions searched rows from held ones.
    A version-1 schema is migrated in place: nothing embedded or rebuilt, the same results, and a
    search's scan reads the searched rows only."""
    local, remote, _ = both
    before = {q: _pages(remote.search(q, mode="vector", limit=10)) for q in QUERIES[:10]}
    db = remote.cache.connection()
    rows = db.execute("SELECT count(*) FROM vecs").fetchone()[0]
    with db.transaction():  # the version-1 layout
        db.execute("CREATE TABLE vecs_one AS SELECT * FROM vecs")
        db.execute("DROP TABLE vecs")
        db.execute("ALTER TABLE vecs_one RENAME TO vecs")
        db.execute("ALTER TABLE vecs ADD PRIMARY KEY (vid)")
        db.execute("UPDATE public.wikimem_schema SET version = 1 WHERE component = %s",
                   (f"vault:{remote.cache.schema}",))
    remote.close()
    again = open_vault(remote.root, embedder="fake", store="postgres", database_url=remote.settings.database_url,
                       vault_id="examples")
    report = again.index()
    assert report.embedded_now == 0 and report.added == report.changed == 0 and report.coverage == 1.0
    db = again.cache.connection()
    assert db.execute("SELECT relkind FROM pg_class WHERE relname = 'vecs' "
                      "AND relnamespace = current_schema()::regnamespace").fetchone()[0] == "p"
    assert db.execute("SELECT count(*) FROM vecs").fetchone()[0] == rows
    assert {q: _pages(again.search(q, mode="vector", limit=10)) for q in before} == before
    plan = " ".join(r[0] for r in db.execute("EXPLAIN SELECT vid FROM vecs WHERE NOT held ORDER BY vid").fetchall())
    assert "vecs_searched" in plan and "vecs_held" not in plan
    again.close()


def test_a_vault_built_by_a_newer_wikimem_is_refused_not_rebuilt(both):
    """On a shared database a rebuild would undo a teammate's newer wikimem (and it would rebuild
    in turn): one line saying to upgrade, exit 2, and the tables as they were."""
    from wikimem.stores.manifest import SCHEMA_VERSION
    from wikimem.stores.pg import NewerSchema
    _, remote, _ = both
    with remote.cache.transaction() as db:
        remote.cache.set_meta(db, schema_version=SCHEMA_VERSION + 1)
    chunks = remote.cache.connection().execute("SELECT count(*) FROM chunks").fetchone()[0]
    with pytest.raises(NewerSchema, match="newer wikimem"):
        remote.index()
    result = CliRunner().invoke(app, ["search", "rank", "--vault", str(remote.root)],
                                env={"WIKIMEM_STORE": "postgres", "WIKIMEM_DATABASE_URL": remote.settings.database_url,
                                     "WIKIMEM_VAULT_ID": "examples", "WIKIMEM_EMBEDDER": "fake"})
    assert result.exit_code == 2 and "upgrade wikimem" in result.output and "Traceback" not in result.output
    doctor = CliRunner().invoke(app, ["doctor", str(remote.root)],
                                env={"WIKIMEM_STORE": "postgres", "WIKIMEM_DATABASE_URL": remote.settings.database_url,
                                     "WIKIMEM_VAULT_ID": "examples", "WIKIMEM_EMBEDDER": "fake"})
    line = next(x for x in doctor.output.splitlines() if x.split()[1:2] == ["cache"])
    assert line.startswith("fail") and "newer wikimem" in line and "NewerSchema" not in line
    assert remote.cache.connection().execute("SELECT count(*) FROM chunks").fetchone()[0] == chunks > 0
    assert remote.cache.meta()["schema_version"] == SCHEMA_VERSION + 1


def test_status_names_the_database_as_the_stores_and_the_embedding_cache(both, pg_database):
    _, remote, _ = both
    info = remote.status()
    where = pg.server_name(pg_database)
    assert info["cache"] == f"PostgreSQL {where}, schema {remote.cache.schema} (vault id 'examples')"
    assert info["shared_embedding_cache"] == where and info["state"] == "ok"


def test_postgres_without_a_database_url_says_what_is_missing(tmp_path):
    vault = open_vault(_copy(tmp_path, "nourl"), embedder="fake", store="postgres", database_url="")
    with pytest.raises(Exception, match="database_url"):
        vault.index()
    vault.close()


def test_three_processes_over_one_database_see_each_others_writes(tmp_path, pg_database):
    """Three servers of one vault folder over one database (each with its own stores object and
    connections, as three processes have): a page written through one is found through the others
    at once, with no build of theirs; another's build of the unchanged files writes nothing."""
    root = _copy(tmp_path, "shared")
    servers = [open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="team")
               for _ in range(3)]
    try:
        servers[0].index()
        again = servers[1].index()
        assert again.added == again.changed == again.removed == 0 and again.embedded_now == 0
        servers[0].write_page("concepts/Walrus.md", "# Walrus\n\nA walrus hauls out on sea ice in the Arctic.\n")
        for other in servers[1:]:
            hits = other.search("walrus sea ice", limit=3).hits
            assert hits and hits[0].path == "concepts/Walrus.md"
    finally:
        for server in servers:
            server.close()


def test_a_killed_writer_hands_the_lock_to_the_next(tmp_path, pg_database):
    """The writer is killed (SIGKILL: no cleanup of its own): the server ends its session and its
    advisory lock with it, and another process takes the lock."""
    import os
    import signal
    import subprocess
    import sys
    import time
    root = _copy(tmp_path, "killed")
    code = ("import sys, time\nfrom wikimem.api import open_vault\n"
            "v = open_vault(sys.argv[1], embedder='fake', store='postgres', database_url=sys.argv[2], vault_id='k')\n"
            "with v.cache.writer_lock():\n    print('held', flush=True)\n    time.sleep(120)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    child = subprocess.Popen([sys.executable, "-c", code, str(root), pg_database], stdout=subprocess.PIPE, text=True,
                             env=env)
    try:
        assert child.stdout.readline().strip() == "held"
        other = open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="k")
        with pytest.raises(LockError):
            with other.cache.writer_lock():
                pass
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        deadline = time.monotonic() + 20
        with other.cache.writer_lock(wait=20):  # the server notices the dead session and frees the lock
            assert time.monotonic() < deadline
        assert other.index().chunks > 0
        other.close()
    finally:
        if child.poll() is None:
            child.kill()


def test_a_connection_lost_mid_build_serves_nothing_half_done_and_the_next_build_repairs(tmp_path, pg_database,
                                                                                          monkeypatch):
    root = _copy(tmp_path, "lost")
    vault = open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="lost")
    vault.index()
    before = _pages(vault.search("reciprocal rank fusion"))
    (root / "concepts" / "Reciprocal Rank Fusion.md").write_text("# Reciprocal Rank Fusion\n\nRewritten: walrus.\n",
                                                                  encoding="utf-8")
    from wikimem.index import build as build_mod
    real = build_mod.sync_vectors

    def cut(cache, *args, **kwargs):  # the server ends the build's session between its two commits
        with psycopg.connect(pg_database, autocommit=True) as admin:
            pid = cache.connection().info.backend_pid
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        return real(cache, *args, **kwargs)
    monkeypatch.setattr(build_mod, "sync_vectors", cut)
    from wikimem.stores.pg import DatabaseUnavailable
    with pytest.raises(DatabaseUnavailable, match="went away"):
        vault.index()
    monkeypatch.undo()
    vault.close()
    again = open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="lost")
    assert again.search("walrus").hits  # the lexical side was committed whole before the cut
    report = again.index()
    assert any("interrupted" in n for n in report.notices), report.notices
    fresh = open_vault(_copy(tmp_path, "fresh"), embedder="fake", store="local")
    (fresh.root / "concepts" / "Reciprocal Rank Fusion.md").write_text(
        "# Reciprocal Rank Fusion\n\nRewritten: walrus.\n", encoding="utf-8")
    fresh.index()
    for query in ("reciprocal rank fusion", "walrus", "hybrid search"):
        assert _pages(again.search(query)) == _pages(fresh.search(query))
    assert before
    again.close()
    fresh.close()


@pytest.mark.slow
def test_three_serve_processes_over_one_database(tmp_path, pg_database):
    """Three `wikimem serve` processes of one vault folder on one database (issue 38 item 4): a page
    written through one is found through the other two (within 15 s here: a
    ceiling for loaded machines; the latency itself is benchmarked). On one machine one of them
    follows the folder (a folder has one watcher); the others serve with --no-watch."""
    import os
    import subprocess
    import sys
    import time

    import httpx
    from serve_helpers import free_port, stop_servers, wait_healthy
    root = _copy(tmp_path, "served")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    env.update(WIKIMEM_STORE="postgres", WIKIMEM_DATABASE_URL=pg_database, WIKIMEM_EMBEDDER="fake",
               WIKIMEM_VAULT_ID="served", WIKIMEM_TOKENS=str(tmp_path / "tokens.json"))
    open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="served").index()
    ports = [free_port() for _ in range(3)]
    procs = [subprocess.Popen([str(Path(sys.executable).parent / "wikimem"), "serve", str(root), "--port", str(port),
                               *(["--no-watch"] if i else [])],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for i, port in enumerate(ports)]
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    try:
        for url, proc in zip(urls, procs):
            try:
                wait_healthy(url)
            except TimeoutError:
                proc.terminate()
                raise AssertionError(proc.stderr.read().decode()[-3000:]) from None
        name = root.name
        r = httpx.post(urls[0] + f"/v1/vaults/{name}/write", timeout=30,
                       json={"path": "concepts/Walrus.md", "content": "# Walrus\n\nA walrus hauls out on sea ice.\n"})
        assert r.status_code == 200, r.text
        written = time.monotonic()
        for url in urls[1:]:
            while True:
                hits = httpx.get(url + f"/v1/vaults/{name}/search", params={"q": "walrus", "limit": 5},
                                 timeout=30).json()["hits"]
                if "concepts/Walrus.md" in [h["path"] for h in hits]:  # (the fake embedder's neighbours
                    break  # of a word no other note holds are pages in another script: found, not first)
                # measured 7-30 ms (benchmarks/bench_pg_store.py); the ceiling is generous so two loaded
                # cores never flake it (issue 47 item 3)
                assert time.monotonic() - written < 15.0, hits
                time.sleep(0.05)
    finally:
        stop_servers(procs)
    for proc in procs:
        assert proc.returncode in (0, -15), proc.stderr.read().decode()[-2000:]
