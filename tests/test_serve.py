"""wikimem serve: the JSON API, tokens, the guard's refusals, bad input, several vaults (issue 37)."""
from __future__ import annotations

import json
import os
import shutil
import stat

import pytest
from starlette.testclient import TestClient

from serve_helpers import free_port
from wikimem.errors import UsageError
from wikimem.serve.app import Server, ServeConfig, plan, start_hosts
from wikimem.serve.tokens import TokenStore

PORT = free_port()
BASE = f"http://127.0.0.1:{PORT}"
FILES = {"SCHEMA.md": "# Schema\n", "concepts/Alpha.md": "---\ntags: [greek]\n---\n# Alpha\n\nalpha particles and [[Beta]]\n",
         "concepts/Beta.md": "# Beta\n\nbeta decay of nuclei\n", "notes/Gamma.md": "# Gamma\n\ngamma rays from [[Alpha]]\n"}


@pytest.fixture
def store(tmp_path):
    return TokenStore(tmp_path / "conf" / "tokens.json")


def _server(make_vault, store, *, names=("one",), require_token=None, rate=0.0, **config):
    pairs = [(name, make_vault(FILES, name=name)) for name in names]
    cfg = ServeConfig(port=PORT, rate=rate, **config)
    pairs, store, cfg = plan([], [f"{n}={p}" for n, p in pairs], cfg, store)
    if require_token is not None:
        cfg.require_token = require_token
    hosts = start_hosts(pairs, watch=False, embedder="none")
    for host in hosts.values():
        assert host.session.ready.wait(30)
        host.vault.index(wait=10)
    return Server(hosts, store, cfg)


@pytest.fixture
def serve(make_vault, store):
    made = []

    def make(**kw):
        server = _server(make_vault, store, **kw)
        made.append(server)
        return TestClient(server.app(), base_url=BASE), server
    yield make
    for server in made:
        for host in server.hosts.values():
            host.stop()


def test_search_read_write_and_a_conflict_with_the_current_hash(serve):
    client, server = serve()
    with client:
        hits = client.get("/v1/vaults/one/search", params={"q": "alpha", "limit": 3}).json()["hits"]
        assert hits[0]["path"] == "concepts/Alpha.md"
        only = client.get("/v1/vaults/one/search", params=[("q", "rays OR particles"), ("folder", "notes")]).json()
        assert [h["path"] for h in only["hits"]] == ["notes/Gamma.md"]
        page = client.get("/v1/vaults/one/page", params={"path": "concepts/Beta.md"}).json()
        assert page["content"].startswith("# Beta")
        old = page["sha256"]
        edited = client.post("/v1/vaults/one/edit", json={"path": "concepts/Beta.md", "operation": "append",
                                                          "content": "\nmore\n", "expected_sha256": old})
        assert edited.status_code == 200, edited.text
        again = client.post("/v1/vaults/one/edit", json={"path": "concepts/Beta.md", "operation": "append",
                                                         "content": "\nstale\n", "expected_sha256": old})
        assert again.status_code == 409
        body = again.json()
        assert body["code"] == "ConflictError"
        assert body["current_sha256"] == server.hosts["one"].vault.files.read_note("concepts/Beta.md").sha256
        assert "stale" not in (server.hosts["one"].root / "concepts/Beta.md").read_text()
        created = client.post("/v1/vaults/one/write", json={"path": "notes/New.md", "content": "# New\n\nfresh words\n"})
        assert created.status_code == 200 and created.json()["created"] is True
        found = client.get("/v1/vaults/one/search", params={"q": "fresh words"}).json()["hits"]
        assert found and found[0]["path"] == "notes/New.md"


