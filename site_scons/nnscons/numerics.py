"""Integer-only requantization: the one rounding rule used by the reference and every kernel.

A real multiplier m > 0 is represented as (M, s) with M an int32 in [2**30, 2**31) and
1 <= s <= 62, so that m ~= M / 2**s (for m < 2**-32, s stays 62 and M drops below 2**30,
down to 0: such a layer outputs its zero point).  Requantizing an int32/int64 accumulator `acc` is

    out = clamp(zp_out + rshift_round(acc * M, s), act_min, act_max)
    rshift_round(v, s) = v / 2**s rounded to the nearest integer, ties to even

computed in 64-bit integers.  Ties go to even because ONNX's QuantizeLinear rounds that
way: where the scales make ties common (an average pool whose input and output scales are
equal, an add of equal scales) any other rule is 1 LSB off ONNX on a large share of the
outputs.  Kernels in C do exactly this (see kernels/common/nn_requant.h).

Averages divide by the window's element count c exactly, in integers:

    out = clamp(zp_out + div_round(acc * M, c * 2**s), act_min, act_max)

with (M, s) for m = s_in / s_out, so a mean that is exactly halfway in real arithmetic
(2 of 4, 3 of 6, ...) is a tie here too and rounds to even, as the QDQ graph does; a
multiplier approximating m / c could not tell a tie from a near-tie.

Per-op parameters (each op module's OpDef.requant, returned by requant_params(); array
dtypes are int32):

  conv2d, linear   mult[o], shift[o]   for m[o] = s_in * s_w[o] / s_out
  maxpool, requant mult[1], shift[1]   for m = s_in / s_out          (applied to x - zp_in)
  avgpool          mult[1], shift[1]   for m = s_in / s_out, divided by each window's count
  global_avgpool   mult[1], shift[1]   for m = s_in / s_out, divided by H * W
  add              mult[2], shift[1]   m_i = s_in_i / s_out, one common shift chosen from the
                                       larger of the two:  acc = (x1-z1)*M1 + (x2-z2)*M2
  concat           mult[n], shift[n]   one (M, s) per input, m_i = s_in_i / s_out
  reshape          (none)

A graph imported from TFLite uses TFLite's rules instead (``Graph.numerics == "tflite"``,
set by its frontend, recorded in the plan), as LiteRT's reference kernels compute them
(measured against LiteRT 2.3.0).  The shift field tells the rule, so every consumer (this
module, the C kernels' nn_requantize) follows the parameters it is given:

* shift >= 0: the ONNX rule above.
* -64 < shift < 0: TFLite's MultiplyByQuantizedMultiplier (QuantizeMultiplier's M in
  [2**30, 2**31) and exponent e = shift + 32, m ~= M * 2**(e - 31)), with its two roundings:
  SRDHM (round(a * b / 2**31), ties toward +inf, INT32_MIN * INT32_MIN saturating), then
  RDBPOT (a right shift with ties away from zero), on the int32 accumulator:
      out = clamp(zp_out + RDBPOT(SRDHM(acc * 2**max(e, 0), M), max(-e, 0)), lo, hi)
  (CONV_2D, DEPTHWISE_CONV_2D, MUL, ADD/SUB's three steps, QUANTIZE's requantization).
* shift <= -64: TFLite's double-precision requantization (FULLY_CONNECTED's reference
  kernel): out = clamp(zp_out + round_half_away(double(acc) * m), lo, hi) with the double
  m packed into the pair (tflite_f64_pair: mult = the top 31 bits of its 53-bit
  significand, shift = -2**31 + (the low 22 bits << 8 | the power-of-two exponent k));
  the C kernels emulate the double multiply in integers (nn_tfl_f64_round), exactly.

TFLite's averages (pooling) divide the raw sum of codes with ties away from zero.  LiteRT
builds without TFLITE_SINGLE_ROUNDING.  The primitives (QuantizeMultiplier, SRDHM,
RDBPOT, MultiplyByQuantizedMultiplier, the averages, std::round) are
reference/tflite_math.py's, checked against LiteRT there.
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
    """v / 2**s rounded half to even, on int64 arrays (or Python ints); 1 <= s <= 62."""
    v = np.asarray(v, dtype=np.int64)
    s = np.asarray(s, dtype=np.int64)
    q = v >> s                                   # floor
    r = v - (q << s)                             # 0 <= r < 2**s
    half = np.int64(1) << (s - 1)
    up = (r > half) | ((r == half) & ((q & 1) == 1))
    out = q + up.astype(np.int64)
    return int(out) if out.ndim == 0 else out


def div_round(v, c, s):
    """v / (c * 2**s) rounded half to even, exactly (c >= 1, 1 <= s <= 62), without ever
    forming c * 2**s: q = floor(v / c), then the shift of q decides, and the remainder of
    the division breaks the exact-half case."""
    v = np.asarray(v, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    s = np.asarray(s, dtype=np.int64)
    q = v // c
    rem = v - q * c
    big = q >> s
    r = q - (big << s)
    half = np.int64(1) << (s - 1)
    up = (r > half) | ((r == half) & ((rem > 0) | ((big & 1) == 1)))
    out = big + up.astype(np.int64)
    return int(out) if out.ndim == 0 else out


def requantize(acc, mult, shift, zp_out: int, act_min: int = -128, act_max: int = 127,
               count=None) -> np.ndarray:
    """clamp(zp_out + round(acc * mult / (count * 2**shift))) -> int8, ties to even.
    acc/mult/shift/count broadcast; count None means 1; a count of 0 (a window with no
    element) gives acc 0.  A negative shift selects TFLite's rule (see the module doc)."""
    if np.any(np.asarray(shift) < 0):
        return tflite_requantize(acc, mult, shift, zp_out, act_min, act_max, count)
    acc = np.asarray(acc, dtype=np.int64)
    prod = acc * np.asarray(mult, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    if count is None:
        out = rshift_round(prod, shift)
    else:
        count = np.asarray(count, dtype=np.int64)
        out = div_round(np.where(count > 0, prod, 0), np.maximum(count, 1), shift)
    out = np.asarray(out) + zp_out
    return np.clip(out, act_min, act_max).astype(np.int8)


# ---- TFLite's rule ----------------------------------------------------------------------

TFLITE_SHIFT_BIAS = 32   # shift field = TFLite exponent - 32 (< 0: the field selects the rule)


def graph_rule(graph) -> str:
    """"onnx" or "tflite": the requantization rule of a graph (its frontend's)."""
    return getattr(graph, "numerics", "onnx") or "onnx"


def _tfl():
    """reference.tflite_math, TFLite's integer primitives measured against LiteRT (imported
    when a TFLite rule is used: ONNX builds never load it)."""
    from .reference import tflite_math
    return tflite_math


def rule_pair(graph, m: float) -> tuple[int, int]:
    """(mult, shift) of the real multiplier m under the graph's rule."""
    if graph_rule(graph) == "tflite":
        return tflite_pair(m)
    return quantize_multiplier(m)


def tflite_pair(m: float) -> tuple[int, int]:
    """(M, shift field) of TFLite's rule for the real multiplier m."""
    if not (m >= 0.0 and math.isfinite(m)):
        raise ValueError(f"requantization multiplier must be finite and non-negative, got {m!r}")
    M, e = _tfl().quantize_multiplier(m)
    if e > 30:
        raise ValueError(f"requantization multiplier {m!r} is too large (>= 2**30)")
    return M, e - TFLITE_SHIFT_BIAS


TFLITE_F64_FLAG = -64          # shift fields at or below it carry a packed double
_F64_LOW_BITS = 22


def tflite_f64_pair(m: float) -> tuple[int, int]:
    """(mult, shift) packing the double m exactly: m = (mult * 2**22 + low) * 2**-k."""
    if not (m > 0.0 and math.isfinite(m)):
        raise ValueError(f"requantization multiplier must be positive and finite, got {m!r}")
    frac, exp = math.frexp(m)              # m = frac * 2**exp, frac in [0.5, 1)
    significand = int(frac * (1 << 53))    # exact: 53 bits
    k = 53 - exp
    if not 0 <= k <= 255:
        raise ValueError(f"requantization multiplier {m!r} is out of range")
    hi, lo = significand >> _F64_LOW_BITS, significand & ((1 << _F64_LOW_BITS) - 1)
    return hi, -(1 << 31) + ((lo << 8) | k)


def tflite_f64_value(mult: int, shift: int) -> float:
    code = int(shift) + (1 << 31)
    lo, k = code >> 8, code & 0xFF
    return math.ldexp(float((int(mult) << _F64_LOW_BITS) | lo), -k)


def tflite_requantize(acc, mult, shift, zp_out, act_min=-128, act_max=127, count=None):
    """TFLite's rules on shift fields < 0 (see the module doc); count with mult 0: the
    average over count elements of the raw sum acc + count * zp_out (TFLite's pooling
    averages codes and keeps the input's parameters)."""
    T = _tfl()
    acc = T.wrap32(acc)
    shift = np.asarray(shift)
    if count is None and np.any(shift <= TFLITE_F64_FLAG):
        flat_m = np.broadcast_to(np.asarray(mult), np.broadcast(np.asarray(mult), shift).shape)
        flat_s = np.broadcast_to(shift, flat_m.shape)
        m = np.vectorize(tflite_f64_value, otypes=[np.float64])(flat_m, flat_s)
        out = T.round_half_away(acc.astype(np.float64) * m).astype(np.int64) + zp_out
        return np.clip(out, act_min, act_max).astype(np.int8)
    if count is not None and np.all(np.asarray(mult) == 0):
        count = np.asarray(count, dtype=np.int64)
        raw = acc + np.maximum(count, 1) * zp_out
        out = np.where(count > 0, T.average(raw, np.maximum(count, 1)), zp_out)
    else:      # MEAN: its multiplier holds 1 / count (ops/pool.py)
        e = np.asarray(shift, dtype=np.int64) + TFLITE_SHIFT_BIAS
        out = T.multiply_by_quantized_multiplier(acc, mult, e) + zp_out
    return np.clip(out, act_min, act_max).astype(np.int8)


# Largest number of products one conv/linear output may sum so that the accumulator stays
# exact in int32 (C kernels) and in float64 (NumPy reference): |x - zp| <= 255 and
# |w| <= 128, so |sum| <= K * 32640 < 2**31 for K <= 65793 (ResNet-18 needs K <= 4608).
# Bias (int32) is added in 64 bits: |bias + sum| < 2**32 and M < 2**31 keep acc * M plus
# the rounding constant below 2**63.
MAX_ACC_TERMS = (2**31 - 1) // (255 * 128)
