"""The MCP server driven by the SDK's own client over stdio (a spawned ``wikimem mcp VAULT``)."""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from anyio.from_thread import start_blocking_portal
from conftest import write_vault

from wikimem.api import Vault

mcp_client = pytest.importorskip("mcp.client")
jsonschema = pytest.importorskip("jsonschema")
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

NOTES = {
    "SCHEMA.md": "# Schema\n\n## Domain\nGardening notes: tomatoes, soil and compost.\n",
    "concepts/Compost.md": "---\ntitle: Compost\ntags: [soil]\n---\n# Compost\n\nCompost feeds the soil. "
                           "Turn the heap weekly.\n\n## Ratio\n\nThree parts brown to one part green.\n",
    "concepts/Tomato.md": "---\ntitle: Tomato\n---\n# Tomato\n\nTomatoes want [[Compost]] and sun.\n",
    "concepts/Old Tomato.md": "---\ntitle: Old Tomato\n---\n# Old Tomato\n\nEarly tomato notes.\n",
    "raw/articles/source.md": "# A source\n\nImmutable text about mulch.\n",
}


class SyncClient:
    """The async SDK client driven from sync tests through a blocking portal."""

    def __init__(self, portal, client):
        self.portal = portal
        self.client = client

    def tools(self) -> list:
        return self.portal.call(self.client.list_tools).tools

    def call(self, name: str, args: dict | None = None):
        return self.portal.call(self.client.call_tool, name, args or {})

    def ok(self, name: str, args: dict | None = None) -> dict:
        result = self.call(name, args)
        assert not result.is_error, result.content[0].text
        schema = self.output_schema(name)
        if schema is not None:  # the SDK client checks it too; say so here, whatever a client version does
            jsonschema.validate(result.structured_content, schema)
        return result.structured_content

    def output_schema(self, name: str) -> dict | None:
        if not hasattr(self, "_schemas"):
            self._schemas = {t.name: t.output_schema for t in self.tools()}
        return self._schemas.get(name)

    def error(self, name: str, args: dict | None = None) -> str:
        result = self.call(name, args)
        assert result.is_error, f"{name} should have failed: {result.structured_content}"
        text = result.content[0].text
        assert "Traceback" not in text
        return text


@contextmanager
def serve(vault: Path, *flags: str):
    env = {"WIKIMEM_EMBEDDER": "fake", "PYTHONPATH": str(Path(__file__).parent.parent)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "wikimem.cli", "mcp", str(vault), *flags],
                                   env=env, cwd=str(vault.parent))
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(params, read_timeout_seconds=60)) as client:
            yield SyncClient(portal, client)


@pytest.fixture(scope="module")
def vault(tmp_path_factory) -> Path:
    root = write_vault(tmp_path_factory.mktemp("mcp") / "vault", NOTES)
    outside = root.parent / "outside"
    outside.mkdir()
    (root / "escape").symlink_to(outside, target_is_directory=True)
    return root


@pytest.fixture(scope="module")
def server(vault):
    with serve(vault) as client:
        yield client


def _names(client) -> set[str]:
    return {t.name for t in client.tools()}


def test_lists_the_tools_whose_api_exists(server):
    names = _names(server)
    assert {"search", "read_page", "list_pages", "taxonomy", "prime_context"} <= names
    for optional in ("write_page", "remember", "query", "supersede", "history", "neighbors", "communities",
                     "lint", "stats"):
        assert (optional in names) == hasattr(Vault, optional)
    search = next(t for t in server.tools() if t.name == "search")
    assert "query" in search.input_schema["required"]
    assert {"top_k", "mode", "full_text"} <= set(search.input_schema["properties"])
    assert "tag:" in search.input_schema["properties"]["query"]["description"]  # filters are operators
    # annotations say what differs from the spec's defaults (read_only false, destructive true)
    hints = {t.name: t.annotations for t in server.tools()}
    assert hints["supersede"].destructive_hint is True and hints["write_page"].destructive_hint is True
    assert hints["search"].read_only_hint is True and hints["read_page"].read_only_hint is True
    assert hints["remember"].destructive_hint is False and not hints["remember"].read_only_hint
    query = next(t for t in server.tools() if t.name == "query")
    write = query.input_schema["properties"]["write"]  # issue 28 item 7: not written unless asked
    assert write["type"] == "boolean" and write.get("default", False) is False  # a flag left out is off
    assert "write" not in query.input_schema.get("required", [])
    flags = [(t.name, n) for t in server.tools() for n, p in t.input_schema["properties"].items()
             if p.get("type") == "boolean" and "default" in p]
    assert flags == []  # every flag defaults to off, so none says so (issue 28 item 8: the tool list)


