"""Which layers call CMSIS-NN on a Cortex-M, their specs, weights layout and scratch.

CMSIS-NN computes TFLite's int8 arithmetic (per-channel multiplier and exponent, TFLite's
two roundings), so a layer runs on it only where the graph's own rule for that layer is
TFLite's integer one (numerics: shift fields in (-64, 0); pooling: TFLite's, see _pool);
every other layer (ONNX-rule models, FULLY_CONNECTED's double-precision rule, SUB, MEAN,
ops CMSIS-NN lacks) keeps the
portable C kernel the host target plans, in the graph's own arithmetic.
"""
from __future__ import annotations

import numpy as np

from ... import numerics, ops
from .. import base
from .rules import same_qparams

TEMPLATES = {"conv2d": "../cortex_m/conv.c.j2", "dwconv": "../cortex_m/dwconv.c.j2",
             "add": "../cortex_m/add.c.j2", "maxpool": "../cortex_m/pool.c.j2",
             "avgpool": "../cortex_m/pool.c.j2", "fc": "../cortex_m/fc.c.j2"}
FUNCTIONS = {"conv2d": "arm_convolve_wrapper_s8", "dwconv": "arm_depthwise_conv_wrapper_s8",
             "add": "arm_elementwise_add_s8", "maxpool": "arm_max_pool_s8", "avgpool": "arm_avgpool_s8",
             "fc": "arm_fully_connected_per_channel_s8"}
# what the generated layer of each key calls in CMSIS-NN (the export's entry points)
CALLS = {"conv2d": ("arm_convolve_wrapper_s8", "arm_convolve_wrapper_s8_get_buffer_size"),
         "dwconv": ("arm_depthwise_conv_wrapper_s8", "arm_depthwise_conv_wrapper_s8_get_buffer_size"),
         "add": ("arm_elementwise_add_s8",), "maxpool": ("arm_max_pool_s8",),
         "avgpool": ("arm_avgpool_s8", "arm_avgpool_s8_get_buffer_size"),
         "fc": ("arm_fully_connected_per_channel_s8", "arm_fully_connected_s8_get_buffer_size")}
CH_IN_BLOCK_MVE = 124        # CMSIS-NN's arm_nn_defines: the MVE depthwise kernel's channel block


def _tflite_integer_rule(layer, graph) -> bool:
    shift = ops.requant_params(layer, graph).get("shift")
    return (shift is not None and np.all(shift < 0)
            and np.all(shift > numerics.TFLITE_F64_FLAG))


def _conv(layer, graph, depthwise: bool) -> str | None:
    if layer.attrs.get("groups", 1) == 1:
        return "conv2d"
    return "dwconv" if depthwise else None


def _add(layer, graph, depthwise: bool) -> str | None:
    return None if layer.attrs.get("sub") else "add"


def _pool_codes(layer, graph):
    """TFLite's MAX_POOL_2D (codes unchanged: a multiplier of exactly 1) and AVERAGE_POOL_2D
    (mult 0: the window's raw average over its pixels inside the image, ties away from
    zero), which CMSIS-NN's pooling computes; MEAN's requantized average is not.  The pool's
    (mult, shift) when CMSIS-NN's pooling can take it, else None."""
    rq = ops.requant_params(layer, graph)
    m, sh = int(rq["mult"][0]), int(rq["shift"][0])
    if tuple(layer.attrs.get("dilation", (1, 1))) != (1, 1) or layer.attrs.get("ceil_mode"):
        return None
    if not same_qparams(graph, layer.inputs[0], layer.output):
        return None     # CMSIS-NN's pooling keeps the input's codes: no requantization
    return m, sh


def _maxpool(layer, graph, depthwise: bool) -> str | None:
    codes = _pool_codes(layer, graph)
    return "maxpool" if codes is not None and codes == numerics.tflite_pair(1.0) else None


def _avgpool(layer, graph, depthwise: bool) -> str | None:
    codes = _pool_codes(layer, graph)
    if codes is not None and codes[0] == 0 and not layer.attrs.get("mean") \
            and not layer.attrs.get("count_include_pad"):
        return "avgpool"
    return None


# the op table: op -> (needs the layer's TFLite integer rule, (layer, graph, depthwise) -> the
# CMSIS-NN template key or None); a pool's own codes decide for it
CMSIS_OPS = {
    "maxpool": (False, _maxpool),
    "avgpool": (False, _avgpool),
    "global_avgpool": (False, _avgpool),
    "conv2d": (True, _conv),
    "add": (True, _add),
    "linear": (True, lambda layer, graph, depthwise: "fc"),
}


