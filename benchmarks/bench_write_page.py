"""An agent's write_page of a 1 MiB note (issue 28: returns in < 2 s with the default embedder).

    python benchmarks/bench_write_page.py [VAULT] [--mib 1] [--writes 3]

On a copy of examples/ (or VAULT), indexed first, in one long-lived process as an MCP server is
(the model loaded and the cache open by a first search). Each write is a new 1 MiB page of ~1,300
sections; the time is the call's, through the whole writer door: guard, secret scan, the
supersede-candidate check (search + compare), atomic write, log line, lexical index of the page.
Vectors of a page over 64 KB follow with the watcher or the next build (the write does not wait).
"""
from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from wikimem.api import open_vault


def big_text(mib: float, seed: int) -> str:
    rng = random.Random(seed)
    words = "alpha beta gamma delta retrieval ranking vector index graph memory note search".split()
    parts, size, i = [f"# Big page {seed}\n\n"], 0, 0
    while size < mib * 1024 * 1024:
        i += 1
        part = f"## Section {i}\n\n" + " ".join(rng.choice(words) for _ in range(120)) + ".\n\n"
        parts.append(part)
        size += len(part)
    return "".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("vault", nargs="?", type=Path)
    ap.add_argument("--mib", type=float, default=1.0)
    ap.add_argument("--writes", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="wikimem-write-"))
    root = work / "vault"
    shutil.copytree(args.vault or Path(__file__).parent.parent / "examples", root)
    v = open_vault(root)
    v.index()
    v.search("warm up")
    times = []
    for n in range(args.writes):
        text = big_text(args.mib, n)
        t = time.perf_counter()
        result = v.write_page(f"concepts/Big {n}.md", text)
        times.append(time.perf_counter() - t)
        print(f"write_page {len(text.encode()) / 2**20:.2f} MiB #{n}: {times[-1]:.2f} s {result.warnings}")
    print(f"median {statistics.median(times):.2f} s over {len(times)} writes")
    v.close()
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