TYPED = {"search", "read_page", "list_pages", "query", "write_page", "edit_page", "move_page", "delete_page",
         "remember", "recall"}


def _nodes(schema):
    """Every (sub)schema of ``schema``: the values of "properties" are schemas, its keys are names."""
    if isinstance(schema, list):
        for item in schema:
            yield from _nodes(item)
    elif isinstance(schema, dict):
        yield schema
        for key, value in schema.items():
            yield from _nodes(list(value.values()) if key == "properties" else value)


def test_every_argument_is_described_and_the_parsed_results_have_lean_output_schemas(server):
    """Issue 28: real output schemas for the results agents parse, a description on every argument,
    and nothing generated that says nothing (titles, $defs indirection, {"type": "object"} alone)."""
    for tool in server.tools():
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
        if tool.name in TYPED:
            schema = tool.output_schema
            assert schema and schema["type"] == "object" and schema["properties"], tool.name
            assert not any({"title", "$ref", "$defs"} & set(n) for n in _nodes(schema)), tool.name
        else:
            assert tool.output_schema is None, tool.name
        assert not any("title" in n for n in _nodes(tool.input_schema)), tool.name
    search = server.output_schema("search")
    hit = search["properties"]["hits"]["items"]
    assert {"path", "title", "wikilink", "score", "type"} == set(hit["required"])
    page = server.output_schema("read_page")["properties"]
    assert page["sha256"]["description"] and page["versions"]["type"] == ["object", "null"]


def test_search_compact_and_full(server):
    data = server.ok("search", {"query": "compost heap", "top_k": 3})
    hit = data["hits"][0]
    assert hit["path"] == "concepts/Compost.md"
    assert hit["wikilink"] == "[[Compost]]"
    assert "excerpt" in hit and "text" not in hit and len(hit["excerpt"]) <= 301
    full = server.ok("search", {"query": "compost heap", "top_k": 3, "full_text": True})
    assert "Turn the heap weekly" in full["hits"][0]["text"]
    assert full["hits"][0]["components"]


def test_read_page_whole_and_section(server, vault):
    page = server.ok("read_page", {"path": "concepts/Compost.md"})
    assert page["sha256"] == hashlib.sha256((vault / "concepts/Compost.md").read_bytes()).hexdigest()
    assert "backlinks" not in page and page["backlinks_total"] == 1 and "frontmatter" not in page  # on request
    page = server.ok("read_page", {"path": "concepts/Compost.md", "backlinks": True, "frontmatter": True})
    assert page["frontmatter"]["tags"] == ["soil"]
    assert [b["path"] for b in page["backlinks"]] == ["concepts/Tomato.md"]
    section = server.ok("read_page", {"path": "concepts/Compost", "heading": "Ratio"})
    assert section["content"].startswith("## Ratio") and "Turn the heap" not in section["content"]
    assert "no heading" in server.error("read_page", {"path": "concepts/Compost.md", "heading": "Nope"})


def test_list_pages_and_taxonomy(server):
    listing = server.ok("list_pages", {"folder": "concepts", "limit": 2})
    assert listing["total"] == 3 and len(listing["pages"]) == 2 and listing["next_offset"] == 2
    assert server.ok("list_pages", {"tag": "soil"})["pages"][0]["path"] == "concepts/Compost.md"
    tax = server.ok("taxonomy")
    assert tax["folders"]["concepts"] == 3 and tax["tags"]["soil"] == 1
    assert tax["schema"]["domain"].startswith("Gardening notes")


