"""MCP server benchmark: start-to-ready time and `search` tool-call latency over stdio.

    flock /tmp/wikimem-heavy.lock python benchmarks/bench_mcp.py            # 10k notes, fake embedder
    flock /tmp/wikimem-heavy.lock python benchmarks/bench_mcp.py --embedder none

1. Copies the generated 10,000-note vault (``--src``, default /tmp/bench/vault10k-src) to ``--work``
   once and builds its cache there with the chosen embedder (fake: deterministic, instant vectors,
   so hybrid search runs both rankers; none: lexical only).
2. Start-to-ready, ``--starts`` times: from spawning ``python -m wikimem.cli mcp VAULT`` with the SDK's
   stdio client to the answer of the first ``tools/list`` (the initialize handshake included). The
   server answers before its background warm-up (embedder load, catch-up scan) is done.
   The same is measured for a one-tool ``MCPServer`` (the bare SDK) for comparison, and with
   ``--against TREE`` for the server of another source tree (an A/B: ``git archive`` a commit,
   unpack it, pass the folder), in the same rounds, each variant first in turn. Besides wall time,
   each start records the server's CPU seconds when it answered (from /proc): on a shared machine
   wall time swings with the load, CPU time much less.
3. Latency: in one server, wait until its watcher reports idle (start-up reconcile done, read from
   .wikimem/watch.json), ``--warmup`` calls, then ``--calls`` ``search`` calls (5 words from the generator's 2,000 commonest, top_k 8, compact
   hits), each timed on the client from send to parsed result. p50 / p95 / max.
Results go to benchmarks/results/mcp-<embedder>.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

import anyio

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from generate import query_words  # noqa: E402

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from wikimem import __version__  # noqa: E402
from wikimem.api import open_vault  # noqa: E402


def prepare(src: Path, work: Path, embedder: str) -> dict:
    if not work.exists():
        shutil.copytree(src, work, ignore=shutil.ignore_patterns(".wikimem"))
    v = open_vault(work, embedder=embedder)
    started = time.perf_counter()
    report = v.index()
    v.close()
    return {"index_seconds": round(time.perf_counter() - started, 2), "pages": report.pages,
            "chunks": report.chunks, "vectors": report.vectors}


def params(vault: Path, embedder: str, source: Path = HERE.parent) -> StdioServerParameters:
    # cwd too: `python -m` puts the working folder first on sys.path, before PYTHONPATH
    return StdioServerParameters(command=sys.executable, args=["-m", "wikimem.cli", "mcp", str(vault)],
                                 env={"WIKIMEM_EMBEDDER": embedder, "PYTHONPATH": str(source)}, cwd=str(source))


def children_cpu() -> float | None:
    """CPU seconds (user + system, all threads) used so far by this process's live children, from
    /proc (Linux; None elsewhere): what a server spent to get ready, a figure load barely moves."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total, me = 0.0, str(os.getpid())
    try:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me:
                total += (int(fields[11]) + int(fields[12])) / tick
    except OSError:
        return None
    return total


async def start_to_ready(vault: Path, embedder: str, source: Path = HERE.parent) -> tuple[float, float | None]:
    """(wall seconds from spawn to the first tools/list answer, the server's CPU seconds by then)."""
    started = time.perf_counter()
    async with Client(params(vault, embedder, source), read_timeout_seconds=120) as client:
        await client.list_tools()
        return time.perf_counter() - started, children_cpu()


BASELINE = """from mcp.server import MCPServer
server = MCPServer("baseline")
@server.tool()
def echo(text: str) -> dict:
    return {"text": text}
server.run()
"""


async def baseline_ready() -> tuple[float, float | None]:
    """The same measurement for a one-tool MCPServer: what the SDK itself costs (its import dominates)."""
    started = time.perf_counter()
    async with Client(StdioServerParameters(command=sys.executable, args=["-c", BASELINE]),
                      read_timeout_seconds=120) as client:
        await client.list_tools()
        return time.perf_counter() - started, children_cpu()


