"""This machine against the yardsticks issue 25 was written with (session 12).

Issue 25 quoted, for the machine it was measured on: numpy fp32 GEMM 321 GFLOP/s ("the CPU has
AVX-512 VNNI and AMX"), and an encoder of multilingual-e5-small's shape under ONNX Runtime, batches
of 32 x 128 tokens on 2 threads, 31 sequences/s in fp32 and 63 with dynamic int8. This prints the
same three figures for wikimem's own converted graph here, and the CPU's vector extensions.

    python benchmarks/probe_machine.py
"""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    flags = set()
    try:
        flags = set(re.findall(r"\b(avx2|avx512\w*|avx_vnni|amx\w*)\b", Path("/proc/cpuinfo").read_text()))
    except OSError:
        pass
    print("vector extensions:", ", ".join(sorted(flags)) or "unknown")
    a = np.random.rand(2048, 2048).astype(np.float32)
    b = np.random.rand(2048, 2048).astype(np.float32)
    a @ b
    n = 10
    t = time.perf_counter()
    for _ in range(n):
        a @ b
    print(f"numpy fp32 GEMM 2048^3: {2 * 2048 ** 3 * n / (time.perf_counter() - t) / 1e9:.0f} GFLOP/s (issue: 321)")
    from wikimem.embed.onnx_e5 import OnnxE5Embedder
    quoted = {"int8": 63, "fp32": 31}
    for variant in ("int8", "fp32"):
        session = OnnxE5Embedder(variant)._session
        ids = np.random.default_rng(0).integers(5, 200_000, size=(32, 128)).astype(np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        session.run(["mean"], feed)
        t = time.perf_counter()
        for _ in range(3):
            session.run(["mean"], feed)
        per = (time.perf_counter() - t) / 3
        print(f"e5 graph {variant}, batch 32 x 128 tokens, 2 threads: {32 / per:.1f} sequences/s "
              f"({32 * 128 / per:.0f} tokens/s; issue: {quoted[variant]} sequences/s)")


if __name__ == "__main__":
    main()