def test_prime_context_over_mcp(server):
    brief = server.ok("prime_context", {"prompt": "how should I turn the compost heap?", "cwd": "/home/me/garden"})
    assert brief["items"] and brief["items"][0]["wikilink"] == "[[Compost]]"
    assert brief["tokens"] <= brief["budget_tokens"]
    none = server.ok("prime_context", {"prompt": "kubernetes helm upgrade", "cwd": "/srv/infra"})
    assert none["empty"] and "No vault page clears the relevance bar" in none["text"]


needs_writer = pytest.mark.skipif(not hasattr(Vault, "write_page"), reason="Vault.write_page not in this build")


@needs_writer
def test_write_then_search_finds_it(server, vault):
    text = "---\ntitle: Zucchini\ntags: [soil]\n---\n# Zucchini\n\nZucchini plants sprawl and want mulch.\n"
    result = server.ok("write_page", {"path": "concepts/Zucchini.md", "content": text})
    assert result["created"] and (vault / "concepts/Zucchini.md").read_text() == text
    hits = server.ok("search", {"query": "zucchini sprawl"})["hits"]
    assert hits and hits[0]["path"] == "concepts/Zucchini.md"
    # replacing needs the sha256 read_page gave; a stale one is refused, force overrides
    sha = server.ok("read_page", {"path": "concepts/Zucchini.md"})["sha256"]
    assert "read it first" in server.error("write_page", {"path": "concepts/Zucchini.md", "content": text + "x\n"})
    updated = server.ok("write_page", {"path": "concepts/Zucchini.md", "content": text + "More.\n",
                                       "expected_sha256": sha})
    assert not updated["created"]
    assert "changed" in server.error("write_page", {"path": "concepts/Zucchini.md", "content": text,
                                                    "expected_sha256": sha})
    server.ok("write_page", {"path": "concepts/Zucchini.md", "content": text, "expected_sha256": sha, "force": True})
    assert (vault / "concepts/Zucchini.md").read_text() == text


@needs_writer
def test_hostile_inputs_are_clean_errors_and_write_nothing(server, vault):
    before = sorted(p.relative_to(vault.parent).as_posix() for p in vault.parent.rglob("*") if ".wikimem" not in p.parts)
    ok = "# Fine\n\nText.\n"
    cases = {
        "traversal": {"path": "../evil.md", "content": ok},
        "absolute": {"path": str(vault.parent / "evil.md"), "content": ok},
        "symlink escape": {"path": "escape/evil.md", "content": ok},
        "raw is read-only": {"path": "raw/articles/source.md", "content": ok, "force": True},
        "not a note": {"path": "concepts/run.sh", "content": ok},
        "huge": {"path": "concepts/Huge.md", "content": "x" * (1024 * 1024 + 1)},
        "bad frontmatter": {"path": "concepts/Bad.md", "content": "---\ntitle: [unclosed\n---\nbody\n"},
        "secret": {"path": "concepts/Keys.md", "content": "key: AKIAABCDEFGHIJKLMNOP\n"},
        "unknown argument": {"path": "concepts/Typo.md", "content": ok, "expected_sha": "abc"},
        "wrong type": {"path": "concepts/Typo.md", "content": 12},
        "missing argument": {"path": "concepts/Typo.md"},
    }
    messages = {name: server.error("write_page", args) for name, args in cases.items()}
    assert "escapes the vault" in messages["traversal"]
    assert "relative to the vault" in messages["absolute"]
    assert "symlink" in messages["symlink escape"]
    assert "raw/" in messages["raw is read-only"]
    assert "limit" in messages["huge"]
    assert "frontmatter" in messages["bad frontmatter"]
    assert "secret" in messages["secret"]
    assert "unknown argument" in messages["unknown argument"] and "expected_sha256" in messages["unknown argument"]
    assert "nope" in server.error("nope", {}).lower() or "unknown tool" in server.error("nope", {}).lower()
    assert "escape" in server.error("read_page", {"path": "../outside/x.md"})
    assert "symlink" in server.error("read_page", {"path": "escape/x.md"})
    assert server.error("search", {"query": "   "})
    assert "4000" in server.error("search", {"query": "x" * 5000})
    assert server.error("list_pages", {"folder": "../.."})
    after = sorted(p.relative_to(vault.parent).as_posix() for p in vault.parent.rglob("*") if ".wikimem" not in p.parts)
    assert [p for p in after if p not in before] == []  # log.md may change; no new file anywhere
    assert (vault / "raw/articles/source.md").read_text() == NOTES["raw/articles/source.md"]
    assert server.ok("search", {"query": "compost"})["hits"]  # still alive


