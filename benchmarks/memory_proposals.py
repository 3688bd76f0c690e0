"""Precision and recall of the extractive memory proposer on hand-labelled turns (issue 14, item 7).

    python benchmarks/memory_proposals.py

Each turn of ``benchmarks/memory_turns.json`` is a user's turn labelled with the memory kinds it
states (or none). The proposer (``wikimem.knowledge.memory_proposals.classify_sentence``, also importable from ``memory``) runs on it; a
proposal counts as correct when the turn is memory-worthy, and its kind as right when it is one
of the labelled kinds. Writes ``benchmarks/results/memory-proposals.json``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from wikimem.knowledge.memory import _SENTENCE, classify_sentence  # noqa: E402


def propose(text: str) -> str | None:
    for m in _SENTENCE.finditer(text):
        kind = classify_sentence(" ".join(m.group(0).split()))
        if kind:
            return kind
    return None


def main() -> None:
    turns = json.loads((ROOT / "benchmarks" / "memory_turns.json").read_text(encoding="utf-8"))["turns"]
    rows = []
    for t in turns:
        got = propose(t["text"])
        rows.append({"text": t["text"], "lang": t["lang"], "gold": t["kinds"], "proposed": got})
    proposed = [r for r in rows if r["proposed"]]
    worthy = [r for r in rows if r["gold"]]
    tp = [r for r in proposed if r["gold"]]
    kind_ok = [r for r in tp if r["proposed"] in r["gold"]]
    result = {
        "turns": len(rows), "memory_worthy": len(worthy), "proposed": len(proposed),
        "precision": round(len(tp) / len(proposed), 3) if proposed else None,
        "recall": round(len(tp) / len(worthy), 3) if worthy else None,
        "kind_accuracy_of_true_proposals": round(len(kind_ok) / len(tp), 3) if tp else None,
        "false_proposals": [r["text"] for r in proposed if not r["gold"]],
        "missed": [r["text"] for r in worthy if not r["proposed"]],
        "wrong_kind": [(r["text"], r["proposed"], r["gold"]) for r in tp if r["proposed"] not in r["gold"]],
    }
    out = ROOT / "benchmarks" / "results" / "memory-proposals.json"
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
