"""TFLite's int8 reference kernels of the arithmetic layers, bit-exact: ADD/SUB, MUL,
CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV, AVERAGE_POOL_2D, MAX_POOL_2D
and MEAN, each with the `*_params` that derive its integers from the float32 scales
(reference/tflite_math.py: the rules they follow).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .tflite_fixed import _f32, _float_to_int32, _i64, _out, _pair, _wrap32, average, compute_padding, mbqm_smaller_than_one_exp, multiply_by_quantized_multiplier, quantize_multiplier, quantize_multiplier_smaller_than_one_exp, round_half_away

# ---------------------------------------------------------------- ADD / SUB

class AddParams(NamedTuple):
    left_shift: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int


def add_params(s1, s2, s_out) -> AddParams:
    """ADD Prepare (int8): left_shift 20; twice_max = 2*max(s1, s2) (float32, exact);
    m_i = s_i / twice_max, m_out = twice_max / (2**20 * s_out) (2**20*s_out in float32, exact),
    all QuantizeMultiplierSmallerThanOneExp -- TFLite aborts if m_out >= 1."""
    s1, s2, so = _f32(s1), _f32(s2), _f32(s_out)
    twice_max = float(np.float32(2) * max(s1, s2))
    m1 = quantize_multiplier_smaller_than_one_exp(float(s1) / twice_max)
    m2 = quantize_multiplier_smaller_than_one_exp(float(s2) / twice_max)
    mo = quantize_multiplier_smaller_than_one_exp(twice_max / float(np.float32(1 << 20) * so))
    return AddParams(20, *m1, *m2, *mo)


def sub_params(s1, s2, s_out) -> AddParams:
    """SUB Prepare (int8): as ADD, but m_out > 1 goes through QuantizeMultiplierGreaterThanOne
    (the kernel then applies SmallerThanOneExp with a positive shift: undefined; we refuse)."""
    s1, s2, so = _f32(s1), _f32(s2), _f32(s_out)
    twice_max = float(np.float32(2) * max(s1, s2))
    m1 = quantize_multiplier_smaller_than_one_exp(float(s1) / twice_max)
    m2 = quantize_multiplier_smaller_than_one_exp(float(s2) / twice_max)
    real_out = twice_max / float(np.float32(1 << 20) * so)
    if real_out > 1:
        raise ValueError("SUB output multiplier > 1 (2*max(s1,s2) > 2**20 * s_out) is not "
                         "reproducible: the kernel right-shifts by a negative amount")
    mo = quantize_multiplier_smaller_than_one_exp(real_out)
    return AddParams(20, *m1, *m2, *mo)


def _add_sub(x1, x2, zp1, zp2, zpo, p: AddParams, act_min, act_max, sign):
    a = _wrap32((_i64(x1) - zp1) * (1 << p.left_shift))
    b = _wrap32((_i64(x2) - zp2) * (1 << p.left_shift))
    a = mbqm_smaller_than_one_exp(a, p.input1_multiplier, p.input1_shift)
    b = mbqm_smaller_than_one_exp(b, p.input2_multiplier, p.input2_shift)
    raw = _wrap32(a + sign * b)
    out = mbqm_smaller_than_one_exp(raw, p.output_multiplier, p.output_shift) + zpo
    return _out(out, act_min, act_max)


def add(x1, x2, zp1, zp2, zpo, params: AddParams, act_min=-128, act_max=127):
    """int8 ADD (reference AddFunc), NumPy broadcasting (TFLite broadcasts up to 6-D):
    s_i = SmallerThanOneExp((x_i - zp_i) << 20, M_i, sh_i);
    out = clamp(SmallerThanOneExp(s_1 + s_2, M_o, sh_o) + zpo, act_min, act_max)."""
    return _add_sub(x1, x2, zp1, zp2, zpo, params, act_min, act_max, 1)


def sub(x1, x2, zp1, zp2, zpo, params: AddParams, act_min=-128, act_max=127):
    """int8 SUB: as `add` with s_1 - s_2 (use sub_params)."""
    return _add_sub(x1, x2, zp1, zp2, zpo, params, act_min, act_max, -1)


# ---------------------------------------------------------------- MUL

def mul_params(s1, s2, s_out) -> tuple[int, int]:
    """MUL Prepare: QuantizeMultiplier(s1 * s2 / s_out) with the product and quotient in FLOAT32."""
    real = np.float32(np.float32(s1) * np.float32(s2)) / np.float32(s_out)
    return quantize_multiplier(float(np.float32(real)))


def mul(x1, x2, zp1, zp2, zpo, params, act_min=-128, act_max=127):
    """int8 MUL: clamp(zpo + MBQM((x1-zp1)*(x2-zp2), M, shift)), NumPy broadcasting."""
    M, shift = params
    prod = (_i64(x1) - zp1) * (_i64(x2) - zp2)
    return _out(multiply_by_quantized_multiplier(prod, M, shift) + zpo, act_min, act_max)


# ---------------------------------------------------------------- CONV / DEPTHWISE / FC / TRANSPOSE_CONV

def conv_params(in_scale, w_scales, out_scale) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (M[o], shift[o]) as PopulateConvolutionQuantizationParams (CONV_2D,
    DEPTHWISE_CONV_2D, TRANSPOSE_CONV, per-channel FC): double(s_in) * double(s_w[o]) / double(s_out).
    A single w scale is broadcast by the caller (pass a 1-element list => 1-element arrays)."""
    ws = np.atleast_1d(np.asarray(w_scales, dtype=np.float32))
    Ms, shs = [], []
    for w in ws:
        M, s = quantize_multiplier(float(np.float32(in_scale)) * float(w) / float(np.float32(out_scale)))
        Ms.append(M)
        shs.append(s)
    return np.array(Ms, dtype=np.int64), np.array(shs, dtype=np.int64)