def _needs(*names):
    missing = [n for n in names if not hasattr(Vault, n)]
    return pytest.mark.skipif(bool(missing), reason=f"Vault lacks {missing} in this build")


@_needs("neighbors", "stats", "communities", "lint")
def test_graph_and_lint_tools(server):
    near = server.ok("neighbors", {"path": "concepts/Compost.md"})
    assert "concepts/Tomato.md" in json.dumps(near)
    assert server.ok("stats")
    groups = server.ok("communities", {"members": 1})
    assert all(len(c["members"]) <= 1 and c["members_total"] >= len(c["members"]) for c in groups["communities"])
    report = server.ok("lint", {"paths": ["concepts"], "limit": 2})
    assert "summary" in report and len(report["findings"]) <= 2
    assert report["findings_total"] >= len(report["findings"])
    assert "escapes" in server.error("lint", {"paths": ["../x"]})
    assert server.error("neighbors", {"path": "concepts/Nope.md"})


def test_search_reads_obsidian_operators(server):
    """issue 30: the query carries the filters (one syntax for people and agents), hits carry a line."""
    tagged = server.ok("search", {"query": "tag:soil", "top_k": 5})
    paths = [h["path"] for h in tagged["hits"]]
    assert "concepts/Compost.md" in paths and "concepts/Tomato.md" not in paths  # Tomato has no tag
    scoped = server.ok("search", {"query": "path:concepts compost", "top_k": 5})
    assert scoped["hits"] and all(h["path"].startswith("concepts/") for h in scoped["hits"])
    assert all(isinstance(h.get("line", 1), int) for h in scoped["hits"])


@pytest.mark.parametrize("query, present, absent", [
    ("tag:soil", "concepts/Compost.md", "concepts/Tomato.md"),
    ("path:concepts compost", "concepts/Compost.md", "raw/articles/source.md"),
    ("file:Tomato", "concepts/Tomato.md", "concepts/Compost.md"),
    ('"parts brown"', "concepts/Compost.md", "concepts/Tomato.md"),
    ("compost -heap", "concepts/Tomato.md", "concepts/Compost.md"),
    ("mulch OR brown", "concepts/Compost.md", "concepts/Tomato.md"),
    ("[title:Old Tomato]", "concepts/Old Tomato.md", "concepts/Tomato.md"),
    ("[tags]", "concepts/Compost.md", "concepts/Tomato.md"),
    ("section:(brown green)", "concepts/Compost.md", "concepts/Tomato.md"),
    ("line:(parts brown)", "concepts/Compost.md", "concepts/Tomato.md"),
])
def test_each_operator_through_the_mcp_client(server, query, present, absent):
    """issue 30: one end-to-end case per Obsidian operator through the SDK client."""
    paths = [h["path"] for h in server.ok("search", {"query": query, "top_k": 10, "mode": "lexical"})["hits"]]
    assert present in paths and absent not in paths, (query, paths)


