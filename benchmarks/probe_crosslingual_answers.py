"""Can a cosine bar let `query` answer across languages without answering the unanswerable? (issue 36)

For each question of query-crosslingual.json on a copy of examples/ (default embedder): search's top
hit, and the cosine between the question and that hit's best sentence. Prints one line a question.

    python benchmarks/probe_crosslingual_answers.py

Session 15 (e5): answerable cross-script 0.818-0.892, unanswerable 0.746-0.847 (0.844 "Meta AI
Research 有多少员工？", 0.847 "Vincent Traag 多高？": questions naming a page's subject score like
questions it answers). No bar separates them, so `query` still says "no answer" to a Chinese
question on English notes rather than risk answering what the vault does not say.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from wikimem.api import open_vault
from wikimem.qa.extractive import sentences
from wikimem.search.evidence import script

HERE = Path(__file__).parent


def main() -> None:
    spec = json.loads((HERE / "query-crosslingual.json").read_text(encoding="utf-8"))
    root = Path(tempfile.mkdtemp(prefix="wm-xl-")) / "examples"
    shutil.copytree(HERE.parent / "examples", root, ignore=shutil.ignore_patterns(".wikimem"))
    vault = open_vault(root)
    vault.index()
    embedder = vault.cache.embedder()
    for kind in ("answerable", "unanswerable"):
        for item in spec[kind]:
            hit = vault.search(item["q"], limit=1).hits[0]
            texts = [p.text for p in sentences(hit.text)] or [hit.text]
            cos = embedder.embed_passages(texts) @ embedder.embed_query(item["q"])
            best = int(np.argmax(cos))
            right = "right" if hit.path in (item["expect"] if isinstance(item["expect"], list) else []) else "-"
            print(f"{kind:12} {script(item['q']):5}->{script(hit.title + ' ' + hit.text):5} cos={cos[best]:.3f} "
                  f"{right:5} {hit.path} | {item['q']} | {texts[best][:60]}")


if __name__ == "__main__":
    main()
