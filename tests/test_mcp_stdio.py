"""``wikimem mcp``'s stdio server without the SDK (wikimem/mcp/stdio.py), checked against the SDK server.

- the shipped listing (listing.json) is the SDK server's, live;
- the same raw JSON-RPC lines, sent to the SDK server (``serve_sdk``, what ``wikimem mcp`` ran before)
  and to the new one, get the same lines back, byte for byte, in both protocol eras (pydantic's link
  to its documentation aside, which the new server leaves out of argument errors);
- what the SDK server answers nothing to (a line that is not JSON, JSON that is no JSON-RPC message)
  gets a JSON-RPC error; ping, unknown methods, version negotiation, wrong argument types, read-only;
- argument errors read as pydantic's, case by case, in process;
- nothing on the ``wikimem mcp`` path imports the SDK (checked in the server process, at its exit).
"""
from __future__ import annotations

import json
import math
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import write_vault

from wikimem.api import open_vault
from wikimem.mcp.checks import check_arguments, result_problem, shown

ROOT = Path(__file__).parent.parent
NOTES = {
    "SCHEMA.md": "# Schema\n\n## Domain\nGardening notes: tomatoes, soil and compost.\n",
    "concepts/Compost.md": "---\ntitle: Compost\ntags: [soil]\n---\n# Compost\n\nCompost feeds the soil. "
                           "Turn the heap weekly.\n\n## Ratio\n\nThree parts brown to one part green.\n",
    "concepts/Tomato.md": "---\ntitle: Tomato\n---\n# Tomato\n\nTomatoes want [[Compost]] and sun.\n",
    "index.md": "# Index\n\n- [[Compost]]\n- [[Tomato]]\n",
    "raw/articles/source.md": "# A source\n\nImmutable text about mulch.\n",
}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo":
        {"name": "t", "version": "0"}, "io.modelcontextprotocol/clientCapabilities": {}}


def msg(rid=None, method=None, params=None, **extra) -> str:
    out: dict = {"jsonrpc": "2.0"}
    if rid is not None:
        out["id"] = rid
    if method is not None:
        out["method"] = method
    if params is not None:
        out["params"] = params
    return json.dumps({**out, **extra})


def init(rid, version="2025-06-18") -> str:
    return msg(rid, "initialize", {"protocolVersion": version, "capabilities": {},
                                   "clientInfo": {"name": "t", "version": "0"}})


def modern(rid, method, **params) -> str:
    return msg(rid, method, {**params, "_meta": META})


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> Path:
    root = write_vault(tmp_path_factory.mktemp("stdio") / "vault", NOTES)
    vault = open_vault(root, embedder="fake")
    vault.index()
    vault.close()
    return root


def fresh_copy(indexed: Path, tmp_path: Path, name: str) -> Path:
    target = tmp_path / name / "vault"
    shutil.copytree(indexed, target)
    return target


def server_argv(kind: str, vault: Path, read_only: bool = False) -> list[str]:
    fn = {"sdk": "serve_sdk", "new": "serve"}[kind]
    code = ("import logging, sys; logging.basicConfig(level=logging.WARNING, stream=sys.stderr); "
            "logging.getLogger('wikimem.agent.session').setLevel(logging.INFO); "  # says when its warm-up is done
            f"from wikimem.mcp.server import {fn}; {fn}(sys.argv[1], read_only=sys.argv[2] == 'ro', watch=False)")
    return [sys.executable, "-c", code, str(vault), "ro" if read_only else "rw"]


WARM = (None, "warm")  # a step that waits until the server's background warm-up is done (its log says so):
# a search while it updates the cache may say the cache is being rebuilt, in either server


