"""wikimem serve under load (issue 37): N concurrent clients on loopback for a fixed time, 90 %
searches and 10 % writes (compare-and-swap appends to a shared set of pages, and new notes), on a
vault made of tldr pages. Reports search and write latency (p50/p95), errors (every status other
than 200 and the expected 409 conflicts), the server's RSS over the run, and afterwards checks
that every acknowledged write is on disk and searchable (lost writes).

    python benchmarks/bench_serve.py                         # 20 clients, 60 s, 1,000 tldr pages, e5
    python benchmarks/bench_serve.py --clients 20 --seconds 60 --think-ms 0
    python benchmarks/bench_serve.py --pages 200 --seconds 10 --embedder none   # smoke run

Clients are closed-loop: each sends its next request when the last one is answered, after
``--think-ms`` (default 0: as hard as they can). The server is a real ``wikimem serve`` child
process; its vault is made in ``--work`` from ../shared/datasets/tldr (never copied into the repo).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from tldr import load_queries, sync_vault, wanted_pages  # noqa: E402

SHARED_PAGES = 10


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/wikimem-bench-serve"))
    ap.add_argument("--pages", type=int, default=1000, help="tldr pages in the vault (plus every query's answer)")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--think-ms", type=float, default=0.0)
    ap.add_argument("--write-share", type=float, default=0.10)
    ap.add_argument("--embedder", default="e5")
    ap.add_argument("--port", type=int, default=8791)
    ap.add_argument("--out", type=Path, default=None, help="write the JSON result here")
    ap.add_argument("--database-url", default="", help="serve the vault from this PostgreSQL (store = postgres)")
    ap.add_argument("--vault-id", default="bench-serve", help="with --database-url: the vault's id there")
    args = ap.parse_args(argv)

    queries = load_queries(HERE / "tldr_queries.jsonl")
    root = args.work / "vault"
    sync_vault(root, wanted_pages(queries, args.pages))
    (root / "SCHEMA.md").write_text("# Schema\n\ntldr pages as notes.\n")
    (root / ".wikimem.toml").write_text(f'embedder = "{args.embedder}"\n')
    shared = [f"shared/s{i}.md" for i in range(SHARED_PAGES)]
    for rel in shared:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# Shared {rel}\n\nA page every client appends to.\n")
    english = [q["q"] for q in queries if q["kind"].startswith("en")] or ["list files"]

    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_") or k == "WIKIMEM_SERVE_READ_THREADS"}
    env["WIKIMEM_TOKENS"] = str(args.work / "tokens.json")  # none: loopback without tokens
    if args.database_url:  # the same vault and load on the team store
        env.update(WIKIMEM_STORE="postgres", WIKIMEM_DATABASE_URL=args.database_url, WIKIMEM_VAULT_ID=args.vault_id)
    wikimem = str(Path(sys.executable).parent / "wikimem")
    print(f"indexing {root} ...", flush=True)
    subprocess.run([wikimem, "index", str(root)], env=env, check=True, stdout=subprocess.DEVNULL)
    server = subprocess.Popen([wikimem, "serve", str(root), "--port", str(args.port), "--rate", "0"], env=env,
                              stdout=subprocess.DEVNULL, stderr=open(args.work / "serve.log", "w"))
    url = f"http://127.0.0.1:{args.port}"
    name = None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            vaults = httpx.get(url + "/v1/vaults", timeout=2).json()["vaults"]
            if vaults and vaults[0]["state"] == "ready":
                name = vaults[0]["name"]
                break
        except (httpx.HTTPError, ValueError, KeyError):
            pass
        time.sleep(0.5)
    if name is None:
        server.kill()
        sys.exit("the server did not become ready")
    base = f"{url}/v1/vaults/{name}"

    lock = threading.Lock()
    search_ms: list[float] = []
    write_ms: list[float] = []
    statuses: dict[str, int] = {}
    appended: list[tuple[str, str]] = []  # (page, unique line) acknowledged
    created: list[tuple[str, str]] = []  # (page, unique word) acknowledged
    stop = threading.Event()

    def client(n: int) -> None:
        rng = random.Random(n)
        i = 0
        with httpx.Client(base_url=base, timeout=60) as http:
            while not stop.is_set():
                i += 1
                started = time.perf_counter()
                try:
                    if rng.random() >= args.write_share:
                        r = http.get("/search", params={"q": rng.choice(english), "limit": 5})
                        kind, took = "search", search_ms
                    elif rng.random() < 0.5:
                        page = rng.choice(shared)
                        sha = http.get("/page", params={"path": page}).json()["sha256"]
                        line = f"appended by client {n} step {i} zq{n}x{i}"
                        r = http.post("/edit", json={"path": page, "operation": "append", "content": line + "\n",
                                                     "expected_sha256": sha})
                        kind, took = "edit", write_ms
                        if r.status_code == 200:
                            with lock:
                                appended.append((page, line))
                    else:
                        word = f"benchword{n}q{i}"
                        path = f"bench/c{n}-{i}.md"
                        r = http.post("/write", json={"path": path, "content": f"# Note {n}-{i}\n\nThe {word} note.\n"})
                        kind, took = "write", write_ms
                        if r.status_code == 200:
                            with lock:
                                created.append((path, word))
                    elapsed = (time.perf_counter() - started) * 1000
                    with lock:
                        took.append(elapsed)
                        key = f"{kind} {r.status_code}"
                        statuses[key] = statuses.get(key, 0) + 1
                except httpx.HTTPError as exc:
                    with lock:
                        statuses[f"transport {type(exc).__name__}"] = statuses.get(f"transport {type(exc).__name__}", 0) + 1
                if args.think_ms:
                    time.sleep(args.think_ms / 1000)

    rss: list[tuple[float, float]] = []
    threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
    cpu0, own0 = cpu_seconds(server.pid), time.process_time()
    t0 = time.monotonic()
    for t in threads:
        t.start()
    while time.monotonic() - t0 < args.seconds:
        value = rss_mb(server.pid)
        if value is not None:
            rss.append((round(time.monotonic() - t0, 1), round(value, 1)))
        time.sleep(1.0)
    stop.set()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    cpu1, own1 = cpu_seconds(server.pid), time.process_time()

    # afterwards: every acknowledged write on disk and searchable
    lost_on_disk = [p for p, line in appended if line not in (root / p).read_text()]
    lost_on_disk += [p for p, _ in created if not (root / p).exists()]
    unsearchable = []
    deadline = time.monotonic() + 60
    pending = list(created)
    while pending and time.monotonic() < deadline:
        still = []
        for path, word in pending:
            hits = httpx.get(base + "/search", params={"q": word, "mode": "lexical", "limit": 3}, timeout=30).json()["hits"]
            if not any(h["path"] == path for h in hits):
                still.append((path, word))
        pending = still
        if pending:
            time.sleep(1.0)
    unsearchable = [p for p, _ in pending]
    server.terminate()
    server.wait(timeout=60)

    errors = {k: v for k, v in statuses.items() if not k.endswith(" 200") and k != "edit 409"}
    half = [v for t, v in rss if t >= args.seconds / 2]
    result = {
        "machine": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
        "pages": args.pages, "clients": args.clients, "seconds": round(wall, 1), "think_ms": args.think_ms,
        "embedder": args.embedder,
        "searches": len(search_ms), "writes": len(write_ms),
        "search_ms": {"p50": pct(search_ms, 0.5), "p95": pct(search_ms, 0.95), "max": max(search_ms, default=None)},
        "write_ms": {"p50": pct(write_ms, 0.5), "p95": pct(write_ms, 0.95), "max": max(write_ms, default=None)},
        "throughput_per_s": round((len(search_ms) + len(write_ms)) / wall, 1),
        "cpu_cores_busy": {"server": round((cpu1 - cpu0) / wall, 2) if cpu0 is not None and cpu1 is not None else None,
                           "load_generator": round((own1 - own0) / wall, 2)},
        "statuses": statuses, "errors": errors, "expected_conflicts": statuses.get("edit 409", 0),
        "acknowledged": {"appends": len(appended), "new_notes": len(created)},
        "lost_on_disk": len(lost_on_disk), "not_searchable_after_60s": len(unsearchable),
        "rss_mb": {"first": rss[0][1] if rss else None, "max": max((v for _, v in rss), default=None),
                   "last": rss[-1][1] if rss else None,
                   "second_half_growth": round(half[-1] - half[0], 1) if len(half) > 1 else None},
        "rss_samples": rss,
    }
    for part in ("search_ms", "write_ms"):
        result[part] = {k: (round(v, 1) if v is not None else None) for k, v in result[part].items()}
    print(json.dumps({k: v for k, v in result.items() if k != "rss_samples"}, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
