"""The upgrade from fp32 chunks to int8tok chunks on the first-build vault (issue 52 step 4).

    flock /tmp/wikimem-heavy.lock python benchmarks/bench_variant_upgrade.py [--pages 170]

The vault of bench_first_build.py (170 tldr topic pages) is built with the chunks in fp32 (the
default before, ``wikimem index`` with ``onnx_e5.DEFAULT_VARIANT = "fp32"``; held passages int8 as
both defaults hold them), then indexed again by the current default (int8tok chunks): the
identity changed, so every chunk is embedded again; the held passages must be taken from the
vector cache. Reported: each build's wall seconds and its report (embedded now, the stages).
Then the upgraded vault's vectors are compared with those of the same vault whose ``.wikimem``
was deleted and built again (every id the same, every vector equal to 1e-5), and the top 5 of a
few questions in both.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_first_build import CHUNK_VARIANT_CLI, build_vault  # noqa: E402

QUESTIONS = ["how do I extract a tar archive", "show disk usage of a folder", "压缩文件", "change file permissions",
             "list open network ports", "查看进程"]


def index(vault: Path, variant: str | None) -> dict:
    command = [sys.executable, "-c", CHUNK_VARIANT_CLI, variant] if variant else [sys.executable, "-m", "wikimem.cli"]
    started = time.perf_counter()
    proc = subprocess.run([*command, "index", str(vault), "--json"], capture_output=True, text=True, cwd=HERE.parent)
    if proc.returncode != 0:
        sys.exit(proc.stderr)
    report = json.loads(proc.stdout)
    return {"wall_s": round(time.perf_counter() - started, 2), "embedded_now": report.get("embedded_now"),
            "searched_ready_s": report.get("searched_ready_s"), "seconds": report.get("seconds"),
            "notices": report.get("notices"), "embedder": report.get("embedder")}


def snapshot(vault: Path) -> tuple[dict, dict]:
    from wikimem.api import open_vault
    v = open_vault(vault, embedder="e5")
    try:
        index = v.cache.vectors(v.cache.embedder().identity.dim)
        vectors = index.vectors(index.ids().tolist())
        tops = {q: [h.path for h in v.search(q, limit=5).hits] for q in QUESTIONS}
        return vectors, tops
    finally:
        v.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=170)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "variant-upgrade.json")
    args = ap.parse_args()
    import numpy as np
    work = Path(tempfile.mkdtemp(prefix="wikimem-upgrade-"))
    vault = work / "vault"
    try:
        result = {"vault": build_vault(vault, args.pages, 4096, 0.0)}
        result["before_fp32"] = index(vault, "fp32")
        print("fp32 build:", result["before_fp32"], flush=True)
        result["upgrade"] = index(vault, None)
        print("upgrade to the default:", result["upgrade"], flush=True)
        upgraded, tops_up = snapshot(vault)
        shutil.rmtree(vault / ".wikimem")
        result["fresh"] = index(vault, None)
        print("fresh build (.wikimem deleted):", result["fresh"], flush=True)
        fresh, tops_fresh = snapshot(vault)
        same_ids = sorted(upgraded) == sorted(fresh)
        worst = max(float(np.abs(upgraded[i] - fresh[i]).max()) for i in fresh) if same_ids else None
        result["same_ids"], result["max_abs_difference"] = same_ids, worst
        result["same_top5"] = sum(tops_up[q] == tops_fresh[q] for q in QUESTIONS)
        print(f"upgraded vs fresh: same ids {same_ids}, max |difference| {worst}, "
              f"same top 5 for {result['same_top5']}/{len(QUESTIONS)} questions")
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print("wrote", args.out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
