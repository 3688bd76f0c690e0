"""MCP server start-up over stdio: time to the first answered ``tools/list`` and ``tools/call``,
for one or more source trees, alternated round by round (an A/B under the same load).

    python benchmarks/bench_mcp_start.py --tree before=/tmp/wm-before [--rounds 9] [--vault DIR]

Each round spawns ``python -m wikimem.cli mcp VAULT`` once per tree (the order rotates every round)
with the SDK's stdio client and records, from spawn:
- ``list_s``: the first ``tools/list`` answered (the initialize handshake included);
- ``call_s``: then the first ``search`` answered (the server's first tool call);
- ``cpu_list_s``, ``cpu_s``: the server's CPU seconds at those two points (from /proc; Linux): on a
  shared 2-core box wall time swings with the load, CPU time much less.
``--client-mode legacy``: the client opens with the ``initialize`` handshake (as Claude Code and most
clients do) instead of the SDK client's default (``auto``: ``server/discover``, the 2026-07-28 era).
``--fresh``: every start on a new copy of examples/ that was never indexed, with the default
embedder (e5): the first search must answer from what is there at once and say what is degraded
(issue 28 item 14); each run records its hit count and ``degraded``.
The current tree is always measured (as ``current``). ``--tree NAME=DIR`` adds another source tree
(``git archive <commit> | tar -x -C DIR``, or a copy of ``wikimem/`` with one change). The vault is a
copy of examples/ indexed with the fake embedder, unless ``--vault`` names one already indexed.
Medians go to stdout and to ``--out`` (default benchmarks/results/mcp-start.json).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from bench_mcp import children_cpu, params  # noqa: E402


async def one_start(vault: Path, source: Path, embedder: str = "fake", fresh: bool = False,
                    client_mode: str = "auto") -> dict:
    if fresh:  # a vault never indexed: a new copy each time
        vault = Path(tempfile.mkdtemp(prefix="wm-fresh-")) / "examples"
        shutil.copytree(HERE.parent / "examples", vault, ignore=shutil.ignore_patterns(".wikimem"))
    started = time.perf_counter()
    async with Client(params(vault, embedder, source), read_timeout_seconds=120, mode=client_mode) as client:
        await client.list_tools()
        listed = time.perf_counter() - started
        cpu_listed = children_cpu()
        result = await client.call_tool("search", {"query": "hybrid search ranking", "top_k": 5})
        called = time.perf_counter() - started
        cpu = children_cpu()
        if result.is_error:
            raise SystemExit(f"{source}: search failed: {result.content[0].text}")
        answer = result.structured_content or {}
    out = {"list_s": listed, "call_s": called, "cpu_list_s": cpu_listed, "cpu_s": cpu}
    if fresh:
        out["hits"], out["degraded"] = len(answer.get("hits", [])), answer.get("degraded", [])
        shutil.rmtree(vault.parent, ignore_errors=True)
    return out


def summary(runs: list[dict[str, float | None]]) -> dict:
    out: dict = {}
    for key in ("list_s", "call_s", "cpu_list_s", "cpu_s"):
        values = [r[key] for r in runs if r.get(key) is not None]
        if values:
            out[key] = {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
                        "max": round(max(values), 3)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=DIR", help="another source tree")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--vault", type=Path, help="an indexed vault (default: a copy of examples/)")
    ap.add_argument("--fresh", action="store_true",
                    help="each start on a new copy of examples/ never indexed (issue 28 item 14)")
    ap.add_argument("--embedder", default=None, help="the server's embedder (default: fake; e5 with --fresh)")
    ap.add_argument("--client-mode", choices=("auto", "legacy"), default="auto",
                    help="auto: the SDK client's default (2026-07-28 era); legacy: the initialize handshake")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    embedder = args.embedder or ("e5" if args.fresh else "fake")
    out_path = args.out or HERE / "results" / ("mcp-start-fresh.json" if args.fresh else "mcp-start.json")
    trees = {"current": HERE.parent.resolve()}
    for spec in args.tree:
        name, _, folder = spec.partition("=")
        trees[name] = Path(folder).resolve()
    vault = args.vault
    if vault is None and not args.fresh:
        vault = Path(tempfile.mkdtemp(prefix="wm-start-")) / "examples"
        shutil.copytree(HERE.parent / "examples", vault, ignore=shutil.ignore_patterns(".wikimem"))
        from wikimem.api import open_vault
        v = open_vault(vault, embedder="fake")
        v.index()
        v.close()
    runs: dict[str, list] = {name: [] for name in trees}
    names = list(trees)
    anyio.run(one_start, vault, trees["current"], embedder, args.fresh, args.client_mode)  # warm the file cache
    for i in range(args.rounds):
        for name in names[i % len(names):] + names[:i % len(names)]:  # each tree first in turn
            runs[name].append(anyio.run(one_start, vault, trees[name], embedder, args.fresh, args.client_mode))
    result = {"benchmark": "mcp start-up", "python": platform.python_version(), "cpus": os.cpu_count(),
              "rounds": args.rounds, "embedder": embedder, "fresh": args.fresh, "client_mode": args.client_mode,
              "load_average": [round(x, 2) for x in os.getloadavg()],
              "trees": {name: {"source": str(trees[name]), **summary(runs[name]),
                               "runs": [{k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()}
                                        for r in runs[name]]} for name in names},
              "command": "python benchmarks/bench_mcp_start.py " + " ".join(sys.argv[1:])}
    for name in names:
        s = result["trees"][name]
        print(f"{name:10s} first tools/list {s['list_s']['median']:.3f} s  first call {s['call_s']['median']:.3f} s"
              + (f"  server CPU {s['cpu_list_s']['median']:.3f} / {s['cpu_s']['median']:.3f} s" if "cpu_s" in s else "")
              + "  (medians)")
        if args.fresh:
            print("  hits / degraded per start: " + "; ".join(f"{r['hits']} / {','.join(r['degraded']) or '-'}"
                                                          for r in runs[name]))
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
