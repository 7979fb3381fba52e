"""TFLite's int8 activations, bit-exact: SOFTMAX (gemmlowp fixed point), LOGISTIC and TANH
(tables), HARD_SWISH (16-bit fixed point), LEAKY_RELU, PRELU and the standalone RELU
family, each with its `*_params` and, for the unary ones, `*_table` (256 outputs).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .tflite_fixed import INT32_MAX, INT32_MIN, _cdiv, _float_to_int32, _i64, _out, _quantize_act, _wrap, _wrap32, lookup, mbqm_greater_than_one, multiply_by_quantized_multiplier, quantize_multiplier, quantize_multiplier_greater_than_one, round_half_away, rounding_divide_by_pot, srdhm

# ---------------------------------------------------------------- SOFTMAX (gemmlowp fixed point)

class SoftmaxParams(NamedTuple):
    input_multiplier: int
    input_left_shift: int
    diff_min: int


def softmax_params(in_scale, beta=1.0) -> SoftmaxParams:
    """SOFTMAX Prepare (reference, int8): PreprocessSoftmaxScaling with 5 integer bits:
    m = min(double(beta)*double(s_in)*2**26, 2**31 - 1); (M, ls) = QuantizeMultiplierGreaterThanOne(m)
    (TFLite aborts if m <= 1); diff_min = -floor(31 * 2**26 / 2**ls)."""
    real = min(float(np.float32(beta)) * float(np.float32(in_scale)) * float(1 << 26),
               float((1 << 31) - 1))
    M, ls = quantize_multiplier_greater_than_one(real)
    radius = math.floor(1.0 * ((1 << 5) - 1) * (1 << 26) / (1 << ls))
    return SoftmaxParams(M, ls, -int(radius))


def _sat_shl(x, e: int):
    """gemmlowp SaturatingRoundingMultiplyByPOT<+e> on int32."""
    x = _i64(x)
    th = (1 << (31 - e)) - 1
    return np.where(x > th, INT32_MAX, np.where(x < -th, INT32_MIN, _wrap32(x << e)))


def _exp_on_interval_m_quarter_0(a):
    """gemmlowp exp_on_interval_between_negative_one_quarter_and_0_excl (Q0.31)."""
    constant_term = 1895147668
    one_third = 715827883
    x = _wrap32(a + (1 << 28))
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    t = rounding_divide_by_pot(_wrap32(srdhm(_wrap32(x4_over_4 + x3), one_third) + x2), 1)
    return _wrap32(constant_term + srdhm(constant_term, _wrap32(x + t)))


def exp_on_negative_values(a, integer_bits: int = 5):
    """gemmlowp exp_on_negative_values for a FixedPoint<int32, integer_bits> raw value; Q0.31 out."""
    a = _i64(a)
    frac = 31 - integer_bits
    quarter = 1 << (frac - 2)
    a_mod = _wrap32((a & (quarter - 1)) - quarter)
    result = _exp_on_interval_m_quarter_0(_sat_shl(a_mod, integer_bits) if integer_bits else a_mod)
    remainder = _wrap32(a_mod - a)
    for exponent, mult in ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
                           (2, 39332535), (3, 720401), (4, 242)):
        if integer_bits > exponent:
            bit = np.int64(1) << (frac + exponent)
            result = np.where(remainder & bit, srdhm(result, mult), result)
    if integer_bits > 5:
        clamp = -(1 << (36 - integer_bits))
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, INT32_MAX, result)


def one_over_one_plus_x_for_x_in_0_1(a):
    """gemmlowp one_over_one_plus_x_for_x_in_0_1 (Newton-Raphson, Q0.31 in and out)."""
    a = _i64(a)
    s = a + INT32_MAX
    half_den = _cdiv(s + np.where(s >= 0, 1, -1), 2)          # RoundingHalfSum(a, One)
    x = _wrap32(1515870810 + srdhm(half_den, -1010580540))
    for _ in range(3):
        hdx = srdhm(half_den, x)
        one_minus = _wrap32((1 << 29) - hdx)
        x = _wrap32(x + _sat_shl(srdhm(x, one_minus), 2))
    return _sat_shl(x, 1)


def _clz32(x):
    """Count leading zeros of uint32 values (exact: int < 2**53 is exact in float64)."""
    x = _i64(x) & 0xFFFFFFFF
    _, e = np.frexp(x.astype(np.float64))
    return np.where(x == 0, 32, 32 - e.astype(np.int64))


def softmax(x, params: SoftmaxParams):
    """int8 SOFTMAX over the last axis, reference (gemmlowp) path; output scale 1/256, zp -128.

    d = x - rowmax; where d >= diff_min: e = exp_on_negative_values<5>(SRDHM(d << ls, M));
    sum = sum RDBPOT(e, 12) (Q12.19); (recip, nbou) = GetReciprocal(sum, 12);
    out = clamp(RDBPOT(SRDHM(recip, e), nbou + 23) - 128); else -128.
    """
    x = _i64(x)
    diff = x - x.max(axis=-1, keepdims=True)
    ok = diff >= params.diff_min
    scaled = mbqm_greater_than_one(diff, params.input_multiplier, params.input_left_shift)
    e = exp_on_negative_values(np.where(ok, scaled, 0), 5)
    sum_exps = _wrap32(np.where(ok, rounding_divide_by_pot(e, 12), 0).sum(axis=-1, keepdims=True))
    hp1 = _clz32(sum_exps)
    nbou = 12 - hp1
    shifted = _wrap32(((sum_exps & 0xFFFFFFFF) << hp1) - (1 << 31))
    recip = one_over_one_plus_x_for_x_in_0_1(shifted)
    exponent = nbou + 31 - 8
    if np.any((exponent < 0) | (exponent > 31)):
        raise ValueError("softmax: exponent out of range (TFLITE_CHECK)")
    out = rounding_divide_by_pot(srdhm(recip, e), exponent) - 128
    return _out(np.where(ok, out, -128))


# ---------------------------------------------------------------- LUT ops (logistic, tanh)

def _lut_int8(in_scale, in_zp, out_scale, out_zp, fn):
    """LUTPopulateInt8: q = clamp((int)(roundf(fn(s_in*(v - zp_in)) * (1/s_out)) + zp_out)), float32."""
    v = np.arange(-128, 128, dtype=np.int64)
    deq = np.float32(in_scale) * (v - int(in_zp)).astype(np.float32)
    y = fn(deq.astype(np.float32)).astype(np.float32)
    inv = np.float32(np.float32(1) / np.float32(out_scale))
    r = round_half_away((y * inv).astype(np.float32))
    q = _float_to_int32((r + np.float32(out_zp)).astype(np.float32))
    return _out(q)


def _expf(v):
    # glibc expf is correctly rounded in practice: evaluate in double, round once to float32
    with np.errstate(over="ignore"):
        return np.exp(v.astype(np.float64)).astype(np.float32)


def _sigmoidf(v):
    # 1.0f / (1.0f + std::exp(-value)) in float32
    e = _expf(-v)
    return (np.float32(1) / (np.float32(1) + e).astype(np.float32)).astype(np.float32)


def _tanhf(v):
    return np.tanh(v.astype(np.float64)).astype(np.float32)


def logistic_table(in_scale, in_zp, out_scale=1.0 / 256, out_zp=-128) -> np.ndarray:
    """int8 LOGISTIC LUT (reference and generic kernels): 1/(1+expf(-x)) in float32.
    Prepare requires s_out == 1/256 exactly; the reference kernel accepts any zp_out."""
    if np.float32(out_scale) != np.float32(1.0 / 256):
        raise ValueError("LOGISTIC int8 requires output scale 1/256")
    return _lut_int8(in_scale, in_zp, out_scale, out_zp, _sigmoidf)


def logistic(x, in_scale, in_zp, out_scale=1.0 / 256, out_zp=-128):
    return lookup(x, logistic_table(in_scale, in_zp, out_scale, out_zp))


def tanh_table(in_scale, in_zp, out_scale=1.0 / 128, out_zp=0) -> np.ndarray:
    """int8 TANH LUT: tanhf in float32 (no constraint on the output quantization in Prepare)."""
    return _lut_int8(in_scale, in_zp, out_scale, out_zp, _tanhf)


def tanh(x, in_scale, in_zp, out_scale=1.0 / 128, out_zp=0):
    return lookup(x, tanh_table(in_scale, in_zp, out_scale, out_zp))


# ---------------------------------------------------------------- HARD_SWISH (16-bit fixed point)

class HardSwishParams(NamedTuple):
    input_zero_point: int
    output_zero_point: int
    reluish_multiplier_fixedpoint_int16: int
    reluish_multiplier_exponent: int
    output_multiplier_fixedpoint_int16: int
    output_multiplier_exponent: int


def _downscale_int16(m32: int) -> int:
    if m32 >= INT32_MAX - (1 << 15):
        return 32767
    return (m32 + (1 << 15)) >> 16


def hard_swish_params(in_scale, in_zp, out_scale, out_zp) -> HardSwishParams:
    """HARD_SWISH Prepare (float32): hires = s_in/128; out_mult = hires/s_out,
    reluish_mult = hires/(3/32768); each QuantizeMultiplier then rounded to int16
    ((M + 2**15) >> 16).  Prepare fails if out_mult >= 1 (s_in >= 128*s_out)."""
    si, so = np.float32(in_scale), np.float32(out_scale)
    hires = np.float32(np.float32(1.0 / 128.0) * si)
    reluish_scale = np.float32(np.float32(3.0) / np.float32(32768.0))
    om, oe = quantize_multiplier(float(np.float32(hires / so)))
    if oe > 0:
        raise ValueError("HARD_SWISH: output_multiplier_exponent > 0 (Prepare fails)")
    rm, re_ = quantize_multiplier(float(np.float32(hires / reluish_scale)))
    return HardSwishParams(int(in_zp), int(out_zp), _downscale_int16(rm), re_,
                           _downscale_int16(om), oe)


def _srdhm16(a, b):
    a = _i64(a)
    b = _i64(b)
    ab = a * b
    t = ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    q = _wrap(_cdiv(t, 1 << 15), 16)
    return np.where((a == b) & (a == -32768), 32767, q)


def _sdhm16(a, b):
    a = _i64(a)
    b = _i64(b)
    q = _wrap(_cdiv(a * b, 1 << 15), 16)
    return np.where((a == b) & (a == -32768), 32767, q)


def _rdbpot16(x, e: int):
    """gemmlowp RoundingDivideByPOT<int16_t> (int16 wrap semantics of mask/threshold)."""
    x = _i64(x)
    mask = int(_wrap((1 << e) - 1, 16))
    rem = _wrap(x & mask, 16)
    th = _wrap((mask >> 1) + (x < 0), 16)
    return _wrap((x >> e) + (rem > th), 16)


def _sat_lshift16(v, amount: int):
    return np.clip(_i64(v) * (1 << amount), -32768, 32767)


def hard_swish(x, params: HardSwishParams):
    """int8 HARD_SWISH (reference_ops::HardSwish), all in int16 fixed point."""
    p = params
    iv = _wrap(_i64(x) - p.input_zero_point, 16)
    hires = _wrap(iv * 128, 16)
    pre_out = _srdhm16(hires, p.output_multiplier_fixedpoint_int16)
    r = hires
    if p.reluish_multiplier_exponent > 0:
        r = _sat_lshift16(r, p.reluish_multiplier_exponent - 1)
    r = _srdhm16(r, p.reluish_multiplier_fixedpoint_int16)
    if p.reluish_multiplier_exponent > 0:
        r = _sat_lshift16(r, 1)
    if p.reluish_multiplier_exponent < 0:
        r = _rdbpot16(r, -p.reluish_multiplier_exponent)
    r = _wrap((r + (1 << 15)) >> 1, 16)
    pso = _sdhm16(r, pre_out)
    ov = _rdbpot16(pso, -p.output_multiplier_exponent)
    ov = _wrap(ov + p.output_zero_point, 16)
    return _out(ov)


def hard_swish_table(in_scale, in_zp, out_scale, out_zp) -> np.ndarray:
    return hard_swish(np.arange(-128, 128), hard_swish_params(in_scale, in_zp, out_scale, out_zp))


# ---------------------------------------------------------------- LEAKY_RELU, PRELU

class LeakyReluParams(NamedTuple):
    multiplier_alpha: int
    shift_alpha: int
    multiplier_identity: int
    shift_identity: int


def leaky_relu_params(in_scale, out_scale, alpha) -> LeakyReluParams:
    """LEAKY_RELU Prepare: QuantizeMultiplier(s_in*alpha/s_out) and (s_in/s_out), float32 math."""
    si, so, a = np.float32(in_scale), np.float32(out_scale), np.float32(alpha)
    ma = quantize_multiplier(float(np.float32(np.float32(si * a) / so)))
    mi = quantize_multiplier(float(np.float32(si / so)))
    return LeakyReluParams(*ma, *mi)


def leaky_relu(x, in_zp, out_zp, params: LeakyReluParams):
    """int8 LEAKY_RELU: d = x - zp_in; out = zp_out + (d >= 0 ? MBQM(d, M_id, s_id)
    : sign(M_a) * MBQM(d, |M_a|, s_a)), clamped to int8 (negative alpha supported)."""
    d = _i64(x) - in_zp
    p = params
    ident = multiply_by_quantized_multiplier(d, p.multiplier_identity, p.shift_identity)
    neg = -1 if p.multiplier_alpha < 0 else 1
    alpha = neg * multiply_by_quantized_multiplier(d, abs(p.multiplier_alpha), p.shift_alpha)
    return _out(out_zp + np.where(d >= 0, ident, alpha))


def leaky_relu_table(in_scale, in_zp, out_scale, out_zp, alpha) -> np.ndarray:
    return leaky_relu(np.arange(-128, 128), in_zp, out_zp, leaky_relu_params(in_scale, out_scale, alpha))


class PreluParams(NamedTuple):
    multiplier_1: int    # x >= 0: s_in / s_out
    shift_1: int
    multiplier_2: int    # x < 0: s_in * s_alpha / s_out
    shift_2: int


def prelu_params(in_scale, alpha_scale, out_scale) -> PreluParams:
    """PRELU Prepare: float32 s_in/s_out and s_in*s_alpha/s_out, then QuantizeMultiplier."""
    si, sa, so = np.float32(in_scale), np.float32(alpha_scale), np.float32(out_scale)
    m1 = quantize_multiplier(float(np.float32(si / so)))
    m2 = quantize_multiplier(float(np.float32(np.float32(si * sa) / so)))
    return PreluParams(*m1, *m2)


def prelu(x, alpha, in_zp, alpha_zp, out_zp, params: PreluParams):
    """int8 PRELU (alpha broadcast against x): d = x - zp_in;
    out = clamp(zp_out + (d >= 0 ? MBQM(d, M1, s1) : MBQM(d * (alpha - zp_a), M2, s2)))."""
    d = _i64(x) - in_zp
    a = _i64(alpha) - alpha_zp
    d, a = np.broadcast_arrays(d, a)
    pos = multiply_by_quantized_multiplier(d, params.multiplier_1, params.shift_1)
    neg = multiply_by_quantized_multiplier(d * a, params.multiplier_2, params.shift_2)
    return _out(out_zp + np.where(d >= 0, pos, neg))


# ---------------------------------------------------------------- RELU family (standalone)

_RELU_BOUNDS = {"RELU": (0.0, math.inf), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0),
                "RELU_0_TO_1": (0.0, 1.0)}


def relu_params(in_scale, out_scale) -> tuple[int, int]:
    """RELU* Prepare: QuantizeMultiplier(s_in / s_out) with the division in FLOAT32."""
    return quantize_multiplier(float(np.float32(np.float32(in_scale) / np.float32(out_scale))))


def relu_bounds(kind: str, out_scale, out_zp) -> tuple[int, int]:
    """QuantizedReluX bounds: lo = max(-128, zp + (int)roundf(lo_f / s)),
    hi = 127 if unbounded else min(127, zp + (int)roundf(hi_f / s))."""
    lo_f, hi_f = _RELU_BOUNDS[kind.upper()]
    lo = max(-128, _quantize_act(out_scale, out_zp, lo_f))
    hi = 127 if math.isinf(hi_f) else min(127, _quantize_act(out_scale, out_zp, hi_f))
    return lo, hi


def relu_table(in_scale, in_zp, out_scale, out_zp, kind="RELU") -> np.ndarray:
    """Standalone int8 RELU / RELU6 / RELU_N1_TO_1 / RELU_0_TO_1 (they requantize):
    clamp(zp_out + MBQM(x - zp_in, M, s), lo, hi)."""
    M, s = relu_params(in_scale, out_scale)
    lo, hi = relu_bounds(kind, out_scale, out_zp)
    v = np.arange(-128, 128, dtype=np.int64)
    return _out(out_zp + multiply_by_quantized_multiplier(v - in_zp, M, s), lo, hi)


def relu6_table(in_scale, in_zp, out_scale, out_zp) -> np.ndarray:
    return relu_table(in_scale, in_zp, out_scale, out_zp, "RELU6")


def relu_n1_to_1_table(in_scale, in_zp, out_scale, out_zp) -> np.ndarray:
    return relu_table(in_scale, in_zp, out_scale, out_zp, "RELU_N1_TO_1")


def relu_0_to_1_table(in_scale, in_zp, out_scale, out_zp) -> np.ndarray:
    return relu_table(in_scale, in_zp, out_scale, out_zp, "RELU_0_TO_1")


def relu(x, in_scale, in_zp, out_scale, out_zp):
    return lookup(x, relu_table(in_scale, in_zp, out_scale, out_zp, "RELU"))


def relu6(x, in_scale, in_zp, out_scale, out_zp):
    return lookup(x, relu_table(in_scale, in_zp, out_scale, out_zp, "RELU6"))


def relu_n1_to_1(x, in_scale, in_zp, out_scale, out_zp):
    return lookup(x, relu_table(in_scale, in_zp, out_scale, out_zp, "RELU_N1_TO_1"))


def relu_0_to_1(x, in_scale, in_zp, out_scale, out_zp):
    return lookup(x, relu_table(in_scale, in_zp, out_scale, out_zp, "RELU_0_TO_1"))
