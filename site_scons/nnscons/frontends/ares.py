"""ARES (Brevitas) export directory -> IR.

Layout: network_info.json ({layer: {"type": ..., scales...}, "__layer_order__": [...]}),
weights/<layer>_weight_int8.npy and optional weights/<layer>_bias_fp32.npy, and optionally
test_cases/test_case_*/input_fp32.npy (the first one becomes graph.default_input and gives
the input shape when input_shape is not passed).

Decisions: activations are symmetric int8 (zero point 0), as Brevitas exports them; the
first layer must be the input QuantIdentity; every layer reads the previous layer's output
unless it names its input ("input", or input1/input2 for QuantAdd) as "<layer>" or
"<layer>_out", and its output tensor is "<layer>_out". A per-tensor weight scale is
broadcast per output channel; a list is taken as per-channel. Fields given for an input
scale must agree with the scale of the tensor actually feeding the layer.
"""
from __future__ import annotations

import glob
import json
import os
import re

import numpy as np

from ..errors import ModelError
from ..ir import Graph, QParams
from ..passes import prepare, to_ir
from ..opkit.opgraph import Op, OpGraph
from ..passes.quantize import f32
from .onnx_file import resolve_input_shape

SUPPORTED = ("QuantIdentity", "QuantConv2d", "QuantLinear", "QuantReLU", "MaxPool2d",
             "AvgPool2d", "AdaptiveAvgPool2d", "GlobalAvgPool", "QuantAdd", "Flatten")


def _pair(v, what):
    v = list(v) if isinstance(v, (list, tuple)) else [v, v]
    if len(v) != 2 or not all(isinstance(x, int) for x in v):
        raise ValueError(f"{what} must be an int or a pair of ints, got {v!r}")
    return tuple(v)


def _case_number(path):
    m = re.search(r"test_case_(\d+)", path)
    return (int(m.group(1)) if m else -1, path)


