"""How the e5 ONNX runtime should cut passages into runs (issue 25): padded tokens per run, threads.

    python benchmarks/bench_embed_batching.py --texts 256
    python benchmarks/bench_embed_batching.py --variant int8 --configs 8192:2:1,1:2:1,256:2:2

Each config is an OnnxE5Embedder with its own ``run_tokens`` (padded tokens per run; 1 = one
sequence per run), intra-op threads and concurrent runs. Texts are tldr pages cut to 519 and to 60 characters
(as bench_embed_runtime.py); every config embeds the same chunk of 32 texts in turn, chunk by
chunk, so a machine whose load drifts slows them alike. Prints texts/s, the ratio to the first
config and the cosine of each config's vectors with the first's.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
CHUNK = 32


def main(argv: list[str] | None = None) -> None:
    from bench_embed_runtime import pages

    from wikimem.embed.onnx_e5 import OnnxE5Embedder
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--texts", type=int, default=256)
    ap.add_argument("--variant", default="fp32")
    ap.add_argument("--configs", default="8192:2:1,128:2:1,128:2:2,128:1:2",
                    help="run_tokens:threads:concurrent_runs, comma separated; the first is the reference")
    args = ap.parse_args(argv)
    en, zh = pages(["pages"]), pages(["pages.zh"])
    half = args.texts // 2
    sample = en[:: max(1, len(en) // half)][:half] + zh[:: max(1, len(zh) // half)][:half]
    configs = {}
    for item in args.configs.split(","):
        run_tokens, threads, concurrent = (int(x) for x in item.split(":"))
        emb = OnnxE5Embedder(args.variant, threads=threads)
        emb.run_tokens, emb.concurrent_runs = run_tokens, concurrent
        configs[item] = emb
    for label, texts in (("519", [p[:519] for p in sample]), ("60", [p[:60] for p in sample])):
        seconds = dict.fromkeys(configs, 0.0)
        vectors: dict[str, list[np.ndarray]] = {k: [] for k in configs}
        for a in range(0, len(texts), CHUNK):
            for name, emb in configs.items():
                t = time.perf_counter()
                vectors[name].append(emb.embed_passages(texts[a:a + CHUNK]))
                seconds[name] += time.perf_counter() - t
        first = next(iter(configs))
        ref = np.concatenate(vectors[first])
        for name in configs:
            cos = (np.concatenate(vectors[name]) * ref).sum(axis=1)
            print(f"{label} chars {args.variant} run_tokens:threads:runs={name:10s} {len(texts) / seconds[name]:7.2f} texts/s "
                  f"x{seconds[first] / seconds[name]:.2f}  cos vs {first}: min {cos.min():.5f}", flush=True)


if __name__ == "__main__":
    main()
