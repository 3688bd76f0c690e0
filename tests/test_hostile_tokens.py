"""Hostile pass on the tokens in the database (issue 56): a token table dropped by hand, one a
newer wikimem laid out otherwise, one this server's role may not read, and a token revoked while
its requests are in flight. Each case is a clear answer (401, or 503 saying why), never a 500 and
never a request let in that should not be."""
from __future__ import annotations

import contextlib
import threading
import time
import uuid

import httpx
import psycopg
import pytest

from pg_server import with_database
from serve_helpers import free_port
from wikimem.api import open_vault
from wikimem.errors import WikimemError
from wikimem.serve.tokens import DatabaseTokens


def _served(make_vault):
    root = make_vault({"a.md": "# A\n\nalpha words\n"})
    built = open_vault(root, embedder="none")
    built.index()
    built.close()
    return root


@contextlib.contextmanager
def _client(root, store):
    """A TestClient of a server over ``root`` that requires a token, with ``store`` as its tokens."""
    from starlette.testclient import TestClient

    from wikimem.serve.app import Server, ServeConfig, start_hosts
    port = free_port()
    hosts = start_hosts([("v", root)], watch=False, embedder="none")
    try:
        server = Server(hosts, store, ServeConfig(port=port, rate=0.0, require_token=True))
        with TestClient(server.app(), base_url=f"http://127.0.0.1:{port}", raise_server_exceptions=False) as client:
            yield client
    finally:
        for host in hosts.values():
            host.stop()


def test_a_token_table_dropped_by_hand_is_made_again_on_the_next_add(pg_database):
    """DROP TABLE wikimem_tokens (its version row stays): no token is let in, and `token add`
    makes the table again instead of failing on it forever."""
    tokens = DatabaseTokens(pg_database)
    try:
        old = tokens.add("alice", "v", "read")
        with psycopg.connect(pg_database, autocommit=True) as db:
            db.execute("DROP TABLE wikimem_tokens")
        assert tokens.check(old) is None
        fresh = tokens.add("bob", "v", "write")
        assert tokens.check(fresh).name == "bob" and tokens.check(old) is None
    finally:
        tokens.close()


def test_a_token_table_of_a_newer_wikimem_is_a_503_not_a_500(make_vault, pg_database):
    """A newer wikimem changed the table's layout (its version row says so): this server does not
    read a layout it does not know; every request is a 503 naming the cause, never a 500."""
    root = _served(make_vault)
    tokens = DatabaseTokens(pg_database)
    secret = tokens.add("alice", "v", "read")
    with psycopg.connect(pg_database, autocommit=True) as db:
        db.execute("UPDATE wikimem_schema SET version = 2 WHERE component = 'tokens'")
        db.execute("ALTER TABLE wikimem_tokens RENAME COLUMN scope TO scopes")
    try:
        with pytest.raises(WikimemError, match="newer wikimem"):
            tokens.tokens()
        with _client(root, tokens) as client:
            r = client.get("/v1/vaults/v/stats", headers={"Authorization": f"Bearer {secret}"})
        assert r.status_code == 503, r.text
        assert "newer wikimem" in r.json()["error"]
    finally:
        tokens.close()


@pytest.fixture
def reader_role(pg_url, pg_database):
    """A role that may connect to the test's database but not read wikimem_tokens -> its URL."""
    role = "wm_hostile_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute(f"CREATE ROLE {role} LOGIN")
    name = pg_database.split("?")[0].rsplit("/", 1)[1]
    import re
    url = re.sub(r"^postgresql://[^@/]*@", f"postgresql://{role}:@", with_database(pg_url, name))
    yield role, url
    with psycopg.connect(pg_database, autocommit=True) as db:
        db.execute(f"DROP OWNED BY {role}")
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute(f"DROP ROLE IF EXISTS {role}")


def test_an_unreadable_token_table_is_a_503_naming_the_grant(make_vault, pg_database, reader_role):
    """This server's role lacks SELECT on the token table: a 503 that says a grant is missing (the
    log names it), without the Retry-After of a database that is down (waiting mends nothing)."""
    role, url = reader_role
    root = _served(make_vault)
    owner = DatabaseTokens(pg_database)
    secret = owner.add("alice", "v", "read")
    owner.close()
    with psycopg.connect(pg_database, autocommit=True) as db:
        db.execute(f"GRANT SELECT ON wikimem_schema TO {role}")
    tokens = DatabaseTokens(url)
    try:
        with pytest.raises(WikimemError, match="GRANT SELECT ON wikimem_tokens") as err:
            tokens.tokens()
        assert "vault's schema" not in str(err.value)  # the token table is the database's, not a vault's
        with _client(root, tokens) as client:
            r = client.get("/v1/vaults/v/stats", headers={"Authorization": f"Bearer {secret}"})
        assert r.status_code == 503, r.text
        assert "retry-after" not in r.headers
        assert "grant" in r.json()["error"].lower() and "does not answer" not in r.json()["error"]
    finally:
        tokens.close()


