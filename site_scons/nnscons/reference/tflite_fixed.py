"""TFLite's fixed-point primitives, bit-exact: int32 wrapping, QuantizeMultiplier and its
variants, SRDHM, RDBPOT and MultiplyByQuantizedMultiplier (double and single rounding),
rounding helpers, the fused activation's range and SAME/VALID padding.  The rounding mode
and the rules of the reference kernels are described in reference/tflite_math.py.
"""
from __future__ import annotations

import math

import numpy as np

SINGLE_ROUNDING = False   # what this LiteRT build uses (see module docstring)
# TFLite's int8 ADD/SUB: each operand's (x - zp) << 20, scaled by s_i / (2 max(s_1, s_2)),
# summed, then scaled by 2 max(s_1, s_2) / (2**20 s_out) (its Prepare; double precision)
TFLITE_LEFT_SHIFT = 20

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
_I8 = (-128, 127)
_U8 = (0, 255)


# ---------------------------------------------------------------- small helpers

def _i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def _wrap(x, bits: int) -> np.ndarray:
    """Two's-complement wrap of int64 values to `bits` bits (C integer conversion)."""
    x = _i64(x)
    m = np.int64(1) << bits
    h = np.int64(1) << (bits - 1)
    return ((x + h) & (m - 1)) - h


def wrap32(x):
    """int64 values wrapped to int32 (C's conversion of a wider integer)."""
    return _wrap(x, 32)


_wrap32 = wrap32


