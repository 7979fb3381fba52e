"""Integer-only requantization: the one rounding rule used by the reference and every kernel.

A real multiplier m > 0 is represented as (M, s) with M an int32 in [2**30, 2**31) and
1 <= s <= 62, so that m ~= M / 2**s (for m < 2**-32, s stays 62 and M drops below 2**30,
down to 0: such a layer outputs its zero point).  Requantizing an int32/int64 accumulator `acc` is

    out = clamp(zp_out + rshift_round(acc * M, s), act_min, act_max)
    rshift_round(v, s) = (v + (1 << (s - 1))) >> s      # arithmetic shift: round half up

computed in 64-bit integers.  Kernels in C do exactly this (see kernels/common/nn_requant.h).

Per-op parameters (all returned by requant_params(); array dtypes are int32):

  conv2d, linear   mult[o], shift[o]   for m[o] = s_in * s_w[o] / s_out
  maxpool, requant mult[1], shift[1]   for m = s_in / s_out          (applied to x - zp_in)
  avgpool          mult[c], shift[c]   for c = 0..kh*kw, m = s_in / (s_out * c) (entry 0 unused)
  global_avgpool   mult[1], shift[1]   for m = s_in / (s_out * H * W)
  add              mult[2], shift[1]   m_i = s_in_i / s_out, one common shift chosen from the
                                       larger of the two:  acc = (x1-z1)*M1 + (x2-z2)*M2
  concat           mult[n], shift[n]   one (M, s) per input, m_i = s_in_i / s_out
  reshape          (none)
"""
from __future__ import annotations

import math

import numpy as np

MULT_BITS = 31
MAX_SHIFT = 62


def quantize_multiplier(m: float) -> tuple[int, int]:
    """Return (M, s) with M / 2**s ~= m, M in [2**30, 2**31), 1 <= s <= 62."""
    if not (m > 0.0 and math.isfinite(m)):
        raise ValueError(f"requantization multiplier must be positive and finite, got {m!r}")
    frac, exp = math.frexp(m)            # m = frac * 2**exp, frac in [0.5, 1)
    M = int(round(frac * (1 << MULT_BITS)))
    if M == (1 << MULT_BITS):
        M //= 2
        exp += 1
    s = MULT_BITS - exp
    if s > MAX_SHIFT:                    # tiny multiplier: give up low bits of M
        M >>= (s - MAX_SHIFT)
        s = MAX_SHIFT
        M = max(M, 0)
    if s < 1:
        raise ValueError(f"requantization multiplier {m!r} is too large (>= 2**30)")
    return M, s


def multiplier_with_shift(m: float, s: int) -> int:
    """M such that M / 2**s ~= m for a given shift s (used for shared shifts)."""
    M = int(round(m * (1 << s)))
    if M >= (1 << MULT_BITS):
        raise ValueError(f"multiplier {m!r} does not fit 31 bits at shift {s}")
    return M


def rshift_round(v, s):
    """Round-half-up arithmetic right shift on int64 numpy arrays (or Python ints)."""
    if isinstance(v, np.ndarray):
        v = v.astype(np.int64)
        s = np.asarray(s, dtype=np.int64)
        return (v + (np.int64(1) << (s - 1))) >> s
    return (v + (1 << (s - 1))) >> s


def requantize(acc, mult, shift, zp_out: int, act_min: int = -128, act_max: int = 127) -> np.ndarray:
    """clamp(zp_out + rshift_round(acc * mult, shift)) -> int8.  acc/mult/shift broadcast."""
    acc = np.asarray(acc, dtype=np.int64)
    prod = acc * np.asarray(mult, dtype=np.int64)
    out = rshift_round(prod, np.asarray(shift, dtype=np.int64)) + zp_out
    return np.clip(out, act_min, act_max).astype(np.int8)


def _pair(ms):
    M = np.array([p[0] for p in ms], dtype=np.int32)
    S = np.array([p[1] for p in ms], dtype=np.int32)
    return M, S


def requant_params(layer, graph) -> dict:
    """Integer parameters of `layer` as {'mult': int32[...], 'shift': int32[...]} (see module doc)."""
    out_q = graph.tensor(layer.output).q
    ins = [graph.tensor(t) for t in layer.inputs]
    op = layer.op
    if op in ("conv2d", "linear"):
        s_in = ins[0].q.scale
        M, S = _pair([quantize_multiplier(s_in * float(sw) / out_q.scale)
                      for sw in layer.weight_scale])
        return {"mult": M, "shift": S}
    if op in ("maxpool", "requant"):
        return dict(zip(("mult", "shift"), _pair([quantize_multiplier(ins[0].q.scale / out_q.scale)])))
    if op == "avgpool":
        kh, kw = layer.attrs["kernel"]
        ms = [(0, 1)] + [quantize_multiplier(ins[0].q.scale / (out_q.scale * c))
                         for c in range(1, kh * kw + 1)]
        return dict(zip(("mult", "shift"), _pair(ms)))
    if op == "global_avgpool":
        _, _, h, w = ins[0].shape
        return dict(zip(("mult", "shift"),
                        _pair([quantize_multiplier(ins[0].q.scale / (out_q.scale * h * w))])))
    if op == "add":
        m = [t.q.scale / out_q.scale for t in ins]
        _, s = quantize_multiplier(max(m))
        return {"mult": np.array([multiplier_with_shift(x, s) for x in m], dtype=np.int32),
                "shift": np.array([s], dtype=np.int32)}
    if op == "concat":
        return dict(zip(("mult", "shift"),
                        _pair([quantize_multiplier(t.q.scale / out_q.scale) for t in ins])))
    if op == "reshape":
        return {}
    raise ValueError(f"no requantization rule for op {op!r}")


# Largest number of products one conv/linear output may sum so that the accumulator stays
# exact in int32 (C kernels) and in float64 (NumPy reference): |x - zp| <= 255 and
# |w| <= 128, so |sum| <= K * 32640 < 2**31 for K <= 65793 (ResNet-18 needs K <= 4608).
# Bias (int32) is added in 64 bits: |bias + sum| < 2**32 and M < 2**31 keep acc * M plus
# the rounding constant below 2**63.
MAX_ACC_TERMS = (2**31 - 1) // (255 * 128)
