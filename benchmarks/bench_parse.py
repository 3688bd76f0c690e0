"""Parse + chunk throughput on one core (issue: >= 1,000 notes/s at ~2 KB per note).

    python benchmarks/bench_parse.py --notes 10000

Reads every note from disk, parses it (frontmatter, markdown structure, links, tags), resolves
links across the vault and chunks every page, in one process (one core).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from generate import generate  # noqa: E402

from wikimem.api import open_vault  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--vault", type=Path, help="reuse an existing generated vault")
    args = ap.parse_args()
    root = args.vault or generate(Path(tempfile.mkdtemp(prefix="wm-bench-")) / "vault", args.notes)
    os.sched_setaffinity(0, {0}) if hasattr(os, "sched_setaffinity") else None
    vault = open_vault(root, embedder="none")
    sizes = [f.size for f in vault.files.scan().notes]
    t0 = time.perf_counter()
    loaded = vault.load()
    t1 = time.perf_counter()
    n_chunks = sum(len(vault.chunks(p)) for p in loaded.pages.values())
    t2 = time.perf_counter()
    n = len(loaded.pages)
    print(f"notes: {n}  mean size: {sum(sizes) / len(sizes):.0f} B  links: {sum(len(p.links) for p in loaded.pages.values())}"
          f"  chunks: {n_chunks}")
    print(f"read+parse+resolve: {t1 - t0:.2f} s  chunk: {t2 - t1:.2f} s  total: {t2 - t0:.2f} s")
    print(f"throughput: {n / (t2 - t0):.0f} notes/s on one core")


if __name__ == "__main__":
    main()
