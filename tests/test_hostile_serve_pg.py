"""Hostile pass on ``serve`` over PostgreSQL (issue 56): a write through the HTTP API while the
database is away, a path that escapes the vault, and the vault's tables dropped under a running
serve. Each answer is a clear one (never a 500); a note the API said it wrote is on disk, and is
searchable once the database is back."""
from __future__ import annotations

import os

import httpx
import psycopg
import pytest

from serve_helpers import live_server
from test_watch_support import until
from wikimem.serve.tokens import TokenStore
from wikimem.stores.postgres import tables as pg_tables

CEILING_S = 90.0


def _admin(url: str) -> tuple[str, str]:
    name = url.split("?")[0].rsplit("/", 1)[1]
    return url.replace(f"/{name}", "/postgres", 1), name


@pytest.fixture
def on_pg(monkeypatch, pg_database, tmp_path):
    monkeypatch.setenv("WIKIMEM_STORE", "postgres")
    monkeypatch.setenv("WIKIMEM_DATABASE_URL", pg_database)
    monkeypatch.setenv("WIKIMEM_EMBEDDER", "none")
    monkeypatch.setenv("WIKIMEM_VAULT_ID", "hostile-serve")
    return TokenStore(tmp_path / "tokens.json")


def _search(url: str, word: str) -> list[str]:
    try:
        r = httpx.get(f"{url}/v1/vaults/v/search", params={"q": word, "mode": "lexical"}, timeout=30)
        return [h["path"] for h in r.json().get("hits", [])] if r.status_code == 200 else []
    except httpx.HTTPError:
        return []


def test_a_write_while_the_database_is_away(make_vault, pg_database, on_pg):
    root = make_vault({"a.md": "# A\n\nalpha\n"})
    admin, name = _admin(pg_database)
    with live_server([("v", root)], on_pg) as (url, _server):
        assert until(lambda: _search(url, "alpha") == ["a.md"], timeout=CEILING_S)
        try:
            with psycopg.connect(admin, autocommit=True) as db:
                db.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
                db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
            r = httpx.post(f"{url}/v1/vaults/v/write", timeout=60,
                           json={"path": "notes/away.md", "content": "# Away\n\nwalrusaway\n"})
            assert r.status_code in (200, 503), r.text
            written = (root / "notes" / "away.md").exists()
            assert written == (r.status_code == 200), r.text  # said written <=> on disk
            if written:
                assert (root / "notes" / "away.md").read_text() == "# Away\n\nwalrusaway\n"
                assert r.json().get("warnings"), r.json()  # the index was not updated: said so
            r = httpx.get(f"{url}/v1/vaults/v/search", params={"q": "alpha"}, timeout=60)
            assert r.status_code == 503 and r.json()["code"], r.text
        finally:
            with psycopg.connect(admin, autocommit=True) as db:
                db.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        if not written:
            r = httpx.post(f"{url}/v1/vaults/v/write", timeout=60,
                           json={"path": "notes/away.md", "content": "# Away\n\nwalrusaway\n"})
            assert r.status_code == 200, r.text
        assert until(lambda: _search(url, "walrusaway") == ["notes/away.md"], timeout=CEILING_S)
        assert _search(url, "alpha") == ["a.md"]


@pytest.mark.parametrize("path", ["../outside.md", "/etc/outside.md", "notes/../../outside.md", "link/outside.md",
                                  "link/../../outside.md", "notes/..%2F..%2Foutside.md", "C:/outside.md",
                                  "notes/\x00.md"])
