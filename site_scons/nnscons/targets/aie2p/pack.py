"""The weights .bin of a mapped layer, in the kernel's layout.

Per block of 8 output channels: W as {K/8}{K8}{C8} int8 (k in (ky, kx, ci) order), then
bias', mult, shift as 8 int32 each. A call's `channels_per_call` channels are consecutive
blocks, so the file does not depend on the tiling: a tiling edit never rebuilds it.

bias' = bias - zp_act * sum_k w folds the input zero point in, so the kernel multiplies
the raw activation bytes (uint8 or int8, as the hardware's mmul does) and still computes
exactly sum_k (x - zp) * w + bias of the reference.
"""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ... import numerics


def act_zero_point(layer, graph, act_dtype: str) -> int:
    zp = graph.tensor(layer.inputs[0]).q.zero_point
    return zp + 128 if act_dtype == "uint8" else zp


def weight_matrix(layer) -> np.ndarray:
    """(O, K) int64 with k in (ky, kx, ci) order: the HWC window order."""
    w = layer.weight.astype(np.int64)
    if w.ndim == 4:
        w = w.transpose(0, 2, 3, 1)
    return w.reshape(w.shape[0], -1)


def pack(layer, graph, act_dtype: str) -> bytes:
    wk = weight_matrix(layer)
    o, k = wk.shape
    bias = np.zeros(o, np.int64) if layer.bias is None else layer.bias.astype(np.int64)
    folded = bias - act_zero_point(layer, graph, act_dtype) * wk.sum(axis=1)
    if folded.min() < -2**31 or folded.max() >= 2**31:
        raise ModelError(f"layer '{layer.name}': bias with the folded input zero point does "
                         f"not fit int32")
    p = numerics.requant_params(layer, graph)
    out = bytearray()
    le32 = np.dtype("<i4")
    for cb in range(o // 8):
        sl = slice(cb * 8, cb * 8 + 8)
        block = wk[sl].T.reshape(k // 8, 8, 8)                 # [k/8][k8][c8]
        out += block.astype(np.int8).tobytes()
        for arr in (folded[sl], p["mult"][sl], p["shift"][sl]):
            out += np.asarray(arr).astype(le32).tobytes()
    return bytes(out)