def _cdiv(a, b):
    """C integer division (truncates toward zero)."""
    a = _i64(a)
    b = _i64(b)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def average(total, count):
    """total / count rounded half away from zero, C integer division (TFLite's average
    pooling), count >= 1."""
    total, count = _i64(total), _i64(count)
    return np.where(total > 0, _cdiv(total + count // 2, count), _cdiv(total - count // 2, count))


def _f32(x) -> np.float32:
    return np.float32(x)


def round_half_away(x):
    """std::round / roundf: nearest, ties away from zero (exact for float32 and float64)."""
    x = np.asarray(x)
    with np.errstate(invalid="ignore"):
        a = np.abs(x)
        f = np.floor(a)
        r = f + (a - f >= 0.5)          # a - floor(a) is exact
    return np.copysign(r, x).astype(x.dtype)


def _round_scalar(v: float) -> int:
    a = abs(v)
    f = math.floor(a)
    r = f + (1 if a - f >= 0.5 else 0)
    return int(r) if v >= 0 else -int(r)


def _float_to_int32(x) -> np.ndarray:
    """static_cast<int32_t>(float) as x86 compiles it: truncation, NaN/out-of-range -> INT32_MIN."""
    x = np.asarray(x, dtype=np.float64)
    bad = ~np.isfinite(x) | (x >= 2.0 ** 31) | (x <= -(2.0 ** 31) - 1)
    t = np.trunc(np.where(bad, 0.0, x)).astype(np.int64)
    return np.where(bad, np.int64(INT32_MIN), t)


def _clamp(x, lo, hi):
    return np.minimum(np.maximum(_i64(x), lo), hi)


def _out(x, lo=-128, hi=127, dtype=np.int8):
    return _clamp(x, lo, hi).astype(dtype)


# ---------------------------------------------------------------- multipliers

def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplier(double): real ~= M * 2**(shift - 31), M in [2**30, 2**31).

    frexp, q_fixed = std::round(q * 2**31); q_fixed == 2**31 -> halve and shift+1;
    shift < -31 -> (0, 0); real == 0 -> (0, 0).  Negative reals give negative M (LEAKY_RELU
    with alpha < 0 relies on that).  No shift > 30 clamp (that is single-rounding only).
    """
    real = float(real)
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    q_fixed = _round_scalar(q * (1 << 31))
    if q_fixed > (1 << 31):
        raise ValueError("QuantizeMultiplier: q_fixed > 2**31")      # TFLITE_CHECK
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if shift < -31:
        shift, q_fixed = 0, 0
    if SINGLE_ROUNDING and shift > 30:
        shift, q_fixed = 30, (1 << 31) - 1
    return int(q_fixed), int(shift)


def quantize_multiplier_smaller_than_one_exp(real: float) -> tuple[int, int]:
    """QuantizeMultiplierSmallerThanOneExp: CHECKs 0 < real < 1 (TFLite aborts otherwise);
    returns (M, shift <= 0), same numbers as quantize_multiplier."""
    if not (0.0 < real < 1.0):
        raise ValueError(f"QuantizeMultiplierSmallerThanOneExp needs 0 < m < 1, got {real!r}")
    M, s = quantize_multiplier(real)
    if s > 0:
        raise ValueError("shift > 0")
    return M, s


def quantize_multiplier_greater_than_one(real: float) -> tuple[int, int]:
    """QuantizeMultiplierGreaterThanOne: CHECKs real > 1; returns (M, shift >= 0)."""
    if not real > 1.0:
        raise ValueError(f"QuantizeMultiplierGreaterThanOne needs m > 1, got {real!r}")
    M, s = quantize_multiplier(real)
    if s < 0:
        raise ValueError("shift < 0")
    return M, s


def srdhm(a, b):
    """gemmlowp SaturatingRoundingDoublingHighMul on int32 values (vectorized, int64 out).

    (a*b + nudge) / 2**31 with C truncating division, nudge = 2**30 if a*b >= 0 else 1-2**30;
    a == b == INT32_MIN saturates to INT32_MAX.
    """
    a = _i64(a)
    b = _i64(b)
    ab = a * b
    t = ab + np.where(ab >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    q = np.where(t >= 0, t >> 31, -((-t) >> 31))
    return np.where((a == b) & (a == INT32_MIN), np.int64(INT32_MAX), q)


def rounding_divide_by_pot(x, exponent):
    """gemmlowp RoundingDivideByPOT: x / 2**exponent, nearest, ties away from zero (0 <= e <= 31)."""
    x = _i64(x)
    e = _i64(exponent)
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + (remainder > threshold)


def multiply_by_quantized_multiplier(x, M, shift):
    """MultiplyByQuantizedMultiplier(int32 x, M, shift) as built in LiteRT (double rounding).

    x, M, shift broadcast against each other (per-element / per-channel M and shift allowed).
    x * 2**left_shift wraps like the int32 multiplication in C.
    """
    x = _i64(x)
    M = _i64(M)
    shift = _i64(shift)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    return rounding_divide_by_pot(srdhm(_wrap32(x * (np.int64(1) << left)), M), right)


def multiply_by_quantized_multiplier_single_rounding(x, M, shift):
    """The TFLITE_SINGLE_ROUNDING=1 variant: (x*M + 2**(30-shift)) >> (31-shift).  NOT what
    this LiteRT build does; kept for comparison."""
    x = _i64(x)
    M = _i64(M)
    total = 31 - _i64(shift)
    return (x * M + (np.int64(1) << (total - 1))) >> total


def mbqm_smaller_than_one_exp(x, M, shift):
    """MultiplyByQuantizedMultiplierSmallerThanOneExp (ADD/SUB): RDBPOT(SRDHM(x, M), -shift)."""
    return rounding_divide_by_pot(srdhm(x, M), -_i64(shift))


def mbqm_greater_than_one(x, M, shift):
    """MultiplyByQuantizedMultiplierGreaterThanOne (softmax): SRDHM(x * 2**shift, M)."""
    return srdhm(_wrap32(_i64(x) * (np.int64(1) << _i64(shift))), M)


def lookup(x, table):
    """Apply a 256-entry table (index 0 <-> input -128) to int8 data."""
    table = np.asarray(table)
    return table[_i64(x) + 128]


# ---------------------------------------------------------------- activation ranges, padding

_ACT = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4, "SIGN_BIT": 5}


def _quantize_act(scale, zp, f):
    # kernel_util.cc Quantize(): zp + (int)roundf(f / scale), all float32
    return int(zp) + int(round_half_away(np.float32(f) / np.float32(scale)))


def activation_range(activation, out_scale, out_zp, dtype="int8") -> tuple[int, int]:
    """CalculateActivationRangeQuantized for a fused activation (name or schema enum value).

    RELU: (max(qmin, zp), qmax); RELU6: (max(qmin, zp), min(qmax, zp + roundf(6/s)));
    RELU_N1_TO_1: (max(qmin, zp + roundf(-1/s)), min(qmax, zp + roundf(1/s))); others: (qmin, qmax).
    roundf of a float32 division, ties away from zero.
    """
    qmin, qmax = _U8 if dtype in ("uint8", np.uint8) else _I8
    act = _ACT[activation.upper()] if isinstance(activation, str) else int(activation)
    if act == 1:
        return max(qmin, _quantize_act(out_scale, out_zp, 0.0)), qmax
    if act == 3:
        return (max(qmin, _quantize_act(out_scale, out_zp, 0.0)),
                min(qmax, _quantize_act(out_scale, out_zp, 6.0)))
    if act == 2:
        return (max(qmin, _quantize_act(out_scale, out_zp, -1.0)),
                min(qmax, _quantize_act(out_scale, out_zp, 1.0)))
    return qmin, qmax


def compute_padding(in_size: int, filter_size: int, stride: int, dilation: int = 1,
                    padding: str = "SAME") -> tuple[int, int]:
    """(out_size, pad_before) as ComputePaddingHeightWidth: SAME out = ceil(in/stride),
    VALID out = (in + stride - eff) // stride; pad = max((out-1)*stride + eff - in, 0) // 2
    (the odd extra pixel goes after)."""
    eff = (filter_size - 1) * dilation + 1
    if padding.upper() == "SAME":
        out = (in_size + stride - 1) // stride
    elif padding.upper() == "VALID":
        out = (in_size + stride - eff) // stride
    else:
        raise ValueError(padding)
    total = max((out - 1) * stride + eff - in_size, 0)
    return out, total // 2


def _pair(v):
    return (v, v) if np.isscalar(v) else tuple(v)