def test_a_write_escaping_the_vault_is_refused(make_vault, tmp_path, on_pg, path):
    root = make_vault({"a.md": "# A\n\nalpha\n", "notes/b.md": "# B\n\nbeta\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "link")
    with live_server([("v", root)], on_pg) as (url, _server):
        sha = httpx.get(f"{url}/v1/vaults/v/page", params={"path": "notes/b.md"}, timeout=60).json()["sha256"]
        for op, body in (("write", {"path": path, "content": "# X\n\nescaped\n"}),
                         ("move", {"path": "notes/b.md", "new_path": path, "expected_sha256": sha})):
            r = httpx.post(f"{url}/v1/vaults/v/{op}", json=body, timeout=60)
            assert 400 <= r.status_code < 500, (op, r.status_code, r.text)
            assert r.json().get("error"), r.text
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "outside.md").exists() and not (root.parent / "outside.md").exists()
    assert (root / "notes" / "b.md").read_text() == "# B\n\nbeta\n"


def test_the_vault_tables_dropped_under_a_running_serve(make_vault, pg_database, on_pg):
    """DROP SCHEMA of the served vault by hand (its version row left): searches answer (503 at
    worst, never a 500), the watcher makes the tables again, and every note and every later
    write is searchable."""
    root = make_vault({"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n"})
    with live_server([("v", root)], on_pg) as (url, server):
        assert until(lambda: _search(url, "alpha") == ["a.md"], timeout=CEILING_S)
        schema = pg_tables.schema_name("hostile-serve")
        with psycopg.connect(pg_database, autocommit=True) as db:
            db.execute(f"DROP SCHEMA {pg_tables.quoted(schema)} CASCADE")
        r = httpx.get(f"{url}/v1/vaults/v/search", params={"q": "alpha"}, timeout=60)
        assert r.status_code in (200, 503), r.text
        (root / "c.md").write_text("# C\n\ngammaword\n")
        r = httpx.post(f"{url}/v1/vaults/v/write", timeout=60, json={"path": "d.md", "content": "# D\n\ndeltaword\n"})
        assert r.status_code == 200, r.text
        for word, path in (("gammaword", "c.md"), ("deltaword", "d.md"), ("alpha", "a.md"), ("beta", "b.md")):
            assert until(lambda: _search(url, word) == [path], timeout=CEILING_S), (word, httpx.get(url + "/health").json())


@pytest.mark.parametrize("table", ["lex", "chunks", "meta"])
def test_one_table_dropped_under_a_running_serve(make_vault, pg_database, on_pg, table):
    """A half-made schema under a running serve (one table dropped by hand): searches answer (503
    at worst, never a 500), and the next write or edit rebuilds it, every note searchable again."""
    root = make_vault({"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n"})
    with live_server([("v", root)], on_pg) as (url, server):
        assert until(lambda: _search(url, "alpha") == ["a.md"], timeout=CEILING_S)
        schema = pg_tables.schema_name("hostile-serve")
        with psycopg.connect(pg_database, autocommit=True) as db:
            db.execute(f"DROP TABLE {pg_tables.quoted(schema)}.{table} CASCADE")
        for _ in range(3):
            r = httpx.get(f"{url}/v1/vaults/v/search", params={"q": "alpha"}, timeout=60)
            assert r.status_code in (200, 503), r.text
        r = httpx.post(f"{url}/v1/vaults/v/write", timeout=60, json={"path": "d.md", "content": "# D\n\ndeltaword\n"})
        assert r.status_code == 200, r.text
        (root / "c.md").write_text("# C\n\ngammaword\n")
        for word, path in (("gammaword", "c.md"), ("deltaword", "d.md"), ("alpha", "a.md"), ("beta", "b.md")):
            assert until(lambda: _search(url, word) == [path], timeout=CEILING_S), (word, httpx.get(url + "/health").json())


@pytest.mark.parametrize("path", ["../secret.md", "/etc/passwd", "link/secret.md", "notes/../../secret.md",
                                  "link", "..", "%2e%2e/secret.md", "notes/%2e%2e/%2e%2e/secret.md"])
def test_a_read_escaping_the_vault_shows_nothing_outside(make_vault, tmp_path, on_pg, path):
    """Reads through the API and the web page's file route: a path leading out of the vault (by
    "..", an absolute path, a symlink, percent-encoded dots) is refused and shows no byte of it."""
    root = make_vault({"a.md": "# A\n\nalpha\n", "notes/b.md": "# B\n\nbeta\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\ntopsecretword\n")
    (root.parent / "secret.md").write_text("# Secret\n\ntopsecretword\n")
    os.symlink(outside, root / "link")
    with live_server([("v", root)], on_pg) as (url, _server):
        for r in (httpx.get(f"{url}/v1/vaults/v/page", params={"path": path}, timeout=60),
                  httpx.get(f"{url}/v/v/file/{path}", timeout=60),
                  httpx.get(f"{url}/v/v/page/{path}", timeout=60)):
            assert r.status_code != 500, (r.request.url, r.text)
            assert "topsecretword" not in r.text and "root:" not in r.text, (r.request.url, r.status_code)
