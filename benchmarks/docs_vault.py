"""Page-level retrieval on documentation nobody here wrote, read offline from this machine (issue 52).

The vault is built in ``--work``/vault from Markdown that installed packages ship (copied to the
work folder only, never into the repo; unchanged files are left alone so the cache is reused):

- ``npm/``: npm's own manual, /usr/lib/node_modules/npm/docs/content (commands/, configuring-npm/,
  using-npm/; npm 11), 91 pages;
- ``undici/``: undici's docs as npm bundles them (node_modules/undici/docs/docs/api and
  best-practices), 32 pages;
- ``pip/``: pip's Markdown pages from Debian's python3-pip (/usr/share/doc/python3-pip/html), 12 pages.

Questions: benchmarks/docs_questions.json, written from the pages before any ranking was looked
at. Each has ``q``, ``lang`` (en / zh; a Chinese question about these English pages is a
cross-language one), ``kind`` (howto, what, diff, para, deep), ``target`` (a vault path) and
optionally ``also`` (other pages that answer it as well). ``split`` is ``tune`` or ``heldout`` by a
fixed hash of the question text (``split_of``): only the tune half may be looked at while tuning.

    python benchmarks/docs_vault.py --index-only                    # build (first run embeds, ~minutes)
    python benchmarks/docs_vault.py --split tune --detail /tmp/d.json  # tuning half, per-query ranks
    python benchmarks/docs_vault.py --split heldout --mode hybrid   # the held-out half (report only)
    python benchmarks/docs_vault.py --set priors.SHORT_CHARS=0      # a constant, as tldr.py
    python benchmarks/docs_vault.py --split all --latency            # warm p50/p95, queries embedded
"""
from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
import time
from pathlib import Path

from tldr import MODES, override, remember_queries, settle, sync_vault, table  # benchmarks/ is the script's folder

from wikimem import __version__
from wikimem.api import open_vault

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "docs_questions.json"
NPM = Path("/usr/lib/node_modules/npm")
SOURCES = {  # vault folder -> (source folder, glob)
    "npm": (NPM / "docs" / "content", "**/*.md"),
    "undici": (NPM / "node_modules" / "undici" / "docs" / "docs", "*/*.md"),
    "pip": (Path("/usr/share/doc/python3-pip/html"), "**/*.md"),
}


def split_of(question: str) -> str:
    """``tune`` or ``heldout``, fixed by the question's text (sha1's first byte, even: tune)."""
    return "tune" if hashlib.sha1(question.encode("utf-8")).digest()[0] % 2 == 0 else "heldout"


def vault_pages() -> dict[str, Path]:
    pages: dict[str, Path] = {}
    for folder, (src, pattern) in SOURCES.items():
        if not src.is_dir():
            sys.exit(f"{src} is not on this machine: this set needs npm 11 (Node.js) and Debian's python3-pip docs")
        for path in sorted(src.glob(pattern)):
            pages[f"{folder}/{path.relative_to(src).as_posix()}"] = path
    return pages


def score(queries: list[dict], vault, mode: str, detail: list[dict]) -> dict[str, dict]:
    groups: dict[str, list[int | None]] = {}
    times = []
    for item in queries:
        t = time.perf_counter()
        hits = vault.search(item["q"], limit=10, mode=mode).hits
        times.append((time.perf_counter() - t) * 1000)
        paths = [h.path for h in hits]
        answers = {item["target"], *item.get("also", ())}
        rank = next((i for i, p in enumerate(paths, 1) if p in answers), None)
        for key in (f"{item['lang']}-{item['kind']}", item["lang"], "all"):
            groups.setdefault(key, []).append(rank)
        detail.append({"mode": mode, "lang": item["lang"], "kind": item["kind"], "split": item["split"],
                       "q": item["q"], "target": item["target"], "rank": rank, "top": paths[:3]})
    out = {}
    for key, ranks in sorted(groups.items()):
        n = len(ranks)
        out[key] = {"n": n, "hit@1": round(sum(r == 1 for r in ranks) / n, 3),
                    "hit@5": round(sum(r is not None and r <= 5 for r in ranks) / n, 3),
                    "mrr@10": round(sum(1 / r for r in ranks if r) / n, 3)}
    times.sort()
    out["all"]["p50_ms"] = round(times[len(times) // 2], 1)
    out["all"]["p95_ms"] = round(times[min(len(times) - 1, int(len(times) * 0.95))], 1)
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/wikimem-docs"))
    ap.add_argument("--embedder", default="e5")
    ap.add_argument("--mode", choices=MODES + ("all",), default="hybrid")
    ap.add_argument("--split", choices=("tune", "heldout", "all"), default="tune")
    ap.add_argument("--lang", choices=("en", "zh"), default=None)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--detail", type=Path, default=None)
    ap.add_argument("--label", default="")
    ap.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE")
    ap.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--index-only", action="store_true")
    ap.add_argument("--latency", action="store_true",
                    help="embed every query for real (no memo) after one warm-up search: p50/p95 are warm latency")
    args = ap.parse_args(argv)

    spec = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    queries = spec["questions"]
    for q in queries:
        q["split"] = split_of(q["q"])
    pages = vault_pages()
    missing = sorted({a for q in queries for a in (q["target"], *q.get("also", ()))} - set(pages))
    if missing:
        sys.exit(f"answers not in the vault: {missing}")
    queries = [q for q in queries if (args.split == "all" or q["split"] == args.split)
               and (args.lang is None or q["lang"] == args.lang)]
    root = args.work / "vault"
    sync_vault(root, pages)
    for item in args.set:
        override(item)
    vault = open_vault(root, embedder=args.embedder, **dict(settle(kv) for kv in args.setting))
    started = time.monotonic()
    report = vault.index()
    build_s = round(time.monotonic() - started, 1)
    print(f"indexed {len(pages)} pages in {build_s}s: {report.summary()}", file=sys.stderr)
    if args.index_only:
        vault.close()
        return {}
    if args.latency:
        vault.search("warm up the model and the caches", limit=10)
    else:
        remember_queries(vault, args.work / f"query-vectors-{args.embedder}.json")
    modes = MODES if args.mode == "all" else (args.mode,)
    detail: list[dict] = []
    results = {mode: score(queries, vault, mode, detail) for mode in modes}
    vault.close()
    print(table(results))
    doc = {"label": args.label, "overrides": args.set + args.setting, "embedder": args.embedder,
           "pages": len(pages), "queries": len(queries), "split": args.split, "wikimem": __version__,
           "python": platform.python_version(), "results": results,
           "command": "python benchmarks/docs_vault.py " + " ".join(sys.argv[1:] if argv is None else argv)}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.detail:
        args.detail.write_text(json.dumps(detail, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return doc


if __name__ == "__main__":
    main()