def test_bad_input_is_a_json_error_never_a_traceback(serve):
    client, _ = serve()
    with client:
        r = client.post("/v1/vaults/one/write", content=b"{not json", headers={"content-type": "application/json"})
        assert r.status_code == 400 and "malformed JSON" in r.json()["error"]
        r = client.post("/v1/vaults/one/write", json={"path": "notes/x.md", "content": "x", "expected_sha": "0"})
        assert r.status_code == 400 and "expected_sha: unknown field" in r.json()["error"]
        r = client.post("/v1/vaults/one/write", json=["a list"])
        assert r.status_code == 400
        r = client.get("/v1/vaults/one/search", params={"q": "a", "limit": "many"})
        assert r.status_code == 400 and "limit:" in r.json()["error"]  # as the query string names it
        r = client.get("/v1/vaults/one/search")
        assert r.status_code == 400 and "q: required" in r.json()["error"]
        r = client.post("/v1/vaults/one/write", content=b'{"path": "\xff"}', headers={"content-type": "application/json"})
        assert r.status_code == 400 and "UTF-8" in r.json()["error"]
        r = client.get("/v1/vaults/one/page", params={"path": "concepts/Nope.md"})
        assert r.status_code == 404 and "error" in r.json()
        r = client.post("/v1/vaults/one/edit", json={"path": "concepts/Nope.md", "operation": "append",
                                                     "content": "x", "expected_sha256": "0" * 64})
        assert r.status_code == 404
        r = client.get("/v1/vaults/one/related", params={"path": "concepts/Nope.md"})
        assert r.status_code == 404
        r = client.get("/v1/vaults/nope/search", params={"q": "a"})
        assert r.status_code == 404 and r.json()["code"] == "not_found"
        r = client.get("/no/such/route")
        assert r.status_code == 404 and r.json()["code"] == "not_found"
        r = client.post("/v1/vaults/one/search", json={"q": "a"})
        assert r.status_code == 405


def test_a_50_mb_body_is_refused_with_413_and_nothing_written(serve):
    client, server = serve()
    with client:
        big = json.dumps({"path": "notes/big.md", "content": "x" * (50 * 1024 * 1024)})
        r = client.post("/v1/vaults/one/write", content=big, headers={"content-type": "application/json"})
        assert r.status_code == 413 and r.json()["code"] == "too_large"
    assert not (server.hosts["one"].root / "notes/big.md").exists()


@pytest.mark.parametrize("path", ["../outside.md", "/etc/passwd.md", "concepts/../../outside.md", "raw/../../x.md"])
def test_paths_escaping_the_vault_are_refused_through_the_api(serve, path):
    client, server = serve()
    with client:
        w = client.post("/v1/vaults/one/write", json={"path": path, "content": "# x\n"})
        assert w.status_code == 400, w.text
        r = client.get("/v1/vaults/one/page", params={"path": path})
        assert r.status_code in (400, 404)
    assert not (server.hosts["one"].root.parent / "outside.md").exists()


def test_paths_escaping_the_vault_are_refused_through_the_web_pages(serve, tmp_path):
    (tmp_path / "secret.md").write_text("# Secret\n\ntop secret\n")
    client, _ = serve()
    with client:
        for url in ("/v/one/page/..%2Fsecret.md", "/v/one/page/%2E%2E/secret.md", "/v/one/page/concepts/..%2F..%2Fsecret.md"):
            r = client.get(url)
            assert r.status_code in (400, 404), url
            assert "top secret" not in r.text


