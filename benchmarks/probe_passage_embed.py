"""What a note's held passages cost to embed, by how they are cut and embedded (issue 52).

    flock /tmp/wikimem-heavy.lock python benchmarks/probe_passage_embed.py [--sample 300 --rounds 5]
    flock /tmp/wikimem-heavy.lock python benchmarks/probe_passage_embed.py --variants int8,int8+query,int8tok,fp32

The documentation vault of docs_vault.py (npm, undici, pip pages read from this machine) is indexed
lexical-only in a temporary folder once per cut: as shipped ("Title: text", sentence pairs
overlapping by one), without the title in front ("notitle") and with sentence pairs that do not
overlap ("nooverlap"); the two cuts are made here by patching the cutter, the shipped code has
neither. Printed per cut: the held passages the manifest holds, the distinct texts a build embeds
(one vector per text: without the title, the same list item on many pages is one text) and their
tokens (the model's work). Per variant (ONNX graph, "+query" for e5's query prefix instead of
"passage: ", "/notitle" or "/nooverlap" for the cut), on a random sample (seed 1) of that cut's
distinct texts embedded in turn with the order rotating each round: the median and best texts/s,
tokens/s, and the whole stage's estimate (distinct texts / median texts/s). Timings on a shared
2-core machine move by 30-50 % between rounds: compare the variants of one run, never runs.
Quality is docs_vault.py's (README "How a note's held passages are embedded").
"""
from __future__ import annotations

import argparse
import dataclasses
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

from docs_vault import vault_pages
from tldr import sync_vault

import wikimem.index.passages as cut
from wikimem.api import open_vault
from wikimem.embed.onnx_e5 import OnnxE5Embedder
from wikimem.index import build


def _no_title(chunk, mode):
    """The shipped cut without "Title: " in front (a note chunk's passages only)."""
    if chunk.speakers:
        return cut.passages(chunk, mode)
    return [t[2:] for t in cut.passages(dataclasses.replace(chunk, title=""), mode)]


def _pairs_apart(items, step=1):
    """Sentence pairs that do not overlap (the last sentence alone when one is left)."""
    if len(items) <= cut.WINDOW:
        return [" ".join(items)] if items else []
    return [" ".join(items[i:i + 2]) for i in range(0, len(items), 2)]


CUTS = {"": {}, "notitle": {(build, "passages"): _no_title}, "nooverlap": {(cut, "_windows"): _pairs_apart}}


def passages_of(cut_name: str) -> list[str]:
    """The held passages a build of the docs vault writes under ``cut_name`` (lexical-only build)."""
    saved = {where: getattr(*where) for where in CUTS[cut_name]}
    for (module, name), value in CUTS[cut_name].items():
        setattr(module, name, value)
    work = Path(tempfile.mkdtemp(prefix="wikimem-passage-probe-"))
    try:
        sync_vault(work / "vault", vault_pages())
        vault = open_vault(work / "vault", embedder="none")
        vault.index()
        texts = [r[0] for r in vault.cache.db.execute("SELECT text FROM passages ORDER BY pid")]
        vault.close()
        return texts
    finally:
        for (module, name), value in saved.items():
            setattr(module, name, value)
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sample", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", default="int8,int8+query,int8tok,fp32,int8/notitle,int8/nooverlap")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    specs = args.variants.split(",")
    cuts = sorted({(s.split("/") + [""])[1] for s in specs})
    texts = {c: passages_of(c) for c in cuts}
    counter = OnnxE5Embedder("int8")
    report: dict = {"cuts": {}, "variants": {}, "sample": args.sample, "rounds": args.rounds}
    distinct = {c: list(dict.fromkeys(t)) for c, t in texts.items()}
    ntok = {}
    for c, t in distinct.items():
        tokens = [len(counter.token_ids(x)) + 2 for x in t]  # + <s> </s>
        ntok[c] = sum(tokens)
        report["cuts"][c or "shipped"] = {"passages": len(texts[c]), "distinct": len(t), "tokens": sum(tokens),
                                         "mean_tokens": round(sum(tokens) / max(1, len(t)), 1)}
        print(f"cut {c or 'shipped'}: {len(texts[c])} passages, {len(t)} distinct texts, {sum(tokens)} tokens "
              f"({sum(tokens) / max(1, len(t)):.1f} each)")
    samples = {}
    for c, t in distinct.items():
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
        rate = len(samples[c]) / statistics.median(times[spec])
        best = len(samples[c]) / min(times[spec])
        sample_tokens = sum(len(counter.token_ids(x)) + 2 for x in samples[c])
        stage = len(distinct[c]) / rate
        report["variants"][spec] = {"texts_per_s": round(rate, 1), "best_texts_per_s": round(best, 1),
                                    "tokens_per_s": round(sample_tokens / statistics.median(times[spec])),
                                    "stage_s": round(stage, 1), "rounds_s": [round(x, 2) for x in times[spec]]}
        print(f"{spec:22s} {rate:7.1f} texts/s (best {best:6.1f}), "
              f"{sample_tokens / statistics.median(times[spec]):7.0f} tokens/s; "
              f"passage stage ~{stage:6.1f} s ({len(distinct[c])} distinct texts)")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