def test_a_token_revoked_while_its_requests_are_in_flight(make_vault, pg_database):
    """Four clients hammer a live server with one token; another server's `token revoke` lands in
    the middle. Every request sent after the revoke returned is a 401; none is a 5xx; and before
    it, the token worked."""
    from serve_helpers import live_server
    root = _served(make_vault)
    tokens = DatabaseTokens(pg_database)
    other = DatabaseTokens(pg_database)  # the revoke comes from elsewhere (another server, the CLI)
    secret = tokens.add("alice", "v", "read")
    results: list[tuple[float, float, int]] = []
    stop = threading.Event()
    try:
        with live_server([("v", root)], tokens, require_token=True) as (url, _server):
            def hammer():
                with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {secret}"}, timeout=30) as c:
                    while not stop.is_set():
                        began = time.monotonic()
                        status = c.get("/v1/vaults/v/stats").status_code
                        results.append((began, time.monotonic(), status))
            threads = [threading.Thread(target=hammer) for _ in range(4)]
            for t in threads:
                t.start()
            time.sleep(1.0)
            other.revoke("alice")
            revoked = time.monotonic()
            time.sleep(1.0)
            stop.set()
            for t in threads:
                t.join(30)
    finally:
        tokens.close()
        other.close()
    before = [s for b, e, s in results if e < revoked]
    after = [s for b, e, s in results if b > revoked]
    assert before and after
    assert set(before) == {200}, sorted(set(before))
    assert 401 in after and set(after) <= {401, 429}, sorted(set(after))  # 429: the limit on token-less callers
    assert not [s for _, _, s in results if s >= 500]


def test_a_token_check_after_the_database_ended_its_session_is_answered(pg_database):
    """The database ended the token store's idle session (a restart) and is up again: the next
    check is answered on a new connection; it was a 503, and every request for 2 s after it too."""
    tokens = DatabaseTokens(pg_database)
    try:
        secret = tokens.add("alice", "v", "read")
        assert tokens.check(secret).name == "alice"
        name = pg_database.split("?")[0].rsplit("/", 1)[1]
        with psycopg.connect(pg_database, autocommit=True) as db:
            db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                       "AND pid <> pg_backend_pid()", (name,))
        time.sleep(0.5)
        assert tokens.check(secret).name == "alice"
    finally:
        tokens.close()


def test_the_cli_says_a_connection_cut_in_words_not_as_a_bug(make_vault, monkeypatch, capsys):
    """A driver error that escapes to the command line (the server ended the session mid-command):
    one line saying the database cannot be reached, exit 2, not "a wikimem bug"."""
    from wikimem.api import Vault
    from wikimem.cli.app import invoke
    root = make_vault({"a.md": "# A\n\nalpha\n"})

    def cut(*args, **kwargs):
        raise psycopg.errors.AdminShutdown("terminating connection due to administrator command")
    monkeypatch.setattr(Vault, "search", cut)
    code = invoke(["search", "alpha", "-V", str(root)])
    said = capsys.readouterr().err
    assert code == 2, said
    assert "cannot be reached" in said and "bug" not in said


def test_one_cancelled_statement_does_not_take_the_database_down_for_everyone(pg_database):
    """A statement the server cancels (statement_timeout, a DBA's pg_cancel_backend) fails that one
    call; the connection is still good, so the next call is answered at once instead of every call
    being refused for ``down_for`` seconds (every token check: a 503 for everyone)."""
    from wikimem.errors import DatabaseUnavailable
    from wikimem.stores import pg
    held = pg.Held(pg_database, "the test's database", lambda db: None, down_for=300.0)
    try:
        assert held.run(lambda db: db.execute("SELECT 1").fetchone()[0]) == 1

        def slow(db):
            db.execute("SET statement_timeout = 10")
            try:
                db.execute("SELECT pg_sleep(2)")
            finally:
                db.execute("RESET statement_timeout")
        with pytest.raises(DatabaseUnavailable):
            held.run(slow)
        assert held.run(lambda db: db.execute("SELECT 2").fetchone()[0]) == 2
    finally:
        held.close()


def test_a_database_that_stops_answering_does_not_queue_every_caller_forever(pg_database):
    """The server stops answering without closing the connection (a hung host, a network cut with
    no reset: here its backend is stopped with SIGSTOP). The call in flight waits; the ones behind
    it are told the database does not answer after ``queue_for``, instead of queueing forever
    (every token check of a serve, every request then)."""
    import os
    import signal
    from wikimem.errors import DatabaseUnavailable
    from wikimem.stores import pg
    held = pg.Held(pg_database, "the test's database", lambda db: None, queue_for=1.0)
    backend = held.run(lambda db: db.info.backend_pid)
    try:
        os.kill(backend, signal.SIGSTOP)
    except PermissionError:
        pytest.skip("the test server's backends run as another user this process may not signal")
    stuck = threading.Thread(target=lambda: held.run(lambda db: db.execute("SELECT 1").fetchone()), daemon=True)
    try:
        stuck.start()
        time.sleep(0.3)
        began = time.monotonic()
        with pytest.raises(DatabaseUnavailable, match="does not answer"):
            held.run(lambda db: db.execute("SELECT 2").fetchone())
        assert time.monotonic() - began < 30
    finally:
        os.kill(backend, signal.SIGCONT)
        stuck.join(30)
        held.close()
    assert held.run(lambda db: db.execute("SELECT 3").fetchone()[0]) == 3
    held.close()
