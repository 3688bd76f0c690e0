"""Graph commands on a generated 10,000-note vault (issue 15: communities < 3 s including the
graph load, stats < 1 s, neighbors < 100 ms).

    flock /tmp/wikimem-heavy.lock python benchmarks/bench_graph.py [--vault /tmp/bench/graph-10k] [--runs 5]

The vault is a copy of /tmp/bench/vault10k-src (made on first use) indexed with ``embedder none``
(the graph needs no vectors). Timed in process, medians over ``--runs``:

- communities_cold: ``detect(reuse=False)``: read the pages and edges from the manifest, build the
  graph, Leiden, hubs, labels, bridges (what a first run, or a run after an edit, costs);
- communities_warm: ``detect()`` when the stored result matches the graph (reads the graph and
  checks its fingerprint, then reuses the result);
- leiden_only: the Leiden call alone, igraph's implementation (used) and leidenalg's (one run);
- stats: ``Vault.stats``: warm (the counts and communities kept for this cache state, i.e. asked
  again before the next build), and cold (nothing kept: the first ask after a build), one call
  with and one without community detection (each timed alone);
- neighbors depth 1 and 2 (fan-out 20) and path, over 25 pages drawn with a fixed seed;
- cli_communities: ``wikimem communities --json`` as a subprocess (interpreter start and imports
  included), warm.
JSON in benchmarks/results/graph-10k.json.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from generate import source_vault  # noqa: E402

from wikimem.api import open_vault
from wikimem.graph import communities as C
from wikimem.graph.neighbors import neighbors, path
from wikimem.graph.pagegraph import load_page_graph
from wikimem.graph.stats import RESULT_FILE as STATS_FILE, stats


def timed(fn, runs: int) -> tuple[list[float], object]:
    times, result = [], None
    for _ in range(runs):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return times, result


def summary(times: list[float]) -> dict:
    return {"median": round(statistics.median(times), 3), "runs": [round(x, 3) for x in times]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default="/tmp/bench/vault10k-src")
    ap.add_argument("--vault", default="/tmp/bench/graph-10k")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-leidenalg", action="store_true", help="skip the (slow) leidenalg comparison")
    ap.add_argument("--no-cli", action="store_true", help="skip the subprocess runs")
    args = ap.parse_args()
    root = Path(args.vault)
    if not root.exists():
        shutil.copytree(source_vault(Path(args.src)), root)
    v = open_vault(root, embedder="none")
    t = time.perf_counter()
    report = v.index(embed=False)
    print(f"cache: {report.summary()} ({time.perf_counter() - t:.1f} s)", file=sys.stderr)
    out: dict = {"vault": str(root), "runs": args.runs, "load_average": os.getloadavg()}

    times, result = timed(lambda: C.detect(v.ctx, reuse=False), args.runs)
    out["communities_cold_s"] = summary(times)
    out["communities"] = {"pages": result.pages, "edges": result.edges, "count": len(result.communities),
                          "sizes": [c.size for c in result.communities][:20], "quality": result.quality}
    times, _ = timed(lambda: C.detect(v.ctx), args.runs)
    out["communities_warm_s"] = summary(times)
    times, _ = timed(lambda: load_page_graph(v.ctx), args.runs)
    out["graph_load_s"] = summary(times)

    graph = load_page_graph(v.ctx)
    a, b, w = graph.undirected()
    edges, weights = list(zip(a.tolist(), b.tolist())), w.tolist()
    times, _ = timed(lambda: C._leiden(len(graph.paths), edges, weights, 1.0, 42), args.runs)
    out["leiden_igraph_s"] = summary(times)
    if not args.no_leidenalg:
        import igraph
        import leidenalg
        g = igraph.Graph(n=len(graph.paths), edges=edges, directed=False)
        g.es["weight"] = weights
        t = time.perf_counter()
        part = leidenalg.find_partition(g, leidenalg.RBConfigurationVertexPartition, weights="weight",
                                        resolution_parameter=1.0, seed=42)
        out["leiden_leidenalg_s"] = {"one_run": round(time.perf_counter() - t, 3),
                                     "communities": len(set(part.membership)),
                                     "modularity": round(g.modularity(part.membership, weights="weight"), 4)}

    times, _ = timed(lambda: stats(v.ctx), args.runs)
    out["stats_warm_s"] = summary(times)

    def clear():
        for name in (C.RESULT_FILE, STATS_FILE):
            (v.cache.dir / name).unlink(missing_ok=True)

    def cold(communities: bool):
        def run():
            clear()
            t = time.perf_counter()
            stats(v.ctx, communities=communities)
            return time.perf_counter() - t
        return summary([run() for _ in range(args.runs)])

    # one call each, nothing kept: what the first `wikimem stats` after a build costs in process
    out["stats_cold_without_communities_s"] = cold(False)
    out["stats_cold_with_communities_s"] = cold(True)

    rng = random.Random(15)
    sample = rng.sample(list(graph.paths), 25)
    for depth in (1, 2):
        per = [timed(lambda p=p: neighbors(v.ctx, p, depth=depth), 1)[0][0] for p in sample]
        out[f"neighbors_depth{depth}_ms"] = {"median": round(statistics.median(per) * 1000, 2),
                                             "max": round(max(per) * 1000, 2)}
    per = [timed(lambda p=p, q=q: path(v.ctx, p, q), 1)[0][0] for p, q in zip(sample, sample[1:])]
    out["path_ms"] = {"median": round(statistics.median(per) * 1000, 2), "max": round(max(per) * 1000, 2)}

    cli = []
    for _ in range(0 if args.no_cli else args.runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "wikimem.cli", "communities", str(root), "--json"], check=True,
                       stdout=subprocess.DEVNULL)
        cli.append(time.perf_counter() - t)
    if cli:
        out["cli_communities_warm_s"] = summary(cli)
    out["load_average_after"] = os.getloadavg()

    dest = Path(__file__).parent / "results" / "graph-10k.json"
    dest.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
