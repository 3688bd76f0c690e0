"""`wikimem compile` on real documents nobody here wrote: the tldr-pages (../shared/datasets/tldr,
English, common + linux; read in place, copied only into the work folder, never into the repo),
issue 49.

    python benchmarks/bench_compile.py                       # 200 pages drawn with seed 7
    python benchmarks/bench_compile.py --docs 60 --list      # print the created pages (for labelling)

Steps, each timed: a fresh vault (``wikimem init``), ``ingest`` of the drawn pages (embedder none: no
vectors are needed to compile), ``compile``; then the figures: pages created and updated, sentences
written, **citation validity** (each compiled sentence found verbatim, whitespace aside, in a chunk of
the raw/ file it cites whose sha256 the page's ``sources`` records: must be 100 %), **entity precision**
on the hand-labelled created pages (benchmarks/compile_labels.json: title -> true when the page names
a real entity or concept of the corpus, false for a stop word, a heading fragment, a date or a
sentence opener; labelled by reading each page; the ``dev`` half was looked at while the name rules
were written, the ``heldout`` half only after), compile time per source, a second compile (must
change 0 bytes), and an incremental compile after one cited source changes (only pages citing it
may change).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import platform
import random
import re
import shutil
import sys
import time
from pathlib import Path

from wikimem.api import init_vault, open_vault
from wikimem.qa.answer import chunk_hash

HERE = Path(__file__).resolve().parent
DATA = next((p / "shared" / "datasets" / "tldr" / "pages" for p in Path(__file__).resolve().parents
             if (p / "shared" / "datasets" / "tldr" / "pages").is_dir()), Path("/work/shared/datasets/tldr/pages"))
LABELS = HERE / "compile_labels.json"
_CITED = re.compile(r"^- (.+) \[\[(raw/[^\]#|]+)(?:#[^\]]*)?\]\]$", re.M)


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".wikimem" not in p.relative_to(root).parts}


def draw(n: int, seed: int) -> list[Path]:
    files = sorted(p for section in ("common", "linux") for p in (DATA / section).glob("*.md"))
    names: dict[str, Path] = {}
    for p in files:
        names.setdefault(p.name, p)  # one page per command name
    return sorted(random.Random(seed).sample(sorted(names.values()), n))


def citations(v, root: Path, pages: list[str]) -> tuple[int, int, list[str]]:
    """(sentences checked, found, the failures)."""
    checked = ok = 0
    bad = []
    chunks: dict[str, list] = {}
    for rel in pages:
        text = (root / rel).read_text(encoding="utf-8")
        recorded = set(re.findall(r"sha256:([0-9a-f]{64})", text.split("\n---\n", 1)[0]))
        section = text.split("<!-- wikimem:begin compiled", 1)[-1].split("<!-- wikimem:end compiled", 1)[0]
        for sentence, target in _CITED.findall(section):
            checked += 1
            if target not in chunks:
                chunks[target] = [c.text for c in v.chunks(v.parse_file(target + ".md"))]
            said = " ".join(sentence.split())
            if any(said in " ".join(c.split()) and chunk_hash(c) in recorded for c in chunks[target]):
                ok += 1
            else:
                bad.append(f"{rel}: {sentence!r} [[{target}]]")
    return checked, ok, bad


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--work", default="/tmp/wikimem-bench-compile")
    ap.add_argument("--list", action="store_true", help="print each created page's title and first sentences")
    args = ap.parse_args()
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    (work / "in").mkdir(parents=True)
    docs = draw(args.docs, args.seed)
    for p in docs:
        shutil.copy2(p, work / "in" / p.name)
    root = work / "vault"
    init_vault(root)
    v = open_vault(root, embedder="none")
    t = time.perf_counter()
    report = v.ingest(sorted(str(p) for p in (work / "in").iterdir()))
    ingest_s = time.perf_counter() - t
    refused = [i.message for i in report.items if i.status == "failed"]  # e.g. a secret-like URL: refused
    t = time.perf_counter()
    compiled = v.compile()
    compile_s = time.perf_counter() - t
    created = [p for p in compiled.pages if p.status == "created"]
    updated = [p for p in compiled.pages if p.status == "updated"]
    written = [p.path for p in created + updated]
    checked, ok, bad = citations(v, root, written)
    if args.list:
        for p in created:
            text = (root / p.path).read_text(encoding="utf-8")
            first = [s for s, _ in _CITED.findall(text)][:2]
            print(f"{p.title!r}: {p.sentences} sentences, {len(p.sources)} sources | " + " / ".join(first))
    before = tree(root)
    t = time.perf_counter()
    second = v.compile()
    second_s = time.perf_counter() - t
    after = tree(root)
    changed_twice = sum(1 for k in set(before) | set(after) if before.get(k) != after.get(k))
    # one cited source changes: its first cited sentence gets one more word
    cited_by: dict[str, set[str]] = {}
    for rel in written:
        for target in set(re.findall(r"\[\[(raw/[^\]#|]+)", (root / rel).read_text(encoding="utf-8"))):
            cited_by.setdefault(target + ".md", set()).add(rel)
    source = max(sorted(cited_by), key=lambda s: (len(cited_by[s]) == 1, -len(cited_by[s])))  # a source few cite
    raw = root / source
    text = raw.read_text(encoding="utf-8")
    sentence = next(s for rel in sorted(cited_by[source]) for s, tgt in
                    _CITED.findall((root / rel).read_text(encoding="utf-8")) if tgt + ".md" == source)
    raw.chmod(0o644)
    raw.write_text(text.replace(sentence.rstrip(".:"), sentence.rstrip(".:") + " quickly", 1), encoding="utf-8")
    t = time.perf_counter()
    third = v.compile()
    incremental_s = time.perf_counter() - t
    rewritten = sorted(p.path for p in third.changed)
    final = tree(root)
    changed_files = sorted(k for k in set(after) | set(final) if after.get(k) != final.get(k))
    only_citing = set(rewritten) <= cited_by[source]
    labels = json.loads(LABELS.read_text(encoding="utf-8")) if LABELS.exists() else {}
    titles = {p.title for p in created}
    precision = {}
    for half in ("dev", "heldout_seed11", "heldout"):
        marks = [bool(ok_) for title, ok_ in labels.get(half, {}).get("labels", {}).items() if title in titles]
        precision[half] = {"labelled": len(marks), "precision": round(sum(marks) / len(marks), 3) if marks else None}
    every = {t: o for h in ("dev", "heldout_seed11", "heldout") for t, o in labels.get(h, {}).get("labels", {}).items()}
    marks = [bool(o) for t_, o in every.items() if t_ in titles]
    precision["any_label"] = {"labelled": len(marks), "precision": round(sum(marks) / len(marks), 3) if marks else None,
                              "unlabelled": sorted(titles - set(every))}
    out = {
        "corpus": f"tldr-pages English common+linux, {len(docs)} pages drawn with seed {args.seed}",
        "ingest_refused": refused,
        "machine": platform.processor() or platform.machine(), "python": platform.python_version(),
        "ingest_s": round(ingest_s, 2), "compile_s": round(compile_s, 2),
        "compile_ms_per_source": round(1000 * compile_s / len(docs), 1),
        "sources_read": len(compiled.sources), "pages_created": len(created), "pages_updated": len(updated),
        "sentences_written": sum(p.sentences for p in created + updated),
        "citation_validity": {"checked": checked, "found": ok, "rate": round(ok / checked, 4) if checked else None,
                              "failures": bad[:5]},
        "entity_precision": precision,
        "contradictions_held": len(compiled.contradictions),
        "second_compile_s": round(second_s, 2), "second_compile_files_changed": changed_twice,
        "second_compile_pages_written": len(second.changed),
        "incremental": {"source": source, "compile_s": round(incremental_s, 2), "pages_rewritten": rewritten,
                        "files_changed": changed_files, "only_pages_citing_it": only_citing},
    }
    print(json.dumps(out, indent=2, ensure_ascii=False))
    v.close()
    if ok != checked or changed_twice or not only_citing:
        sys.exit(1)


if __name__ == "__main__":
    main()
