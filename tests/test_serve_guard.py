"""wikimem serve's authentication that holds (issue 48): no foreign page may write (Origin `null`,
another port or scheme; a body that is not JSON), no login CSRF, a token added while serving takes
effect at once, guessers are rate-limited per address, and bad input, a database that is down or
a path that escapes get the status they should, telling a teammate's token no server path."""
from __future__ import annotations

import os

import pytest
from starlette.testclient import TestClient

from serve_helpers import free_port
from wikimem.serve.app import Server, ServeConfig, plan, start_hosts
from wikimem.serve.tokens import TokenStore

PORT = free_port()
BASE = f"http://127.0.0.1:{PORT}"
FILES = {"SCHEMA.md": "# Schema\n", "concepts/Alpha.md": "# Alpha\n\nalpha particles and [[Beta]]\n",
         "concepts/Beta.md": "# Beta\n\nbeta decay of nuclei\n"}
NOTE = b'{"path": "notes/Pwned.md", "content": "# Pwned\\n"}'


@pytest.fixture
def store(tmp_path):
    return TokenStore(tmp_path / "conf" / "tokens.json")


@pytest.fixture
def serve(make_vault, store):
    made = []

    def make(overrides=None, **config):
        root = make_vault(FILES, name="one")
        cfg = ServeConfig(port=PORT, rate=0.0, **config)
        pairs, _, cfg = plan([], [f"one={root}"], cfg, store)
        hosts = start_hosts(pairs, watch=False, **(overrides or {"embedder": "none"}))
        for host in hosts.values():
            assert host.session.ready.wait(30)
            host.vault.index(wait=10)
        server = Server(hosts, store, cfg)
        made.append(server)
        return TestClient(server.app(), base_url=BASE), server
    yield make
    for server in made:
        for host in server.hosts.values():
            host.stop()


def test_a_foreign_page_cannot_write_origin_null_another_port_or_scheme(serve):
    client, server = serve()
    root = server.hosts["one"].root
    with client:
        for origin in ("null", "http://localhost", f"https://127.0.0.1:{PORT}", f"http://127.0.0.1:{PORT + 1}",
                       "http://attacker.example", f"http://127.0.0.1:{PORT}.attacker.example"):
            for ctype in ("text/plain", "application/json"):
                r = client.post("/v1/vaults/one/write", content=NOTE, headers={"origin": origin, "content-type": ctype})
                assert r.status_code == 403 and r.json()["code"] == "forbidden_origin", (origin, ctype, r.text)
        assert not (root / "notes/Pwned.md").exists()
        r = client.get("/v1/vaults/one/stats", headers={"origin": "null"})
        assert r.status_code == 403
        # this server's own origin, exactly: let in
        ok = client.post("/v1/vaults/one/write", content=NOTE, headers={"origin": BASE, "content-type": "application/json"})
        assert ok.status_code == 200, ok.text
        r = client.get("/v1/vaults", headers={"origin": f"http://localhost:{PORT}", "host": f"localhost:{PORT}"})
        assert r.status_code == 200


def test_every_api_post_must_be_json_said_so(serve):
    client, server = serve()
    root = server.hosts["one"].root
    with client:
        for headers in ({"content-type": "text/plain"}, {}, {"content-type": "application/x-www-form-urlencoded"},
                        {"content-type": "multipart/form-data; boundary=x"}):
            r = client.post("/v1/vaults/one/write", content=NOTE, headers=headers)
            assert r.status_code == 415 and r.json()["code"] == "unsupported_media_type", (headers, r.text)
        assert client.post("/v1/vaults/one/review/refresh", content=b"", headers={"content-type": "text/plain"}).status_code == 415
        assert client.post("/mcp/one", content=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
                           headers={"content-type": "text/plain"}).status_code == 415
        assert not (root / "notes/Pwned.md").exists()
        r = client.post("/v1/vaults/one/write", content=NOTE, headers={"content-type": "application/json; charset=utf-8"})
        assert r.status_code == 200, r.text


def test_a_login_from_another_page_is_refused_login_csrf(serve, store):
    token = store.add("ann", "one", "read")
    client, _ = serve()
    form = f"token={token}".encode()
    with client:
        for extra in ({"origin": "null"}, {"origin": "http://attacker.example"}, {"origin": f"http://localhost:{PORT}"}, {}):
            r = client.post("/login", content=form, follow_redirects=False,
                            headers={"content-type": "application/x-www-form-urlencoded", **extra})
            assert r.status_code == 403 and "set-cookie" not in r.headers, (extra, r.status_code)
        r = client.post("/login", content=form, follow_redirects=False,
                        headers={"content-type": "application/x-www-form-urlencoded", "origin": BASE})
        assert r.status_code == 303 and "wikimem_token=" in r.headers["set-cookie"]