def test_tokens_read_cannot_write_other_vault_is_hidden_and_revoked_is_refused(serve, store):
    reader = store.add("rita", "one", "read")
    writer = store.add("wes", "one", "write")
    other = store.add("olga", "two", "write")
    client, server = serve(names=("one", "two"))
    assert server.config.require_token
    with client:
        assert client.get("/v1/vaults/one/search", params={"q": "alpha"}).status_code == 401
        assert client.get("/v1/vaults/one/search", params={"q": "alpha"},
                          headers={"Authorization": "Bearer wm_wrong"}).status_code == 401
        auth = {"Authorization": f"Bearer {reader}"}
        assert client.get("/v1/vaults/one/search", params={"q": "alpha"}, headers=auth).status_code == 200
        w = client.post("/v1/vaults/one/write", json={"path": "notes/r.md", "content": "# r\n"}, headers=auth)
        assert w.status_code == 403
        hidden = client.get("/v1/vaults/one/search", params={"q": "alpha"}, headers={"Authorization": f"Bearer {other}"})
        assert hidden.status_code == 404  # not 403: the name is not confirmed
        listed = client.get("/v1/vaults", headers={"Authorization": f"Bearer {other}"}).json()["vaults"]
        assert [v["name"] for v in listed] == ["two"]
        assert "root" not in listed[0]  # where the vault lives on the server is not a teammate's business
        auth = {"Authorization": f"Bearer {writer}"}
        w = client.post("/v1/vaults/one/write", json={"path": "notes/w.md", "content": "# w\n\nby wes\n"}, headers=auth)
        assert w.status_code == 200, w.text
        log = (server.hosts["one"].root / "log.md").read_text()
        assert "notes/w.md · by wes" in log
        store.revoke("wes")
        assert client.get("/v1/vaults/one/search", params={"q": "a"}, headers=auth).status_code == 401
        assert client.get("/health").status_code == 200  # liveness needs no token


def test_the_token_file_keeps_hashes_only_with_mode_0600(store, tmp_path):
    secret = store.add("ci-bot", "notes", "write")
    text = store.path.read_text()
    assert secret not in text and secret.startswith("wm_")
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert store.check(secret).name == "ci-bot"
    assert store.check(secret + "x") is None
    with pytest.raises(UsageError):
        store.add("ci-bot", "notes", "read")
    with pytest.raises(UsageError):
        store.add("bad name!", "notes", "read")
    with pytest.raises(UsageError):
        store.add("x", "notes", "admin")
    store.path.write_text("{broken")
    from wikimem.errors import ConfigError
    with pytest.raises(ConfigError, match="not valid"):
        TokenStore(store.path).tokens()


def test_a_non_loopback_bind_refuses_to_start_without_a_token(make_vault, store):
    root = make_vault(FILES)
    with pytest.raises(UsageError, match="without a token"):
        plan([str(root)], [], ServeConfig(host="0.0.0.0"), store)
    store.add("team", root.name, "read")
    pairs, _, config = plan([str(root)], [], ServeConfig(host="0.0.0.0"), store)
    assert config.require_token and pairs[0][0] == root.name


def test_dns_rebinding_host_and_foreign_origin_are_refused(serve):
    client, _ = serve()
    with client:
        assert client.get("/v1/vaults", headers={"Host": "attacker.example"}).status_code == 403
        assert client.get("/v1/vaults", headers={"Origin": "http://attacker.example"}).status_code == 403
        assert client.get("/v1/vaults", headers={"Origin": BASE}).status_code == 200
        assert client.get("/v1/vaults", headers={"Host": f"localhost:{PORT}"}).status_code == 200


def test_each_token_has_a_rate_limit_with_retry_after(serve, store):
    token = store.add("busy", "one", "read")
    client, _ = serve(rate=1.0)
    client.app.limiter.burst = 3
    with client:
        codes = [client.get("/v1/vaults/one/stats", headers={"Authorization": f"Bearer {token}"}) for _ in range(5)]
    assert [r.status_code for r in codes[:3]] == [200, 200, 200]
    assert codes[-1].status_code == 429 and int(codes[-1].headers["retry-after"]) >= 1


def test_a_vault_deleted_under_the_server_stops_being_served_while_the_other_goes_on(serve):
    client, server = serve(names=("one", "two"))
    with client:
        shutil.rmtree(server.hosts["one"].root)
        gone = client.get("/v1/vaults/one/search", params={"q": "alpha"})
        assert gone.status_code == 503 and "gone" in gone.json()["error"]
        assert client.get("/v1/vaults/two/search", params={"q": "alpha"}).status_code == 200
        states = {v["name"]: v["state"] for v in client.get("/v1/vaults").json()["vaults"]}
        assert states == {"one": "gone", "two": "ready"}


