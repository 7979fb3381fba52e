"""The weights .bin of a mapped layer, in the kernel's layout.

Per block of 8 output channels: W as {K/8}{K8}{C8} int8 (k in (ky, kx, ci) order over the
staged Cp input channels), then bias'[ncls][8], mult[8], shift[8] int32. A call's
`channels_per_call` channels are consecutive blocks, so the file depends only on the
layer (geometry, padding, numerics), never on the tiling: a tiling edit never rebuilds it.

bias' folds the input zero point in, so the kernel multiplies the raw activation bytes
(uint8 or int8, as the hardware's mmul does). With padding the DDR staging fills padded
taps with raw 0, not zp, so a pixel whose window leaves the image needs
    sum_valid (x - zp) * w + bias = sum_all x' * w + (bias - zp * sum_valid w)
(x' = x inside, 0 outside): one bias' per *border class* -- which kernel rows/columns fall
inside the image (mapping.classes: at most (pt+pb+1) x (pl+pr+1) classes, fewer with
stride) -- per output channel. An unpadded layer has the one class: bias - zp * sum_all w.
Added input channels have zero weights; added output channels (Op > O) have zero weights,
bias and multiplier and are dropped by the runner.
"""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ... import ops as registry
from . import mapping


def act_zero_point(layer, graph, act_dtype: str) -> int:
    zp = graph.tensor(layer.inputs[0]).q.zero_point
    return zp + 128 if act_dtype == "uint8" else zp


def weight_tensor(layer, graph) -> np.ndarray:
    """(O, kh, kw, C) int64: the window in HWC order (a Linear is 1 x 1 x K, its columns
    permuted to HWC when it reads a flattened CxHxW tensor)."""
    w = layer.weight.astype(np.int64)
    if w.ndim == 4:
        return w.transpose(0, 2, 3, 1)
    src = mapping.flattened_from(layer, graph)
    if src is not None:
        _, c, h, ww = src
        w = w.reshape(w.shape[0], c, h, ww).transpose(0, 2, 3, 1)
    return w.reshape(w.shape[0], 1, 1, -1)


def class_biases(layer, graph, act_dtype: str, g: dict) -> np.ndarray:
    """(ncls, O) int64: bias - zp * sum of the weights inside the image, per border class."""
    w4 = weight_tensor(layer, graph)
    bias = np.zeros(w4.shape[0], np.int64) if layer.bias is None else layer.bias.astype(np.int64)
    zp = act_zero_point(layer, graph, act_dtype)
    cls = mapping.classes(g)
    out = []
    for r0, r1 in cls["row_spans"]:
        for c0, c1 in cls["col_spans"]:
            out.append(bias - zp * w4[:, r0:r1, c0:c1, :].sum(axis=(1, 2, 3)))
    return np.array(out, dtype=np.int64)


def pack(layer, graph, act_dtype: str, g: dict) -> bytes:
    w4 = weight_tensor(layer, graph)
    o, kh, kw, c = w4.shape
    op, cp = g["Op"], g["Cp"]
    wk = np.zeros((op, kh, kw, cp), np.int64)
    wk[:o, :, :, :c] = w4
    wk = wk.reshape(op, -1)
    k = wk.shape[1]
    folded = np.zeros((mapping.classes(g)["n"], op), np.int64)
    folded[:, :o] = class_biases(layer, graph, act_dtype, g)
    if folded.min() < -2**31 or folded.max() >= 2**31:
        raise ModelError(f"layer '{layer.name}': bias with the folded input zero point does "
                         f"not fit int32")
    p = registry.requant_params(layer, graph)
    mult = np.zeros(op, np.int64)
    shift = np.ones(op, np.int64)
    mult[:o], shift[:o] = p["mult"], p["shift"]
    out = bytearray()
    le32 = np.dtype("<i4")
    for cb in range(op // 8):
        sl = slice(cb * 8, cb * 8 + 8)
        block = wk[sl].T.reshape(k // 8, 8, 8)                 # [k/8][k8][c8]
        out += block.astype(np.int8).tobytes()
        for arr in (folded[:, sl], mult[sl], shift[sl]):
            out += np.asarray(arr).astype(le32).tobytes()
    return bytes(out)
