"""How well `remember` tells an update of a fact from a distinct fact of the same shape, on two
hand-labelled sets (English and Chinese, each with a tune / held-out split):

- memory_updates.json   (issue 35 item 9): ``update`` true/false;
- memory_everyday.json  (issue 53, written before the rule of issue 53): everyday agent memory,
  ``label`` update / distinct / duplicate.

    python benchmarks/memory_updates.py            # the default embedder (e5)
    python benchmarks/memory_updates.py fake       # the lexical-only signals

Each pair goes through the decision `remember` makes (knowledge/memory.py ``update_label``): the
second fact replaces the first only when the label is "update"; "possible_update" writes it and
names the first as a candidate (not a supersede, so not counted as one). Reported per set, split
and language: precision and recall of "update", the candidates named, and the pairs wrongly
called duplicates (the new fact would not have been written at all). Results go to
benchmarks/results/memory-updates-<embedder>.json.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).parent
SETS = {"old": "memory_updates.json", "new": "memory_everyday.json"}


def _embedder(name: str):
    from wikimem.config import Settings
    from wikimem.embed import get_embedder
    return get_embedder(Settings(embedder=name))


def _truth(p: dict) -> str:
    if "label" in p:
        return p["label"]
    return "update" if p["update"] else "distinct"


def summary(rows: list[dict]) -> dict:
    said = [r for r in rows if r["said"] == "update"]
    right = [r for r in said if r["truth"] == "update"]
    truth = [r for r in rows if r["truth"] == "update"]
    cands = [r for r in rows if r["said"] == "possible_update"]
    return {"pairs": len(rows), "updates": len(truth), "said_update": len(said),
            "precision": round(len(right) / len(said), 3) if said else None,
            "recall": round(len(right) / len(truth), 3) if truth else None,
            "possible_update": len(cands), "possible_update_true": sum(r["truth"] == "update" for r in cands),
            "wrong_duplicates": sum(r["said"] == "duplicate" and r["truth"] != "duplicate" for r in rows),
            "duplicates_found": sum(r["said"] == "duplicate" and r["truth"] == "duplicate" for r in rows),
            "duplicates": sum(r["truth"] == "duplicate" for r in rows)}


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "e5"
    from wikimem.knowledge.memory import update_label
    from wikimem.knowledge.similarity import thresholds_for
    embedder = _embedder(name)
    thresholds, _ = thresholds_for(embedder)
    rows = []
    for set_name, file in SETS.items():
        for p in json.loads((HERE / file).read_text(encoding="utf-8"))["pairs"]:
            said = update_label(embedder, thresholds, p["new"], p["old"])
            rows.append({"set": set_name, "old": p["old"], "new": p["new"], "truth": _truth(p), "said": said,
                         "lang": p["lang"], "split": p["split"]})
    groups = defaultdict(list)
    for r in rows:
        for key in (r["set"], f"{r['set']}/{r['split']}", f"{r['set']}/{r['lang']}", f"{r['set']}/{r['split']}/{r['lang']}"):
            groups[key].append(r)
    report = {key: summary(rs) for key, rs in sorted(groups.items())}
    errors = [r for r in rows if r["split"] == "tune"
              and ((r["said"] == "update") != (r["truth"] == "update") or r["said"] == "duplicate" != (r["truth"] == "duplicate"))]
    out = {"embedder": name, "report": report, "tune_errors": errors,
           "heldout_errors": sum(1 for r in rows if r["split"] == "heldout"
                                 and ((r["said"] == "update") != (r["truth"] == "update")))}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / f"memory-updates-{name}.json").write_text(json.dumps(out, ensure_ascii=False, indent=1),
                                                                    encoding="utf-8")
    for key in ("old", "old/tune", "old/heldout", "new", "new/tune", "new/heldout", "new/en", "new/zh"):
        r = report[key]
        print(f"{key:12} pairs {r['pairs']:3}  precision {r['precision']}  recall {r['recall']}  "
              f"(said {r['said_update']} of {r['updates']} updates; possible_update {r['possible_update']} "
              f"({r['possible_update_true']} true); wrong duplicates {r['wrong_duplicates']}; "
              f"duplicates found {r['duplicates_found']} of {r['duplicates']})")


if __name__ == "__main__":
    main()
