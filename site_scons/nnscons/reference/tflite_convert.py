"""TFLite's int8 QUANTIZE/DEQUANTIZE (requantization between scales), CONCATENATION and
RESIZE_BILINEAR, bit-exact with LiteRT's reference kernels.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .tflite_fixed import _cdiv, _clamp, _float_to_int32, _i64, _out, _wrap, _wrap32, multiply_by_quantized_multiplier, quantize_multiplier, round_half_away

# ---------------------------------------------------------------- QUANTIZE / DEQUANTIZE / CONCAT

def requantize_params(in_scale, out_scale) -> tuple[int, int]:
    """QUANTIZE (requantize) Prepare: QuantizeMultiplier(double(s_in) / double(s_out))."""
    return quantize_multiplier(float(np.float32(in_scale)) / float(np.float32(out_scale)))


def requantize(x, in_zp, out_zp, M, shift, out_dtype="int8"):
    """QUANTIZE int8/uint8 -> int8/uint8: clamp(MBQM(x - zp_in, M, s) + zp_out) (the
    int8<->uint8 same-scale, zp +-128 fast path is the identical XOR 0x80)."""
    r = multiply_by_quantized_multiplier(_i64(x) - in_zp, M, shift) + out_zp
    if out_dtype in ("uint8", np.uint8):
        return _out(r, 0, 255, np.uint8)
    return _out(r)


def requantize_table(in_scale, in_zp, out_scale, out_zp, out_dtype="int8") -> np.ndarray:
    """QUANTIZE int8 -> int8/uint8 for every int8 input (-128..127)."""
    M, s = requantize_params(in_scale, out_scale)
    return requantize(np.arange(-128, 128), in_zp, out_zp, M, s, out_dtype)


quantize_table = requantize_table   # QUANTIZE int8 -> int8/uint8, by its op name


def quantize(xf, scale, zp, out_dtype="int8"):
    """QUANTIZE float32 -> int8/uint8 (reference AffineQuantize):
    clamp((int32)roundf(x / (float)scale) + zp); the float->int32 cast gives INT32_MIN for
    NaN / out-of-range values (x86), so huge inputs land on the LOW end."""
    xf = np.asarray(xf, dtype=np.float32)
    q = _float_to_int32(round_half_away((xf / np.float32(scale)).astype(np.float32)))
    q = _wrap32(q + int(zp))
    if out_dtype in ("uint8", np.uint8):
        return _out(q, 0, 255, np.uint8)
    return _out(q)


def dequantize(x, scale, zp):
    """DEQUANTIZE int8 -> float32: (float)(double(scale) * (x - zp))."""
    return (np.float64(np.float32(scale)) * (_i64(x) - zp).astype(np.float64)).astype(np.float32)


def concatenation(xs: Sequence, axis: int, in_scales=None, in_zps=None, out_scale=None,
                  out_zp=None, dtype="int8"):
    """CONCATENATION.  int8: Prepare REQUIRES every input scale and zero point to equal the
    output's (exact float compare) -- different scales are rejected (ValueError here); the
    op is then a plain copy.  uint8: reference ConcatenationWithScaling rescales in float32:
    out = clamp((int)roundf(x * (s_i * (1/s_o)) + (-zp_i * that)) + zp_o, 0, 255)."""
    n = len(xs)
    in_scales = [out_scale] * n if in_scales is None else list(in_scales)
    in_zps = [out_zp] * n if in_zps is None else list(in_zps)
    if dtype in ("int8", np.int8):
        for s, z in zip(in_scales, in_zps):
            if s is not None and (np.float32(s) != np.float32(out_scale) or int(z) != int(out_zp)):
                raise ValueError("int8 CONCATENATION requires equal input/output scale and zero point")
        return np.concatenate([_i64(x) for x in xs], axis=axis).astype(np.int8)
    inv = np.float32(np.float32(1) / np.float32(out_scale))
    parts = []
    for x, s, z in zip(xs, in_scales, in_zps):
        x = _i64(x)
        if int(z) == int(out_zp) and np.float32(s) == np.float32(out_scale):
            parts.append(x)
            continue
        sc = np.float32(np.float32(s) * inv)
        bias = np.float32(np.float32(-int(z)) * sc)
        v = (x.astype(np.float32) * sc).astype(np.float32)
        v = (v + bias).astype(np.float32)
        parts.append(_clamp(_float_to_int32(round_half_away(v)) + int(out_zp), 0, 255))
    return np.concatenate(parts, axis=axis).astype(np.uint8)


# ---------------------------------------------------------------- RESIZE_BILINEAR

def _interp_int(value, scale_10, half_pixel, size):
    v = _i64(value)
    if half_pixel:
        sv = v * scale_10 + scale_10 // 2 - (1 << 9)
    else:
        sv = v * scale_10
    lo = np.maximum(_cdiv(sv, 1 << 10), 0)
    hi = np.minimum(_cdiv(sv + (1 << 10) - 1, 1 << 10), size - 1)
    return sv, lo, hi


def resize_bilinear(x, out_hw, align_corners=False, half_pixel_centers=False):
    """int8 RESIZE_BILINEAR, reference ResizeBilinearInteger (10-bit fixed-point coordinates,
    quantization params ignored; half_pixel_centers with align_corners is rejected):
    scale_10 = (1024*in + out/2) // out (align_corners: (1024*(in-1) + (out-1)/2) // (out-1));
    src = o*scale_10 (+ scale_10/2 - 512 for half pixel); i0 = max(src/1024, 0) (C division),
    i1 = min((src+1023)/1024, in-1); out = (sum v*wy*wx + +-2**19) / 2**20 (C division)."""
    if align_corners and half_pixel_centers:
        raise ValueError("half_pixel_centers and align_corners are mutually exclusive")
    x = _i64(x)
    n, h, w, c = x.shape
    OH, OW = out_hw

    def scale10(i, o):
        if align_corners and o > 1:
            return ((1 << 10) * (i - 1) + (o - 1) // 2) // (o - 1)
        return ((1 << 10) * i + o // 2) // o

    ys, y0, y1 = _interp_int(np.arange(OH), scale10(h, OH), half_pixel_centers, h)
    xs, x0, x1 = _interp_int(np.arange(OW), scale10(w, OW), half_pixel_centers, w)
    wy1 = (ys - (1 << 10) * y0)[None, :, None, None]
    wy0 = (1 << 10) - wy1
    wx1 = (xs - (1 << 10) * x0)[None, None, :, None]
    wx0 = (1 << 10) - wx1

    def g(yi, xi):
        return x[:, yi][:, :, xi]

    o20 = g(y0, x0) * wy0 * wx0 + g(y1, x0) * wy1 * wx0 + g(y0, x1) * wy0 * wx1 + g(y1, x1) * wy1 * wx1
    rnd = np.where(o20 > 0, 1 << 19, -(1 << 19))
    return _wrap(_cdiv(o20 + rnd, 1 << 20), 8).astype(np.int8)
