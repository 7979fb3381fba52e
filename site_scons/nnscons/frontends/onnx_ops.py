"""ONNX node -> pre-IR Op converters (one function per supported op type)."""
from __future__ import annotations

import numpy as np

from ..passes.opgraph import Op
from .onnx_file import attributes

SUPPORTED = ("Conv", "Gemm", "MatMul", "Relu", "Clip", "MaxPool", "AveragePool",
             "GlobalAveragePool", "Add", "Concat", "Flatten", "Reshape", "BatchNormalization",
             "Identity", "Dropout", "QuantizeLinear", "DequantizeLinear", "Constant")


def supported_list() -> str:
    return "supported ops: " + ", ".join(SUPPORTED)


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _activation(w, name, node, tensor, what="input"):
    if not tensor or w.is_const(tensor):
        raise w.fail(name, node, f"{what} {tensor!r} must be an activation, not a constant "
                                 f"(only {what}s computed from the network input are supported)")
    return tensor


def _weight(w, name, node, tensor, out_axis, ndim):
    """(real weight with output channels first, exact (int8, scale[O]) or None)."""
    real = np.asarray(w.const(tensor, name, node, "weight"), dtype=np.float64)
    if real.ndim != ndim:
        raise w.fail(name, node, f"weight {tensor!r} has shape {real.shape}; a {ndim}-D "
                                 f"weight is expected")
    n_out = real.shape[out_axis]
    qc = w.quant_const(tensor)
    exact = None
    if qc is not None:
        if qc.dtype != "int8" or np.any(qc.zero_point != 0):
            raise w.fail(name, node, f"weight {tensor!r} is not symmetric int8 (zero point "
                                     f"{qc.zero_point.reshape(-1)[:4]}...); quantize weights "
                                     f"as QInt8 with WeightSymmetric=True")
        if qc.scale.size != 1 and (qc.scale.size != n_out or qc.axis % ndim != out_axis):
            raise w.fail(name, node, f"weight {tensor!r} is quantized along axis {qc.axis}; "
                                     f"only per-tensor or per-output-channel (axis "
                                     f"{out_axis}) weight quantization is supported")
        scale = np.broadcast_to(qc.scale.reshape(-1), (n_out,)).astype(np.float64)
        exact = (np.moveaxis(qc.q, out_axis, 0).astype(np.int8), scale)
    return np.moveaxis(real, out_axis, 0), exact


def _bias(w, name, node, tensor, n_out, beta=1.0):
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


def _window(w, name, node, a, kernel):
    """stride/pads/dilation of a 2-D window op; auto_pad NOTSET or VALID only."""
    auto_pad = _text(a.get("auto_pad", "NOTSET"))
    if auto_pad not in ("NOTSET", "VALID"):
        raise w.fail(name, node, f"auto_pad={auto_pad} is not supported; use explicit pads "
                                 f"(auto_pad NOTSET) or VALID")
    pads = tuple(a.get("pads", (0, 0, 0, 0))) if auto_pad == "NOTSET" else (0, 0, 0, 0)
    stride = tuple(a.get("strides", (1, 1)))
    dilation = tuple(a.get("dilations", (1, 1)))
    if len(kernel) != 2 or len(pads) != 4 or len(stride) != 2 or len(dilation) != 2:
        raise w.fail(name, node, f"only 2-D windows are supported (kernel {tuple(kernel)}, "
                                 f"pads {pads}, strides {stride})")
    if min(pads) < 0 or min(stride) < 1 or min(dilation) < 1:
        raise w.fail(name, node, f"invalid pads {pads}, strides {stride} or dilations {dilation}")
    return {"kernel": tuple(int(k) for k in kernel), "stride": stride, "pads": pads,
            "dilation": dilation}


def conv(w, name, node, ins, out):
    a = attributes(node)
    weight, wq = _weight(w, name, node, ins[1] if len(ins) > 1 else "", 0, 4)
    if "kernel_shape" in a and tuple(a["kernel_shape"]) != weight.shape[2:]:
        raise w.fail(name, node, f"kernel_shape {a['kernel_shape']} does not match the weight "
                                 f"{weight.shape}")
    attrs = _window(w, name, node, a, weight.shape[2:])
    attrs["groups"] = int(a.get("group", 1))
    bias, bq = _bias(w, name, node, ins[2] if len(ins) > 2 else "", weight.shape[0])
    return Op(name, "conv2d", [_activation(w, name, node, ins[0])], out, node.op_type,
              attrs=attrs, weight=weight, bias=bias, weight_q=wq, bias_q=bq)


