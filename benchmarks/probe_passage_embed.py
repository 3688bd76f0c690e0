"""What a note's held passages cost to embed, by how they are cut and embedded (issue 52).

    flock /tmp/wikimem-heavy.lock python benchmarks/probe_passage_embed.py [--sample 300 --rounds 3]
    flock /tmp/wikimem-heavy.lock python benchmarks/probe_passage_embed.py --variants int8,int8+query,int8tok,fp32

The documentation vault of docs_vault.py (npm, undici, pip pages read from this machine) is indexed
lexical-only in a temporary folder once per cut: as shipped ("Title: text", sentence pairs
overlapping by one), without the title in front (``passages.TITLED = False``) and with pairs that
do not overlap (``passages.NOTE_STEP = 2``). Printed per cut: the held passages a build embeds and
their tokens (the model's work); per variant (ONNX graph, "+query" for e5's query prefix, "/notitle"
or "/nooverlap" for the cut) on a random sample (seed 1) of that cut's passages, embedded in turn
with the order rotating each round: the median texts/s and the whole stage's estimated seconds
(passages / texts/s). Queries, chunks and quality are docs_vault.py's business (README "How a
note's held passages are embedded").
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from docs_vault import vault_pages  # noqa: E402  (benchmarks/ is the script's folder)
from tldr import sync_vault  # noqa: E402

import wikimem.index.passages as cut  # noqa: E402
from wikimem.api import open_vault  # noqa: E402
from wikimem.embed.onnx_e5 import OnnxE5Embedder  # noqa: E402

CUTS = {"": {}, "notitle": {"TITLED": False}, "nooverlap": {"NOTE_STEP": 2}}


def passages_of(cut_name: str) -> list[str]:
    """The held passages a build of the docs vault writes under ``cut_name`` (lexical-only build)."""
    saved = {name: getattr(cut, name) for name in CUTS[cut_name]}
    for name, value in CUTS[cut_name].items():
        setattr(cut, name, value)
    work = Path(tempfile.mkdtemp(prefix="wikimem-passage-probe-"))
    try:
        sync_vault(work / "vault", vault_pages())
        vault = open_vault(work / "vault", embedder="none")
        vault.index()
        texts = [r[0] for r in vault.cache.db.execute("SELECT text FROM passages ORDER BY pid")]
        vault.close()
        return texts
    finally:
        for name, value in saved.items():
            setattr(cut, name, value)
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sample", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", default="int8,int8+query,int8tok,fp32,int8/notitle,int8/nooverlap")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    specs = args.variants.split(",")
    cuts = sorted({(s.split("/") + [""])[1] for s in specs})
    texts = {c: passages_of(c) for c in cuts}
    counter = OnnxE5Embedder("int8")
    report: dict = {"cuts": {}, "variants": {}, "sample": args.sample, "rounds": args.rounds}
    for c, t in texts.items():
        tokens = [len(counter.token_ids(x)) + 2 for x in t]  # + <s> </s>
        report["cuts"][c or "shipped"] = {"passages": len(t), "tokens": sum(tokens),
                                         "mean_tokens": round(sum(tokens) / max(1, len(t)), 1)}
        print(f"cut {c or 'shipped'}: {len(t)} passages, {sum(tokens)} tokens ({sum(tokens) / max(1, len(t)):.1f} each)")
    samples = {}
    for c, t in texts.items():
        pick = list(t)
        random.Random(1).shuffle(pick)
        samples[c] = pick[:args.sample]
    models: dict[str, OnnxE5Embedder] = {}
    for spec in specs:
        graph = spec.split("/")[0].removesuffix("+query")
        if graph not in models:
            models[graph] = OnnxE5Embedder(graph)
            models[graph].embed_passages(samples[""][:4])  # the session, loaded

    def run(spec: str) -> float:
        graph_q, *rest = spec.split("/")
        sample = samples[rest[0] if rest else ""]
        model = models[graph_q.removesuffix("+query")]
        t = time.perf_counter()
        model._embed(list(sample), graph_q.endswith("+query"))
        return time.perf_counter() - t

    times: dict[str, list[float]] = {s: [] for s in specs}
    for r in range(args.rounds):
        for spec in specs[r % len(specs):] + specs[:r % len(specs)]:
            times[spec].append(run(spec))
    for spec in specs:
        c = (spec.split("/") + [""])[1]
        seconds = statistics.median(times[spec])
        rate = len(samples[c]) / seconds
        stage = len(texts[c]) / rate
        report["variants"][spec] = {"texts_per_s": round(rate, 1), "stage_s": round(stage, 1),
                                    "rounds_s": [round(x, 2) for x in times[spec]]}
        print(f"{spec:22s} {rate:7.1f} texts/s   passage stage ~{stage:6.1f} s ({len(texts[c])} passages)")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