def choice(layer, graph, depthwise: bool) -> str | None:
    """The CMSIS-NN template key of the layer, or None (portable kernel)."""
    if numerics.graph_rule(graph) != "tflite":
        return None
    entry = CMSIS_OPS.get(layer.op)
    if entry is None:
        return None
    integer_rule, pick = entry
    if integer_rule and not _tflite_integer_rule(layer, graph):
        return None
    return pick(layer, graph, depthwise)


def _align16(n: int) -> int:
    return -(-n // 16) * 16


def scratch_bound(key: str, spec: dict) -> int:
    """Bytes that hold what CMSIS-NN's *_get_buffer_size asks on any of the cores (the
    scalar, DSP and MVE formulas of its im2col and depthwise buffers, taken at their
    largest); the generated code checks the real request against it on the core."""
    if key in ("add", "maxpool", "fc"):      # fc: MVE's kernel sums are in its weights .bin
        return 0
    if key == "avgpool":
        return 4 * spec["inputs"][0]["c"]      # the DSP and MVE sums: one int32 per channel
    i = spec["inputs"][0]
    kh, kw = spec["kernel"]
    k = kh * kw * i["c"]
    if key == "conv2d":
        one_x_n = (kw + spec["pads"][1] + spec["pads"][3] + spec["stride"][1]) * i["c"]
        return max(4 * _align16(k), 2 * (-(-k // 4) * 4) * 2, 4 * i["c"], one_x_n)
    mve = 4 * CH_IN_BLOCK_MVE * kh * kw
    dsp = i["c"] * kh * kw * 2
    one_in_ch = 4 * _align16(kh * kw) + kh * kw * spec["out"]["c"] + (kw + 2) * 4
    return max(mve, dsp, one_in_ch)


KERNEL_SUM = "kernel_sum"


def layout(layer, graph, key) -> list:
    """The weights .bin's sections: the common ones, and for fc the kernel sums after them."""
    out = base.param_layout(layer, graph)
    if key == "fc":
        end = base.layout_bytes(out)
        out.append((KERNEL_SUM, "int32", int(layer.weight.shape[0]), end))
    return out


def pack_as(view, layer, _graph, layout) -> bytes:
    """pack() of a layer switched to TFLite's rule: against the graph's TFLite view
    (rules.py), not the graph the caller passes (functools.partial(pack_as, view))."""
    return pack(layer, view, layout)


def _pack_conv(layer, graph, arrays) -> None:
    w = layer.weight
    if layer.attrs.get("groups", 1) == 1:
        arrays["weight"] = np.ascontiguousarray(w.transpose(0, 2, 3, 1))       # OIHW -> OHWI
    else:
        arrays["weight"] = np.ascontiguousarray(w[:, 0].transpose(1, 2, 0))   # C1HW -> HWC
    arrays["shift"] = np.asarray(arrays["shift"], dtype=np.int64) + numerics.TFLITE_SHIFT_BIAS


def _pack_fc(layer, graph, arrays) -> None:
    # columns in HWC order when it reads a flattened 4-D tensor (the op's hwc_params, as
    # base.pack_hwc), and the MVE kernel's per-row sums: bias + input offset * the row's
    # weights, as arm_vector_sum_s8 computes them (TFLite Micro does at Prepare; here at
    # build time)
    w = ops.get(layer.op).hwc_params(layer, graph, ops.get).get("weight", layer.weight)
    arrays["weight"] = np.ascontiguousarray(w)
    zp_in = graph.tensor(layer.inputs[0]).q.zero_point
    bias = np.zeros(w.shape[0], np.int64) if layer.bias is None else layer.bias.astype(np.int64)
    arrays[KERNEL_SUM] = bias - zp_in * w.astype(np.int64).sum(axis=1)
    arrays["shift"] = np.asarray(arrays["shift"], dtype=np.int64) + numerics.TFLITE_SHIFT_BIAS


# the op table of the weights .bin: op -> (layer, graph, arrays) -> None, CMSIS-NN's layout
# of its sections; the other ops' sections are the common ones
PACKS = {"conv2d": _pack_conv, "linear": _pack_fc}


def pack(layer, graph, layout) -> bytes:
    """The weights .bin in CMSIS-NN's layouts: conv filters OHWI, depthwise filters
    1HWC (= HWC), bias int32, the multipliers and TFLite's exponents (shift field + 32)."""
    arrays = dict(base.param_arrays(layer, graph))
    if layer.op in PACKS:
        PACKS[layer.op](layer, graph, arrays)
    blob = bytearray(base.layout_bytes(layout))
    for section, dtype, count, offset in layout:
        raw = np.ascontiguousarray(arrays[section], dtype=np.dtype(dtype).newbyteorder("<")).reshape(-1).tobytes()
        if len(raw) != count * np.dtype(dtype).itemsize:
            raise AssertionError(f"{layer.name}: {section} has {len(raw)} bytes, layout says {count} values")
        blob[offset:offset + len(raw)] = raw
    return bytes(blob)
