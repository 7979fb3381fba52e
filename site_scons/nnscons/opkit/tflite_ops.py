"""Shared helpers of the TFLite converters (the converters live in nnscons.ops, one module
per op): window padding, int8 weights and int32 biases exactly as the file stores them."""
from __future__ import annotations

import numpy as np

PADDING = {0: "SAME", 1: "VALID"}


def window(w, op, in_hw, kernel, stride, dilation) -> dict:
    """IR window attributes from TFLite's padding type: SAME puts the odd pixel at the
    bottom/right (ComputePaddingWithOffset), VALID pads nothing."""
    padding = PADDING.get(int(op.options.get("padding", 0)))
    if padding is None:
        raise w.fail(op, f"padding type {op.options.get('padding')} is not SAME or VALID")
    if min(stride) < 1 or min(dilation) < 1:
        raise w.fail(op, f"stride {stride} and dilation {dilation} must be at least 1")
    pads = []
    for size, k, s, d in zip(in_hw, kernel, stride, dilation):
        eff = (k - 1) * d + 1
        if padding == "SAME":
            out = -(-size // s)
            total = max((out - 1) * s + eff - size, 0)
            pads.append((total // 2, total - total // 2))
        else:
            if size < eff:
                raise w.fail(op, f"VALID window {eff} is larger than the input ({size})")
            pads.append((0, 0))
    (top, bottom), (left, right) = pads
    return {"kernel": tuple(kernel), "stride": tuple(stride), "dilation": tuple(dilation),
            "pads": (top, left, bottom, right)}


def weights(w, op, k: int, n_out: int, axis: int):
    """(int8 weights as stored, float64 scale[n_out]) of input k, quantized per tensor or
    along `axis` (the output channels)."""
    t = w.input_tensor(op, k, "weights")
    if not t.is_const:
        raise w.fail(op, f"weights {t.name!r} must be a constant tensor")
    if t.dtype not in ("int8", "uint8") or not t.quantized:
        raise w.fail(op, f"weights {t.name!r} have type {t.dtype}{'' if t.quantized else ' without quantization'}; "
                         f"int8 weights are supported (full-integer quantization)")
    q = t.data.astype(np.int64)
    zp = t.zero_point
    if t.dtype == "uint8":      # old uint8 models: symmetric only when the zero point is 128
        q = q - 128
        zp = zp - 128
    if np.any(zp != 0):
        raise w.fail(op, f"weights {t.name!r} are asymmetric (zero point "
                         f"{t.zero_point.reshape(-1)[:4].tolist()}); nnscons supports "
                         f"symmetric weights (zero point 0 for int8, 128 for uint8)")
    if t.scale.size == 1:
        scale = np.full(n_out, t.scale[0])
    elif t.scale.size == n_out and t.quantized_dimension % max(q.ndim, 1) == axis:
        scale = t.scale
    else:
        raise w.fail(op, f"weights {t.name!r} are quantized along axis "
                         f"{t.quantized_dimension} with {t.scale.size} scales; per-tensor or "
                         f"per-output-channel (axis {axis}, {n_out} scales) is supported")
    if np.any(scale <= 0) or not np.all(np.isfinite(scale)):
        raise w.fail(op, f"weights {t.name!r} have a scale that is not positive and finite")
    if np.any(q < -128) or np.any(q > 127):
        raise w.fail(op, f"weights {t.name!r} do not fit int8")
    return q.astype(np.int8), scale.astype(np.float64)


def bias(w, op, k: int, n_out: int, s_in: float, s_w: np.ndarray):
    """(real bias, (int32 bias, scale)) of optional input k: TFLite's integers, used at
    the scale s_in * s_w as its kernels do."""
    if not w.has_input(op, k):
        return None, None
    t = w.input_tensor(op, k, "bias")
    if not t.is_const or t.dtype != "int32":
        raise w.fail(op, f"bias {t.name!r} must be a constant int32 tensor (got {t.dtype})")
    b = t.data.reshape(-1).astype(np.int64)
    if b.size != n_out:
        raise w.fail(op, f"bias {t.name!r} has {b.size} values for {n_out} output channels")
    scale = s_in * s_w
    return b * scale, (b.astype(np.int32), scale)


def in_hw(w, op, k: int = 0) -> tuple:
    shape = w.input_tensor(op, k).shape
    if len(shape) != 4:
        raise w.fail(op, f"input has shape {list(shape)}; a 4-D NHWC tensor is expected")
    return shape[1], shape[2]