def exchange(argv: list[str], steps: list, timeout: float = 60,
             env: dict | None = None) -> tuple[list[list[str]], list[str], int, str]:
    """Send each step's line and wait for what it expects: the response with its id (``int``/``str``),
    the listen acknowledgement (``"ack"``), or nothing (``None``); ``WARM`` sends nothing and waits for
    the warm-up. -> (lines received per step, lines after end of input, exit code, stderr)."""
    env = {**os.environ, "WIKIMEM_EMBEDDER": "fake", "PYTHONPATH": str(ROOT), **(env or {})}
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=str(ROOT))
    lines: queue.Queue = queue.Queue()
    err: list[bytes] = []
    threading.Thread(target=lambda: [lines.put(raw.decode().rstrip("\n")) for raw in proc.stdout] + [lines.put(None)],
                     daemon=True).start()
    threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True).start()
    out: list[list[str]] = []
    try:
        for line, wait in steps:
            got: list[str] = []
            deadline = time.monotonic() + timeout
            if wait == "warm":
                while b"cache up to date" not in b"".join(err) and time.monotonic() < deadline:
                    time.sleep(0.05)
                out.append(got)
                continue
            proc.stdin.write(line.encode() + b"\n")
            proc.stdin.flush()
            while wait is not None:
                item = lines.get(timeout=max(0.1, deadline - time.monotonic()))
                assert item is not None, f"the server stopped: {b''.join(err).decode()[-2000:]}"
                got.append(item)
                message = json.loads(item)
                if (wait == "ack" and message.get("method") == "notifications/subscriptions/acknowledged") or (
                        wait != "ack" and message.get("id") == wait and "method" not in message):
                    break
            out.append(got)
        proc.stdin.close()
        rest = []
        while (item := lines.get(timeout=timeout)) is not None:
            rest.append(item)
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    return out, rest, proc.returncode, b"".join(err).decode("utf-8", "replace")


def same_as_sdk(indexed: Path, tmp_path: Path, steps: list, read_only: bool = False) -> list[list[dict]]:
    """Run ``steps`` against both servers (each on its own copy of the vault, and its own vault id: on
    a PostgreSQL store, its own tables); assert the same lines came back; -> the new server's answers,
    parsed."""
    def started(kind: str):
        copy, vault_id = fresh_copy(indexed, tmp_path, kind), f"stdio-{kind}"
        vault = open_vault(copy, embedder="fake", vault_id=vault_id)  # a database store starts empty:
        vault.index()  # both servers answer from a whole cache, as the copied local one is
        vault.close()
        return exchange(server_argv(kind, copy, read_only), steps, env={"WIKIMEM_VAULT_ID": vault_id})

    sdk, new = started("sdk"), started("new")
    assert new[2] == sdk[2] == 0, new[3][-3000:]
    assert new[1] == sdk[1]
    for (line, _), theirs, ours in zip(steps, sdk[0], new[0]):
        assert [_comparable(json.loads(x)) for x in ours] == [_comparable(json.loads(x)) for x in theirs], \
            f"sent {line}"
    return [[json.loads(x) for x in got] for got in new[0]]


def _comparable(message):
    """A message as the protocol defines it (issue 47 item 5): parsed, so numbers compare as numbers
    (1e-05 is 0.00001) and key order and spacing do not count; a tool's error text is wikimem's own
    wording (the SDK's is pydantic's), so an error result compares by being one, with a text."""
    if isinstance(message, dict):
        if message.get("isError") is True and isinstance(message.get("content"), list):
            texts = [c.get("text") for c in message["content"] if isinstance(c, dict)]
            assert texts and all(isinstance(t, str) and t.strip() for t in texts), message
            return {**{k: _comparable(v) for k, v in message.items() if k != "content"}, "content": "<error text>"}
        return {k: _comparable(v) for k, v in message.items()}
    if isinstance(message, list):
        return [_comparable(v) for v in message]
    return message


# -- the listing ----------------------------------------------------------------------------------------
def test_the_shipped_listing_is_the_sdk_servers():
    pytest.importorskip("mcp.server")
    from wikimem.mcp.listing import REGENERATE, generate, load
    live, shipped = generate(), load()
    for mode in live:
        for part in live[mode]:
            for key in live[mode][part]:
                assert shipped.get(mode, {}).get(part, {}).get(key) == live[mode][part][key], (
                    f"wikimem/mcp/listing.json is stale ({mode} {part} {key} differs from the SDK server's): "
                    f"run `{REGENERATE}`")
    assert shipped == live, f"wikimem/mcp/listing.json is stale: run `{REGENERATE}`"


