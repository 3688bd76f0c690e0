"""remember's judgments on a fact set written fresh for the issue-53 new-user pass (memory_fresh53.json:
40 English and 40 Chinese pairs, labelled update / distinct / duplicate before any was run, every other
pair of each label held out: ``split`` dev / held).

Two measurements, per language and split:
- pair: the decision for the new fact against its earlier one alone (``update_label``);
- vault: what ``remember --dry-run`` does with the new fact in a vault holding every earlier fact of
  the set (search must find the earlier one among the others; the supersede must name the right one).

Reported: updates found (the right old one superseded), updates only named as ``possible_update``,
updates missed (written as new, nothing named); distinct facts hidden as duplicates or superseding
something; duplicates found.

    python benchmarks/memory_fresh53.py [e5|fake]
"""
from __future__ import annotations

import json
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).parent


def outcome(label: str, said: str, hit_old: bool) -> str:
    if label == "update":
        return {"update": "found" if hit_old else "wrong_old", "possible_update": "named" if hit_old else "missed",
                "duplicate": "hidden"}.get(said, "missed")
    if label == "distinct":
        return {"duplicate": "hidden", "update": "superseded"}.get(said, "named" if said == "possible_update" else "ok")
    return "found" if said == "duplicate" and hit_old else "written"


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "e5"
    pairs = json.loads((HERE / "memory_fresh53.json").read_text(encoding="utf-8"))
    from wikimem.api import init_vault, open_vault
    from wikimem.knowledge.memory import update_label
    from wikimem.knowledge.similarity import thresholds_for
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for lang in ("en", "zh"):
            root = Path(tmp) / lang
            init_vault(root)
            vault = open_vault(root, embedder=name)
            olds = {}
            for p in pairs:
                if p["lang"] == lang and p["old"] not in olds:
                    olds[p["old"]] = vault.remember(p["old"]).path
            vault.index()
            embedder = vault.ctx.cache.embedder()
            thresholds, _ = thresholds_for(embedder)
            for p in pairs:
                if p["lang"] != lang:
                    continue
                said = update_label(embedder, thresholds, p["new"], p["old"])
                r = vault.remember(p["new"], dry_run=True)
                old = olds[p["old"]]
                if r.action == "duplicate":
                    vsaid, hit = "duplicate", r.path == old
                elif r.supersedes:
                    vsaid, hit = "update", r.supersedes == old
                elif r.possible_update:
                    vsaid, hit = "possible_update", old in r.possible_update
                else:
                    vsaid, hit = "different", False
                rows.append({**p, "pair": said, "pair_outcome": outcome(p["label"], said, True),
                             "vault": vsaid, "vault_outcome": outcome(p["label"], vsaid, hit),
                             "vault_other": r.supersedes or r.path if not hit and vsaid != "different" else None})
            vault.close()
    groups = defaultdict(Counter)
    for r in rows:
        for how in ("pair", "vault"):
            groups[f"{how} {r['lang']} {r['split']} {r['label']}"][r[f"{how}_outcome"]] += 1
    for key in sorted(groups):
        print(f"{key:28} {dict(sorted(groups[key].items()))}")
    out = HERE / "results" / f"memory-fresh53-{name}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"embedder": name, "rows": rows,
                               "summary": {k: dict(v) for k, v in sorted(groups.items())}},
                              ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
