"""What a build's embedding time follows (issue 25, session 12): tokens, not texts.

The same 100 tldr pages (60 English, 40 Chinese, a fixed sample) embedded three ways by the default
embedder (e5, ONNX Runtime int8): as chunks (each chunk's index text), as the chunks' note passages
one by one (what a build embeds after the chunks), and as each chunk's passages packed into one
text. If a run's fixed cost mattered, the many short passages would cost more per token than the
few long texts; best of two timings each.

    python benchmarks/probe_passage_cost.py
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikimem.embed.onnx_e5 import OnnxE5Embedder  # noqa: E402
from wikimem.index.passages import passages  # noqa: E402
from wikimem.parse.chunk import chunk_page  # noqa: E402
from wikimem.parse.page import parse_page  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "tldr"


def main() -> None:
    embedder = OnnxE5Embedder()
    rng = random.Random(1)
    files = (rng.sample(sorted((DATA / "pages" / "common").glob("*.md")), 60)
             + rng.sample(sorted((DATA / "pages.zh" / "common").glob("*.md")), 40))
    chunks, held = [], []
    for f in files:
        for c in chunk_page(parse_page(f.name, f.read_text(encoding="utf-8"))):
            chunks.append(c.index_text())
            held.append(passages(c, "all"))
    sets = {"chunks": chunks, "passages": [p for ps in held for p in ps],
            "passages packed per chunk": [" ".join(ps) for ps in held if ps]}
    embedder.embed_passages(chunks[:5])
    for name, texts in sets.items():
        tokens = sum(len(embedder.token_ids(t)) + 2 for t in texts)
        best = float("inf")
        for _ in range(2):
            t = time.perf_counter()
            embedder.embed_passages(texts)
            best = min(best, time.perf_counter() - t)
        print(f"{name}: {len(texts)} texts, {tokens} tokens, {best:.2f} s, {tokens / best:.0f} tokens/s")


if __name__ == "__main__":
    main()