# -- the same answers as the SDK server ---------------------------------------------------------------------
def test_a_handshake_connection_answers_as_the_sdk_server(indexed, tmp_path):
    pytest.importorskip("mcp.server")
    def call(rid, name, args):
        return msg(rid, "tools/call", {"name": name, "arguments": args}), rid

    steps = [
        (msg(1, "tools/list"), 1),  # before the handshake
        WARM,
        (msg("p", "ping"), "p"),
        (call(2, "search", {"quer": "x"})[0], 2),  # unknown arguments are refused even before it
        (init(3, "2025-03-26"), 3),
        (msg(method="notifications/initialized"), None),
        (msg(4, "ping"), 4),
        (msg(5, "tools/list"), 5), (msg(6, "resources/list"), 6), (msg(7, "resources/templates/list"), 7),
        (msg(8, "prompts/list", {"cursor": "x"}), 8),
        call(9, "search", {"query": "compost heap", "top_k": 3}),
        call(10, "search", {"query": "compost", "top_k": "2", "full_text": "yes", "tags": '["soil"]'}),
        call(11, "search", {"query": 5}), call(12, "search", {"top_k": 3.5, "mode": "fuzzy"}),
        call(13, "search", {"query": "x" * 5000}), call(14, "list_pages", {"limit": 0, "folder": None}),
        call(15, "read_page", {"path": "concepts/Compost.md", "heading": "Ratio"}),
        call(16, "read_page", {"path": "../outside.md"}), call(17, "nope", {}),
        call(18, "write_page", {"path": "concepts/New.md", "content": "# New\n\nFresh.\n"}),
        call(19, "write_page", {"path": "raw/articles/source.md", "content": "x", "force": True}),
        call(20, "neighbors", {"path": "concepts/Compost.md", "types": ["links_to", "sideways"]}),
        (msg(21, "tools/call", {"name": "search", "arguments": []}), 21),
        (msg(22, "tools/call", {"arguments": {}}), 22),
        (msg(23, "resources/read", {"uri": "wikimem://page/concepts/Compost.md?lines=1-3&x=1#top"}), 23),
        (msg(24, "resources/read", {"uri": "wikimem://schema"}), 24),
        (msg(25, "resources/read", {"uri": "wikimem://page/../etc/passwd"}), 25),
        (msg(26, "resources/read", {"uri": "wikimem://page/concepts/Gone.md"}), 26),
        (msg(27, "resources/read", {"uri": "wikimem://page/concepts/Compost.md?lines=oops"}), 27),
        (msg(28, "prompts/get", {"name": "ingest_source", "arguments": {"path": "raw/articles/source.md"}}), 28),
        (msg(29, "prompts/get", {"name": "nope"}), 29),
        (msg(30, "prompts/get", {"name": "lint_and_fix", "arguments": {"oops": "x"}}), 30),
        (msg(31, "prompts/get", {"name": "lint_and_fix", "arguments": {"paths": 5}}), 31),
        (msg(32, "nope/nothing"), 32), (msg(33, "server/discover", {}), 33),
        (msg(34, "logging/setLevel", {"level": "info"}), 34), (msg(35, "completion/complete"), 35),
        (msg(36, "tools/call", {"name": "search", "arguments": {"query": "x"}, "_meta": META}), 36),
        (msg(37, "tools/call", {"name": "search", "arguments": {"query": "x"}, "requestState": "forged"}), 37),
        (msg(method="notifications/cancelled", params={"requestId": 999}), None),
        (msg(38, "tools/call", {"name": "list_pages", "arguments": {"limit": 1}, "_meta": {"progressToken": 7}}), 38),
        (init(39, "1999-01-01"), 39), (init(40, "2024-11-05"), 40),
        (msg(41, "initialize", {"protocolVersion": "2025-06-18"}), 41),
    ]
    answers = same_as_sdk(indexed, tmp_path, steps)
    assert answers[0][0]["error"]["code"] == -32602 and answers[2][0]["result"] == {}
    assert answers[4][0]["result"]["protocolVersion"] == "2025-03-26"
    assert answers[-3][0]["result"]["protocolVersion"] == "2025-11-25"  # not spoken: the latest
    assert answers[-2][0]["result"]["protocolVersion"] == "2024-11-05"


