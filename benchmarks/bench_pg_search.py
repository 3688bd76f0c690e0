"""One process's PostgreSQL search and edit latency, for a before/after pair under farm-bench (issue 38).

The vault and the database outlive the runs (``--database-url``: a server kept up meanwhile, e.g.
the one bench_pg_pipeline.py keeps in its work folder); ``--tree`` names the checkout whose
``wikimem`` is imported, so two trees are timed on the same rows (give each its own ``--vault-id``:
each builds its own schema, taking its vectors from the database's embedding cache).

    python benchmarks/bench_pg_search.py --tree . --database-url URL --vault DIR --vault-id new --build
    farm-bench -n 5 --vs "python benchmarks/bench_pg_search.py --tree OLD ... --vault-id old" \\
        -- python benchmarks/bench_pg_search.py --tree . ... --vault-id new
    python benchmarks/bench_pg_search.py ... --edits 7    # one-note edit to searchable instead
    python benchmarks/bench_pg_search.py ... --statements  # statements sent per search and per edit

Prints the search p50/p95 (the tldr queries, after one warm search), or the edit median, or with
``--statements`` how many statements one search and one one-note incremental update send to the
server (each ``execute``/``executemany`` of psycopg's cursors counts one: a round trip each),
with the statements sent most often.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

QUERIES = Path(__file__).resolve().parent / "tldr_queries.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, required=True, help="the checkout whose wikimem to import")
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--vault", type=Path, required=True)
    ap.add_argument("--vault-id", required=True)
    ap.add_argument("--embedder", default="e5")
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("--build", action="store_true", help="bring the vault's schema up to date and stop")
    ap.add_argument("--edits", type=int, default=0, help="time this many one-note edits instead of searches")
    ap.add_argument("--statements", action="store_true", help="count the statements of a search and of an edit")
    args = ap.parse_args()
    sys.path.insert(0, str(args.tree.resolve()))
    from wikimem.api import open_vault

    vault = open_vault(args.vault, embedder=args.embedder, store="postgres", database_url=args.database_url,
                       vault_id=args.vault_id)
    if args.build:
        print(vault.index().summary())
    elif args.statements:
        print(json.dumps(_statements(vault, args), indent=1))
    elif args.edits:
        rel = "zz-bench-edit.md"
        seconds = []
        for i in range(args.edits):
            word = f"quokkafrob{i}x{''.join(c for c in args.vault_id if c.isalnum())}"
            (args.vault / rel).write_text(f"# zz bench edit\n\nThe {word} command frobnicates a quokka.\n",
                                          encoding="utf-8")
            started = time.perf_counter()
            vault.index(paths=[rel])
            while rel not in [h.path for h in vault.search(word, limit=10).hits]:
                time.sleep(0.01)
            seconds.append(time.perf_counter() - started)
        (args.vault / rel).unlink()
        vault.index(paths=[rel])
        print(f"edit to searchable median {statistics.median(seconds[1:]):.3f} s {[round(s, 3) for s in seconds]}")
    else:
        queries = [json.loads(line)["q"] for line in QUERIES.read_text(encoding="utf-8").splitlines() if line.strip()]
        vault.search("warm", limit=10)
        ms = []
        for q in queries:
            started = time.perf_counter()
            vault.search(q, limit=10, mode=args.mode)
            ms.append(1000 * (time.perf_counter() - started))
        ms.sort()
        print(f"{args.tree}: {args.mode} p50 {statistics.median(ms):.1f} ms, p95 {ms[int(0.95 * len(ms))]:.1f} ms")
    vault.close()


class _Counter:
    """Statements sent through psycopg's cursors while it is entered (``Connection.execute`` goes
    through ``Cursor.execute``), by their first 100 characters."""

    def __enter__(self):
        import psycopg
        self.sent: list[str] = []
        self._saved = psycopg.Cursor.execute, psycopg.Cursor.executemany
        execute, executemany = self._saved

        def counted_execute(cur, query, *a, **k):
            self.sent.append(str(query)[:100])
            return execute(cur, query, *a, **k)

        def counted_many(cur, query, *a, **k):
            self.sent.append("(many) " + str(query)[:93])
            return executemany(cur, query, *a, **k)
        psycopg.Cursor.execute, psycopg.Cursor.executemany = counted_execute, counted_many
        return self

    def __exit__(self, *exc):
        import psycopg
        psycopg.Cursor.execute, psycopg.Cursor.executemany = self._saved


def _statements(vault, args) -> dict:
    """Statements per hybrid search (each tldr query, after a warm one) and per one-note update."""
    from collections import Counter
    queries = [json.loads(line)["q"] for line in QUERIES.read_text(encoding="utf-8").splitlines() if line.strip()]
    vault.search("warm", limit=10)
    per_search, common = [], Counter()
    for q in queries:
        with _Counter() as c:
            vault.search(q, limit=10, mode=args.mode)
        per_search.append(len(c.sent))
        common.update(c.sent)
    rel = "zz-bench-edit.md"
    (args.vault / rel).write_text("# zz bench edit\n\nThe quokkafrob command frobnicates a quokka.\n", encoding="utf-8")
    vault.index(paths=[rel])
    nonce = f"{time.time_ns():x}"  # a text no run embedded before: the shared embedding cache must miss
    (args.vault / rel).write_text(f"# zz bench edit\n\nThe quokkafrob command frobnicates quokka {nonce}.\n",
                                  encoding="utf-8")
    with _Counter() as edit:
        vault.index(paths=[rel])
    (args.vault / rel).unlink()
    vault.index(paths=[rel])
    return {"tree": str(args.tree), "searches": len(per_search), "per_search_median": statistics.median(per_search),
            "per_search_max": max(per_search), "per_update": len(edit.sent),
            "search_most_sent": [[n, q] for q, n in common.most_common(8)],
            "update_most_sent": [[n, q] for q, n in Counter(edit.sent).most_common(8)]}


if __name__ == "__main__":
    main()
