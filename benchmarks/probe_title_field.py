"""A page's title field by meaning, measured before building it (issue 52; not part of search).

    python benchmarks/probe_title_field.py                        # the tuning half (the default)
    python benchmarks/probe_title_field.py --weight 0.5 --top 0 --scale minmax
    python benchmarks/probe_title_field.py --split heldout        # figures only, per language

Each page of the documentation vault (benchmarks/docs_vault.py, its work folder already built) has
its title field, ``Chunk.index_title()``: the title, the aliases and the frontmatter description
("npm-deprecate / Deprecate a version of a package"). Here each is embedded in this process (as a
query, e5's form for two short texts compared with each other; ``--as-passage`` for the chunks'
form), and a re-rank step after the rankers adds ``weight`` x a score for the title's similarity
to the question (across the language axis the vector side uses) to every chunk of the ``top`` best
pages (0: every candidate page): ``1 / rank`` among those pages, or min-max scaled. Nothing is
stored: a shipped form needs one vector per page from the build (embedding ten titles at query time
took ~160 ms here). benchmarks/README.md ("Issue 52: a title field by meaning ...") has the figures;
``--split heldout`` prints the three aggregates only, never a question.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from docs_vault import QUESTIONS, split_of, vault_pages  # benchmarks/ is the script's folder
from tldr import remember_queries

from wikimem.api import open_vault
from wikimem.search import evidence, fusion, steps
from wikimem.search.language import axis_for


def title_step(cache, index, embedder, vectors: dict[str, np.ndarray], weight: float, top: int, scale: str):
    class TitleField:
        name = "title_field"

        def applies(self, facts) -> bool:
            return facts.mode == "hybrid" and weight > 0

        def apply(self, candidates, facts):
            q = np.asarray(embedder.embed_query(facts.query), dtype=np.float32)
            lang = axis_for(cache, index, evidence.script(facts.query))
            best: dict[str, float] = {}
            for c in candidates.values():
                best[c.path] = max(best.get(c.path, float("-inf")), c.fused)
            pages = [p for p in sorted(best, key=lambda p: (-best[p], p)) if p in vectors]
            pages = pages[:top] if top else pages
            if not pages:
                return candidates
            rows = np.stack([vectors[p] for p in pages]).astype(np.float32)
            if lang is not None:
                rows, q = lang.project(rows), lang.project(q[None])[0]
            sims = (rows / np.linalg.norm(rows, axis=1, keepdims=True)) @ (q / np.linalg.norm(q))
            if scale == "rank":
                score = np.empty_like(sims)
                score[np.argsort(-sims, kind="stable")] = 1.0 / (1.0 + np.arange(len(sims)))
            else:
                low, high = float(sims.min()), float(sims.max())
                score = (sims - low) / (high - low) if high > low else np.ones_like(sims)
            gain = dict(zip(pages, score.tolist()))
            for c in candidates.values():
                if c.path in gain:
                    c.fused += weight * gain[c.path]
                    c.changed_by(self.name)
            return candidates
    return TitleField()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/wikimem-docs"))
    ap.add_argument("--split", choices=("tune", "heldout"), default="tune")
    ap.add_argument("--weight", type=float, default=1.0)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--scale", choices=("rank", "minmax"), default="rank")
    ap.add_argument("--as-passage", action="store_true")
    args = ap.parse_args()
    vault = open_vault(args.work / "vault", embedder="e5")
    remember_queries(vault, args.work / "query-vectors-e5.json")
    cache = vault.cache
    embedder = cache.embedder()
    index = cache.vector_store.load(embedder.identity.dim, cache.meta())
    titles = {p: c.index_title() for p in sorted(vault_pages()) if (c := cache.manifest.first_chunk(p))}
    texts = list(titles.values())
    embedded = embedder.embed_passages(texts) if args.as_passage else [embedder.embed_query(t) for t in texts]
    vectors = dict(zip(titles, embedded))
    step = title_step(cache, index, embedder, vectors, args.weight, args.top, args.scale)
    questions = [q for q in json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
                 if split_of(q["q"]) == args.split]

    def ranks() -> list[tuple[str, int | None]]:
        out = []
        for q in questions:
            paths = [h.path for h in vault.search(q["q"], limit=10, mode="hybrid").hits]
            answers = {q["target"], *q.get("also", ())}
            out.append((q["lang"], next((i for i, p in enumerate(paths, 1) if p in answers), None)))
        return out

    def line(found) -> str:
        cells = []
        for lang in ("en", "zh", "all"):
            rs = [r for l, r in found if lang == "all" or l == lang]
            n = len(rs)
            cells.append(f"{lang} {sum(r == 1 for r in rs)}/{n} {sum(1 for r in rs if r and r <= 5)}/{n} "
                         f"{sum(1 / r for r in rs if r) / n:.3f}")
        return " | ".join(cells)
    print(f"{args.split}, hybrid, hit@1 / hit@5 / MRR@10")
    print("without the title field:", line(ranks()))
    original = steps.STEPS
    fusion.run_steps.__defaults__ = (original[:2] + (step,) + original[2:],)
    try:
        print(f"title field ({args.scale}, top {args.top or 'all'}, weight {args.weight}"
              f"{', as passages' if args.as_passage else ''}):", line(ranks()))
    finally:
        fusion.run_steps.__defaults__ = (original,)
    vault.close()


if __name__ == "__main__":
    main()