def test_related_and_recent_tools(server):
    """issue 30 items 2 and 4: the nearest pages by meaning, and what changed lately. Nearness by
    meaning needs the vectors, which the server computes in the background after it answers: wait
    for them as an agent would (30 s at most; a loaded machine takes a few)."""
    deadline = time.monotonic() + 30
    near = server.ok("related", {"path": "concepts/Compost.md", "limit": 3})
    while not near["related"] and time.monotonic() < deadline:
        time.sleep(0.2)
        near = server.ok("related", {"path": "concepts/Compost.md", "limit": 3})
    assert near["page"] == "concepts/Compost.md" and 1 <= len(near["related"]) <= 3
    assert {"path", "title", "score", "linked", "terms"} <= set(near["related"][0])
    linked = [r["linked"] for r in near["related"]]
    assert linked == sorted(linked)  # unlinked first
    changes = server.ok("recent", {"since": "2w", "limit": 5})
    assert changes["total"] >= 1 and len(changes["changes"]) <= 5
    assert "7d" in server.error("recent", {"since": "whenever"})
    assert server.error("related", {"path": "concepts/Nope.md"})


@_needs("remember", "supersede", "history", "query", "write_page")
def test_knowledge_tools(server, vault):
    memory = server.ok("remember", {"fact": "I water the tomatoes at dawn.", "kind": "persona"})
    assert memory["action"] == "written" and (vault / memory["path"]).exists()
    assert server.ok("remember", {"fact": "I water the tomatoes at dawn.", "kind": "persona"})["action"] == "duplicate"
    assert "secret" in server.error("remember", {"fact": "my key is AKIAABCDEFGHIJKLMNOP", "kind": "episodic"})
    brief = server.ok("prime_context", {"cwd": "/x/garden"})
    assert brief["items"][0]["kind"] == "persona" and "dawn" in brief["items"][0]["text"]
    stale = server.error("supersede", {"old": "concepts/Old Tomato.md", "new": "concepts/Tomato.md",
                                       "old_sha256": "0" * 64, "new_sha256": "0" * 64})
    assert "changed since it was read" in stale  # compare-and-swap, as write_page
    shas = {k: server.ok("read_page", {"path": p})["sha256"] for k, p in
            (("old_sha256", "concepts/Old Tomato.md"), ("new_sha256", "concepts/Tomato.md"))}
    server.ok("supersede", {"old": "concepts/Old Tomato.md", "new": "concepts/Tomato.md", **shas})
    chain = server.ok("history", {"path": "concepts/Tomato.md"})
    assert "concepts/Old Tomato.md" in json.dumps(chain)
    versions = server.ok("read_page", {"path": "concepts/Old Tomato.md"})["versions"]
    assert versions["current"] == "concepts/Tomato.md"
    answer = server.ok("query", {"question": "What does compost feed?"})  # an agent's question is not filed
    assert "Compost" in json.dumps(answer) and answer["page"] is None
    filed = server.ok("query", {"question": "What does compost feed?", "write": True, "supersede": True})
    assert filed["page"].startswith("queries/") and filed["similar"] == []
    assert "no similar page to supersede" in filed["notices"]


def test_concurrent_calls(server, vault):
    writes = hasattr(Vault, "write_page")

    async def many(client):
        results = []

        async def one(i):
            if writes and i % 3 == 0:
                args = {"path": f"concepts/Bulb {i}.md", "content": f"# Bulb {i}\n\nPlant bulb {i} in autumn.\n"}
                results.append(await client.call_tool("write_page", args))
            else:
                results.append(await client.call_tool("search", {"query": ["compost", "tomato", "soil"][i % 3]}))
        async with anyio.create_task_group() as tg:
            for i in range(12):
                tg.start_soon(one, i)
        return results

    results = server.portal.call(many, server.client)
    assert len(results) == 12 and not any(r.is_error for r in results), [r.content[0].text for r in results if r.is_error]
    if writes:
        for i in range(0, 12, 3):
            assert (vault / f"concepts/Bulb {i}.md").read_text() == f"# Bulb {i}\n\nPlant bulb {i} in autumn.\n"
        log_md = (vault / "log.md").read_text()
        assert all(f"concepts/Bulb {i}.md" in log_md for i in range(0, 12, 3))
        assert server.ok("search", {"query": "bulb autumn", "top_k": 10, "mode": "lexical"})["hits"]


