"""Operand and attribute readers shared by the ONNX converters (the converters live in
nscons.ops, one module per op; the dispatch from a node to its converter is
frontends.onnx_ops). Here, below the op registry, so the op modules need no frontend."""
from __future__ import annotations

import numpy as np


def text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def activation(w, name, node, tensor, what="input"):
    if not tensor or w.is_const(tensor):
        raise w.fail(name, node, f"{what} {tensor!r} must be an activation, not a constant "
                                 f"(only {what}s computed from the network input are supported)")
    return tensor


def narrowest(q: np.ndarray) -> np.ndarray:
    """Integer weights as int8 when every value fits, else int16."""
    fits = q.size == 0 or (q.min() >= -128 and q.max() <= 127)
    return q.astype(np.int8 if fits else np.int16)


def weight(w, name, node, tensor, out_axis, ndim):
    """(real weight with output channels first (float32 or float64), exact (int8, scale[O])
    or None). A 1-D
    conv weight (O, I, k) where ndim is 4 reads as (O, I, 1, k)."""
    real = np.asarray(w.const(tensor, name, node, "weight"))
    if real.dtype != np.float32:
        real = real.astype(np.float64)
    # float32 stays float32 (resnet18: no 94 MB float64 copy): every use of a real weight
    # meets float64 arrays (the BN factors, the per-channel scales), whose promotion converts
    # each value exactly, so the results are those of a float64 copy
    if ndim == 4 and real.ndim == 3:
        out, exact = weight(w, name, node, tensor, out_axis, 3)
        return out[:, :, None, :], None if exact is None else (exact[0][:, :, None, :], exact[1])
    if real.ndim != ndim:
        raise w.fail(name, node, f"weight {tensor!r} has shape {real.shape}; a {ndim}-D "
                                 f"weight is expected")
    n_out = real.shape[out_axis]
    qc = w.quant_const(tensor)
    exact = None
    if qc is not None:
        if qc.dtype != "int8":
            raise w.fail(name, node, f"weight {tensor!r} is {qc.file_dtype}; 8-bit (int8 or "
                                     f"uint8) weights are supported")
        for what, a in (("scale", qc.scale), ("zero point", qc.zero_point)):
            if a.size != 1 and (a.size != n_out or qc.axis % ndim != out_axis):
                raise w.fail(name, node, f"weight {tensor!r} has its {what} along axis "
                                         f"{qc.axis}; only per-tensor or per-output-channel "
                                         f"(axis {out_axis}) weight quantization is supported")
        scale = np.broadcast_to(qc.scale.reshape(-1), (n_out,)).astype(np.float64)
        # q - zero point, exact: an asymmetric (uint8 or int8) weight is a centred integer
        # in [-255, 255]; passes/weight_slots.py splits those beyond int8 into int8 slots
        zp = np.broadcast_to(qc.zero_point.reshape(-1), (n_out,))
        centred = np.moveaxis(qc.q, out_axis, 0) - zp.reshape((-1,) + (1,) * (ndim - 1))
        exact = (narrowest(centred), scale)
    return np.moveaxis(real, out_axis, 0), exact


def bias(w, name, node, tensor, n_out, beta=1.0):
    """(real bias[O] or None, exact (int32[O], scale[O]) or None)."""
    if not tensor:
        return None, None
    real = np.asarray(w.const(tensor, name, node, "bias"), dtype=np.float64) * beta
    if real.size not in (1, n_out):
        raise w.fail(name, node, f"bias {tensor!r} has shape {real.shape}; ({n_out},) expected")
    real = np.broadcast_to(real.reshape(-1), (n_out,)).copy()
    qc = w.quant_const(tensor)
    exact = None
    if (qc is not None and qc.dtype == "int32" and beta == 1.0 and qc.q.size == n_out
            and not np.any(qc.zero_point)):
        exact = (qc.q.reshape(-1).astype(np.int32),
                 np.broadcast_to(qc.scale.reshape(-1), (n_out,)).astype(np.float64))
    return real, exact


def window_1d_as_2d(a: dict) -> dict:
    """1-D window attributes (Conv1d, pools on (1, C, L)) as 2-D ones with H = 1."""
    a = dict(a)
    if len(a.get("kernel_shape", (0, 0))) == 1:
        a["kernel_shape"] = [1] + list(a["kernel_shape"])
    for k, one in (("strides", 1), ("dilations", 1)):
        if k in a and len(a[k]) == 1:
            a[k] = [one] + list(a[k])
    if "pads" in a and len(a["pads"]) == 2:
        a["pads"] = [0, a["pads"][0], 0, a["pads"][1]]
    return a


SAME_PADS = ("SAME_UPPER", "SAME_LOWER")


def window(w, name, node, a, kernel):
    """stride/pads/dilation of a 2-D window op. auto_pad SAME_UPPER/SAME_LOWER is kept as
    an attribute: the shape pass turns it into pads once the input's size is known
    (opkit.shapes.spatial)."""
    auto_pad = text(a.get("auto_pad", "NOTSET"))
    if auto_pad not in ("NOTSET", "VALID") + SAME_PADS:
        raise w.fail(name, node, f"auto_pad={auto_pad} is not supported; use NOTSET, VALID, "
                                 f"SAME_UPPER or SAME_LOWER")
    pads = tuple(a.get("pads", (0, 0, 0, 0))) if auto_pad == "NOTSET" else (0, 0, 0, 0)
    stride = tuple(a.get("strides", (1, 1)))
    dilation = tuple(a.get("dilations", (1, 1)))
    if len(kernel) != 2 or len(pads) != 4 or len(stride) != 2 or len(dilation) != 2:
        raise w.fail(name, node, f"only 2-D windows are supported (kernel {tuple(kernel)}, "
                                 f"pads {pads}, strides {stride})")
    if min(pads) < 0 or min(stride) < 1 or min(dilation) < 1:
        raise w.fail(name, node, f"invalid pads {pads}, strides {stride} or dilations {dilation}")
    attrs = {"kernel": tuple(int(k) for k in kernel), "stride": stride, "pads": pads,
             "dilation": dilation}
    if auto_pad in SAME_PADS:
        attrs["auto_pad"] = auto_pad
    return attrs


