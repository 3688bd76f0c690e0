"""A real ``wikimem serve`` on loopback (uvicorn in a thread, or a child process) for the tests that
need one: MCP over HTTP, the browser, SIGTERM."""
from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

NONE_EMBEDDER = 'embedder = "none"\n'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not come up")


def serve_child(root: Path, port: int, env: dict[str, str], log: Path) -> subprocess.Popen:
    """``wikimem serve ROOT --port PORT`` as a child process with ``env``, its output in ``log``."""
    with open(log, "wb") as out:
        return subprocess.Popen([str(Path(sys.executable).parent / "wikimem"), "serve", str(root), "--port", str(port)],
                                env=env, stdout=out, stderr=subprocess.STDOUT)


def up_or_log(url: str, log: Path, proc: subprocess.Popen | None = None, timeout: float = 120.0) -> None:
    """Wait for ``url`` to answer /health; if it does not, fail the test with the end of its ``log``
    (``proc``, when given, killed first)."""
    try:
        wait_healthy(url, timeout=timeout)
    except TimeoutError:
        if proc is not None:
            proc.kill()
        raise AssertionError(log.read_text()[-3000:]) from None


def stop_servers(procs: list[subprocess.Popen]) -> None:
    """SIGTERM every ``wikimem serve`` child a test started (those still running), then wait for each,
    killing one that has not stopped after 30 s."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def live_server(pairs: list[tuple[str, Path]], store, forward: bool = False, **config):
    """Serve ``pairs`` on a free loopback port in this process -> (base URL, Server); ``forward``:
    answer forwarded commands and local `wikimem mcp` bridges too, as `wikimem serve` does."""
    import uvicorn

    from wikimem.serve.app import Server, ServeConfig, plan, start_hosts
    port = free_port()
    cfg = ServeConfig(port=port, rate=0.0, **config)
    pairs, store, cfg = plan([], [f"{n}={p}" for n, p in pairs], cfg, store)
    hosts = start_hosts(pairs, watch=True)
    for host in hosts.values():
        host.session.ready.wait(60)
    server = Server(hosts, store, cfg)
    uv = uvicorn.Server(uvicorn.Config(server.app(), host="127.0.0.1", port=port, log_level="warning",
                                       lifespan="on", access_log=False))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    forwards = []
    if forward:
        from wikimem.cli.forward import ForwardServer
        forwards = [ForwardServer(h.vault, mcp=server.mcp_endpoint(n)).start() for n, h in hosts.items()]
    try:
        wait_healthy(url)
        yield url, server
    finally:
        for f in forwards:
            f.stop()
        uv.should_exit = True
        thread.join(timeout=15)
        for host in hosts.values():
            host.stop()


def found_paths(url: str, name: str, word: str) -> list[str]:
    """The pages a running server's lexical search finds for ``word`` ([] while it cannot answer)."""
    try:
        r = httpx.get(f"{url}/v1/vaults/{name}/search", params={"q": word, "limit": 5, "mode": "lexical"}, timeout=30)
        return [h["path"] for h in r.json().get("hits", [])] if r.status_code == 200 else []
    except httpx.HTTPError:
        return []


def vault_health(url: str) -> dict:
    """The first vault's part of a running server's /health ({} while it cannot answer)."""
    try:
        return httpx.get(url + "/health", timeout=30).json()["per_vault"][0]
    except (httpx.HTTPError, ValueError, KeyError, IndexError):
        return {}