def test_read_only_lists_no_write_tools(vault):
    with serve(vault, "--read-only") as client:
        names = _names(client)
        assert "write_page" not in names and "remember" not in names and "supersede" not in names
        assert "search" in names
        if "query" in names:
            query = next(t for t in client.tools() if t.name == "query")
            assert "write" not in query.input_schema["properties"]
        assert "Unknown tool" in client.error("write_page", {"path": "concepts/X.md", "content": "# X\n"})
    assert not (vault / "concepts/X.md").exists()


@pytest.mark.skipif(not hasattr(Vault, "watch"), reason="Vault.watch not in this build")
def test_edit_on_disk_is_searchable(tmp_path):
    root = tmp_path / "v"
    (root / "concepts").mkdir(parents=True)
    (root / "concepts/A.md").write_text("# A\n\nApples.\n")
    with serve(root) as client:
        assert client.ok("search", {"query": "apples"})["hits"]
        time.sleep(1.0)
        (root / "concepts/B.md").write_text("# B\n\nBlueberries ripen in July.\n")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            hits = client.ok("search", {"query": "blueberries", "mode": "lexical"})["hits"]
            if hits:
                break
            time.sleep(0.3)
        assert hits and hits[0]["path"] == "concepts/B.md"
        (root / "concepts/B.md").unlink()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and hits:
            hits = client.ok("search", {"query": "blueberries", "mode": "lexical"})["hits"]
            time.sleep(0.3)
        assert hits == []


