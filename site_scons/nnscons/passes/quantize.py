"""Quantization rules shared by the frontends: activations, weights, bias.

Scales are rounded to float32 so that an IR written as ONNX (float32 scales) and read
back is bit-identical, and so the reference and onnxruntime use the very same scales.
"""
from __future__ import annotations

import numpy as np

from .. import ops
from ..ir import QParams
from ..opkit.opgraph import OpGraph

MIN_RANGE = 1e-6   # a constant-zero tensor still needs a usable (finite) scale


def f32(x) -> float:
    return float(np.float32(x))


def minmax_qparams(lo: float, hi: float) -> QParams:
    """Asymmetric int8 params covering [lo, hi] widened to include 0."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    scale = f32(max(hi - lo, MIN_RANGE) / 255.0)
    zp = int(np.clip(round(-128 - lo / scale), -128, 127))
    return QParams(scale, zp)


# Output channels quantized at a time: a block of float64 values stays in L2 (512 KiB), where
# the whole layer's were fresh float64 arrays (resnet18: 94 MB twice; page faults and memory
# traffic cost a cold build 45-190 ms, Zen 4, against ~20 ms in blocks).
_BLOCK_VALUES = 1 << 16


def symmetric_per_channel(w: np.ndarray, factor: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(int8 weights, float64 scale[O]) of the real weights w (float64 products w * factor
    when a per-output-channel factor is given: Op.weight_factor): scale = max|w_o| / 127,
    all-zero channels get 1.0."""
    rows = w.reshape(w.shape[0], -1)
    q = np.empty(w.shape, np.int8)
    q_rows = q.reshape(rows.shape)
    scale = np.empty(rows.shape[0])
    step = max(1, _BLOCK_VALUES // max(rows.shape[1], 1))
    for i in range(0, rows.shape[0], step):
        # float32 weights convert exactly; the products are those of w * factor
        block = rows[i:i + step].astype(np.float64)
        if factor is not None:
            block *= factor[i:i + step, None]
        # max|w| without an |w| array: the same value (negation is exact)
        amax = np.maximum(block.max(axis=1), -block.min(axis=1))
        s = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32).astype(np.float64)
        scale[i:i + step] = s
        block /= s[:, None]
        np.round(block, out=block)
        q_rows[i:i + step] = np.clip(block, -127, 127, out=block)
    return q, scale


def widen_for_bias(q: np.ndarray, scale: np.ndarray, op, s_in: float) -> tuple:
    """(int8 weights, scale[O]) of symmetric_per_channel with each channel's scale raised
    to where its bias fits half the int32 range at s_in * scale, that channel requantized.
    Trained networks have dead channels: PP-OCRv4's detector has max|w| = 1.2e-34 beside a
    bias of 0.2, whose int32 code at max|w| / 127 would be ~1e44. Such a channel computes
    its bias; its weights round to 0 as they are."""
    if op.bias is None:
        return q, scale
    need = np.abs(np.asarray(op.bias, np.float64)) / (s_in * 2.0 ** 30)
    low = np.nonzero(scale < need)[0]
    if not low.size:
        return q, scale
    q, scale = q.copy(), scale.copy()
    rows, q_rows = op.weight.reshape(q.shape[0], -1), q.reshape(q.shape[0], -1)
    for o in low:
        s = np.float32(need[o])
        scale[o] = float(s if s >= need[o] else np.nextafter(s, np.float32(np.inf)))
        w = rows[o].astype(np.float64) * (1.0 if op.weight_factor is None else op.weight_factor[o])
        q_rows[o] = np.clip(np.round(w / scale[o]), -127, 127)
    return q, scale


def bias_int32(g: OpGraph, op, s_in: float, s_w: np.ndarray) -> np.ndarray:
    """The op's int32 bias at scale s_in * s_w[o]: the model's own integers when their scale
    matches, else round-half-to-even of the real bias."""
    n = len(s_w)
    want = s_in * s_w
    if op.bias_q is not None and np.allclose(op.bias_q[1], want, rtol=1e-5, atol=0):
        return op.bias_q[0].astype(np.int32)
    b = np.zeros(n) if op.bias is None else op.bias
    q = np.round(b / want)
    if np.abs(q).max(initial=0) > np.iinfo(np.int32).max:
        raise g.fail(op, "bias does not fit int32 at scale input_scale * weight_scale; "
                         "the input scale or weight scale is far too small")
    return q.astype(np.int32)


def inherit_qparams(g: OpGraph) -> None:
    """Ops that cannot widen the value range reuse their input's params when the model
    gives none (onnxruntime leaves e.g. MaxPool outputs sharing the producer's params)."""
    for op in g.ops:
        if op.output not in g.qparams and ops.get(op.kind).range_preserving \
                and op.inputs[0] in g.qparams:
            g.qparams[op.output] = g.qparams[op.inputs[0]]


def inherit_qparams_backward(g: OpGraph) -> None:
    """A float island's tensor read only by an op that selects its values (a max pool, a
    data movement, a reshape, a Relu/Clip: OpDef.selects) whose output the model
    quantizes: ONNX rounds once, at that output; the island's tensor takes its params, so
    the op moves codes and rounds nothing itself (a monotone rounding, saturation
    included, commutes with it). Averages are not selections: their input keeps a scale of
    its own. A network input the model does not quantize (its first op a max pool or a Pad
    the quantizer left in float) is such a tensor too: the run's input is quantized where
    ONNX would round, after the selection."""
    for op in reversed(g.ops):
        d = ops.get(op.kind)
        if not d.selects or not op.inputs or op.output not in g.qparams:
            continue
        src = op.inputs[0]
        if (src in g.qparams or src in g.outputs or [o for o in g.consumers(src) if o is not op]
                or (g.producer(src) is None and src not in g.inputs)):
            continue
        g.qparams[src] = g.qparams[op.output]


def requantize_aliases(g: OpGraph) -> None:
    """An alias op (a reshape: the same bytes) whose output is quantized otherwise than its
    input (a QDQ model's Q after a Flatten/Reshape, a float island's calibrated tail) would
    reinterpret the codes at the wrong scale: it keeps its input's parameters and a requant
    to the output's follows it, where ONNX rounds."""
    from ..opkit.opgraph import Op
    out_ops = []
    for op in g.ops:
        q_in = g.qparams.get(op.inputs[0]) if op.inputs else None
        q_out = g.qparams.get(op.output)
        if ops.get(op.kind).alias and q_in is not None and q_out is not None and q_in != q_out:
            mid = f"{op.output}__as_{op.inputs[0]}"
            g.qparams[mid] = q_in
            g.shapes[mid] = g.shapes[op.output]
            final, op.output = op.output, mid
            out_ops += [op, Op(f"{op.name}_requant", "requant", [mid], final, "QuantizeLinear")]
        else:
            out_ops.append(op)
    g.ops = out_ops