def fc_params(in_scale, w_scale, out_scale) -> tuple[int, int]:
    """Per-tensor FULLY_CONNECTED Prepare (GetQuantizedConvolutionMultipler): the product
    s_in * s_w is taken in FLOAT32, then / double(s_out).  (Only the optimized kernel uses it;
    the reference kernel requantizes in double, see fc_requantize_float.)"""
    real = float(np.float32(np.float32(in_scale) * np.float32(w_scale))) / float(np.float32(out_scale))
    return quantize_multiplier(real)


def requantize_acc(acc, bias, M, shift, out_zp, act_min=-128, act_max=127):
    """CONV_2D / DEPTHWISE / TRANSPOSE_CONV requantization (channel = last axis):
    clamp(MBQM(acc + bias[c], M[c], shift[c]) + out_zp, act_min, act_max) -> int8."""
    acc = _i64(acc)
    if bias is not None:
        acc = acc + _i64(bias)
    acc = _wrap32(acc)
    return _out(multiply_by_quantized_multiplier(acc, M, shift) + out_zp, act_min, act_max)


def fc_requantize_float(acc, bias, in_scale, w_scales, out_scale, out_zp, act_min=-128, act_max=127):
    """The reference FULLY_CONNECTED int8 requantization (since April 2025 it is done in double):
    clamp((int)std::round(double(acc + bias) * (double(s_in)*double(s_w[o])/double(s_out))) + zp)."""
    acc = _i64(acc)
    if bias is not None:
        acc = acc + _i64(bias)
    acc = _wrap32(acc)
    ws = np.asarray(w_scales, dtype=np.float32).astype(np.float64)
    eff = float(np.float32(in_scale)) * ws / float(np.float32(out_scale))
    scaled = _float_to_int32(round_half_away(acc.astype(np.float64) * eff))
    return _out(scaled + out_zp, act_min, act_max)


def _taps(x, fh, fw, in_zp, strides, padding, dilation):
    """(output height, width, then per kernel tap (ky, kx, patch)): the NHWC input under each
    tap of every output pixel, less in_zp, with 0 where the tap falls in the padding."""
    n, h, wd, _ = x.shape
    sh, sw = _pair(strides)
    dh, dw = _pair(dilation)
    oh, ph = compute_padding(h, fh, sh, dh, padding)
    ow, pw = compute_padding(wd, fw, sw, dw, padding)
    oy = np.arange(oh) * sh - ph
    ox = np.arange(ow) * sw - pw

    def each():
        for ky in range(fh):
            iy = oy + ky * dh
            vy = (iy >= 0) & (iy < h)
            for kx in range(fw):
                ix = ox + kx * dw
                vx = (ix >= 0) & (ix < wd)
                patch = x[:, np.clip(iy, 0, h - 1)][:, :, np.clip(ix, 0, wd - 1)] - in_zp
                yield ky, kx, patch * (vy[None, :, None, None] & vx[None, None, :, None])
    return oh, ow, each()


def _conv_acc(x, w, in_zp, strides, padding, dilation):
    """int32 accumulators of a grouped NHWC conv with OHWI weights (padding pixels add 0)."""
    x = _i64(x)
    w = _i64(w)
    co, fh, fw, cf = w.shape
    groups = x.shape[3] // cf
    fpg = co // groups
    oh, ow, taps = _taps(x, fh, fw, in_zp, strides, padding, dilation)
    acc = np.zeros((x.shape[0], oh, ow, co), dtype=np.int64)
    for ky, kx, patch in taps:
        for g in range(groups):
            pg = patch[..., g * cf:(g + 1) * cf]
            wg = w[g * fpg:(g + 1) * fpg, ky, kx, :]
            acc[..., g * fpg:(g + 1) * fpg] += np.einsum("nhwc,oc->nhwo", pg, wg)
    return acc