def test_two_servers_on_one_vault_the_second_stands_by_naming_the_watcher(make_vault):
    """A second server of a watched vault is not refused (issue 51 item 2): it answers, and stands
    by to take the watching role over (tests/test_serve_takeover.py)."""
    root = make_vault(FILES)
    first = start_hosts([("v", root)], watch=True, embedder="none")
    try:
        second = start_hosts([("v", root)], watch=True, embedder="none")
        try:
            assert second["v"].watcher is None
            assert second["v"].health()["watcher"]["holder"] == os.getpid()
        finally:
            for host in second.values():
                host.stop()
    finally:
        for host in first.values():
            host.stop()


def test_the_openapi_document_lists_every_operation(serve):
    from wikimem.serve.operations import OPERATIONS
    client, _ = serve()
    with client:
        doc = client.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    for op in OPERATIONS:
        assert op.http.lower() in doc["paths"][f"/v1/vaults/{{name}}{op.path}"]
    search = doc["paths"]["/v1/vaults/{name}/search"]["get"]
    assert {"q", "limit", "folder", "tag"} <= {p["name"] for p in search["parameters"]}


def test_every_route_answers_json_under_a_read_token(serve, store):
    """Each read operation runs (no 500) with a read token; each write one is a 403 for it."""
    from wikimem.serve.operations import OPERATIONS
    token = store.add("r", "one", "read")
    client, _ = serve()
    args = {"path": "concepts/Alpha.md", "q": "alpha", "source": "concepts/Alpha.md", "target": "notes/Gamma.md"}
    with client:
        auth = {"Authorization": f"Bearer {token}"}
        for op in OPERATIONS:
            if op.http == "GET":
                from wikimem.serve.operations import arguments_model
                wanted = set(arguments_model(op.method).model_fields) | {a for a, _ in op.aliases}
                params = {k: v for k, v in args.items() if k in wanted and not (k == "path" and "q" in wanted)}
                r = client.get(f"/v1/vaults/one{op.path}", params=params, headers=auth)
                assert r.status_code == 200, (op, r.text)
            else:
                r = client.post(f"/v1/vaults/one{op.path}", json={}, headers=auth)
                assert r.status_code == 403, (op, r.text)


def test_the_web_page_escapes_a_note_and_links_wikilinks(serve):
    client, server = serve()
    root = server.hosts["one"].root
    (root / "notes/Evil.md").write_text("# Evil\n\n<script>alert(1)</script> <img src=x onerror=alert(2)>\n"
                                        "[click](javascript:alert(3)) and [[Alpha]] and [[Missing page]]\n")
    server.hosts["one"].vault.index()
    with client:
        html = client.get("/v/one/page/notes/Evil.md").text
        assert "<script>" not in html and "<img" not in html and 'href="javascript' not in html
        assert "&lt;script&gt;" in html
        assert 'href="/v/one/page/concepts/Alpha.md"' in html
        assert 'class="missing"' in html
        r = client.get("/v/one/page/notes/Evil.md")
        assert "script-src" not in r.headers["content-security-policy"] or "'none'" in r.headers["content-security-policy"]
        assert "default-src 'none'" in r.headers["content-security-policy"]
        assert r.headers["x-frame-options"] == "DENY"


