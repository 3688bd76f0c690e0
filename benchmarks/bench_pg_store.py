"""The vault on PostgreSQL against the local stores, same run (issue 38): first build, one-note
edit to searchable, warm search latency.

A tldr-made vault (benchmarks/tldr.py: ``--pages`` pages drawn with a fixed seed beside every
answer page of its queries; read in place from ../shared/datasets/tldr) is built twice from
nothing, on the local stores and on a throwaway PostgreSQL with pgvector (tests/pg_server.py), with
the same embedder; then on each, rounds alternating between the two:

- ``edit_s``: one note rewritten, ``index(paths=[it])`` (what the watcher runs), until a search
  for its new word finds it (the fake embedder ranks nonsense words' trigram neighbours in other
  scripts above it, so "found", not "first");
- ``search_ms``: every tldr query, hybrid, p50/p95 (a warm process: the second pass is timed).

    nice python benchmarks/bench_pg_store.py --pages 170            # e5, the default embedder
    python benchmarks/bench_pg_store.py --pages 170 --embedder fake  # the stores alone

Results: benchmarks/results/pg-store.json (``--out``).
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import tldr  # noqa: E402

from wikimem.api import open_vault  # noqa: E402


def _ms(values: list[float]) -> dict:
    values = sorted(values)
    return {"p50": round(1000 * statistics.median(values), 1),
            "p95": round(1000 * values[min(len(values) - 1, int(0.95 * len(values)))], 1)}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=170, help="pages besides the queries' answers (tldr.py --limit-pages)")
    ap.add_argument("--embedder", default="e5")
    ap.add_argument("--edits", type=int, default=5)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "pg-store.json")
    args = ap.parse_args(argv)

    queries = tldr.load_queries(tldr.QUERIES)
    pages = tldr.wanted_pages(queries, args.pages)
    work = Path(tempfile.mkdtemp(prefix="wm-pg-store-"))
    folder = work / "pg"
    folder.mkdir()
    folder.chmod(0o755)
    work.chmod(0o755)
    from tests.pg_server import start
    server, url = start(folder)
    result: dict = {"pages": len(pages), "embedder": args.embedder, "machine": platform.machine(),
                    "python": platform.python_version(), "stores": {}}
    try:
        vaults = {}
        for store in ("local", "postgres"):
            root = work / store
            tldr.sync_vault(root, pages)
            vault = open_vault(root, embedder=args.embedder, store=store,
                               database_url=url if store == "postgres" else "", vault_id="tldr")
            t0 = time.perf_counter()
            report = vault.index()
            built = time.perf_counter() - t0
            vaults[store] = vault
            result["stores"][store] = {"first_build_s": round(built, 2), "chunks": report.chunks,
                                       "embedded": report.embedded_now, "edit_s": [], "search_ms": None}
            print(f"{store}: first build {built:.1f} s ({report.chunks} chunks, {report.embedded_now} embedded)",
                  flush=True)
        texts = [q["q"] for q in queries]
        targets = sorted(pages)[:args.edits]
        for i, rel in enumerate(targets):
            for store in (("local", "postgres") if i % 2 == 0 else ("postgres", "local")):
                vault = vaults[store]
                word = f"zorblax{i}{store[0]}"
                path = vault.root / rel
                path.write_text(path.read_text(encoding="utf-8") + f"\n\n## Note\n\nThe {word} flag.\n",
                                encoding="utf-8")
                t0 = time.perf_counter()
                vault.index(paths=[rel])
                while rel not in [h.path for h in vault.search(word, limit=10).hits if "lexical" in h.found_by]:
                    if time.perf_counter() - t0 > 60:
                        raise SystemExit(f"{store}: {rel} not searchable after 60 s")
                    time.sleep(0.01)
                result["stores"][store]["edit_s"].append(round(time.perf_counter() - t0, 3))
        for store, vault in vaults.items():
            for text in texts:  # warm-up pass
                vault.search(text, limit=10)
        times: dict[str, list[float]] = {"local": [], "postgres": []}
        for text in texts:
            for store in ("local", "postgres"):
                t0 = time.perf_counter()
                vaults[store].search(text, limit=10)
                times[store].append(time.perf_counter() - t0)
        for store in vaults:
            entry = result["stores"][store]
            entry["search_ms"] = _ms(times[store])
            entry["edit_s_median"] = round(statistics.median(entry["edit_s"]), 3)
            print(f"{store}: edit to searchable median {entry['edit_s_median']} s {entry['edit_s']}; "
                  f"search p50 {entry['search_ms']['p50']} ms, p95 {entry['search_ms']['p95']} ms", flush=True)
        for vault in vaults.values():
            vault.close()
    finally:
        try:
            server.cleanup()
        finally:
            shutil.rmtree(work, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
