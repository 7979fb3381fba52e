"""The generated kernels' parameters, packed at build time with numpy: the weight matrix in
HWC column order, panels of nr channels, the bias with the input zero point folded in,
the exactness proofs of the vector epilogues, and the u8-buffer variants' split weights.
"""
from __future__ import annotations

import numpy as np

from .. import ops
from .geometry import segments, u8_im2col, u8_quads, u8_taps


def weight_matrix(layer, graph) -> np.ndarray:
    """(N, taps, IC) int8: conv OIHW -> O,(kh kw),I; linear columns in HWC order when the
    layer reads a flattened 4-D tensor (activations are HWC on the host): the op's
    hwc_params hook, one tap of all the columns without a window."""
    w = ops.get(layer.op).hwc_params(layer, graph, ops.get).get("weight", np.asarray(layer.weight))
    if ops.has_window(layer):                   # OHWI
        return w.reshape(w.shape[0], -1, w.shape[-1])
    return w.reshape(w.shape[0], 1, -1)


def panels(oc: int, nr: int) -> int:
    return -(-oc // nr)


def pack_weights(wm: np.ndarray, icp: int, nr: int) -> np.ndarray:
    """(N, segments, run) int8 -> panels of nr channels, each [segments*icp/2][nr][2] (each
    segment zero-padded to icp values, even), flat int8."""
    n, taps, ic = wm.shape
    npad = panels(n, nr) * nr
    full = np.zeros((npad, taps, icp), dtype=np.int8)
    full[:n, :, :ic] = wm
    k2 = taps * icp // 2
    return np.ascontiguousarray(full.reshape(npad // nr, nr, k2, 2).transpose(0, 2, 1, 3)).reshape(-1)


# Output channels summed at a time: an int64 copy of a whole layer's weights was a fresh
# 94 MB array for resnet18, made four times per layer by the checks below (page faults:
# 50-100 ms of a cold build's plan, Zen 4)
_SUM_BLOCK_VALUES = 1 << 16


def channel_sums(wm: np.ndarray, absolute: bool = False) -> np.ndarray:
    """Per output channel (axis 0) the sum of the integer weights (of |w| if absolute), int64."""
    rows = wm.reshape(wm.shape[0], -1)
    sums = np.empty(rows.shape[0], np.int64)
    step = max(1, _SUM_BLOCK_VALUES // max(rows.shape[1], 1))
    for i in range(0, rows.shape[0], step):
        block = rows[i:i + step].astype(np.int64)
        if absolute:
            np.abs(block, out=block)
        sums[i:i + step] = block.sum(axis=1)
    return sums


def folded_bias(wm: np.ndarray, bias, in_zp: int) -> np.ndarray:
    """bias - zp_in * sum(w), int64 (the caller checks it fits int32)."""
    s = channel_sums(wm)
    b = np.zeros(wm.shape[0], dtype=np.int64) if bias is None else np.asarray(bias, dtype=np.int64)
    return b - int(in_zp) * s


def vector_safe(wm: np.ndarray, fb: np.ndarray) -> bool:
    """True when acc + bias' fits int32 for every input: the vector epilogues add in int32.
    |acc| <= 128 * sum|w| per channel."""
    bound = np.abs(fb) + 128 * channel_sums(wm, absolute=True)
    return bool(bound.max(initial=0) < 2 ** 31)


def f64_safe(wm: np.ndarray, fb: np.ndarray, mult) -> bool:
    """True when |acc + bias'| * mult < 2**53 for every channel and input: the vector
    epilogue may requantize in double, exactly (nn_avx2_requant8_f64)."""
    bound = np.abs(fb) + 128 * channel_sums(wm, absolute=True)
    m = np.asarray(mult, dtype=np.int64)
    return bool(np.all(bound.astype(object) * m.astype(object) < 2 ** 53))


# ---- the exact vpmaddubsw variant (isa avx2u8) -----------------------------------------

# u8 x s8 pair sums x0*w0 + x1*w1, x in [0, 255]: no saturation iff the positive and the
# negative parts of (w0, w1) are each at most 128 (255 * 128 = 32640 <= 32767).
U8_PAIR_MAX = 128

# The variants that read the u8 buffer (x + 128): their weights .bin sections, and their
# weights pointer (ctx_t) and epilogue arrays in the layer source.
U8_VARIANTS = {"avx2u8": {"weight": "weight_u8", "bias": "bias_u8", "ptr": "wu", "epi": "epiu"},
       "avx512vnni": {"weight": "weight_vnni", "bias": "bias_vnni", "ptr": "wv", "epi": "epiv"},
       "avx512vnni512": {"weight": "weight_vnni512", "bias": "bias_vnni512", "ptr": "wz", "epi": "epiz"},
       "avxvnni": {"weight": "weight_avxvnni", "bias": "bias_avxvnni", "ptr": "wa", "epi": "epia"}}
U8_ISAS = tuple(U8_VARIANTS)
# those with vpdpbusd (no split, no correction quads): one packing per panel width
VNNI_ISAS = ("avx512vnni", "avx512vnni512", "avxvnni")


def u8_split(pairs: np.ndarray) -> tuple:
    """pairs (..., 2) int -> (A, B), A + B = pairs, every pair of A and of B safe: a pair
    whose same-sign parts sum to s > 128 keeps 128 of it in A (taking the excess from its
    first weight, then its second) and puts the excess s - 128 <= 128 in B."""
    w = pairs.astype(np.int32)
    sign = np.where(w.sum(-1) < 0, -1, 1)
    mag = w * sign[..., None]                          # the dominant sign made positive
    same = (mag >= 0).all(-1)
    excess = np.where(same, np.maximum(mag.sum(-1) - U8_PAIR_MAX, 0), 0)
    b0 = np.where(same, np.minimum(mag[..., 0], excess), 0)
    b = np.stack([b0, excess - b0], -1) * sign[..., None]
    return w - b, b


def u8_pairs_safe(weights: np.ndarray) -> bool:
    """The proof the avx2u8 variant needs: every (even, odd) pair of its packed int8
    weights has positive part <= 128 and negative part <= 128, so no vpmaddubsw pair sum of
    u8 activations saturates."""
    w = weights.astype(np.int32).reshape(-1, 2)
    return bool((np.clip(w, 0, None).sum(-1) <= U8_PAIR_MAX).all()
                and (np.clip(-w, 0, None).sum(-1) <= U8_PAIR_MAX).all())


def pack_u8(wm: np.ndarray, g: dict, nr: int, split: bool = True) -> dict:
    """(N, taps, IC) int8 -> the avx2u8 variant's parameters: per panel of nr channels the
    main weights A as [segments][quads][nr][4], then the panel's correction quads (those
    where B is nonzero for any of its channels) as [nx][nr][4]; `xo` their element offsets
    in a pixel's window, `xidx` the prefix count of correction quads per panel, `steps`
    the quads each panel's microkernel runs (main + correction).  split=False (avx512vnni,
    whose vpdpbusd never saturates): A = W, no correction quads."""
    seg = segments(wm, g)
    if u8_im2col(g):        # the whole window is one segment
        seg = seg.reshape(seg.shape[0], 1, -1)
    n, ntaps, run = seg.shape
    q = u8_quads(g)
    npan = panels(n, nr)
    full = np.zeros((npan * nr, ntaps, q * 4), np.int32)
    full[:n, :, :run] = seg
    if split:
        a, b = u8_split(full.reshape(npan * nr, ntaps, q, 2, 2))
    else:
        a, b = full, np.zeros_like(full)
    # -> (panel, segment, quad, channel, 4)
    a = a.reshape(npan, nr, ntaps, q, 4).transpose(0, 2, 3, 1, 4)
    b = b.reshape(npan, nr, ntaps, q, 4).transpose(0, 2, 3, 1, 4)
    taps = np.asarray(u8_taps(g), np.int64)
    used = b.any(axis=(3, 4))                          # (panel, segment, quad)
    parts, xo, xidx = [], [], [0]
    for pn in range(npan):
        t, k = np.nonzero(used[pn])
        parts += [a[pn].reshape(-1), b[pn][t, k].reshape(-1)]
        xo += list(taps[t] + 4 * k)
        xidx.append(len(xo))
    weights = np.concatenate(parts).astype(np.int8)
    assert (u8_pairs_safe(weights) or not split) and (a + b == full.reshape(npan, nr, ntaps, q, 4).transpose(0, 2, 3, 1, 4)).all()
    counts = np.diff(xidx)
    return {"weight": weights, "xo": np.asarray(xo, np.int64), "xidx": np.asarray(xidx, np.int64),
            "steps": ntaps * q + counts, "correction": len(xo) / (npan * ntaps * q)}


def bias_u8(wm: np.ndarray, fb: np.ndarray) -> np.ndarray:
    """The u8-buffer variants' bias (avx2u8, avx512vnni), wrapped to int32: fb - 128 * sum(w)
    (their activations are x + 128)."""
    s = channel_sums(wm)
    v = (np.asarray(fb, np.int64) - 128 * s) & 0xFFFFFFFF
    return np.where(v >= 2 ** 31, v - 2 ** 32, v)
