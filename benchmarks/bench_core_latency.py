"""Warm search and one-note edit latency of one source tree against another, alternated in the same
rounds on the same machine (issue 29: the core inversion must not make either slower).

    python benchmarks/bench_core_latency.py --tree before=/path/to/old/checkout --tree after=. [--rounds 5]

Each tree first indexes its own copy of a generated vault (default 2,000 notes, fake embedder, so
the model's speed does not hide the code path). Each round runs every tree in a fresh process
(``PYTHONPATH`` = the tree): 60 warm hybrid searches (median), then 15 one-note edits, each an appended line and
``Vault.index(paths=[note])`` plus ``embed_pending`` for it (median). Trees alternate within each
round; the medians of the round medians are reported. JSON in benchmarks/results/core-latency.json.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from generate import generate  # noqa: E402

CHILD = r"""
import json, random, statistics, sys, time
from wikimem.api import open_vault
root = sys.argv[1]
v = open_vault(root, embedder="fake")
v.index()
words = "system memory graph search index vector note link page model query cache chunk".split()
rng = random.Random(5)
queries = [" ".join(rng.sample(words, 3)) for _ in range(60)]
v.search(queries[0])
t_search = []
for q in queries:
    t = time.perf_counter(); v.search(q, limit=10); t_search.append(time.perf_counter() - t)
paths = sorted(p for p in v.pages(refresh=False))[:15]
t_edit = []
for i, rel in enumerate(paths):
    with open(v.root / rel, "a", encoding="utf-8") as fh:
        fh.write(f"\nEdited line {i} about zebracorns.\n")
    t = time.perf_counter()
    v.index(paths=[rel], embed=False)
    v.embed_pending(first=[rel])
    t_edit.append(time.perf_counter() - t)
print(json.dumps({"search_ms": statistics.median(t_search) * 1000, "edit_ms": statistics.median(t_edit) * 1000}))
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", action="append", required=True, help="NAME=PATH of a source tree")
    ap.add_argument("--notes", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    trees = [t.split("=", 1) for t in args.tree]
    work = Path(tempfile.mkdtemp(prefix="wikimem-latency-"))
    source = work / "source"
    generate(source, args.notes)
    results: dict[str, list[dict]] = {name: [] for name, _ in trees}
    env = {name: {**os.environ, "PYTHONPATH": str(Path(path).resolve())} for name, path in trees}
    for name, _ in trees:  # each tree indexes its own copy once (cache formats may differ between trees)
        shutil.copytree(source, work / name)
        subprocess.run([sys.executable, "-c", "import sys; from wikimem.api import open_vault; "
                        "open_vault(sys.argv[1], embedder='fake').index()", str(work / name)],
                       env=env[name], check=True, capture_output=True)
    for r in range(args.rounds):
        for name, _ in trees:
            out = subprocess.run([sys.executable, "-c", CHILD, str(work / name)], capture_output=True, text=True,
                                 env=env[name], check=True)
            results[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(name, r, results[name][-1], file=sys.stderr)
    summary = {name: {k: round(statistics.median(x[k] for x in rows), 2) for k in ("search_ms", "edit_ms")}
               for name, rows in results.items()}
    summary["rounds"] = args.rounds
    summary["notes"] = args.notes
    out = Path(__file__).parent / "results" / "core-latency.json"
    out.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