def test_stdout_is_protocol_only(vault):
    """A raw JSON-RPC exchange: every line the server prints is a JSON-RPC message."""
    import subprocess
    env = {**os.environ, "WIKIMEM_EMBEDDER": "fake", "PYTHONPATH": str(Path(__file__).parent.parent)}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}}
    lines = [init, {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "read_page", "arguments": {"path": "/etc/passwd"}}}]
    proc = subprocess.Popen([sys.executable, "-m", "wikimem.cli", "mcp", str(vault), "--read-only"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=env)
    out = []
    try:
        for message in lines:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message:
                out.append(json.loads(proc.stdout.readline()))
        proc.stdin.close()
        rest = proc.stdout.read()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert [m.get("id") for m in out] == [1, 2]
    assert out[1]["result"]["isError"] and "relative to the vault" in out[1]["result"]["content"][0]["text"]
    assert rest.strip() == "" and proc.returncode == 0


def test_missing_vault_is_a_clean_error(tmp_path):
    import subprocess
    proc = subprocess.run([sys.executable, "-m", "wikimem.cli", "mcp", str(tmp_path / "nope")], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    assert proc.returncode == 1 and proc.stdout == ""
    assert "vault folder not found" in proc.stderr and "Traceback" not in proc.stderr


@_needs("edit_page", "move_page", "delete_page")
def test_edit_move_and_delete_tools(server, vault):
    """Issue 28 item 6 through the SDK client: an agent adds one line without re-sending the page."""
    server.ok("write_page", {"path": "notes/Edits.md", "content": "# Edits\n\nFirst line.\n"})
    sha = server.ok("read_page", {"path": "notes/Edits.md"})["sha256"]
    done = server.ok("edit_page", {"path": "notes/Edits.md", "operation": "append", "content": "Second line.",
                                   "expected_sha256": sha})
    assert (vault / "notes/Edits.md").read_text() == "# Edits\n\nFirst line.\nSecond line.\n"
    assert "changed since" in server.error("edit_page", {"path": "notes/Edits.md", "operation": "append",
                                                         "content": "x", "expected_sha256": sha})
    moved = server.ok("move_page", {"path": "notes/Edits.md", "new_path": "notes/Edited.md",
                                    "expected_sha256": done["sha256"]})
    assert moved["path"] == "notes/Edited.md" and (vault / "notes/Edited.md").exists()
    gone = server.ok("delete_page", {"path": "notes/Edited.md", "expected_sha256": moved["sha256"]})
    assert gone["moved_to"] == ".trash/notes/Edited.md" and not (vault / "notes/Edited.md").exists()


def test_pages_are_resources_and_the_workflows_are_prompts(server, vault):
    """Issue 28 item 9: an agent that has never seen wikimem finds the pages and the wiki's workflows."""
    read = server.portal.call(server.client.read_resource, "wikimem://page/concepts/Compost.md")
    assert "Compost" in read.contents[0].text
    part = server.portal.call(server.client.read_resource, "wikimem://page/concepts/Compost.md?lines=1-2")
    assert part.contents[0].text.count("\n") == 2
    prompts = {p.name for p in server.portal.call(server.client.list_prompts).prompts}
    assert {"ingest_source", "answer_and_file", "lint_and_fix"} <= prompts
    got = server.portal.call(server.client.get_prompt, "ingest_source", {"path": "raw/articles/x.md"})
    text = got.messages[0].content.text
    assert "Read `SCHEMA.md` first" in text and "edit_page" in text and "raw/articles/x.md" in text


# -- output schemas, in-process (the SDK's in-memory transport; no subprocess) ------------------------
@pytest.fixture
def built(tmp_path):
    from wikimem.api import open_vault
    from wikimem.mcp import build_server
    root = tmp_path / "v"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    vault = open_vault(root, embedder="none")
    vault.index()
    yield vault, build_server(vault)
    vault.close()


def _call(server, name: str, args: dict):
    async def go():
        async with Client(server) as client:
            return await client.session.call_tool(name, args)  # the session: no client-side validation
    return anyio.run(go)


def test_a_result_that_does_not_match_its_output_schema_is_an_error(built, monkeypatch):
    """The server validates each structured result against the tool's output schema: a result the
    API changed shape under (sha256 missing, a count that is text) is an error, never sent as if fine."""
    vault, server = built
    good = _call(server, "read_page", {"path": "concepts/Compost.md"})
    assert not good.is_error and len(good.structured_content["sha256"]) == 64
    page = vault.read_page("concepts/Compost.md")
    for broken in ({k: v for k, v in page.items() if k != "sha256"}, {**page, "backlinks_total": "one"},
                   {**page, "headings": [{"level": "h1", "text": "Compost"}]}):
        monkeypatch.setattr(vault, "read_page", lambda *a, b=broken, **k: dict(b))
        result = _call(server, "read_page", {"path": "concepts/Compost.md"})
        # the SDK's message for a result failing validation (a server bug: details go to its log), not
        # one of the tool's own errors ("Error executing tool read_page: UsageError: ...")
        assert result.is_error and result.content[0].text == "Error executing tool read_page"
    monkeypatch.setattr(vault, "list_pages", lambda **k: {"total": 1, "offset": 0, "limit": 25, "pages": []})
    assert _call(server, "list_pages", {}).is_error  # next_offset missing
    # a key the schema does not list is passed on (the schemas leave additionalProperties open)
    monkeypatch.setattr(vault, "read_page", lambda *a, **k: {**page, "new_field": 1})
    assert _call(server, "read_page", {"path": "concepts/Compost.md"}).structured_content["new_field"] == 1


def test_the_published_schemas_accept_what_the_tools_return(built):
    """Each typed tool's real result validates against the schema it publishes (the lean one, as the
    client sees it), including the optional parts: full_text hits, backlinks, frontmatter."""
    _, server = built

    async def go():
        async with Client(server) as client:
            schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
            calls = [("search", {"query": "compost heap", "full_text": True}), ("search", {"query": "tomato"}),
                     ("read_page", {"path": "concepts/Compost.md", "backlinks": True, "frontmatter": True}),
                     ("read_page", {"path": "concepts/Compost.md", "heading": "Ratio"}),
                     ("list_pages", {"limit": 1}), ("query", {"question": "What does compost feed?"})]
            out = []
            for name, args in calls:
                if name in schemas:
                    result = await client.call_tool(name, args)  # the client validates against the schema
                    assert not result.is_error, result.content[0].text
                    out.append((schemas[name], result.structured_content))
            return out
    for schema, data in anyio.run(go):
        jsonschema.validate(data, schema)
