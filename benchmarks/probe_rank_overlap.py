"""Top-10 agreement of two chunk variants on the documentation vault's questions (issue 52 step 4).

    python benchmarks/probe_rank_overlap.py dump --variant fp32 --work /tmp/fb-docs-fp32 --out /tmp/top-fp32.json
    python benchmarks/probe_rank_overlap.py dump --variant int8tok --work /tmp/fb-docs-tok --out /tmp/top-tok.json
    python benchmarks/probe_rank_overlap.py compare /tmp/top-fp32.json /tmp/top-tok.json

``dump`` opens the vault benchmarks/docs_vault.py built in ``--work`` (with that variant as the
chunks' and queries' model: ``onnx_e5.DEFAULT_VARIANT`` replaced in this process; nothing is
embedded but the questions) and writes each question's top 10 pages, vector-only and hybrid.
``compare`` prints, per mode and language, the mean and minimum share of the top 10 both variants
return, and how many questions keep the same first page.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
QUESTIONS = HERE / "docs_questions.json"


def dump(variant: str, work: Path, out: Path) -> None:
    import wikimem.embed.onnx_e5 as onnx_e5
    onnx_e5.DEFAULT_VARIANT = variant
    from wikimem.api import open_vault
    vault = open_vault(work / "vault", embedder="e5")
    model = vault.cache.embedder()
    assert variant in model.identity.model, model.identity
    questions = json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    rows = []
    for q in questions:
        row = {"q": q["q"], "lang": q["lang"]}
        for mode in ("vector", "hybrid"):
            row[mode] = [h.path for h in vault.search(q["q"], limit=10, mode=mode).hits]
        rows.append(row)
    vault.close()
    out.write_text(json.dumps({"variant": variant, "identity": model.identity.key, "rows": rows}, ensure_ascii=False),
                   encoding="utf-8")


def compare(a: Path, b: Path) -> dict:
    left, right = (json.loads(p.read_text(encoding="utf-8")) for p in (a, b))
    assert [r["q"] for r in left["rows"]] == [r["q"] for r in right["rows"]]
    out = {}
    for mode in ("vector", "hybrid"):
        for lang in ("en", "zh", "all"):
            pairs = [(x[mode], y[mode]) for x, y in zip(left["rows"], right["rows"]) if lang in ("all", x["lang"])]
            share = [len(set(x) & set(y)) / max(1, len(x)) for x, y in pairs]
            first = sum(bool(x) and bool(y) and x[0] == y[0] for x, y in pairs)
            out[f"{mode}/{lang}"] = {"n": len(pairs), "top10_overlap_mean": round(statistics.mean(share), 3),
                                     "top10_overlap_min": round(min(share), 2), "same_first": first}
            print(f"{mode:7s} {lang:3s} n={len(pairs):3d}  top-10 overlap mean {statistics.mean(share):.3f} "
                  f"min {min(share):.1f}  same first page {first}/{len(pairs)}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--variant", required=True)
    d.add_argument("--work", type=Path, required=True)
    d.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.cmd == "dump":
        dump(args.variant, args.work, args.out)
    else:
        compare(args.a, args.b)


if __name__ == "__main__":
    main()
