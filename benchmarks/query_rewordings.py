"""Does asking the same question again in other words update the first query page (issue 36 part 2)?

    python benchmarks/query_rewordings.py --embedder fake                        # quick, lexical signal only
    nice -n 10 python benchmarks/query_rewordings.py --label after               # e5, the real figure
    nice -n 10 python benchmarks/query_rewordings.py --label before --no-quote-check   # the rule before
    nice -n 10 python benchmarks/query_rewordings.py --dev --label after         # the development set

End to end through ``Vault.query`` (what ``wikimem query`` calls: answer, then write-back) on a
vault built from the tldr pages the way benchmarks/tldr.py builds one (``en/<section>/<cmd>.md``
and ``zh/<section>/<cmd>.md``, read in place from ../shared/datasets/tldr, never copied into the
repo): the pages the pairs are about, their translations, and a seeded sample of other pages
(``--limit-pages``). For each pair of benchmarks/query_rewordings.json the first question is asked,
then the second, and the second either updated the first's page (merged) or filed a page of its
own. Before each pair the vault is put back as it was (queries/ emptied, index.md and log.md
restored, the cache brought up to date), so pairs do not interact.

Scores, overall and per language (en, zh, cross = one English and one Chinese question):
rewordings merged (recall), look-alikes kept apart, and the precision of merging (merged
rewordings / all merges). A pair whose first or second question got no answer files no page; it
counts as not merged. Per pair, the inputs of the rule are kept for reading: the two questions'
cosine (the vault's embedder), term overlap, shared citations, same first page / first chunk.

``--dev``: the development set instead, benchmarks/question_pairs.json (the calibration pairs) on a
copy of examples/ without its query pages; the rule was chosen on it and on reading the tldr
answers, so the tldr figures are not a clean held-out measure (see benchmarks/README.md).

Results: benchmarks/results/query-rewordings.json, one entry per ``<embedder> <label>`` (a run
replaces only its own entry). The work folder is kept (``--work``; default
/tmp/wikimem-rewordings-<embedder>): its cache keeps the embeddings, so only the first run embeds.
"""
from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import tldr  # benchmarks/tldr.py: the vault is built the same way

from wikimem import __version__
from wikimem.api import open_vault

PAIRS = HERE / "query_rewordings.json"
OUT = HERE / "results" / "query-rewordings.json"
KEEP = ("index.md", "log.md")  # files the write-back edits besides queries/


def dev_pairs() -> list[dict]:
    """benchmarks/question_pairs.json (the calibration pairs) in this script's form, for the
    examples/ vault: a development set apart from the tldr pairs."""
    pairs = json.loads((HERE / "question_pairs.json").read_text(encoding="utf-8"))["pairs"]
    han = re.compile(r"[\u3400-\u9fff]")
    out = []
    for n, (a, b, label) in enumerate(pairs, 1):
        langs = {bool(han.search(a)), bool(han.search(b))}
        out.append({"id": f"q{n:02d}", "kind": "rewording" if label == "same" else "look-alike",
                    "lang": "cross" if len(langs) == 2 else ("zh" if True in langs else "en"), "a": a, "b": b})
    return out


def vault_pages(pairs: list[dict], limit: int | None) -> dict[str, Path]:
    """The pages the pairs are about (English; their Chinese translations come with them) and a
    seeded sample of ``limit`` others, chosen by tldr.wanted_pages."""
    about = sorted({p for pair in pairs for p in pair["about"]})
    return tldr.wanted_pages([{"kind": "en-howto", "target": "en/" + p + ".md"} for p in about], limit)


class Reset:
    """Puts the vault back as it was after indexing: no queries/, index.md and log.md as they were."""

    def __init__(self, root: Path):
        self.root = root
        self.saved = {name: (root / name).read_bytes() if (root / name).exists() else None for name in KEEP}

    def __call__(self, vault) -> None:
        shutil.rmtree(self.root / "queries", ignore_errors=True)
        for name, data in self.saved.items():
            path = self.root / name
            if data is None:
                path.unlink(missing_ok=True)
            elif not path.exists() or path.read_bytes() != data:
                path.write_bytes(data)
        vault.index()


def features(vault, a, b) -> dict:
    """What the rule sees: the two questions' cosine and terms, the two answers' citations."""
    from wikimem.qa import writeback as wb

    names = wb._names(vault.ctx)
    overlap = wb._jaccard(wb.question_terms(a.question, names), wb.question_terms(b.question, names))
    la, lb = [c.link for c in a.citations], [c.link for c in b.citations]
    qa, qb = wb.quotes(a.text), wb.quotes(b.text)
    out = {"terms": round(overlap, 3), "shared_citations": round(wb._jaccard(set(la), set(lb)), 3),
           "shared_quotes": round(wb._jaccard(qa, qb), 3),
           "quotes_contained": round(len(qa & qb) / min(len(qa), len(qb)), 3) if qa and qb else 0.0,
           "same_first_page": bool(la and lb) and wb._page_of(la[0]) == wb._page_of(lb[0]),
           "same_first_chunk": bool(la and lb) and (a.citations[0].link, a.citations[0].chunk_sha256)
           == (b.citations[0].link, b.citations[0].chunk_sha256),
           "first_a": la[0] if la else None, "first_b": lb[0] if lb else None}
    embedder = vault.ctx.cache.embedder()
    if embedder is not None:
        out["cosine"] = round(float(embedder.embed_query(a.question) @ embedder.embed_query(b.question)), 4)
    return out


