"""`wikimem compile` on Chinese documents nobody here wrote: does the Chinese name rule
(wikimem/compile/names_zh.py) make pages a Chinese reader accepts?

    python benchmarks/bench_compile_zh.py                 # both halves, precision from the labels
    python benchmarks/bench_compile_zh.py --half dev --list   # print the created pages (for labelling)

Corpus, read in place (copied only into the work folder, never into the repo):
- the Chinese tldr-pages (../shared/datasets/tldr/pages.zh, common + linux: one page per command);
- Rust by Example in Chinese as rustup installs it (share/doc/rust/html/rust-by-example/zh: the
  text of each chapter's <main>, code blocks left out, written as Markdown in the work folder);
- vimtutor's Simplified Chinese text (/usr/share/vim/*/tutor/tutor.zh_cn.utf-8), when present.

Each source goes to the ``dev`` or the ``heldout`` half by a fixed hash of its name (sha256, first
byte even: dev), decided before any page was seen; each half is its own vault, compiled once
(``entity_min_references`` 2, as a new vault has it). Every created page is labelled by reading it
(benchmarks/compile_zh_labels.json: title -> true when it names a real work, product, term or
concept of the corpus; false for a fragment, a verb phrase, a wrong cut, an everyday word). The rule
was tuned on ``dev`` only; ``heldout`` was compiled and labelled once, after.
"""
from __future__ import annotations

import argparse
import hashlib
import html
import json
import re
import shutil
import sys
import time
from pathlib import Path

from wikimem.api import init_vault, open_vault

HERE = Path(__file__).resolve().parent
TLDR = next((p / "shared" / "datasets" / "tldr" / "pages.zh" for p in HERE.parents
             if (p / "shared" / "datasets" / "tldr" / "pages.zh").is_dir()), Path("/work/shared/datasets/tldr/pages.zh"))
RBE = sorted(Path.home().glob(".rustup/toolchains/stable-*/share/doc/rust/html/rust-by-example/zh"))
VIMTUTOR = sorted(Path("/usr/share/vim").glob("vim*/tutor/tutor.zh_cn.utf-8"))
LABELS = HERE / "compile_zh_labels.json"
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")  # not names_zh's: the bench runs on the code before it too
_CITED = re.compile(r"^- (.+) \[\[(raw/[^\]#|]+)(?:#[^\]]*)?\]\]$", re.M)


def han(text: str) -> bool:
    return _HAN.search(text) is not None


def half_of(name: str) -> str:
    return "dev" if hashlib.sha256(name.encode("utf-8")).digest()[0] % 2 == 0 else "heldout"


def _markdown(page: str) -> str:
    """A Rust by Example chapter's <main> as Markdown: headings, paragraphs, list items, inline code."""
    m = re.search(r"<main>(.*?)</main>", page, re.S)
    body = re.sub(r"<pre\b.*?</pre>", "\n", m.group(1) if m else "", flags=re.S)
    body = re.sub(r"<h([1-6])[^>]*>(.*?)</h\1>", lambda h: "\n\n" + "#" * int(h.group(1)) + " " + h.group(2) + "\n\n",
                  body, flags=re.S)
    body = re.sub(r"<li[^>]*>", "\n- ", body)
    body = re.sub(r"</?(?:p|ul|ol|blockquote|div|table|tr)[^>]*>", "\n\n", body)
    body = re.sub(r"<code[^>]*>(.*?)</code>", lambda c: "`" + c.group(1).replace("`", "") + "`", body, flags=re.S)
    body = html.unescape(re.sub(r"<[^>]+>", "", body))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(line.strip() for line in body.splitlines())).strip() + "\n"


def corpus() -> dict[str, str]:
    """source file name -> its text (Markdown)."""
    out: dict[str, str] = {}
    for section in ("common", "linux"):
        for p in sorted((TLDR / section).glob("*.md")):
            out.setdefault(f"tldr-{p.name}", p.read_text(encoding="utf-8"))  # one page per command name
    if RBE:
        for p in sorted(RBE[0].rglob("*.html")):
            rel = p.relative_to(RBE[0]).as_posix()
            if rel in ("print.html", "index.html", "404.html", "toc.html"):
                continue
            text = _markdown(p.read_text(encoding="utf-8"))
            if han(text):
                out["rbe-" + rel.removesuffix(".html").replace("/", "-") + ".md"] = text
    for p in VIMTUTOR[:1]:
        out["vimtutor-zh_cn.md"] = p.read_text(encoding="utf-8")
    return out


def run(half: str, docs: dict[str, str], work: Path, listing: bool) -> dict:
    shutil.rmtree(work, ignore_errors=True)
    (work / "in").mkdir(parents=True)
    for name, text in docs.items():
        (work / "in" / name).write_text(text, encoding="utf-8")
    root = work / "vault"
    init_vault(root)
    v = open_vault(root, embedder="none")
    report = v.ingest(sorted(str(p) for p in (work / "in").iterdir()))
    refused = [i.message for i in report.items if i.status == "failed"]
    t = time.perf_counter()
    compiled = v.compile()
    compile_s = time.perf_counter() - t
    created = [p for p in compiled.pages if p.status == "created"]
    if listing:
        for p in created:
            text = (root / p.path).read_text(encoding="utf-8")
            first = [s for s, _ in _CITED.findall(text)][:2]
            print(f"{p.title!r}: {p.sentences} sentences, {len(p.sources)} sources | " + " / ".join(first))
    labels = json.loads(LABELS.read_text(encoding="utf-8")).get(half, {}).get("labels", {}) \
        if LABELS.exists() else {}
    titles = [p.title for p in created]
    zh = [t for t in titles if han(t)]

    def precision(these: list[str]) -> dict:
        marks = [bool(labels[t]) for t in these if t in labels]
        return {"pages": len(these), "labelled": len(marks),
                "precision": round(sum(marks) / len(marks), 3) if marks else None,
                "unlabelled": sorted(t for t in these if t not in labels)}
    v.close()
    return {"sources": len(docs), "ingest_refused": len(refused), "compile_s": round(compile_s, 2),
            "pages_created": len(created), "sentences_written": sum(p.sentences for p in created),
            "all_pages": precision(titles), "chinese_titled_pages": precision(zh),
            "false": sorted(t for t in titles if labels.get(t) is False)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--half", choices=("dev", "heldout", "both"), default="both")
    ap.add_argument("--work", default="/tmp/wikimem-bench-compile-zh")
    ap.add_argument("--list", action="store_true", help="print each created page's title and first sentences")
    args = ap.parse_args()
    docs = corpus()
    halves = ("dev", "heldout") if args.half == "both" else (args.half,)
    out = {"corpus": {"tldr_zh": sum(n.startswith("tldr-") for n in docs), "rust_by_example_zh":
                      sum(n.startswith("rbe-") for n in docs), "vimtutor_zh_cn": int("vimtutor-zh_cn.md" in docs)}}
    for half in halves:
        mine = {n: t for n, t in docs.items() if half_of(n) == half}
        out[half] = run(half, mine, Path(args.work) / half, args.list)
    print(json.dumps(out, indent=2, ensure_ascii=False))
    if not docs:
        sys.exit("no Chinese corpus found on this machine")


if __name__ == "__main__":
    main()