async def settled(vault: Path, timeout: float) -> float:
    """Wait until the server's in-process watcher reports idle (its start-up reconcile is done)."""
    from wikimem.watch.control import read_status
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        info = read_status(vault)
        if info.get("running") and info.get("state") in ("idle", "embedding"):
            break
        await anyio.sleep(0.5)
    return time.perf_counter() - started


async def latencies(vault: Path, embedder: str, warmup: int, calls: int, settle: float) -> tuple[list[float], int, float]:
    rng = random.Random(7)
    out: list[float] = []
    empty = 0
    async with Client(params(vault, embedder), read_timeout_seconds=120) as client:
        waited = await settled(vault, settle)
        for _ in range(warmup):
            await client.call_tool("search", {"query": query_words(rng, 5)})
        for _ in range(calls):
            query = query_words(rng, 5)
            t = time.perf_counter()
            result = await client.call_tool("search", {"query": query, "top_k": 8})
            out.append(time.perf_counter() - t)
            if result.is_error:
                raise SystemExit(f"search failed: {result.content[0].text}")
            empty += not result.structured_content["hits"]
    return out, empty, waited


def summary(runs: list[tuple[float, float | None]]) -> dict:
    """Median / min / max wall seconds to ready, and the median server CPU seconds by then."""
    wall = [w for w, _ in runs]
    cpu = [c for _, c in runs if c is not None]
    return {"median": round(statistics.median(wall), 3), "min": round(min(wall), 3), "max": round(max(wall), 3),
            "cpu_median": round(statistics.median(cpu), 3) if cpu else None, "runs": [round(w, 3) for w in wall]}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", type=Path, default=Path("/tmp/bench/vault10k-src"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench/mcp-10k"))
    ap.add_argument("--embedder", default="fake", choices=("fake", "none"))
    ap.add_argument("--starts", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--settle", type=float, default=300.0,
                    help="at most this many seconds to wait for the watcher's start-up reconcile")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--against", type=Path, default=None,
                    help="another wikimem source tree (e.g. `git archive <commit>` unpacked): its server's "
                         "start-to-ready is timed in the same rounds, for an A/B under the same load")
    args = ap.parse_args()

    build = prepare(args.src, args.work, args.embedder)
    print(f"cache: {build}", file=sys.stderr)
    starts, bases, others = [], [], []
    runs = [(starts, lambda: anyio.run(start_to_ready, args.work, args.embedder)),
            (bases, lambda: anyio.run(baseline_ready))]
    if args.against:
        runs.append((others, lambda: anyio.run(start_to_ready, args.work, args.embedder, args.against.resolve())))
    for i in range(args.starts):
        for out, run in runs[i % len(runs):] + runs[:i % len(runs)]:  # each variant first in turn
            out.append(run())
    print(f"start-to-ready (wall s, server CPU s): ours {summary(starts)}; bare SDK {summary(bases)}"
          + (f"; {args.against}: {summary(others)}" if others else ""), file=sys.stderr)
    load = [round(x, 2) for x in os.getloadavg()]
    lat, empty, waited = anyio.run(latencies, args.work, args.embedder, args.warmup, args.calls, args.settle)
    ms = [x * 1000 for x in lat]
    result = {
        "benchmark": "mcp stdio", "wikimem": __version__, "python": platform.python_version(),
        "cpus": os.cpu_count(), "embedder": args.embedder, "vault": str(args.work), **build,
        "start_to_ready_s": {**summary(starts), "bare_sdk": summary(bases),
                             **({"against": str(args.against), "against_tree": summary(others)} if others else {})},
        "load_average_after_starts": load,
        "watcher_reconcile_wait_s": round(waited, 2),
        "search_ms": {"calls": len(ms), "p50": round(pct(ms, 0.50), 1), "p95": round(pct(ms, 0.95), 1),
                      "max": round(max(ms), 1), "mean": round(statistics.fmean(ms), 1), "empty_results": empty},
        "command": "flock /tmp/wikimem-heavy.lock python benchmarks/bench_mcp.py " + " ".join(sys.argv[1:]),
    }
    out = HERE / "results" / f"mcp-{args.embedder}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
