"""How well `remember` tells an update of a fact from a distinct fact of the same shape (issue 35
item 9), on the hand-labelled pairs of memory_updates.json (English and Chinese, tune / held-out).

    python benchmarks/memory_updates.py            # the default embedder (e5)
    python benchmarks/memory_updates.py fake       # the lexical-only signals

Each pair goes through the decision `remember` makes (knowledge/memory.py ``update_label``: the
calibrated similarity labels, then the subject check): the second fact replaces the first when the
label is "update". Reported per split and language: precision and recall of "update", and the
pairs wrongly called duplicates (the new fact would not have been written at all). Results go to
benchmarks/results/memory-updates-<embedder>.json.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).parent


def _embedder(name: str):
    from wikimem.config import Settings
    from wikimem.embed import get_embedder
    return get_embedder(Settings(embedder=name))


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "e5"
    from wikimem.knowledge.memory import update_label
    from wikimem.knowledge.similarity import thresholds_for
    embedder = _embedder(name)
    thresholds, _ = thresholds_for(embedder)
    pairs = json.loads((HERE / "memory_updates.json").read_text(encoding="utf-8"))["pairs"]
    rows = []
    for p in pairs:
        label = update_label(embedder, thresholds, p["new"], p["old"])
        rows.append({**p, "label": label})
    groups = defaultdict(list)
    for r in rows:
        for key in ("all", r["split"], r["lang"], f"{r['split']}/{r['lang']}"):
            groups[key].append(r)
    report = {}
    for key, rs in sorted(groups.items()):
        said = [r for r in rs if r["label"] == "update"]
        right = [r for r in said if r["update"]]
        truth = [r for r in rs if r["update"]]
        report[key] = {"pairs": len(rs), "updates": len(truth), "said_update": len(said),
                       "precision": round(len(right) / len(said), 3) if said else None,
                       "recall": round(len(right) / len(truth), 3) if truth else None,
                       "wrong_duplicates": sum(r["label"] == "duplicate" for r in rs)}
    out = {"embedder": name, "report": report,
           "errors": [r for r in rows if (r["label"] == "update") != r["update"] or r["label"] == "duplicate"]}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / f"memory-updates-{name}.json").write_text(json.dumps(out, ensure_ascii=False, indent=1),
                                                                    encoding="utf-8")
    for key in ("all", "tune", "heldout", "en", "zh"):
        r = report[key]
        print(f"{key:8} pairs {r['pairs']:3}  precision {r['precision']}  recall {r['recall']}  "
              f"(said {r['said_update']} of {r['updates']} updates; wrong duplicates {r['wrong_duplicates']})")


if __name__ == "__main__":
    main()