def test_the_web_page_needs_a_login_when_tokens_are_required_and_keeps_it_in_an_httponly_cookie(serve, store):
    token = store.add("ann", "one", "read")
    client, _ = serve()
    with client:
        r = client.get("/v/one/", headers={"accept": "text/html"}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/login"
        form = {"content-type": "application/x-www-form-urlencoded", "origin": BASE}  # as the browser sends it
        bad = client.post("/login", content=b"token=wm_nope", headers=form)
        assert bad.status_code == 401
        ok = client.post("/login", content=f"token={token}".encode(), follow_redirects=False, headers=form)
        cookie = ok.headers["set-cookie"]
        assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
        page = client.get("/v/one/", params={"q": "alpha"})
        assert page.status_code == 200 and "Alpha" in page.text
        # the cookie is for the web page only: the API wants the bearer header
        assert client.get("/v1/vaults/one/stats").status_code == 401


def test_a_port_in_use_is_said_before_any_vault_is_opened(make_vault, store):
    import socket
    root = make_vault(FILES)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=f"cannot listen on 127.0.0.1:{port}"):
            plan([str(root)], [], ServeConfig(port=port), store)
    assert not (root / ".wikimem").exists()


def test_token_commands_end_to_end(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from wikimem.cli import app
    monkeypatch.setenv("WIKIMEM_TOKENS", str(tmp_path / "cfg" / "tokens.json"))
    runner = CliRunner()
    added = runner.invoke(app, ["token", "add", "alice", "--vault", "notes", "--scope", "write"])
    assert added.exit_code == 0, added.output
    secret = added.stdout.strip().splitlines()[0]
    assert secret.startswith("wm_")
    listed = runner.invoke(app, ["token", "list", "--json"])
    assert json.loads(listed.stdout) == [{"name": "alice", "vault": "notes", "scope": "write",
                                          "created": json.loads(listed.stdout)[0]["created"]}]
    assert secret not in (tmp_path / "cfg" / "tokens.json").read_text()
    assert runner.invoke(app, ["token", "add", "alice", "--vault", "notes"]).exit_code == 2
    assert runner.invoke(app, ["token", "add", "bob", "--vault", "notes", "--scope", "admin"]).exit_code == 2
    assert runner.invoke(app, ["token", "revoke", "alice"]).exit_code == 0
    gone = runner.invoke(app, ["token", "revoke", "alice"])
    assert gone.exit_code == 2 and "no token named" in gone.output
    assert "no tokens" in runner.invoke(app, ["token", "list"]).stdout


def test_a_vault_held_by_serve_is_named_so_to_a_second_watcher(tmp_path):
    import subprocess
    import sys

    from wikimem.watch.control import holder_text
    import time
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "serve"])
    try:
        deadline = time.monotonic() + 10  # until the child has exec'd (before, its cmdline is pytest's)
        while b"serve" not in open(f"/proc/{proc.pid}/cmdline", "rb").read() and time.monotonic() < deadline:
            time.sleep(0.01)
        text = holder_text(str(proc.pid), tmp_path)
    finally:
        proc.kill()
        proc.wait()
    assert text.startswith(f"`wikimem serve` (pid {proc.pid}) holds {tmp_path}") and "watch --stop" not in text
    assert "wikimem watch --stop" in holder_text("999999999", tmp_path)


def test_a_broken_token_file_lets_no_one_in_and_says_why(serve, store):
    store.add("ann", "one", "read")
    client, _ = serve()
    store.path.write_text("{broken")
    with client:
        r = client.get("/v1/vaults/one/stats", headers={"Authorization": "Bearer wm_x"})
        assert r.status_code == 503 and "not valid" in r.json()["error"]


def test_compile_route_writes_what_sources_say(serve):
    client, server = serve()
    root = server.hosts["one"].root
    (root / "raw/articles").mkdir(parents=True)
    (root / "raw/articles/nuclei.md").write_text("# Nuclei\n\nAlpha particles are helium nuclei.\n", encoding="utf-8")
    with client:
        r = client.post("/v1/vaults/one/compile", json={"dry_run": False})
        assert r.status_code == 200, r.text
        assert [(p["path"], p["status"]) for p in r.json()["pages"]] == [("concepts/Alpha.md", "updated")]
    assert "- Alpha particles are helium nuclei. [[raw/articles/nuclei]]" in (root / "concepts/Alpha.md").read_text()