def conv2d(x, w, bias, in_zp, out_zp, M, shift, strides=1, padding="SAME", dilation=1,
           act_min=-128, act_max=127):
    """int8 CONV_2D (reference ConvPerChannel, grouped conv allowed): NHWC input, OHWI int8
    weights (zero point must be 0), int32 bias; acc = sum w*(x - in_zp) over in-image taps."""
    acc = _conv_acc(x, w, in_zp, strides, padding, dilation)
    return requantize_acc(_wrap32(acc), bias, M, shift, out_zp, act_min, act_max)


def depthwise_conv2d(x, w, bias, in_zp, out_zp, M, shift, strides=1, padding="SAME", dilation=1,
                     act_min=-128, act_max=127):
    """int8 DEPTHWISE_CONV_2D (reference DepthwiseConvPerChannel): weights (1, KH, KW, C*mult),
    output channel oc = ic*mult + m."""
    x = _i64(x)
    w = _i64(w)
    _, fh, fw, co = w.shape
    mult = co // x.shape[3]
    oh, ow, taps = _taps(x, fh, fw, in_zp, strides, padding, dilation)
    acc = np.zeros((x.shape[0], oh, ow, co), dtype=np.int64)
    for ky, kx, patch in taps:
        acc += np.repeat(patch, mult, axis=-1) * w[0, ky, kx, :]
    return requantize_acc(_wrap32(acc), bias, M, shift, out_zp, act_min, act_max)


def fully_connected(x, w, bias, in_zp, w_zp, out_zp, in_scale, w_scales, out_scale,
                    act_min=-128, act_max=127, float_requant=True):
    """int8 FULLY_CONNECTED over the last axis of x (rows = everything else), weights (O, I).

    acc = sum (w - w_zp) * (x - in_zp) (+ bias).  Per-channel weights (len(w_scales) > 1) ignore
    w_zp (symmetric by spec).  The REFERENCE kernel requantizes in double (fc_requantize_float);
    float_requant=False gives the optimized kernels' MBQM requantization instead.
    """
    x = _i64(x)
    w = _i64(w)
    ws = np.atleast_1d(np.asarray(w_scales, dtype=np.float32))
    per_channel = ws.size > 1
    wz = 0 if per_channel else int(np.atleast_1d(w_zp)[0])
    acc = _wrap32(np.einsum("...i,oi->...o", x - in_zp, w - wz))
    if float_requant:
        return fc_requantize_float(acc, bias, in_scale, ws, out_scale, out_zp, act_min, act_max)
    if per_channel:
        M, s = conv_params(in_scale, ws, out_scale)
    else:
        M, s = fc_params(in_scale, ws[0], out_scale)
    return requantize_acc(acc, bias, M, s, out_zp, act_min, act_max)


def transpose_conv(x, w, bias, out_hw, in_zp, out_zp, M, shift, strides=1, padding="SAME",
                   act_min=-128, act_max=127):
    """int8 TRANSPOSE_CONV (reference, per-channel): weights OHWI; out_hw = the output_shape
    tensor's (H, W).  Padding is computed as for a forward conv from the OUTPUT size (and the
    input size must equal that conv's output size).  Scatter:
    acc[n, iy*s - pad + ky, ix*s - pad + kx, o] += (x - in_zp) * w[o, ky, kx, c]."""
    x = _i64(x)
    w = _i64(w)
    n, h, wd, cin = x.shape
    co, fh, fw, _ = w.shape
    sh, sw = _pair(strides)
    OH, OW = out_hw
    ih, ph = compute_padding(OH, fh, sh, 1, padding)
    iw, pw = compute_padding(OW, fw, sw, 1, padding)
    if (ih, iw) != (h, wd):
        raise ValueError(f"TRANSPOSE_CONV: input {h}x{wd} != expected {ih}x{iw}")
    acc = np.zeros((n, OH, OW, co), dtype=np.int64)
    xc = x - in_zp
    for ky in range(fh):
        oy = np.arange(h) * sh - ph + ky
        vy = (oy >= 0) & (oy < OH)
        for kx in range(fw):
            ox = np.arange(wd) * sw - pw + kx
            vx = (ox >= 0) & (ox < OW)
            contrib = np.einsum("nhwc,oc->nhwo", xc[:, vy][:, :, vx], w[:, ky, kx, :])
            acc[:, oy[vy][:, None], ox[vx][None, :], :] += contrib
    return requantize_acc(_wrap32(acc), bias, M, shift, out_zp, act_min, act_max)


# ---------------------------------------------------------------- pooling, mean

