"""Hostile pass on a team's vault on PostgreSQL (issue 56): two processes write the same vault at
once (a watching ``serve`` through its HTTP API, this process through its own ``Vault`` and straight
on disk, a person appending to log.md meanwhile), and the database's sessions are all ended under a
running serve (a restart as a client sees it). Nothing written is lost, log.md keeps every line
(wikimem's and the person's), every note is searchable afterwards, and the watcher comes back."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import httpx
import psycopg
import pytest

from serve_helpers import found_paths, free_port, serve_child, stop_servers, up_or_log, vault_health
from test_watch_support import until
from wikimem.api import open_vault

CEILING_S = 120.0
N = 15


def _serve(tmp_path: Path, root: Path, pg_database: str, vault_id: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    env.update(WIKIMEM_STORE="postgres", WIKIMEM_DATABASE_URL=pg_database, WIKIMEM_VAULT_ID=vault_id,
               WIKIMEM_EMBEDDER="none", WIKIMEM_TOKENS=str(tmp_path / "tokens.json"))
    port = free_port()
    log = tmp_path / "serve.log"
    proc = serve_child(root, port, env, log)
    url = f"http://127.0.0.1:{port}"
    up_or_log(url, log, proc)
    return proc, url, log


@pytest.mark.slow
def test_two_processes_write_one_vault_at_once_and_nothing_is_lost(tmp_path, pg_database):
    root = tmp_path / "team"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "seed.md").write_text("# Seed\n\nseedword\n", encoding="utf-8")
    proc, url, log = _serve(tmp_path, root, pg_database, "hostile-team")
    name = root.name
    other = open_vault(root, embedder="none", store="postgres", database_url=pg_database, vault_id="hostile-team")
    failures: list[str] = []

    def through_api():
        for i in range(N):
            r = httpx.post(f"{url}/v1/vaults/{name}/write", timeout=60,
                           json={"path": f"notes/api{i}.md", "content": f"# Api {i}\n\napiword{i}\n"})
            if r.status_code != 200:
                failures.append(f"api{i}: {r.status_code} {r.text[:200]}")

    def through_vault():
        for i in range(N):
            try:
                other.write_page(f"notes/vault{i}.md", f"# Vault {i}\n\nvaultword{i}\n")
            except Exception as exc:  # noqa: BLE001 - reported below
                failures.append(f"vault{i}: {type(exc).__name__}: {exc}")

    def on_disk():
        for i in range(N):
            (root / "notes" / f"disk{i}.md").write_text(f"# Disk {i}\n\ndiskword{i}\n", encoding="utf-8")
            time.sleep(0.02)

    try:
        threads = [threading.Thread(target=f) for f in (through_api, through_vault, on_disk)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert failures == []
        for i in range(N):
            for kind in ("api", "vault", "disk"):
                text = (root / "notes" / f"{kind}{i}.md").read_text(encoding="utf-8")
                assert text == f"# {kind.title()} {i}\n\n{kind}word{i}\n"
        logged = (root / "log.md").read_text(encoding="utf-8")
        for i in range(N):
            assert f"api{i}.md" in logged and f"vault{i}.md" in logged, i  # every write logged, none overwritten
        for kind in ("api", "vault", "disk"):
            for i in (0, N - 1):
                path = f"notes/{kind}{i}.md"
                assert until(lambda: found_paths(url, name, f"{kind}word{i}") == [path], timeout=CEILING_S), \
                    (path, vault_health(url), log.read_text()[-3000:])
                assert [h.path for h in other.search(f"{kind}word{i}", mode="lexical").hits] == [path]
    finally:
        other.close()
        stop_servers([proc])


def _end_every_session(url: str) -> None:
    name = url.split("?")[0].rsplit("/", 1)[1]
    admin = url.replace(f"/{name}", "/postgres", 1)
    with psycopg.connect(admin, autocommit=True) as db:
        db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> "
                   "pg_backend_pid()", (name,))


@pytest.mark.slow
def test_every_session_ended_under_a_watching_serve_twice_and_it_comes_back(tmp_path, pg_database):
    """The database ends every session of the vault's database (a restart, a failover) twice: once
    while the watcher is idle, once while it builds. The serve keeps answering (503 at worst, never
    a 500), its watcher is alive afterwards, and edits made around each cut become searchable."""
    root = tmp_path / "cut"
    (root / "notes").mkdir(parents=True)
    for i in range(10):
        (root / "notes" / f"seed{i}.md").write_text(f"# Seed {i}\n\nseedword{i}\n", encoding="utf-8")
    proc, url, log = _serve(tmp_path, root, pg_database, "hostile-cut")
    name = root.name
    statuses: list[int] = []
    stop = threading.Event()

    def ask():
        while not stop.is_set():
            try:
                statuses.append(httpx.get(f"{url}/v1/vaults/{name}/search", params={"q": "seedword1"},
                                          timeout=30).status_code)
            except httpx.HTTPError:
                statuses.append(-1)
            time.sleep(0.02)

    asker = threading.Thread(target=ask)
    try:
        assert until(lambda: vault_health(url).get("watcher", {}).get("state") == "idle", timeout=CEILING_S)
        asker.start()
        _end_every_session(pg_database)  # idle
        (root / "notes" / "after1.md").write_text("# After 1\n\nfirstcutword\n", encoding="utf-8")
        assert until(lambda: found_paths(url, name, "firstcutword") == ["notes/after1.md"], timeout=CEILING_S), \
            (vault_health(url), log.read_text()[-3000:])
        for i in range(300):  # a burst, and the cut while it is built
            (root / "notes" / f"burst{i}.md").write_text(f"# Burst {i}\n\nburstword{i} " + "filler " * 150 + "\n",
                                                         encoding="utf-8")
        until(lambda: vault_health(url).get("watcher", {}).get("state") == "building", timeout=30, every=0.02)
        _end_every_session(pg_database)
        (root / "notes" / "after2.md").write_text("# After 2\n\nsecondcutword\n", encoding="utf-8")
        for word, path in (("secondcutword", "notes/after2.md"), ("burstword299", "notes/burst299.md"),
                           ("burstword0", "notes/burst0.md")):
            assert until(lambda: found_paths(url, name, word) == [path], timeout=CEILING_S), \
                (word, vault_health(url), log.read_text()[-3000:])
        health = vault_health(url)
        assert health["watcher"]["here"] is True and health["watcher"]["alive"] is True, health
        assert health["ok"] is True, health
    finally:
        stop.set()
        if asker.is_alive():
            asker.join(60)
        stop_servers([proc])
    assert statuses and not [s for s in statuses if s >= 500 and s != 503], sorted(set(statuses))
    assert not [s for s in statuses if s == -1], "the server stopped answering"
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


@pytest.mark.slow
def test_a_serve_started_while_the_database_is_away_comes_up_when_it_is_back(tmp_path, pg_database):
    """The database does not accept connections when `wikimem serve` starts (a restart, a failover
    in progress): the server starts anyway and says so (503 on /health and on searches, never a
    crash), and once the database is back the vault is built and followed like any other."""
    root = tmp_path / "late"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_text("# A\n\nalphaword\n", encoding="utf-8")
    name = pg_database.split("?")[0].rsplit("/", 1)[1]
    admin = pg_database.replace(f"/{name}", "/postgres", 1)
    with psycopg.connect(admin, autocommit=True) as db:
        db.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    env.update(WIKIMEM_STORE="postgres", WIKIMEM_DATABASE_URL=pg_database, WIKIMEM_VAULT_ID="hostile-late",
               WIKIMEM_EMBEDDER="none", WIKIMEM_TOKENS=str(tmp_path / "tokens.json"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    proc = serve_child(root, port, env, log)
    try:
        def answers() -> int | None:
            try:
                return httpx.get(url + "/health", timeout=10).status_code
            except httpx.HTTPError:
                return None
        assert until(lambda: answers() is not None or proc.poll() is not None, timeout=CEILING_S)
        assert proc.poll() is None, log.read_text()[-3000:]
        assert answers() == 503
        r = httpx.get(f"{url}/v1/vaults/{root.name}/search", params={"q": "alphaword"}, timeout=30)
        assert r.status_code == 503, r.text
        with psycopg.connect(admin, autocommit=True) as db:
            db.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        (root / "notes" / "b.md").write_text("# B\n\nbetaword\n", encoding="utf-8")
        for word, path in (("alphaword", "notes/a.md"), ("betaword", "notes/b.md")):
            assert until(lambda: found_paths(url, root.name, word) == [path], timeout=CEILING_S), \
                (word, vault_health(url), log.read_text()[-3000:])
        assert answers() == 200
    finally:
        with psycopg.connect(admin, autocommit=True) as db:
            db.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        stop_servers([proc])
