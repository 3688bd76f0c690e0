"""`GET /v1/vaults/NAME/search?q=tar&limit=100000` answered "top_k: Input should be less than or
equal to 50", and a missing `q` "query: required": the names of the MCP tool's arguments, which a
caller of the HTTP API never sent (README documents `q=` and `limit=`). A GET's errors name the
parameters as the query string takes them; a POST body (the MCP tool's arguments) keeps its names."""
from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from serve_helpers import free_port
from wikimem.serve.app import Server, ServeConfig, plan, start_hosts
from wikimem.serve.tokens import TokenStore

PORT = free_port()
BASE = f"http://127.0.0.1:{PORT}"


@pytest.fixture
def client(make_vault, tmp_path):
    root = make_vault({"SCHEMA.md": "# Schema\n", "a.md": "# Alpha\n\nalpha particles\n"}, name="one")
    pairs, store, cfg = plan([], [f"one={root}"], ServeConfig(port=PORT, rate=0.0), TokenStore(tmp_path / "t.json"))
    hosts = start_hosts(pairs, watch=False, embedder="none")
    for host in hosts.values():
        assert host.session.ready.wait(30)
        host.vault.index(wait=10)
    with TestClient(Server(hosts, store, cfg).app(), base_url=BASE) as c:
        yield c
    for host in hosts.values():
        host.stop()


@pytest.mark.parametrize("params, said, not_said", [
    ({"q": "alpha", "limit": "100000"}, "limit:", "top_k"),
    ({"q": "alpha", "limit": "0"}, "limit:", "top_k"),
    ({"q": "alpha", "limit": "many"}, "limit:", "top_k"),
    ({"limit": "3"}, "q: required", "query"),
])
def test_a_get_names_the_query_parameters_it_was_given(client, params, said, not_said):
    r = client.get("/v1/vaults/one/search", params=params)
    assert r.status_code == 400
    assert said in r.json()["error"] and not_said not in r.json()["error"], r.json()


def test_a_get_query_names_q_and_a_post_keeps_the_tools_names(client):
    r = client.get("/v1/vaults/one/query")
    assert r.status_code == 400 and "q: required" in r.json()["error"], r.json()
    r = client.post("/v1/vaults/one/query", json={"question": "alpha?", "top_k": "x"})
    assert r.status_code == 400