def _pool_windows(x, filter_hw, strides, padding):
    n, h, w, c = x.shape
    fh, fw = _pair(filter_hw)
    sh, sw = _pair(strides)
    oh, ph = compute_padding(h, fh, sh, 1, padding)
    ow, pw = compute_padding(w, fw, sw, 1, padding)
    oy = np.arange(oh) * sh - ph
    ox = np.arange(ow) * sw - pw
    for ky in range(fh):
        iy = oy + ky
        vy = (iy >= 0) & (iy < h)
        for kx in range(fw):
            ix = ox + kx
            vx = (ix >= 0) & (ix < w)
            vals = x[:, np.clip(iy, 0, h - 1)][:, :, np.clip(ix, 0, w - 1)]
            yield vals, (vy[:, None] & vx[None, :])[None, :, :, None]


def average_pool(x, filter_hw, strides, padding="VALID", act_min=-128, act_max=127):
    """int8 AVERAGE_POOL_2D (reference): sum of the raw int8 values of the in-image window
    (padding excluded from sum AND count; zero points and scales are IGNORED -- Prepare only
    DCHECKs s_in == s_out, zp_in == zp_out), divided by the count rounding half away from zero:
    acc > 0 ? (acc + c/2) / c : (acc - c/2) / c  (C division), then clamp(act_min, act_max)."""
    x = _i64(x)
    acc = 0
    cnt = 0
    for vals, valid in _pool_windows(x, filter_hw, strides, padding):
        acc = acc + vals * valid
        cnt = cnt + valid.astype(np.int64)
    cnt = np.broadcast_to(cnt, np.shape(acc))
    avg = average(acc, cnt)
    return _out(avg, act_min, act_max)


def max_pool(x, filter_hw, strides, padding="VALID", act_min=-128, act_max=127):
    """int8 MAX_POOL_2D: max of the in-image window, clamped to the activation range (no requant)."""
    x = _i64(x)
    m = None
    for vals, valid in _pool_windows(x, filter_hw, strides, padding):
        v = np.where(valid, vals, -128)
        m = v if m is None else np.maximum(m, v)
    return _out(m, act_min, act_max)


class MeanParams(NamedTuple):
    multiplier: int      # after folding 1/num_elements in
    shift: int
    num_elements: int


def mean_params(in_scale, out_scale, num_elements: int) -> MeanParams:
    """MEAN Prepare + QuantizedMeanOrSum: (M, s) = QuantizeMultiplier(double(s_in)/double(s_out));
    k = min(floor(log2 N), 32, 31 + s); M' = (M << k) // N (int64, truncating); s' = s - k."""
    M, s = quantize_multiplier(float(np.float32(in_scale)) / float(np.float32(out_scale)))
    N = int(num_elements)
    k = min(N.bit_length() - 1, 32, 31 + s)
    return MeanParams(int(_wrap32((M << k) // N)), s - k, N)


def mean(x, axes, in_zp, out_zp, in_scale, out_scale, keepdims=True):
    """int8 MEAN as the REFERENCE resolver runs it (always reference_ops::QuantizedMeanOrSum,
    also for 4-D over H,W and for equal in/out quantization):
    out = clamp(MBQM(sum - zp_in*N, M', s') + zp_out) with mean_params' folded multiplier."""
    x = _i64(x)
    axes = sorted({a % x.ndim for a in np.atleast_1d(axes).tolist()})
    N = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    p = mean_params(in_scale, out_scale, N)
    s = _wrap32(x.sum(axis=tuple(axes), keepdims=keepdims) - in_zp * N)
    return _out(multiply_by_quantized_multiplier(s, p.multiplier, p.shift) + out_zp)


def mean_hw_optimized(x, in_zp, out_zp, in_scale, out_scale):
    """The 4-D keep_dims mean over H,W of the OPTIMIZED kernel (optimized_integer_ops::Mean;
    NOT used by BUILTIN_REF): bias = zp_out - (int)(zp_in*s_in/s_out +- 0.5f) (float32);
    (M, s) = QuantizeMultiplier(float(s_in / (float(H*W) * s_out)));
    out = clamp(MBQM(sum of raw int8, M, s) + bias).  NHWC in, (N,1,1,C) out."""
    x = _i64(x)
    n, h, w, c = x.shape
    si, so = np.float32(in_scale), np.float32(out_scale)
    temp = np.float32(np.float32(np.float32(in_zp) * si) / so)
    temp = np.float32(temp + np.float32(0.5)) if temp > 0 else np.float32(temp - np.float32(0.5))
    bias = int(out_zp) - int(np.trunc(temp))
    real = np.float32(si / np.float32(np.float32(h * w) * so))
    M, s = quantize_multiplier(float(real))
    acc = _wrap32(x.sum(axis=(1, 2), keepdims=True))
    return _out(multiply_by_quantized_multiplier(acc, M, s) + bias)