class _Ares:
    def __init__(self, path: str):
        self.path = path
        self.ops: list = []
        self.qparams: dict = {}
        self.refs: dict = {}        # "<layer>" and "<layer>_out" -> tensor name
        self.current = None

    def fail(self, layer, entry, message):
        kind = entry.get("type") if isinstance(entry, dict) else None
        return ModelError(f"{self.path}: layer {layer!r} ({kind}): {message}")

    # -- fields -------------------------------------------------------------------------
    def scale(self, layer, entry, key, required=True):
        if key not in entry:
            if required:
                raise self.fail(layer, entry, f"missing field {key!r}")
            return None
        v = entry[key]
        if not isinstance(v, (int, float)) or not v > 0:
            raise self.fail(layer, entry, f"{key} must be a positive number, got {v!r}")
        return f32(v)

    def check_input_scale(self, layer, entry, key, tensor):
        given = self.scale(layer, entry, key, required=False)
        have = self.qparams[tensor].scale
        if given is not None and not np.isclose(given, have, rtol=1e-5, atol=0):
            raise self.fail(layer, entry, f"{key}={given} but its input {tensor!r} has scale "
                                          f"{have}; the export is inconsistent")

    def ref(self, layer, entry, key):
        r = entry.get(key)
        if r not in self.refs:
            raise self.fail(layer, entry, f"{key}={r!r} does not name an earlier layer "
                                          f"('<layer>' or '<layer>_out')")
        return self.refs[r]

    def array(self, layer, entry, suffix, required):
        if not re.fullmatch(r"[^/\\]+", layer) or layer.startswith("."):
            raise self.fail(layer, entry, "the layer name cannot be used to find its weight "
                                          "files (it contains a path separator or starts "
                                          "with '.')")
        f = os.path.join(self.path, "weights", f"{layer}_{suffix}.npy")
        if not os.path.isfile(f):
            if required:
                raise self.fail(layer, entry, f"weight file weights/{layer}_{suffix}.npy "
                                              f"not found")
            return None
        try:
            return np.load(f, allow_pickle=False)
        except Exception as e:
            raise self.fail(layer, entry, f"cannot read weights/{layer}_{suffix}.npy "
                                          f"({type(e).__name__}: {e})") from None

    # -- layer types ----------------------------------------------------------------------
    def weighted(self, layer, entry, src, kind, ndim):
        w = self.array(layer, entry, "weight_int8", True)
        if w.dtype != np.int8 or w.ndim != ndim:
            raise self.fail(layer, entry, f"weights/{layer}_weight_int8.npy must be a "
                                          f"{ndim}-D int8 array, got {w.dtype} {w.shape}")
        n_out = w.shape[0]
        given = entry.get("scale_weight")
        values = given if isinstance(given, list) else [given]
        if len(values) not in (1, n_out) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
                for v in values):
            raise self.fail(layer, entry, f"scale_weight must be a positive number or a list "
                                          f"of {n_out}, got {given!r}")
        sw = np.broadcast_to(np.array([f32(v) for v in values]), (n_out,)).astype(np.float64)
        b = self.array(layer, entry, "bias_fp32", False)
        if b is not None:
            b = np.asarray(b, dtype=np.float64).reshape(-1)
            if b.shape != (n_out,):
                raise self.fail(layer, entry, f"bias has shape {b.shape}; ({n_out},) expected")
        self.check_input_scale(layer, entry, "scale_input", src)
        real = w.astype(np.float64) * sw.reshape((-1,) + (1,) * (ndim - 1))
        return Op(layer, kind, [src], "", entry["type"], weight=real, bias=b,
                  weight_q=(w, sw)), QParams(self.scale(layer, entry, "scale_output"), 0)

    def conv(self, layer, entry, src):
        op, q = self.weighted(layer, entry, src, "conv2d", 4)
        ph, pw = _pair(entry.get("padding", 0), "padding")
        groups = entry.get("groups", 1)
        if not isinstance(groups, int) or groups < 1:
            raise ValueError(f"groups must be a positive int, got {groups!r}")
        op.attrs = {"kernel": op.weight.shape[2:],
                    "stride": _pair(entry.get("stride", 1), "stride"),
                    "dilation": _pair(entry.get("dilation", 1), "dilation"),
                    "pads": (ph, pw, ph, pw), "groups": groups}
        if ("kernel_size" in entry
                and _pair(entry["kernel_size"], "kernel_size") != op.weight.shape[2:]):
            raise self.fail(layer, entry, f"kernel_size {entry['kernel_size']} does not match "
                                          f"the weight shape {op.weight.shape}")
        return op, q

    def linear(self, layer, entry, src):
        return self.weighted(layer, entry, src, "linear", 2)

    def relu(self, layer, entry, src):
        self.check_input_scale(layer, entry, "scale_input", src)
        q = self.scale(layer, entry, "scale_output", required=False)
        return (Op(layer, "clamp", [src], "", entry["type"], attrs={"lo": 0.0, "hi": None}),
                QParams(q, 0) if q else self.qparams[src])

    def identity(self, layer, entry, src):
        s = self.scale(layer, entry, "scale_output" if "scale_output" in entry else "scale")
        return Op(layer, "requant", [src], "", entry["type"]), QParams(s, 0)

    def pool(self, layer, entry, src):
        kernel = _pair(entry["kernel_size"], "kernel_size") if "kernel_size" in entry else None
        if kernel is None:
            raise self.fail(layer, entry, "missing field 'kernel_size'")
        ph, pw = _pair(entry.get("padding", 0), "padding")
        attrs = {"kernel": kernel, "stride": _pair(entry.get("stride") or kernel, "stride"),
                 "pads": (ph, pw, ph, pw), "ceil_mode": int(bool(entry.get("ceil_mode", 0)))}
        q = self.qparams[src]
        if entry["type"] == "MaxPool2d":
            return Op(layer, "maxpool", [src], "", entry["type"], attrs=attrs), q
        # Without padding, count_include_pad changes nothing: normalize it to 0.
        attrs["count_include_pad"] = int(bool(entry.get("count_include_pad", True))
                                         and max(ph, pw) > 0)
        if attrs["ceil_mode"] and attrs["count_include_pad"]:
            raise self.fail(layer, entry, "ceil_mode with count_include_pad and padding is "
                                          "not supported")
        out = self.scale(layer, entry, "scale_output", required=False)
        return (Op(layer, "avgpool", [src], "", entry["type"], attrs=attrs),
                QParams(out, 0) if out else q)

    def global_pool(self, layer, entry, src):
        if entry.get("output_size", 1) not in (1, [1, 1], (1, 1)):
            raise self.fail(layer, entry, f"output_size {entry['output_size']} is not "
                                          f"supported (only 1: global average pooling)")
        out = self.scale(layer, entry, "scale_output", required=False)
        return (Op(layer, "global_avgpool", [src], "", entry["type"]),
                QParams(out, 0) if out else self.qparams[src])

    def add(self, layer, entry, src):
        a, b = self.ref(layer, entry, "input1"), self.ref(layer, entry, "input2")
        self.check_input_scale(layer, entry, "scale1", a)
        self.check_input_scale(layer, entry, "scale2", b)
        return (Op(layer, "add", [a, b], "", entry["type"]),
                QParams(self.scale(layer, entry, "scale_output"), 0))

    def flatten(self, layer, entry, src):
        return (Op(layer, "reshape", [src], "", entry["type"],
                   attrs={"shape": (1, -1), "flatten_axis": 1}), self.qparams[src])

    HANDLERS = {"QuantConv2d": conv, "QuantLinear": linear, "QuantReLU": relu,
                "QuantIdentity": identity, "MaxPool2d": pool, "AvgPool2d": pool,
                "AdaptiveAvgPool2d": global_pool, "GlobalAvgPool": global_pool,
                "QuantAdd": add, "Flatten": flatten}

    def add_layer(self, layer, entry):
        kind = entry.get("type")
        handler = self.HANDLERS.get(kind)
        if handler is None:
            raise self.fail(layer, entry, f"layer type {kind!r} is not supported; supported "
                                          f"types: {', '.join(SUPPORTED)}")
        src = self.ref(layer, entry, "input") if "input" in entry else self.current
        try:
            op, q = handler(self, layer, entry, src)
        except (ValueError, TypeError) as e:   # malformed field values
            raise self.fail(layer, entry, str(e)) from None
        op.output = f"{layer}_out"
        self.ops.append(op)
        self.qparams[op.output] = q
        self.refs[layer] = self.refs[op.output] = self.current = op.output