def rates(rows: list[dict]) -> dict:
    rew = [r for r in rows if r["kind"] == "rewording"]
    look = [r for r in rows if r["kind"] == "look-alike"]
    merged_rew = sum(r["merged"] for r in rew)
    merged_look = sum(r["merged"] for r in look)
    return {"rewordings": len(rew), "rewordings_merged": merged_rew,
            "recall": round(merged_rew / len(rew), 3) if rew else None,
            "look_alikes": len(look), "look_alikes_apart": len(look) - merged_look,
            "apart_rate": round((len(look) - merged_look) / len(look), 3) if look else None,
            "merge_precision": round(merged_rew / (merged_rew + merged_look), 3) if merged_rew + merged_look else None,
            "unanswered": sum(not r["filed"] for r in rows)}


def table(summary: dict) -> str:
    lines = ["| lang | rewordings merged | look-alikes kept apart | merge precision | unanswered |",
             "|---|---|---|---|---|"]
    for lang, s in summary.items():
        prec = "-" if s["merge_precision"] is None else f"{s['merge_precision']:.2f}"
        lines.append(f"| {lang} | {s['rewordings_merged']}/{s['rewordings']} | "
                     f"{s['look_alikes_apart']}/{s['look_alikes']} | {prec} | {s['unanswered']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--embedder", default="e5")
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--limit-pages", type=int, default=400, help="other tldr pages beside the pairs' own")
    ap.add_argument("--pairs", type=Path, default=PAIRS)
    ap.add_argument("--dev", action="store_true",
                    help="the development set instead: question_pairs.json on a copy of examples/ (no queries/)")
    ap.add_argument("--only", action="append", help="only these pair ids (repeatable)")
    ap.add_argument("--label", default="", help="a name for this variant of the rule, kept in the results")
    ap.add_argument("--no-quote-check", action="store_true",
                    help="the rule as it was before issue 36 part 2: two extractive answers quoting different "
                         "sentences do not keep the questions apart (measurement only)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)

    work = args.work or Path(f"/tmp/wikimem-rewordings-{args.embedder}" + ("-dev" if args.dev else ""))
    root = work / "vault"
    if args.dev:
        pairs = dev_pairs()
        examples = HERE.parent / "examples"
        pages = {p.relative_to(examples).as_posix(): p for p in sorted(examples.rglob("*.md"))
                 if p.relative_to(examples).parts[0] not in (".wikimem", "queries")}
    else:
        pairs = json.loads(args.pairs.read_text(encoding="utf-8"))["pairs"]
        pages = vault_pages(pairs, args.limit_pages)
        for name in KEEP:  # a run stopped half-way leaves what its last pair wrote
            (root / name).unlink(missing_ok=True)
    tldr.sync_vault(root, pages)  # (removes a queries/ a run stopped half-way left)
    if args.only:
        pairs = [p for p in pairs if p["id"] in args.only]
    if args.no_quote_check:
        from wikimem.qa import writeback
        writeback._say_other_things = lambda *_: False
    vault = open_vault(root, embedder=args.embedder)
    started = time.monotonic()
    report = vault.index()
    print(f"indexed {len(pages)} pages in {time.monotonic() - started:.0f}s: {report.summary()}", file=sys.stderr)
    reset = Reset(root)
    rows = []
    for pair in pairs:
        reset(vault)
        a = vault.query(pair["a"])
        b = vault.query(pair["b"])
        filed = bool(a.page and b.page)
        merged = filed and b.page == a.page and b.page_status == "updated"
        right = merged if pair["kind"] == "rewording" else not merged
        row = {"id": pair["id"], "kind": pair["kind"], "lang": pair["lang"],  # the questions: by id in the pairs
               "filed": filed, "merged": merged, "right": right, "b_status": b.page_status, "matched": b.matched,
               **features(vault, a, b)}
        rows.append(row)
        print(f"{'ok  ' if right else 'MISS'} {pair['id']} {pair['kind']:10} {'merged' if merged else 'apart ':6} "
              f"cos={row.get('cosine', '-')} terms={row['terms']} cites={row['shared_citations']} "
              f"chunk={'=' if row['same_first_chunk'] else ('p' if row['same_first_page'] else '≠')}  "
              f"{pair['a']} | {pair['b']}" + ("" if filed else "  (no answer)"), flush=True)
    reset(vault)
    vault.close()
    summary = {"all": rates(rows)}
    for lang in sorted({r["lang"] for r in rows}, key=["en", "zh", "cross"].index):
        summary[lang] = rates([r for r in rows if r["lang"] == lang])
    print(table(summary))
    key = f"{'dev ' if args.dev else ''}{args.embedder} {args.label}".strip()
    saved = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    saved[key] = {"set": "dev: question_pairs.json on examples/" if args.dev else "query_rewordings.json on tldr",
                  "embedder": args.embedder, "label": args.label, "pages": len(pages),
                  "limit_pages": args.limit_pages, "pairs": len(rows), "wikimem": __version__,
                  "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
                  "command": "python benchmarks/query_rewordings.py " + " ".join(sys.argv[1:] if argv is None else argv),
                  "summary": summary, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dump(saved), encoding="utf-8")
    return saved[key]


def dump(saved: dict) -> str:
    """The results as JSON, a pair's row on one line."""
    marks = {k: f"@rows {k}@" for k in saved}
    text = json.dumps({k: {**v, "rows": marks[k]} for k, v in saved.items()}, indent=1, ensure_ascii=False,
                      sort_keys=True)
    for k, v in saved.items():
        rows = ",\n".join(json.dumps(r, ensure_ascii=False, sort_keys=True, separators=(",", ":")) for r in v["rows"])
        text = text.replace(json.dumps(marks[k], ensure_ascii=False), "[\n" + rows + "\n]")
    return text + "\n"


if __name__ == "__main__":
    main()
