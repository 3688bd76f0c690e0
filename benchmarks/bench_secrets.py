"""Secret scan cost on a vault: wikimem's regex rules against detect-secrets (issue 14, item 6).

    pip install "detect-secrets>=1.5"          # only for this comparison; wikimem does not depend on it
    cp -r /tmp/bench/vault10k-src /tmp/bench/knowledge-10k
    flock /tmp/wikimem-heavy.lock python benchmarks/bench_secrets.py /tmp/bench/knowledge-10k --runs 3 --ds-notes 1000
    python benchmarks/bench_secrets.py /tmp/bench/knowledge-10k --coverage-only   # rule coverage, seconds

Both scanners see every note of the vault once per run (read from disk each time, as a lint pass
would); detect-secrets runs with its default plugin set (``default_settings``, entropy detectors
included) through ``SecretsCollection.scan_file``. Also checks which of wikimem's positive
examples each scanner catches. Writes ``benchmarks/results/secrets-10k.json``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def notes(vault: Path) -> list[Path]:
    return sorted(p for p in vault.rglob("*.md") if ".wikimem" not in p.parts)


def run_wikimem(paths: list[Path]) -> tuple[float, int]:
    from wikimem.knowledge.secrets import scan
    t = time.perf_counter()
    found = sum(len(scan(p.read_text(encoding="utf-8", errors="replace"))) for p in paths)
    return time.perf_counter() - t, found


def run_detect_secrets(paths: list[Path]) -> tuple[float, int]:
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings
    t = time.perf_counter()
    with default_settings():
        coll = SecretsCollection()
        for p in paths:
            coll.scan_file(str(p))
    found = sum(len(v) for _, v in coll.data.items())
    return time.perf_counter() - t, found


def coverage() -> dict[str, dict]:
    """Per rule of tests/test_secrets.py: is the positive example flagged, and which look-alikes
    that must pass (a hash in a URL, ``sk-`` inside a word...) are flagged anyway, by each scanner."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings
    from test_secrets import CASES
    from wikimem.knowledge.secrets import scan

    def ds_flags(text: str, tmp: str, name: str) -> bool:
        path = Path(tmp) / f"{name}.md"
        path.write_text(text + "\n", encoding="utf-8")
        coll = SecretsCollection()
        coll.scan_file(str(path))
        return bool(list(coll.data.items()))

    out = {}
    with tempfile.TemporaryDirectory() as tmp, default_settings():
        for rule, (positive, negatives) in sorted(CASES.items()):
            out[rule] = {"wikimem": rule in {f.rule for f in scan(positive)},
                         "detect_secrets": ds_flags(positive, tmp, rule),
                         "lookalikes_flagged_wikimem": [n for n in negatives if scan(n)],
                         "lookalikes_flagged_detect_secrets": [n for i, n in enumerate(negatives)
                                                               if ds_flags(n, tmp, f"{rule}-{i}")]}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("vault", type=Path)
    ap.add_argument("--runs", type=int, default=3, help="runs of wikimem's scanner (median reported)")
    ap.add_argument("--ds-runs", type=int, default=1, help="runs of detect-secrets")
    ap.add_argument("--ds-notes", type=int, default=1000,
                    help="notes detect-secrets scans (every 10th note, up to this many; 0: all). At ~6 notes/s "
                         "a full 10k pass holds the shared heavy-job lock for ~25 minutes, so by default the "
                         "figure is measured on a spread sample and scaled per note")
    ap.add_argument("--coverage-only", action="store_true", help="only the rule coverage (seconds, not minutes)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "secrets-10k.json")
    args = ap.parse_args()
    if args.coverage_only:
        text = json.dumps(coverage(), indent=2, ensure_ascii=False)
        (args.out.parent / "secrets-coverage.json").write_text(text + "\n", encoding="utf-8")
        print(text)
        return
    paths = notes(args.vault)
    result: dict = {"vault": str(args.vault), "notes": len(paths), "runs": args.runs,
                    "bytes": sum(p.stat().st_size for p in paths)}
    sample = paths if not args.ds_notes else paths[::max(1, len(paths) // args.ds_notes)][:args.ds_notes]
    for name, fn, runs, subset in (("wikimem_regex", run_wikimem, args.runs, paths),
                                   ("detect_secrets", run_detect_secrets, args.ds_runs, sample)):
        times, found = [], 0
        for _ in range(runs):
            secs, found = fn(subset)
            times.append(secs)
        med = statistics.median(times)
        result[name] = {"notes": len(subset), "seconds": [round(s, 3) for s in times], "median_s": round(med, 3),
                        "notes_per_s": round(len(subset) / med, 1), "findings": found,
                        "seconds_per_10k_notes": round(med / len(subset) * 10_000, 1)}
        print(name, result[name], flush=True)
    result["ratio_detect_secrets_over_wikimem"] = round(
        result["detect_secrets"]["seconds_per_10k_notes"] / result["wikimem_regex"]["seconds_per_10k_notes"], 1)
    result["coverage_of_positive_examples"] = coverage()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