def gemm(w, name, node, ins, out):
    a = attributes(node)
    if a.get("transA", 0):
        raise w.fail(name, node, "transA=1 is not supported")
    weight, wq = _weight(w, name, node, ins[1], 0 if a.get("transB", 0) else 1, 2)
    alpha = float(a.get("alpha", 1.0))
    if alpha != 1.0:
        weight, wq = weight * alpha, None
    bias, bq = _bias(w, name, node, ins[2] if len(ins) > 2 else "", weight.shape[0],
                     float(a.get("beta", 1.0)))
    return Op(name, "linear", [_activation(w, name, node, ins[0])], out, node.op_type,
              weight=weight, bias=bias, weight_q=wq, bias_q=bq)


def matmul(w, name, node, ins, out):
    weight, wq = _weight(w, name, node, ins[1], 1, 2)
    return Op(name, "linear", [_activation(w, name, node, ins[0])], out, node.op_type,
              weight=weight, weight_q=wq)


def _pool_attrs(w, name, node):
    a = attributes(node)
    if "kernel_shape" not in a:
        raise w.fail(name, node, "kernel_shape is required")
    attrs = _window(w, name, node, a, a["kernel_shape"])
    if attrs.pop("dilation") != (1, 1):
        raise w.fail(name, node, f"dilations {a['dilations']} are not supported (only 1)")
    attrs["ceil_mode"] = int(a.get("ceil_mode", 0))
    return a, attrs


def maxpool(w, name, node, ins, out):
    a, attrs = _pool_attrs(w, name, node)
    if a.get("storage_order", 0):
        raise w.fail(name, node, "storage_order=1 is not supported")
    return Op(name, "maxpool", [_activation(w, name, node, ins[0])], out, node.op_type,
              attrs=attrs)


def avgpool(w, name, node, ins, out):
    a, attrs = _pool_attrs(w, name, node)
    attrs["count_include_pad"] = int(a.get("count_include_pad", 0))
    if attrs["ceil_mode"] and attrs["count_include_pad"]:
        raise w.fail(name, node, "ceil_mode=1 together with count_include_pad=1 is not "
                                 "supported; use one of them")
    return Op(name, "avgpool", [_activation(w, name, node, ins[0])], out, node.op_type,
              attrs=attrs)


def global_avgpool(w, name, node, ins, out):
    return Op(name, "global_avgpool", [_activation(w, name, node, ins[0])], out, node.op_type)


def add(w, name, node, ins, out):
    return Op(name, "add", [_activation(w, name, node, t) for t in ins], out, node.op_type)


def concat(w, name, node, ins, out):
    return Op(name, "concat", [_activation(w, name, node, t) for t in ins], out, node.op_type,
              attrs={"axis": int(attributes(node)["axis"])})


def relu(w, name, node, ins, out):
    return Op(name, "clamp", [_activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"lo": 0.0, "hi": None})


def clip(w, name, node, ins, out):
    if w.f.opset < 11:
        a = attributes(node)
        lo, hi = a.get("min"), a.get("max")
    else:
        lo, hi = (float(w.const(ins[i], name, node, what)) if len(ins) > i and ins[i] else None
                  for i, what in ((1, "min"), (2, "max")))
    return Op(name, "clamp", [_activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"lo": lo, "hi": hi})


def flatten(w, name, node, ins, out):
    axis = int(attributes(node).get("axis", 1))
    return Op(name, "reshape", [_activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"shape": (1, -1), "flatten_axis": axis})


def reshape(w, name, node, ins, out):
    shape = w.const(ins[1], name, node, "shape")
    if attributes(node).get("allowzero", 0) and 0 in shape:
        raise w.fail(name, node, "allowzero=1 with a 0 in the shape is not supported")
    return Op(name, "reshape", [_activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"shape": tuple(int(d) for d in np.asarray(shape).reshape(-1))})


def batchnorm(w, name, node, ins, out):
    a = attributes(node)
    if a.get("training_mode", 0):
        raise w.fail(name, node, "training_mode=1 is not supported; export in eval mode")
    params = {k: np.asarray(w.const(t, name, node, k), dtype=np.float64).reshape(-1)
              for k, t in zip(("scale", "bias", "mean", "var"), ins[1:5])}
    params["eps"] = float(a.get("epsilon", 1e-5))
    return Op(name, "bn", [_activation(w, name, node, ins[0])], out, node.op_type,
              attrs=params)


CONVERTERS = {"Conv": conv, "Gemm": gemm, "MatMul": matmul, "MaxPool": maxpool,
              "AveragePool": avgpool, "GlobalAveragePool": global_avgpool, "Add": add,
              "Concat": concat, "Relu": relu, "Clip": clip, "Flatten": flatten,
              "Reshape": reshape, "BatchNormalization": batchnorm}


def convert(w, name, node, ins, out) -> Op:
    fn = CONVERTERS.get(node.op_type)
    if fn is None:
        raise w.fail(name, node, f"op type {node.op_type!r} is not supported; "
                                 f"{supported_list()}")
    return fn(w, name, node, ins, out)
