"""``related`` and ``recent`` on a generated 10,000-note vault (issue 30: related p50 <= 30 ms at 10k
notes for a process following the open note; recent < 0.5 s at 10k notes).

    python benchmarks/bench_related_recent.py [--notes 10000] [--runs 30] [--dim 384]

The vault is generated (benchmarks/generate.py) and indexed once with the deterministic fake
embedder widened to ``--dim`` dimensions (the default model's 384: the matrix work is what it would
be; embedding 10k notes with the real model would take most of an hour and is not what is timed).
Timed in one process, as an MCP server or editor integration would call them:

- related_cold: the first call after a build (every page's vector computed from the index);
- related_warm: p50/p95 over ``--runs`` pages drawn with a fixed seed (the page matrix kept);
- recent: p50/p95 of ``Vault.recent("7d")`` (reads the manifest and log.md; the lexical side is
  brought up to date first, which with nothing changed is the incremental scan's stat pass), and
  recent_served: the same read without that refresh, as a process with a watcher answers (every
  one of the 10k generated notes was written in the window: the worst case).
- cli_related: ``wikimem related PAGE --json`` as a subprocess, once (interpreter start included).
JSON in benchmarks/results/related-recent-10k.json.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from generate import generate  # noqa: E402

from wikimem.api import open_vault  # noqa: E402


def pct(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vault", type=Path, default=Path("/tmp/bench/related-10k"))
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--dim", type=int, default=384)
    args = ap.parse_args()

    import wikimem.embed.fake as fake
    original = fake.FakeEmbedder.__init__
    fake.FakeEmbedder.__init__ = lambda self, dim=args.dim: original(self, dim)  # the default model's width

    if not (args.vault / ".wikimem").exists():
        generate(args.vault, args.notes)
        t = time.perf_counter()
        v = open_vault(args.vault, embedder="fake")
        v.index()
        print(f"indexed {args.notes} notes in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        v.close()
    v = open_vault(args.vault, embedder="fake")
    pages = sorted(p for p in v.ctx.cache.db.execute("SELECT path FROM files WHERE note=1").fetchall())
    rng = random.Random(3)
    chosen = [p[0] for p in rng.sample(pages, args.runs)]
    t = time.perf_counter()
    first = v.related(chosen[0])
    cold = time.perf_counter() - t
    warm = []
    for page in chosen:
        t = time.perf_counter()
        report = v.related(page)
        warm.append(time.perf_counter() - t)
        assert report.related, report
    from wikimem.agent.recent import recent as recent_changes
    recent, served = [], []
    for _ in range(max(5, args.runs // 3)):
        t = time.perf_counter()
        changes = v.recent("7d")
        recent.append(time.perf_counter() - t)
        t = time.perf_counter()
        recent_changes(v.ctx, "7d", refresh=False)  # what a process with a watcher does: the cache is current
        served.append(time.perf_counter() - t)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "wikimem.cli", "related", chosen[1], "-V", str(args.vault), "--json"],
                   check=True, capture_output=True, env={**__import__("os").environ, "WIKIMEM_EMBEDDER": "fake"})
    cli = time.perf_counter() - t
    result = {"notes": len(pages), "dim": args.dim, "related_cold_ms": round(cold * 1000, 1),
              "related_warm_p50_ms": pct(warm, 0.5), "related_warm_p95_ms": pct(warm, 0.95),
              "recent_p50_ms": pct(recent, 0.5), "recent_p95_ms": pct(recent, 0.95),
              "recent_served_p50_ms": pct(served, 0.5), "recent_served_p95_ms": pct(served, 0.95), "recent_total": changes.total,
              "cli_related_s": round(cli, 2), "example": first.to_dict()["related"][:2],
              "median_related_ms": round(1000 * statistics.median(warm), 2)}
    out = Path(__file__).parent / "results" / "related-recent-10k.json"
    out.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
