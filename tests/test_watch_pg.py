"""The watcher on PostgreSQL survives the database going away (issue 51): it waits with a capped
back-off, says so in its status, and when the database is back reconciles the edits made meanwhile."""
from __future__ import annotations

from pathlib import Path

import psycopg

from conftest import copy_vault
from test_watch_support import until
from wikimem.api import open_vault
from wikimem.watch import watcher as watcher_mod

ROOT = Path(__file__).resolve().parents[1]


def _admin(url: str) -> tuple[str, str]:
    name = url.split("?")[0].rsplit("/", 1)[1]
    return url.replace(f"/{name}", "/postgres", 1), name


def _found(vault, word: str) -> list[str]:
    try:
        return sorted({h.path for h in vault.search(word, mode="lexical").hits})
    except Exception:  # noqa: BLE001 - the database may still be coming back
        return []


def test_the_watcher_waits_out_a_database_outage_and_indexes_the_edits_made_meanwhile(tmp_path, pg_database):
    root = tmp_path / "v"
    copy_vault(ROOT / "examples", root)
    vault = open_vault(root, embedder="fake", store="postgres", database_url=pg_database, vault_id="outage")
    admin, name = _admin(pg_database)
    w = watcher_mod.Watcher(vault.ctx, debounce_ms=50, poll_interval=0.2).start()
    try:
        assert w.wait_idle(60)
        # the database goes away: every session ended, no new one allowed (a restart, as far as a
        # client can tell, without stopping the server the other tests share)
        with psycopg.connect(admin, autocommit=True) as db:
            db.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
        (root / "outage-note.md").write_text("# Outage\n\nquokkafrond during the outage\n")
        assert until(lambda: w.status()["state"] == "waiting for the database", timeout=60), w.status()
        info = w.status()
        assert w.running and info["database"]["ok"] is False and info["database"]["retries"] >= 1
        assert "DatabaseUnavailable" in info["last_error"]
        with psycopg.connect(admin, autocommit=True) as db:
            db.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        assert until(lambda: _found(vault, "quokkafrond") == ["outage-note.md"], timeout=90), w.status()
        # a search of this process may have indexed the note first (it refreshes the lexical side): the
        # watcher says the database is back at its own next try, within its back-off (seen flaky under load)
        assert until(lambda: w.status()["database"]["ok"] is True, timeout=90), w.status()
        assert w.running
    finally:
        w.stop()
        with psycopg.connect(admin, autocommit=True) as db:
            db.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')


def test_doctor_reports_a_watcher_whose_worker_died_of_an_error(tmp_path, monkeypatch):
    from wikimem.doctor import check_watcher
    root = tmp_path / "v"
    copy_vault(ROOT / "examples", root)
    vault = open_vault(root, embedder="fake")

    def broken(*args, **kwargs):
        raise ValueError("something no one expected")

    monkeypatch.setattr(watcher_mod, "expand", broken)  # outside the build's own retry: the worker dies
    w = watcher_mod.Watcher(vault.ctx, debounce_ms=50, poll_interval=0.2).start()
    try:
        (root / "after.md").write_text("# After\n\nx\n")
        assert until(lambda: w.status()["state"] == "stopped", timeout=60), w.status()
        # the state is set in memory, then written to the status file doctor reads: wait for the file
        assert until(lambda: check_watcher(root).status == "fail", timeout=30), check_watcher(root)
        check = check_watcher(root)
        assert "something no one expected" in check.detail, check
    finally:
        w.stop()
