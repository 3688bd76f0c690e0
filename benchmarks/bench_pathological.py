"""Pathological notes through parse + chunk + lint (issue 27: no input stalls the vault).

    python benchmarks/bench_pathological.py                 # every input at 1 MB and 4 MB
    python benchmarks/bench_pathological.py --mb 1 wikilink_open brackets

Each input is one note of the given size built from one troublesome pattern (a ``[[`` that never
closes, backtick runs, deep nesting, a 1 MB line, Chinese text without spaces...). Printed: seconds
per MB for parse, chunk and lint, and the growth from the smaller size to the larger (about 1.0 per
MB when the cost is linear). tests/test_linear_inputs.py runs the same inputs, smaller.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable


def _rep(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


# "[x] " / "#t " in front: the inline pass only runs on text that can hold a link or a tag
CASES: dict[str, Callable[[int], str]] = {
    "wikilink_open": lambda n: _rep("[[a ", n),  # [[ never closed
    "embed_open": lambda n: _rep("![[a ", n),
    "mdlink_open": lambda n: _rep("[x](", n),
    "brackets": lambda n: _rep("[", n),
    "brackets_one_close": lambda n: _rep("[", n - 1) + "]",
    "angle_dest": lambda n: _rep("[x](<", n),
    "backticks": lambda n: "[x] " + "".join("`" * (i % 50 + 1) + " a " for i in range(n // 20))[:n],
    "backtick_run": lambda n: "[x] " + _rep("` ", n),
    "tags": lambda n: _rep("#a", n),
    "tags_spaced": lambda n: _rep(" #t", n),
    "hashes": lambda n: _rep("#", n),
    "headings": lambda n: _rep("# [[x]] #t\n", n),
    "block_ids": lambda n: _rep(" ^a", n),
    "block_id_lines": lambda n: _rep("x ^id\n", n),
    "quote_deep": lambda n: _rep("> ", n - 6) + "[[x]]",
    "quote_lines": lambda n: "".join("> " * (i % 100) + "[[x]] a\n" for i in range(n // 100))[:n],
    "list_deep": lambda n: _rep("- ", n - 6) + "[[x]]",
    "olist_deep": lambda n: _rep("1. ", n - 6) + "[[x]]",
    "list_lines": lambda n: "".join("  " * (i % 200) + "- [[x]]\n" for i in range(n // 200))[:n],
    "html": lambda n: _rep("<div>[[x]]\n", n),
    "table": lambda n: "|a|b|\n|-|-|\n" + _rep("|[[x]]|#t|\n", n),
    "fence_open": lambda n: _rep("```\n[[x]]\n", n),
    "escapes": lambda n: _rep("\\[", n),
    "pipes_in_link": lambda n: "[[" + _rep("a|", n - 4) + "]]",
    "sentences_one_line": lambda n: _rep("A `c` [[x]]. ", n),
    "one_line": lambda n: "#t " + _rep("word ", n),
    "cjk": lambda n: "#t " + _rep("中文没有空格的句子", n),
    "cjk_sentences": lambda n: "#t " + _rep("中文句子。", n),
    "close_brackets": lambda n: _rep("]", n),
    "bangs": lambda n: _rep("!", n),
}


def measure(name: str, size: int, lint: bool = True) -> dict[str, float]:
    """Seconds to parse, chunk (and lint, in a one-note vault) CASES[name] at ``size`` characters."""
    from wikimem.parse.chunk import chunk_page
    from wikimem.parse.page import parse_page
    text = CASES[name](size)
    t0 = time.perf_counter()
    page = parse_page("note.md", text)
    t1 = time.perf_counter()
    chunk_page(page)
    t2 = time.perf_counter()
    result = {"parse": t1 - t0, "chunk": t2 - t1}
    if lint:
        from wikimem.api import open_vault
        with tempfile.TemporaryDirectory(prefix="wm-patho-") as tmp:
            (Path(tmp) / "note.md").write_text(text, encoding="utf-8")
            vault = open_vault(tmp, embedder="none", max_file_mb=8)
            t3 = time.perf_counter()
            vault.lint()
            result["lint"] = time.perf_counter() - t3
            vault.close()
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", help=f"inputs (default all): {', '.join(CASES)}")
    ap.add_argument("--mb", type=float, nargs="+", default=[1.0, 4.0], help="sizes in MB (default 1 4)")
    ap.add_argument("--no-lint", action="store_true")
    args = ap.parse_args()
    names = args.names or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        sys.exit(f"unknown input(s): {', '.join(unknown)}")
    print(f"{'input':20s} " + " ".join(f"{f'{mb:g} MB s/MB (parse chunk lint)':>36s}" for mb in args.mb) + "  growth")
    for name in names:
        cells, per_mb = [], []
        for mb in args.mb:
            r = measure(name, int(mb * 1024 * 1024), lint=not args.no_lint)
            total = sum(r.values()) / mb
            per_mb.append(total)
            cells.append(f"{r['parse'] / mb:8.2f} {r['chunk'] / mb:8.2f} {r.get('lint', 0) / mb:8.2f} = {total:6.2f}")
        growth = per_mb[-1] / per_mb[0] if per_mb[0] > 0 else 0.0
        print(f"{name:20s} " + " ".join(f"{c:>36s}" for c in cells) + f"  {growth:5.2f}", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