def test_a_token_added_while_serving_takes_effect_at_once(serve, store):
    client, server = serve()
    with client:
        assert client.get("/v1/vaults/one/stats").status_code == 200  # loopback, no token yet: anyone
        secret = TokenStore(store.path).add("ann", "one", "write")  # `wikimem token add` in another shell
        assert client.get("/v1/vaults/one/stats").status_code == 401
        r = client.post("/v1/vaults/one/write", json={"path": "notes/Anon.md", "content": "# Anon\n"})
        assert r.status_code == 401
        assert not (server.hosts["one"].root / "notes/Anon.md").exists()
        page = client.get("/v/one/", headers={"accept": "text/html"}, follow_redirects=False)
        assert page.status_code == 303 and page.headers["location"] == "/login"
        mcp = client.post("/mcp/one", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"accept": "application/json, text/event-stream"})
        assert mcp.status_code == 401
        auth = {"Authorization": f"Bearer {secret}"}
        assert client.get("/v1/vaults/one/stats", headers=auth).status_code == 200
        TokenStore(store.path).revoke("ann")  # the last token gone: still required (revoking must not open it)
        assert client.get("/v1/vaults/one/stats").status_code == 401
        assert client.get("/v1/vaults/one/stats", headers=auth).status_code == 401


def test_a_token_for_another_vault_changes_nothing_here(serve, store):
    client, _ = serve()
    with client:
        TokenStore(store.path).add("bob", "elsewhere", "read")
        assert client.get("/v1/vaults/one/stats").status_code == 200


