"""Warm hybrid search latency of one tree on one store, first pass and second pass (issue 50).

Each of benchmarks/tldr_queries.jsonl's 172 queries is asked once (the first pass: what a serving
process meets, the vectors it keeps not yet read), then all again (the second pass). Run it per
tree and store, alternating, on one vault (e.g. a tldr subset made by ``tldr.py --limit-pages 300``):

    python benchmarks/bench_pg_vs_local.py --tree . --vault DIR --store local
    python benchmarks/bench_pg_vs_local.py --tree . --vault DIR --store postgres --database-url URL --vault-id ID

Prints one JSON line: p50 / p95 in ms for each pass.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

QUERIES = Path(__file__).resolve().parent / "tldr_queries.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, required=True, help="the checkout whose wikimem to import")
    ap.add_argument("--vault", type=Path, required=True)
    ap.add_argument("--store", choices=("local", "postgres"), default="local")
    ap.add_argument("--database-url", default="")
    ap.add_argument("--vault-id", default=None)
    ap.add_argument("--embedder", default="fake")
    args = ap.parse_args()
    sys.path.insert(0, str(args.tree.resolve()))
    from wikimem.api import open_vault
    kw = ({"store": "postgres", "database_url": args.database_url, "vault_id": args.vault_id}
          if args.store == "postgres" else {"store": "local"})
    vault = open_vault(args.vault, embedder=args.embedder, **kw)
    vault.index()
    queries = [json.loads(line)["q"] for line in QUERIES.read_text(encoding="utf-8").splitlines() if line.strip()]
    vault.search("warm up", limit=10)
    out = {"tree": str(args.tree), "store": args.store}
    for name in ("first", "second"):
        ms = []
        for q in queries:
            started = time.perf_counter()
            vault.search(q, limit=10, mode="hybrid")
            ms.append((time.perf_counter() - started) * 1000)
        ms.sort()
        out[name] = {"p50": round(statistics.median(ms), 1), "p95": round(ms[int(0.95 * len(ms))], 1)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
