"""What time costs a search: ``--as-of`` against a plain search, and ``review`` on a vault of query pages.

A vault of N real tldr pages (notes), a tenth of them in version chains of three (``supersedes``
with ``superseded_on``), and Q query pages filed by ``wikimem query``; then, in one warm process:
plain hybrid searches, as-of searches (the first one builds the timeline from the cache, the
rest reuse it until the cache changes), and ``review`` before and after one cited note is edited.

    python benchmarks/bench_time.py --pages 1000 --queries 20
    python benchmarks/bench_time.py --pages 200 --queries 5 --embedder fake   # a quick check

Writes benchmarks/results/time-<pages>.json. Data: ../shared/datasets/tldr (CC BY 4.0, read in place).
"""
from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from wikimem import __version__
from wikimem.api import open_vault

TLDR = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "tldr" / "pages" / "common"
QUERIES = ["compress a folder", "list files sorted by size", "show network connections", "kill a process by name",
           "download a file over http", "search text in files", "change file permissions", "show disk usage",
           "create a symbolic link", "format a disk"]


def make_vault(root: Path, pages: int) -> list[str]:
    files = sorted(TLDR.glob("*.md"))[:pages]
    paths = []
    for i, src in enumerate(files):
        rel = f"commands/{src.stem}.md"
        text = src.read_text(encoding="utf-8")
        day = f"2026-{1 + i % 12:02d}-{1 + i % 27:02d}"
        front = f"---\ncreated: {day}\n---\n"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(front + text, encoding="utf-8")
        paths.append(rel)
    for i in range(0, len(paths) // 10 * 3, 3):  # chains of three: old -> mid -> new, dated in order
        a, b, c = paths[i:i + 3]
        for old, new, on in ((a, b, "2026-02-01"), (b, c, "2026-03-01")):
            text = (root / old).read_text(encoding="utf-8").replace(
                "---\n", f"---\nstatus: superseded\nsuperseded_by: \"[[{Path(new).stem}]]\"\nsuperseded_on: {on}\n", 1)
            (root / old).write_text(text, encoding="utf-8")
            text = (root / new).read_text(encoding="utf-8").replace(
                "---\n", f"---\nsupersedes: \"[[{Path(old).stem}]]\"\n", 1)
            (root / new).write_text(text, encoding="utf-8")
    (root / "SCHEMA.md").write_text("# Schema\n", encoding="utf-8")
    return paths


def timed(fn, n: int = 1) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def summary(ms: list[float]) -> dict:
    ms = sorted(ms)
    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 1), "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=20, help="query pages filed before review is timed")
    ap.add_argument("--embedder", default="e5")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    ap.add_argument("--work", help="build the vault here and keep it (a re-run reuses its embeddings)")
    args = ap.parse_args()
    if not TLDR.is_dir():
        sys.exit(f"tldr pages not found at {TLDR}")
    with tempfile.TemporaryDirectory(prefix="wm-time-") as tmp:
        root = Path(args.work) if args.work else Path(tmp)
        for old in ("commands", "queries"):  # notes are written anew; the cache keeps the vectors
            shutil.rmtree(root / old, ignore_errors=True)
        for meta in ("index.md", "log.md"):
            (root / meta).unlink(missing_ok=True)
        make_vault(root, args.pages)
        v = open_vault(root, embedder=args.embedder)
        t = time.perf_counter()
        v.index()
        build_s = time.perf_counter() - t
        questions = (QUERIES * (args.queries // len(QUERIES) + 1))[:args.queries]
        for i, q in enumerate(questions):
            v.query(q if i < len(QUERIES) else f"{q} ({i})")
        for q in QUERIES:  # warm: the model, the caches
            v.search(q)
        plain = [m for q in QUERIES * 3 for m in timed(lambda: v.search(q))]
        v.index()  # a fresh cache state: the first as-of search builds the timeline
        first = timed(lambda: v.search(QUERIES[0], as_of="2026-12-31"))[0]
        # every page valid (but the superseded ones): what the timeline and its filter cost
        as_of = [m for q in QUERIES * 3 for m in timed(lambda: v.search(q, as_of="2026-12-31"))]
        # mid-February: most pages not created yet, old versions current: a narrower search
        as_of_past = [m for q in QUERIES * 3 for m in timed(lambda: v.search(q, as_of="2026-02-15"))]
        review_clean = timed(lambda: v.review(), 3)
        cited = v.review().checked
        page = next(iter((root / "queries").glob("*.md")))
        target = next(l for l in page.read_text(encoding="utf-8").splitlines() if "[[commands/" in l and "sha256" in l)
        rel = target.split("[[", 1)[1].split("]]", 1)[0].split("#", 1)[0] + ".md"
        (root / rel).write_text((root / rel).read_text(encoding="utf-8").replace("- ", "- Now: ", 1), encoding="utf-8")
        t = time.perf_counter()
        stale = v.review().stale
        review_after_edit = (time.perf_counter() - t) * 1000
        v.close()
    result = {"benchmark": "time", "wikimem": __version__, "embedder": args.embedder, "pages": args.pages,
              "query_pages": args.queries, "pages_with_sources_checked": cited,
              "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cpus, Python {platform.python_version()}",
              "first_build_s": round(build_s, 1), "search_plain": summary(plain), "search_as_of_first_ms": round(first, 1),
              "search_as_of": summary(as_of), "search_as_of_past": summary(as_of_past), "review_ms": summary(review_clean),
              "review_after_one_edit_ms": round(review_after_edit, 1), "stale_after_edit": len(stale)}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"time-{args.pages}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