def test_a_2026_connection_answers_as_the_sdk_server(indexed, tmp_path):
    """The SDK's own client opens with server/discover and the per-request envelope (2026-07-28)."""
    pytest.importorskip("mcp.server")
    steps = [
        (modern(1, "server/discover"), 1), (modern(2, "tools/list"), 2), WARM, (modern(3, "prompts/list"), 3),
        (modern(4, "resources/list"), 4), (modern(5, "resources/templates/list"), 5),
        (modern(6, "tools/call", name="search", arguments={"query": "compost heap", "top_k": 2}), 6),
        (modern(7, "tools/call", name="search", arguments={"quer": "x"}), 7),
        (modern(8, "tools/call", name="search", arguments={"query": ["x"]}), 8),
        (modern(9, "tools/call", name="nope"), 9),
        (modern(10, "resources/read", uri="wikimem://index"), 10),
        (modern(11, "resources/read", uri="wikimem://nothing"), 11),
        (modern(12, "prompts/get", name="answer_and_file", arguments={"question": "why?"}), 12),
        (modern(13, "prompts/get", name="nope"), 13),
        (modern(14, "ping"), 14), (modern(15, "nope"), 15), (init(16), 16),
        (msg(17, "tools/list"), 17),
        (msg(18, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}), 18),
        (msg(19, "tools/list", {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": "2030-01-01"}}), 19),
        (msg(20, "tools/list", {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": 5}}), 20),
        (msg(21, "tools/list", {"_meta": {**META, "io.modelcontextprotocol/clientCapabilities": 5}}), 21),
        (modern(22, "tools/list", cursor=5), 22),
        (modern(23, "subscriptions/listen", notifications={"toolsListChanged": True, "promptsListChanged": "no",
                                                           "resourceSubscriptions": ["wikimem://index"]}), "ack"),
        (msg(method="notifications/cancelled", params={"requestId": "23"}), None),  # "23" and 23 are one id
        (modern(24, "tools/call", name="read_page", arguments={"path": "concepts/Tomato.md"}), 24),
        (modern(25, "completion/complete", ref={"type": "ref/prompt", "name": "x"},
                argument={"name": "a", "value": "b"}), 25),
        (modern(26, "resources/read", uri="wikimem://index", requestState="forged"), 26),
    ]
    answers = same_as_sdk(indexed, tmp_path, steps)
    assert answers[0][0]["result"]["supportedVersions"] == ["2026-07-28"]
    assert answers[14][0]["error"]["code"] == -32601  # no ping at 2026-07-28
    assert answers[16][0]["error"]["code"] == -32022  # no handshake on a 2026 connection
    assert answers[24] == [] and [m.get("id") for m in answers[25]] == [24]  # the cancelled listen stream never answers


def test_read_only_lists_and_refuses_as_the_sdk_server(indexed, tmp_path):
    pytest.importorskip("mcp.server")
    steps = [(init(1), 1), (msg(method="notifications/initialized"), None), (msg(2, "tools/list"), 2), WARM,
             (msg(3, "tools/call", {"name": "write_page", "arguments": {"path": "a.md", "content": "x"}}), 3),
             (msg(4, "tools/call", {"name": "query", "arguments": {"question": "What feeds the soil?",
                                                                   "write": True}}), 4),
             (msg(5, "tools/call", {"name": "query", "arguments": {"question": 5}}), 5),
             (modern(6, "tools/list"), 6)]
    answers = same_as_sdk(indexed, tmp_path, steps, read_only=True)
    names = {t["name"] for t in answers[2][0]["result"]["tools"]}
    assert "search" in names and not names & {"write_page", "edit_page", "remember", "supersede"}


# -- what the new server adds, and the basics, on its own -----------------------------------------------------
def test_errors_ping_and_version_negotiation(indexed, tmp_path):
    vault = fresh_copy(indexed, tmp_path, "basics")
    steps = [("this is not json", None), ("[1, 2]", None), (json.dumps({"jsonrpc": "2.0", "id": 7}), 7),
             (json.dumps({"id": 8, "method": "ping"}), 8), (msg(9, "ping"), 9),
             (init(10, "2025-03-26"), 10), (init(11, "2099-01-01"), 11),
             (msg(method="notifications/initialized"), None), (msg(12, "no/such/method"), 12),
             (msg(13, "tools/call", {"name": "search", "arguments": {"query": "compost", "top_k": "many"}}), 13),
             (msg(14, "tools/call", {"name": "list_pages", "arguments": {"limit": True, "offset": "1"}}), 14),
             (msg(15, "tools/call", {"name": "read_page"}), 15)]
    got, rest, code, _ = exchange(server_argv("new", vault), steps)
    parsed = [[json.loads(x) for x in step] for step in got]
    assert code == 0 and rest == []
    assert parsed[2][:2] == [{"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
                             {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}]
    assert parsed[2][2] == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": "Invalid Request"}}
    assert parsed[3] == [{"jsonrpc": "2.0", "id": 8, "error": {"code": -32600, "message": "Invalid Request"}}]
    assert parsed[4] == [{"jsonrpc": "2.0", "id": 9, "result": {}}]  # ping needs no handshake
    assert parsed[5][0]["result"]["protocolVersion"] == "2025-03-26"  # a version it speaks: echoed
    assert parsed[6][0]["result"]["protocolVersion"] == "2025-11-25"  # one it does not: its latest
    assert parsed[6][0]["result"]["serverInfo"]["name"] == "wikimem"
    assert parsed[8] == [{"jsonrpc": "2.0", "id": 12,
                          "error": {"code": -32601, "message": "Method not found", "data": "no/such/method"}}]
    wrong = parsed[9][0]["result"]
    assert wrong["isError"] and wrong["content"][0]["text"] == (
        "Error executing tool search: invalid arguments: top_k must be an integer (got 'many')")
    coerced = parsed[10][0]["result"]  # lax, as pydantic: true is 1, "1" is 1
    assert not coerced["isError"] and coerced["structuredContent"]["limit"] == 1
    assert coerced["structuredContent"]["offset"] == 1
    assert "invalid arguments: path is required" in parsed[11][0]["result"]["content"][0]["text"]


def test_a_call_still_running_at_end_of_input_is_answered(indexed, tmp_path):
    vault = fresh_copy(indexed, tmp_path, "eof")
    steps = [(init(1), 1), (msg(method="notifications/initialized"), None),
             (msg(2, "tools/call", {"name": "search", "arguments": {"query": "compost"}}), None)]
    _, rest, code, _ = exchange(server_argv("new", vault), steps)
    assert code == 0 and [json.loads(x)["id"] for x in rest] == [2]
    assert json.loads(rest[0])["result"]["structuredContent"]["hits"]


def test_the_sdk_client_in_handshake_mode(indexed, tmp_path):
    """The SDK's client speaks 2026-07-28 by default (test_mcp.py); with mode="legacy" it does the
    initialize handshake, as Claude Code and most clients do."""
    pytest.importorskip("mcp.client")
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    vault = fresh_copy(indexed, tmp_path, "legacy-client")
    params = StdioServerParameters(command=sys.executable, args=["-m", "wikimem.cli", "mcp", str(vault)],
                                   env={"WIKIMEM_EMBEDDER": "fake", "PYTHONPATH": str(ROOT)}, cwd=str(ROOT))

    async def session():
        async with Client(params, read_timeout_seconds=60, mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            tools = {t.name for t in (await client.list_tools()).tools}
            hit = await client.call_tool("search", {"query": "compost heap", "top_k": 2})
            bad = await client.call_tool("search", {"query": "compost", "top_k": "lots"})
            return tools, hit, bad

    tools, hit, bad = anyio.run(session)
    assert {"search", "read_page", "write_page"} <= tools
    assert not hit.is_error and hit.structured_content["hits"][0]["path"] == "concepts/Compost.md"
    assert bad.is_error and "top_k" in bad.content[0].text


PROBE = """
import atexit, sys
def report():
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("mcp", "mcp_types"))
    sys.stderr.write("MCP-MODULES " + repr(loaded) + "\\n")
    sys.stderr.flush()
atexit.register(report)
sys.argv = ["wikimem", "mcp", *sys.argv[1:]]
from wikimem.cli.app import main
main()
"""


def test_wikimem_mcp_never_imports_the_sdk(indexed, tmp_path):
    """The CLI's ``wikimem mcp`` in a child process that reports, as it exits, which SDK modules it loaded
    after a handshake, the tool list and a search."""
    vault = fresh_copy(indexed, tmp_path, "probe")
    steps = [(init(1), 1), (msg(method="notifications/initialized"), None), (msg(2, "tools/list"), 2),
             (msg(3, "tools/call", {"name": "search", "arguments": {"query": "compost"}}), 3),
             (msg(4, "resources/read", {"uri": "wikimem://index"}), 4),
             (msg(5, "prompts/get", {"name": "ingest_source"}), 5)]
    got, _, code, err = exchange([sys.executable, "-c", PROBE, str(vault)], steps)
    assert code == 0, err[-2000:]
    assert not json.loads(got[3][0])["result"]["isError"]
    assert "MCP-MODULES []" in err, err[-2000:]


# -- argument checks as pydantic's, in process --------------------------------------------------------------
CASES = {
    "search": [{"query": "x"}, {}, {"query": 5}, {"query": None}, {"query": "x", "top_k": "3"},
               {"query": "x", "top_k": " 7 "}, {"query": "x", "top_k": 3.0}, {"query": "x", "top_k": 3.5},
               {"query": "x", "top_k": "3.5"}, {"query": "x", "top_k": 0}, {"query": "x", "top_k": "0"},
               {"query": "x", "top_k": 51}, {"query": "x", "top_k": True}, {"query": "x", "top_k": None},
               {"query": "x", "top_k": []}, {"query": "x", "top_k": float("inf")}, {"query": "x", "mode": "fuzzy"},
               {"query": "x", "mode": '"lexical"'}, {"query": "x", "mode": 1}, {"query": "x", "full_text": "yes"},
               {"query": "x", "full_text": "maybe"}, {"query": "x", "full_text": 2}, {"query": "x", "full_text": 0.5},
               {"query": "x", "tags": '["a", "b"]'}, {"query": "x", "tags": "a"}, {"query": "x", "tags": ["a", 1]},
               {"query": "x", "tags": "null"}, {"query": "x", "folder": None}, {"query": "x", "folder": ["a"]},
               {"query": "x", "folder": '["a"]'}, {"query": "x" * 4001}, {"query": "é" * 4001},
               {"query": "中" * 30, "top_k": "中" * 30}, {"query": 1, "top_k": "x", "mode": "y", "tags": [1, 2]}],
    "list_pages": [{"limit": 500}, {"limit": 501}, {"offset": -1}, {"offset": "1_000"}],
    "communities": [{"resolution": 0}, {"resolution": "0.5"}, {"resolution": 10.5}, {"resolution": "nan"},
                    {"members": 1.0}],
    "neighbors": [{"path": "a", "types": ["links_to", "sideways"]}, {"path": "a", "depth": 4},
                  {"path": "a", "types": '["tagged"]'}],
    "write_page": [{"path": "a.md", "content": 12}, {"path": "a.md"}, {"path": "a.md", "content": "x",
                                                                      "reason": "r" * 501}],
}


def _same_refusal(problem, exc) -> bool:
    """Our refusal names exactly the arguments pydantic refused (the wording is ours, issue 47 item 5)."""
    wrong = {".".join(str(part) for part in e["loc"]) for e in exc.errors()}
    return problem is not None and problem.startswith("invalid arguments: ") and all(
        f"{w} " in problem for w in wrong) and problem.count(";") == len(wrong) - 1


def test_argument_errors_refuse_what_pydantic_refuses():
    pytest.importorskip("mcp.server")
    from pydantic import ValidationError

    from wikimem.mcp.listing import load
    from wikimem.mcp.server import FirstBuildGate, make_tool
    from wikimem.mcp.tools import Tools

    class Nothing:  # the argument models need no vault
        pass

    schemas = load()["read-write"]["arguments"]
    tools = Tools(Nothing())
    for name, cases in CASES.items():
        meta = make_tool(tools, name, name, name == "write_page", FirstBuildGate(Nothing())).fn_metadata
        for args in cases:
            ours, problem = check_arguments(schemas[name], args)
            try:
                theirs = meta.validate_arguments(args)
            except ValidationError as exc:
                assert _same_refusal(problem, exc), (name, args, problem, str(exc))
            else:
                assert problem is None, (name, args, problem)
                assert {k: theirs[k] for k in ours} == ours, (name, args)
                assert all(theirs[k] == inspect_default(tools, name, k) for k in theirs if k not in ours)


def inspect_default(tools, method: str, name: str):
    import inspect
    return inspect.signature(getattr(tools, method)).parameters[name].default


def test_a_shown_value_is_cut_in_the_middle():
    assert shown("x" * 58) == repr("x" * 58)
    assert shown("x" * 100) == "'" + "x" * 29 + "..." + "x" * 26 + "'" and len(shown("x" * 100)) == 60
    assert shown("中" * 100).startswith("'中") and "..." in shown("中" * 100)


def test_results_are_checked_as_the_sdk_checked_them():
    pydantic = pytest.importorskip("pydantic")
    from wikimem.mcp.listing import load
    from wikimem.mcp.schemas import PageResult

    schema = next(t for t in load()["read-write"]["legacy"]["tools/list"]["tools"] if t["name"] == "read_page")
    page = {"path": "a.md", "title": "A", "type": "note", "status": "active", "wikilink": "[[a]]",
            "sha256": "0" * 64, "content": "x", "heading": None, "headings": [{"level": 1, "text": "A"}],
            "tags": [], "frontmatter_error": None, "backlinks_total": 0, "versions": None}
    adapter = pydantic.TypeAdapter(PageResult)
    for value in (page, {**page, "extra": 1}, {k: v for k, v in page.items() if k != "sha256"},
                  {**page, "backlinks_total": "one"}, {**page, "backlinks_total": "2"},
                  {**page, "headings": [{"level": "h1", "text": "A"}]}, {**page, "versions": {"current": "a.md"}},
                  {**page, "versions": {"supersedes": [], "superseded_by": [], "current": "a.md"}},
                  {**page, "tags": "x"}, {**page, "heading": ["A", 1]}, {**page, "backlinks": [{"path": "b.md"}]}):
        try:
            adapter.validate_python(value)
            valid = True
        except pydantic.ValidationError:
            valid = False
        assert (result_problem(schema["outputSchema"], value) is None) == valid, value


VALUES = [None, True, False, 0, 1, -1, 2, 51, 1.0, 1.5, -0.5, float("nan"), "", "x", "1", "0", "true", "no", "yes ",
          "1.0", "1.50", " 2 ", "1_000", "nan", "-inf", [], ["a"], [1], ["links_to", "tagged"], {}, {"a": 1}, '["a"]',
          '{"a": 1}', "null", "true", "7", "hybrid", "episodic", "append", "x" * 4001, "中" * 30]


def test_every_argument_of_every_tool_is_checked_as_pydantic_checks_it():
    pytest.importorskip("mcp.server")
    from pydantic import ValidationError

    from wikimem.mcp.listing import load
    from wikimem.mcp.server import SPECS, FirstBuildGate, make_tool
    from wikimem.mcp.tools import Tools

    class Nothing:
        pass

    tools, gate, checked = Tools(Nothing()), FirstBuildGate(Nothing()), 0
    for mode, whens in (("read-write", ("read", "write")), ("read-only", ("read", "read-only"))):
        schemas = load()[mode]["arguments"]
        for name, method, _api, when in SPECS:
            if when not in whens or name not in schemas:
                continue
            meta = make_tool(tools, name, method, when == "write", gate).fn_metadata
            required = {k: "x" for k in schemas[name].get("required", ())}
            for field in schemas[name]["properties"]:
                for value in VALUES:
                    args = {**required, field: value}
                    ours, problem = check_arguments(schemas[name], args)
                    try:
                        theirs = meta.validate_arguments(args)
                    except ValidationError as exc:
                        assert _same_refusal(problem, exc), (name, args, problem, str(exc))
                    else:
                        assert problem is None, (name, args, problem)
                        for k, v in ours.items():
                            assert v == theirs[k] or (math.isnan(v) and math.isnan(theirs[k])), (name, args)
                            assert type(v) is type(theirs[k]), (name, args)
                    checked += 1
    assert checked > 2000
