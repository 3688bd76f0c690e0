"""What one MCP call costs an agent's context (issue 28 item 8): characters and a token estimate
of the tool list and of typical calls, on a copy of examples/, through the SDK's stdio client.

    python benchmarks/bench_mcp_tokens.py [--against TREE] [--out benchmarks/results/mcp-tokens.json]

``tools/list`` is the whole payload a client receives; ``tools/list model view`` is the part of it
that Claude Code and opencode put in the model's context: each tool's name, description and input
schema (they keep the output schema and the annotations for themselves: anthropics/claude-code#54197
and #90150, sst/opencode#27577). For each call the client receives a text content (what most clients
put in the model's context) and a structured content; both are measured. Tokens are estimated at 4 characters a token for
English and 1.5 for CJK (no tokenizer ships offline); the ratio before/after is what counts.
``--against TREE`` runs the server of another source tree (``git archive`` a commit into a folder)
on the same vault for the before figures.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

HERE = Path(__file__).parent
_CJK = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")


def tokens(text: str) -> int:
    cjk = len(_CJK.findall(text))
    return round((len(text) - cjk) / 4 + cjk / 1.5)


CALLS = [
    ("search", {"query": "how are keyword and vector rankings combined", "top_k": 10}),
    ("read_page", {"path": "concepts/Hybrid Search.md"}),
    ("communities", {}),
    ("lint", {}),
    ("list_pages", {}),
]


async def measure(vault: Path, source: Path) -> dict:
    env = {"WIKIMEM_EMBEDDER": "fake", "PYTHONPATH": str(source)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "wikimem.cli", "mcp", str(vault)],
                                   env=env, cwd=str(source))
    out: dict = {}
    async with Client(params, read_timeout_seconds=120) as client:
        listed = await client.list_tools()
        text = json.dumps([t.model_dump(mode="json", exclude_none=True) for t in listed.tools], ensure_ascii=False)
        out["tools/list"] = {"chars": len(text), "tokens": tokens(text), "tools": len(listed.tools),
                             "output_schemas": sum(t.output_schema is not None for t in listed.tools)}
        model = json.dumps([t.model_dump(mode="json", exclude_none=True, include={"name", "description", "input_schema"})
                            for t in listed.tools], ensure_ascii=False)
        out["tools/list model view"] = {"chars": len(model), "tokens": tokens(model)}
        out["model view per tool"] = {t.name: len(json.dumps(t.model_dump(
            mode="json", exclude_none=True, include={"name", "description", "input_schema"}), ensure_ascii=False))
            for t in listed.tools}
        for name, args in CALLS:
            result = await client.call_tool(name, args)
            shown = "".join(getattr(c, "text", "") for c in result.content)
            structured = json.dumps(result.structured_content, ensure_ascii=False) if result.structured_content else ""
            out[name] = {"text_chars": len(shown), "text_tokens": tokens(shown),
                         "structured_chars": len(structured), "error": bool(result.is_error)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--against", type=Path, help="another source tree, for the before figures")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "mcp-tokens.json")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="wm-tokens-"))
    vault = work / "examples"
    shutil.copytree(HERE.parent / "examples", vault, ignore=shutil.ignore_patterns(".wikimem"))
    from wikimem.api import open_vault
    open_vault(vault, embedder="fake").index()
    result = {"after": anyio.run(measure, vault, HERE.parent)}
    if args.against:
        shutil.rmtree(vault / ".wikimem")
        result["before"] = anyio.run(measure, vault, args.against)
    if args.against:  # the tools both trees offer: the same job, before and after
        before, after = result["before"]["model view per tool"], result["after"]["model view per tool"]
        common = sorted(set(before) & set(after))
        result["model view, tools in both"] = {"tools": len(common), "before_chars": sum(before[t] for t in common),
                                               "after_chars": sum(after[t] for t in common)}
    for label, data in result.items():
        for call, figures in data.items() if "tools" not in data else [("", data)]:
            if call != "model view per tool":
                print(f"{label:6s} {call:12s} {figures}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
