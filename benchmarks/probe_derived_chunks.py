"""Probe, not kept (issue 25, session 12): could a chunk's searched vector be derived from its
note passages' vectors, so that a chunk with passages costs no model run of its own?

A build embeds a chunk and, separately, each of its paragraphs and list items (its held
passages). Were the chunk's vector the normalised mean of its passages' vectors, the first build
would embed ~1.3x the vault's text instead of ~2.5x. This swaps the vectors in memory on a built
tldr subset and asks the tldr questions again (nothing is embedded; nothing is saved):

    python benchmarks/tldr.py --embedder e5 --work /tmp/tldr-e5-sub --limit-pages 400   # once
    python benchmarks/probe_derived_chunks.py /tmp/tldr-e5-sub base   # the chunks' own vectors
    python benchmarks/probe_derived_chunks.py /tmp/tldr-e5-sub mean   # mean of the passages

Session 12 (e5 int8, 592 pages, 701 chunks with passages), MRR@10 vector / hybrid, all kinds:
base 0.795 / 0.807; mean 0.789 / 0.763 (hybrid xl-en2zh 0.743 -> 0.441). Not kept.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tldr  # noqa: E402

from wikimem.api import open_vault  # noqa: E402
from wikimem.stores.vectors import HELD_BIT  # noqa: E402


def main() -> None:
    work, variant = Path(sys.argv[1]), sys.argv[2]
    queries = tldr.load_queries(tldr.QUERIES)
    vault = open_vault(work / "vault", embedder="e5")
    vault.index()
    tldr.remember_queries(vault, work / "query-vectors-e5.json")
    cache = vault.cache
    index = cache.vector_store.load(cache.embedder().identity.dim, cache.meta())
    by: dict[int, list[int]] = {}
    for vid, pid in cache.manifest.db.execute("SELECT vid, pid FROM passages"):
        if pid & HELD_BIT:
            by.setdefault(vid, []).append(pid)
    if variant == "mean":
        ids, vecs = [], []
        for vid, pids in by.items():
            got = index.get(pids)
            m = np.stack([got[p] for p in pids]).astype(np.float32).mean(0)
            ids.append(vid)
            vecs.append(m / np.linalg.norm(m))
        index.remove(ids)
        index.add(ids, np.stack(vecs))
    print(f"{len(by)} chunks with passages; variant {variant}", file=sys.stderr)
    results = {mode: tldr.score(queries, vault, mode, []) for mode in ("vector", "hybrid")}
    print(tldr.table(results))


if __name__ == "__main__":
    main()