def _read_info(path: str):
    info_path = os.path.join(path, "network_info.json")
    if not os.path.isfile(info_path):
        raise ModelError(f"{path}: not an ARES export directory (network_info.json not found)")
    try:
        with open(info_path, encoding="utf-8") as fh:
            info = json.load(fh)
    except (OSError, ValueError) as e:
        raise ModelError(f"{info_path}: cannot read JSON ({e})") from None
    order = info.get("__layer_order__") if isinstance(info, dict) else None
    if not isinstance(order, list) or len(order) < 2:
        raise ModelError(f"{info_path}: '__layer_order__' must list the layers (input "
                         f"QuantIdentity first)")
    for layer in order:
        if not isinstance(layer, str) or not isinstance(info.get(layer), dict):
            raise ModelError(f"{info_path}: layer {layer!r} in __layer_order__ has no entry")
    return info, order


def load_ares(path: str, *, name: str, input_shape=None) -> Graph:
    info, order = _read_info(path)
    cases = sorted(glob.glob(os.path.join(glob.escape(path), "test_cases", "test_case_*",
                                          "input_fp32.npy")), key=_case_number)
    default_input = cases[0] if cases else None
    declared = []
    if default_input is not None:
        try:
            shape = np.load(default_input, mmap_mode="r", allow_pickle=False).shape
        except Exception as e:
            raise ModelError(f"{default_input}: cannot read the test input ({e})") from None
        declared = list(shape if len(shape) in (2, 4) else (1,) + shape)
    elif input_shape is None:
        raise ModelError(f"{path}: no test_cases/test_case_*/input_fp32.npy to take the input "
                         f"shape from; pass input_shape=(1, C, H, W)")
    shape = resolve_input_shape(path, order[0], declared, input_shape)

    a = _Ares(path)
    first = info[order[0]]
    if first.get("type") != "QuantIdentity":
        raise a.fail(order[0], first, "the first layer must be the input QuantIdentity")
    a.current = f"{order[0]}_out"
    a.refs = {order[0]: a.current, a.current: a.current}
    a.qparams[a.current] = QParams(a.scale(order[0], first, "scale"), 0)
    for layer in order[1:]:
        a.add_layer(layer, info[layer])
    g = OpGraph(source=path, input=f"{order[0]}_out", output=a.current, input_shape=shape,
                ops=a.ops, qparams=a.qparams)
    prepare(g)
    graph = to_ir(g, name)
    graph.default_input = default_input
    return graph
