"""Quantization helpers for writing int8 TFLite models (tflite_writer.py, the zoo's
TFLite networks, tests): per-channel and per-tensor quantization, TFLite-style range
parameters, int32 biases; rounding half away from zero as TFLite's converter."""
from __future__ import annotations

import numpy as np

from .tflite_op_options import DTYPES


def _round_away(x):
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def quantize_per_channel(w, axis):
    """Symmetric int8 per-channel quantization along `axis` (TFLite's: [-127, 127]).
    Returns (int8 array, float32 scales of length w.shape[axis]); all-zero channels get
    scale 1."""
    w = np.asarray(w, dtype=np.float64)
    axis = axis % w.ndim
    red = tuple(i for i in range(w.ndim) if i != axis)
    amax = np.max(np.abs(w), axis=red) if red else np.abs(w)
    scales = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    bshape = [1] * w.ndim
    bshape[axis] = -1
    q = np.clip(_round_away(w / scales.astype(np.float64).reshape(bshape)), -127, 127)
    return q.astype(np.int8), scales


def quantize_per_tensor(x, scale, zero_point, dtype="int8"):
    """Affine quantization of float data to int8/uint8/int16/int32."""
    npdt = DTYPES[dtype][1]
    info = np.iinfo(npdt)
    q = _round_away(np.asarray(x, dtype=np.float64) / float(scale)) + int(zero_point)
    return np.clip(q, info.min, info.max).astype(npdt)


def qparams_from_range(lo, hi, dtype="int8"):
    """Asymmetric (scale, zero_point) covering [lo, hi] widened to include 0, as TFLite's
    calibration does (nudged zero point)."""
    info = np.iinfo(DTYPES[dtype][1])
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if hi - lo < 1e-8:
        hi = lo + 1e-8
    scale = (hi - lo) / float(info.max - info.min)
    zp = int(np.clip(round(info.min - lo / scale), info.min, info.max))
    return float(np.float32(scale)), zp


def bias_int32(b, in_scale, w_scales):
    """int32 bias for a conv/FC: round(b / (in_scale * w_scales[c])) (the bias's own scale,
    in_scale * w_scales, goes into its quantization parameters)."""
    s = float(in_scale) * np.asarray(w_scales, dtype=np.float64)
    q = _round_away(np.asarray(b, dtype=np.float64) / s)
    return np.clip(q, -2**31, 2**31 - 1).astype(np.int32)
