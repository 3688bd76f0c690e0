"""wikimem serve as a real server on loopback: MCP over streamable HTTP behind tokens, a client that
disconnects mid-request, SIGTERM mid-write (issue 37)."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from serve_helpers import NONE_EMBEDDER, free_port, live_server, wait_healthy
from wikimem.serve.tokens import TokenStore

FILES = {"SCHEMA.md": "# Schema\n", ".wikimem.toml": NONE_EMBEDDER,
         "concepts/Alpha.md": "# Alpha\n\nalpha particles and [[Beta]]\n", "concepts/Beta.md": "# Beta\n\nbeta decay\n"}


async def _mcp(url: str, token: str | None, calls):
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                return await calls(session)


def test_mcp_over_http_has_the_stdio_tools_behind_the_same_tokens(make_vault, tmp_path):
    store = TokenStore(tmp_path / "tokens.json")
    reader = store.add("rea", "v", "read")
    writer = store.add("wri", "v", "write")
    root = make_vault(FILES, name="v")
    with live_server([("v", root)], store) as (url, _server):
        async def names(session):
            return sorted(t.name for t in (await session.list_tools()).tools)

        read_tools = asyncio.run(_mcp(url + "/mcp/v", reader, names))
        write_tools = asyncio.run(_mcp(url + "/mcp", writer, names))  # /mcp: the only vault
        assert "search" in read_tools and "write_page" not in read_tools and "remember" not in read_tools
        assert {"search", "write_page", "remember", "edit_page"} <= set(write_tools)

        async def remember(session):
            result = await session.call_tool("remember", {"fact": "The release train leaves on Thursdays."})
            return result.structured_content

        done = asyncio.run(_mcp(url + "/mcp/v", writer, remember))
        assert done["action"] == "written"
        assert f"{done['path']} · by wri" in (root / "log.md").read_text()
        refused = httpx.post(url + "/mcp/v", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert refused.status_code == 401
        other = store.add("oth", "elsewhere", "write")
        hidden = httpx.post(url + "/mcp/v", headers={"Authorization": f"Bearer {other}"},
                            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert hidden.status_code == 404


def test_a_client_that_disconnects_mid_request_costs_nothing(make_vault, tmp_path):
    root = make_vault(FILES, name="v")
    with live_server([("v", root)], TokenStore(tmp_path / "t.json")) as (url, _server):
        port = int(url.rsplit(":", 1)[1])
        for _ in range(20):  # half a request line, half a body, then gone
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(b"POST /v1/vaults/v/write HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 500\r\n\r\n{\"pa")
        for _ in range(5):
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(f"GET /v1/vaults/v/search?q=alpha HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        r = httpx.get(url + "/v1/vaults/v/search", params={"q": "alpha"})
        assert r.status_code == 200 and r.json()["hits"][0]["path"] == "concepts/Alpha.md"
        assert not list(root.rglob("*.tmp"))


@pytest.mark.slow
def test_sigterm_mid_write_leaves_no_half_written_file_and_the_next_start_serves_the_same_state(make_vault, tmp_path):
    root = make_vault(FILES, name="v")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_") or k in ("WIKIMEM_STORE", "WIKIMEM_DATABASE_URL")}
    env["WIKIMEM_TOKENS"] = str(tmp_path / "tokens.json")
    cmd = [str(Path(sys.executable).parent / "wikimem"), "serve", str(root), "--port", str(port)]
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    acknowledged: dict[str, str] = {}
    try:
        wait_healthy(url)
        stop = threading.Event()

        def writer(n: int) -> None:
            with httpx.Client(base_url=url, timeout=10) as client:
                i = 0
                while not stop.is_set():
                    path = f"notes/w{n}-{i}.md"
                    body = f"# W{n} {i}\n\n" + ("words of a note " * 2000) + "\n"
                    try:
                        r = client.post("/v1/vaults/v/write", json={"path": path, "content": body})
                    except httpx.HTTPError:
                        return
                    if r.status_code == 200:
                        acknowledged[path] = body
                    i += 1
        threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        time.sleep(1.5)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        stop.set()
        for t in threads:
            t.join(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode in (0, -signal.SIGTERM), proc.stderr.read().decode()[-2000:]
    assert acknowledged, "no write went through before the stop"
    assert not [p for p in root.rglob("*") if p.name.startswith(".wikimem-") and p.name.endswith(".tmp")]
    for path, body in acknowledged.items():
        assert (root / path).read_text() == body
    for note in (root / "notes").glob("*.md"):  # written or not at all: never a part of one
        text = note.read_text()
        assert text.startswith("# W") and text.endswith("words of a note \n")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_healthy(url)
        listed = httpx.get(url + "/v1/vaults/v/pages", params={"folder": "notes", "limit": 500}).json()
        assert {p["path"] for p in listed["pages"]} >= set(acknowledged)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_search_with_server_and_token_reaches_a_remote_serve(make_vault, tmp_path):
    store = TokenStore(tmp_path / "tokens.json")
    token = store.add("cli", "v", "read")
    root = make_vault(FILES, name="v")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_") or k in ("WIKIMEM_STORE", "WIKIMEM_DATABASE_URL")}
    wikimem = str(Path(sys.executable).parent / "wikimem")
    with live_server([("v", root)], store) as (url, _server):
        done = subprocess.run([wikimem, "search", "alpha", "--server", url, "--token", token], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[0].strip().startswith("1. Alpha") and "concepts/Alpha.md" in done.stdout
        as_json = subprocess.run([wikimem, "search", "beta", "--json", "--server", url + "/v/v/"], cwd=tmp_path,
                                 env={**env, "WIKIMEM_TOKEN": token}, capture_output=True, text=True, timeout=60)
        assert as_json.returncode == 0 and json.loads(as_json.stdout)["hits"][0]["path"] == "concepts/Beta.md"
        refused = subprocess.run([wikimem, "search", "alpha", "--server", url, "--token", "wm_wrong"], cwd=tmp_path,
                                 env=env, capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2 and "valid token" in refused.stderr and "Traceback" not in refused.stderr
        nothing = subprocess.run([wikimem, "search", "zzzz", "--mode", "lexical", "--server", url, "--token", token],
                                 cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert nothing.returncode == 1 and "no results" in nothing.stdout


def test_a_local_wikimem_mcp_is_answered_by_the_warm_serve(make_vault, tmp_path):
    """`wikimem mcp VAULT` while serve holds the vault relays stdio to serve's MCP over HTTP: the
    same tools at once, writes through the one warm process, --read-only honoured, with tokens
    required on the serve and none given (the socket's owner is trusted)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    store = TokenStore(tmp_path / "tokens.json")
    store.add("someone", "v", "read")  # tokens are required on this serve
    root = make_vault(FILES, name="v")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_") or k in ("WIKIMEM_STORE", "WIKIMEM_DATABASE_URL")}
    wikimem = str(Path(sys.executable).parent / "wikimem")

    async def session_of(args, calls):
        log = open(tmp_path / "stderr.txt", "w")
        params = StdioServerParameters(command=wikimem, args=args, env=env, cwd=str(tmp_path))
        async with stdio_client(params, errlog=log) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await calls(session)

    async def use(session):
        names = sorted(t.name for t in (await session.list_tools()).tools)
        found = await session.call_tool("search", {"query": "alpha particles"})
        kept = await session.call_tool("remember", {"fact": "The bridge test ran on a Thursday."}) \
            if "remember" in names else None
        return names, found.structured_content, kept

    with live_server([("v", root)], store, forward=True) as (url, _server):
        names, found, kept = asyncio.run(session_of(["mcp", str(root)], use))
        said = (tmp_path / "stderr.txt").read_text()
        assert "answered by the warm `wikimem serve`" in said and url in said
        assert {"search", "write_page", "remember"} <= set(names)
        assert found["hits"][0]["path"] == "concepts/Alpha.md"
        assert kept.structured_content["action"] == "written"
        log = (root / "log.md").read_text()
        assert kept.structured_content["path"] in log and "· by" not in log.splitlines()[-1]
        names, _found, kept = asyncio.run(session_of(["mcp", str(root), "--read-only"], use))
        assert "write_page" not in names and "remember" not in names and kept is None


def test_sigterm_cleans_up_like_ctrl_c_the_socket_and_the_pid_file_go(make_vault, tmp_path):
    """`kill PID` (what systemd and docker send) stops serve as Ctrl-C does: .wikimem/serve.sock and
    watch.pid removed, so the next `doctor` and the next serve find nothing left behind."""
    root = make_vault(FILES, name="v")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_") or k in ("WIKIMEM_STORE", "WIKIMEM_DATABASE_URL")}
    env["WIKIMEM_TOKENS"] = str(tmp_path / "tokens.json")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "wikimem"), "serve", str(root), "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sock, pidfile = root / ".wikimem" / "serve.sock", root / ".wikimem" / "watch.pid"
    try:
        wait_healthy(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 30
        while not (sock.exists() and pidfile.exists()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sock.exists() and pidfile.exists()
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode in (0, -signal.SIGTERM), proc.stderr.read().decode()[-2000:]
    assert not sock.exists() and not pidfile.exists()