def test_guessers_and_logins_are_rate_limited_per_address(serve, store):
    token = store.add("ann", "one", "read")
    client, _ = serve(stranger_burst=5, stranger_rate=0.5)
    with client:
        codes = [client.get("/v1/vaults/one/stats", headers={"Authorization": f"Bearer wm_guess{i}"}).status_code
                 for i in range(8)]
        assert codes[:5] == [401] * 5 and codes[-1] == 429, codes
        r = client.get("/v1/vaults/one/stats")
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        assert client.get("/v1/vaults/one/stats", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    client2, _ = serve(stranger_burst=3, stranger_rate=0.5)
    with client2:
        form = {"content-type": "application/x-www-form-urlencoded", "origin": BASE}
        codes = [client2.post("/login", content=b"token=wm_nope", headers=form).status_code for _ in range(5)]
        assert codes[:3] == [401] * 3 and codes[-1] == 429, codes


def test_a_body_nested_100000_deep_is_a_400(serve):
    client, _ = serve()
    with client:
        deep = b"[" * 100_000 + b"]" * 100_000
        r = client.post("/v1/vaults/one/write", content=deep, headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["code"] == "bad_request"
        deep_object = b'{"path": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_001
        r = client.post("/v1/vaults/one/write", content=deep_object, headers={"content-type": "application/json"})
        assert r.status_code == 400


@pytest.mark.parametrize("path", ["../x.md", "concepts/../../x.md", "/etc/passwd.md"])
def test_review_of_a_path_outside_the_vault_is_a_400(serve, path):
    client, _ = serve()
    with client:
        r = client.get("/v1/vaults/one/review", params={"path": path})
        assert r.status_code == 400 and r.json()["code"] == "PathEscapeError", r.text


def test_a_broken_token_file_is_a_503_that_names_no_path(serve, store):
    store.add("ann", "one", "read")
    client, _ = serve()
    store.path.write_text("{broken")
    with client:
        r = client.get("/v1/vaults/one/stats", headers={"Authorization": "Bearer wm_x"})
        assert r.status_code == 503 and "not valid" in r.json()["error"]
        assert str(store.path.parent) not in r.text and "tokens.json" not in r.text


def test_a_vault_gone_is_told_to_a_token_holder_without_its_folder(serve, store):
    import shutil
    token = store.add("ann", "one", "read")
    client, server = serve()
    root = server.hosts["one"].root
    shutil.rmtree(root)
    with client:
        r = client.get("/v1/vaults/one/stats", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 503 and str(root) not in r.text and str(root.parent) not in r.text
        assert "vault 'one'" in r.json()["error"]


def test_a_database_that_is_down_is_a_503_with_retry_after(serve, store, pg_database):
    import psycopg
    token = store.add("ann", "one", "read")
    client, server = serve(overrides={"embedder": "fake", "store": "postgres", "database_url": pg_database,
                                      "vault_id": "down-test"})
    auth = {"Authorization": f"Bearer {token}"}
    with client:
        assert client.get("/v1/vaults/one/search", params={"q": "alpha"}, headers=auth).status_code == 200
        health = client.get("/health")
        assert health.status_code == 200 and health.json()["per_vault"][0]["database"]["ok"] is True, health.text
        name = pg_database.split("?")[0].rsplit("/", 1)[1]
        admin = pg_database.replace(f"/{name}", "/postgres", 1)
        with psycopg.connect(admin, autocommit=True) as db:  # the database goes away under the server
            db.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        for _ in range(2):  # the connection found broken, then a new one refused
            r = client.get("/v1/vaults/one/search", params={"q": "alpha"}, headers=auth)
            assert r.status_code == 503 and int(r.headers["retry-after"]) >= 1, r.text
        page = client.get("/v/one/", params={"q": "alpha"}, headers=auth)  # the web page too
        assert page.status_code == 503 and int(page.headers["retry-after"]) >= 1, page.text[:300]
        health = client.get("/health")  # a load balancer hears it too (it was 200 "ok" before issue 51)
        assert health.status_code == 503 and int(health.headers["retry-after"]) >= 1, health.text
        assert health.json()["per_vault"][0]["database"]["ok"] is False and health.json()["ok"] is False
        socket_folder = pg_database.split("host=")[1].split("&")[0] if "host=" in pg_database else None
        if socket_folder:
            assert socket_folder not in r.text  # a teammate is not told where the server's socket is


def test_a_malformed_database_url_is_one_line_and_exit_2(make_vault, monkeypatch):
    from typer.testing import CliRunner

    from wikimem.cli import app
    root = make_vault(FILES)
    monkeypatch.setenv("WIKIMEM_STORE", "postgres")
    for url in ("postgresql://ann:pw-secret@db:notaport/team", "postgresql://ann:pw-secret@[::1/team"):
        monkeypatch.setenv("WIKIMEM_DATABASE_URL", url)
        result = CliRunner().invoke(app, ["search", "alpha", "--vault", str(root)])
        assert result.exit_code == 2, result.output
        assert "not a database URL" in result.output and "wikimem bug" not in result.output
        assert "pw-secret" not in result.output and len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("origin, scheme, host, same", [
    ("http://127.0.0.1:8765", "http", "127.0.0.1:8765", True),
    ("http://LOCALHOST:8765", "http", "localhost:8765", True),
    ("http://[::1]:8765", "http", "[::1]:8765", True),
    ("https://wiki.example", "https", "wiki.example", True),  # behind a TLS proxy: port 443 both sides
    ("https://wiki.example:443", "https", "wiki.example", True),
    ("null", "http", "127.0.0.1:8765", False),
    ("http://localhost", "http", "localhost:8765", False),
    ("https://localhost:8765", "http", "localhost:8765", False),
    ("http://localhost:8766", "http", "localhost:8765", False),
    ("http://127.0.0.1:8765", "http", "localhost:8765", False),  # another name is another origin
    ("http://[::1]:8765", "http", "127.0.0.1:8765", False),
    ("http://127.0.0.1:notaport", "http", "127.0.0.1:8765", False),
    ("http://user@127.0.0.1:8765", "http", "127.0.0.1:8765", False),
    ("http://127.0.0.1:8765/path", "http", "127.0.0.1:8765", False),
    ("", "http", "127.0.0.1:8765", False),
])
def test_same_origin_is_scheme_host_and_port(origin, scheme, host, same):
    from wikimem.serve.guard import same_origin
    assert same_origin(origin, scheme, host) is same


def test_the_address_limiter_forgets_idle_addresses():
    from wikimem.serve.guard import RateLimiter
    limiter = RateLimiter(1.0, 2, keys=100)
    for i in range(1000):  # a flood of addresses, one request each
        assert limiter.take(f"10.0.{i // 256}.{i % 256}") == 0.0
    assert len(limiter._buckets) <= 100


def test_an_address_limit_is_per_ipv4_address_and_per_ipv6_64():
    from wikimem.serve.guard import _address
    assert _address({"client": ("2001:db8::1", 1)}) == _address({"client": ("2001:db8::abcd:2", 1)})
    assert _address({"client": ("2001:db8::1", 1)}) != _address({"client": ("2001:db8:0:1::1", 1)})
    assert _address({"client": ("::ffff:10.0.0.1", 1)}) == "10.0.0.1" != _address({"client": ("::ffff:10.0.0.2", 1)})


def test_a_token_check_that_waits_on_the_database_stalls_no_other_request(tmp_path):
    """Tokens on the PostgreSQL store are checked by a question to the database on every request: it
    runs off the event loop, so one request waiting on a slow or dead database (up to a connect
    timeout) does not hold up every other client, the health check included."""
    import asyncio
    import threading

    from wikimem.serve.guard import Guard, RateLimiter

    release, released = threading.Event(), []

    class SlowDatabaseTokens(TokenStore):
        blocking = True

        def tokens(self):
            release.wait(10)
            released.append(True)
            return []

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    guard = Guard(app, store=SlowDatabaseTokens(tmp_path / "t.json"), require_token=True,
                  allowed_hosts={"127.0.0.1"}, max_body=1000, limiter=RateLimiter(0.0, 1))

    async def request(path, headers=()):
        statuses = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            if message["type"] == "http.response.start":
                statuses.append(message["status"])
        scope = {"type": "http", "method": "GET", "path": path, "headers": [(b"host", b"127.0.0.1"), *headers],
                 "client": ("127.0.0.1", 5000)}
        await guard(scope, receive, send)
        return statuses[0], bool(released)

    async def both():
        waiting = asyncio.ensure_future(request("/v1/vaults/one/stats", [(b"authorization", b"Bearer abc")]))
        await asyncio.sleep(0.2)
        health = await asyncio.wait_for(request("/health"), 5)
        release.set()
        return health, await waiting
    threading.Timer(3.0, release.set).start()  # the code before: the loop itself waited, until this
    (health_status, health_after_release), (status, _) = asyncio.run(both())
    assert health_status == 200 and not health_after_release  # answered while the token check still waited
    assert status == 401
