"""Every server agrees on tokens (issue 51 item 4): with ``store = "postgres"`` the tokens (their
hashes, scopes, vaults, revocations) live in the database, so two servers accept and revoke the same
tokens at once; ``wikimem token`` works against either store; tokens.json stays for the local one."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import psycopg
import pytest

from conftest import copy_vault
from serve_helpers import free_port, stop_servers, wait_healthy
from wikimem.api import open_vault
from wikimem.config import Settings
from wikimem.errors import UsageError
from wikimem.serve.tokens import DatabaseTokens, TokenStore, store_for

ROOT = Path(__file__).resolve().parents[1]


def test_two_stores_on_one_database_agree_at_once(pg_database):
    one, two = DatabaseTokens(pg_database), DatabaseTokens(pg_database)
    try:
        assert one.tokens() == [] and two.check("wm_nothing") is None  # no table yet: no tokens, no error
        secret = one.add("alice", "team", "write")
        seen = two.check(secret)
        assert seen is not None and (seen.name, seen.vault, seen.scope) == ("alice", "team", "write")
        assert two.check(secret + "x") is None
        with pytest.raises(UsageError, match="exists"):
            two.add("alice", "team", "read")
        assert two.revoke("alice").name == "alice"
        assert one.check(secret) is None  # refused by the other at once
        with pytest.raises(UsageError, match="no token named"):
            one.revoke("alice")
        again = two.add("alice", "team", "read")  # the name may be used again once revoked
        assert one.check(again).scope == "read" and one.check(secret) is None
        with psycopg.connect(pg_database) as db:  # only hashes are kept, and the revocation stays on record
            rows = db.execute("SELECT sha256, revoked IS NOT NULL FROM wikimem_tokens ORDER BY created, revoked").fetchall()
        assert len(rows) == 2 and sorted(r[1] for r in rows) == [False, True]
        assert all(secret not in r[0] and again not in r[0] for r in rows)
    finally:
        one.close()
        two.close()


def test_where_the_tokens_live(monkeypatch, tmp_path):
    monkeypatch.delenv("WIKIMEM_TOKENS", raising=False)
    local = Settings()
    on_pg = Settings(store="postgres", database_url="postgresql://db.internal/wiki")
    assert type(store_for([local])) is TokenStore
    assert isinstance(store_for([on_pg, local]), DatabaseTokens)
    with pytest.raises(UsageError, match="different databases"):
        store_for([on_pg, Settings(store="postgres", database_url="postgresql://other.internal/wiki")])
    monkeypatch.setenv("WIKIMEM_TOKENS", str(tmp_path / "tokens.json"))  # a file named: the file
    assert type(store_for([on_pg])) is TokenStore


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "wikimem"), *args], env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
def test_two_servers_accept_and_revoke_the_same_token_at_once(tmp_path, pg_database):
    root = copy_vault(ROOT / "examples", tmp_path / "served")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    env.update(WIKIMEM_STORE="postgres", WIKIMEM_DATABASE_URL=pg_database, WIKIMEM_EMBEDDER="none",
               WIKIMEM_VAULT_ID="served", XDG_CONFIG_HOME=str(tmp_path / "config"))
    assert _cli(env, "index", str(root)).returncode == 0
    made = _cli(env, "token", "add", "alice", "--vault", "served", "--scope", "read", "--json")
    assert made.returncode == 0, made.stderr
    secret = json.loads(made.stdout)["token"]
    assert "wikimem_tokens" in json.loads(made.stdout)["file"]
    assert not (tmp_path / "config" / "wikimem" / "tokens.json").exists()  # nothing in the file store
    listed = _cli(env, "token", "list", "--json")
    assert [t["name"] for t in json.loads(listed.stdout)] == ["alice"]
    ports = [free_port(), free_port()]
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    procs = [subprocess.Popen([str(Path(sys.executable).parent / "wikimem"), "serve", str(root), "--port", str(port),
                               *(["--no-watch"] if i else [])], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) for i, port in enumerate(ports)]
    try:
        for url, proc in zip(urls, procs):
            try:
                wait_healthy(url)
            except TimeoutError:
                proc.terminate()
                raise AssertionError(proc.stderr.read().decode()[-3000:]) from None
        auth = {"Authorization": f"Bearer {secret}"}
        for url in urls:
            assert httpx.get(url + "/v1/vaults/served/stats", timeout=30).status_code == 401  # tokens required
            assert httpx.get(url + "/v1/vaults/served/stats", headers=auth, timeout=30).status_code == 200
        assert _cli(env, "token", "revoke", "alice").returncode == 0
        for url in urls:  # refused by both from their next request
            r = httpx.get(url + "/v1/vaults/served/stats", headers=auth, timeout=30)
            assert r.status_code == 401 and "revoked" in r.json()["error"], r.text
    finally:
        stop_servers(procs)


def test_a_server_whose_token_database_is_down_lets_no_one_in(make_vault, pg_database):
    """Tokens cannot be checked: 503 with Retry-After (not a 500, not let in)."""
    from starlette.testclient import TestClient

    from wikimem.serve.app import Server, ServeConfig, start_hosts
    root = make_vault({"a.md": "# A\n\nalpha\n"})
    built = open_vault(root, embedder="none")  # the vault itself answers: only the tokens' database is down
    built.index()
    built.close()
    port = free_port()
    tokens = DatabaseTokens(pg_database)
    secret = tokens.add("alice", "v", "read")
    down = DatabaseTokens("postgresql://nobody@127.0.0.1:1/none?connect_timeout=1")  # nothing listens there
    try:
        for store, status in ((tokens, 200), (down, 503)):
            hosts = start_hosts([("v", root)], watch=False, embedder="none")
            try:
                server = Server(hosts, store, ServeConfig(port=port, rate=0.0, require_token=True))
                with TestClient(server.app(), base_url=f"http://127.0.0.1:{port}") as client:
                    r = client.get("/v1/vaults/v/stats", headers={"Authorization": f"Bearer {secret}"})
            finally:
                for host in hosts.values():
                    host.stop()
            assert r.status_code == status, r.text
            if status == 503:
                assert r.headers["retry-after"] and "database" in r.json()["error"]
    finally:
        tokens.close()
