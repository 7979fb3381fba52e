"""Activation layouts: a batch-1 NCHW tensor in a target's layout ("chw" or "hwc") and back,
and the flattened views (a Flatten/Reshape of a 4-D tensor) whose bytes follow their 4-D
source's layout on an HWC target.  Ground floor: builders (goldens, outputs), targets, the
op modules and kernelgen (weight columns of a Linear) read it; it imports no nnscons module
(which ops are views comes in as op_def: the registry's get).
(A move's gather index in a layout is ops.move.layout_index.)"""
from __future__ import annotations

import numpy as np


def to_layout(array, layout: str, flattened_from=None):
    """A batch-1 NCHW (or N,F) int8 tensor in a target's activation layout, flattened.
    flattened_from: the (1,C,H,W) shape a 2-D tensor was flattened from."""
    a = np.asarray(array)
    if flattened_from is not None and a.ndim == 2:
        a = a.reshape(flattened_from)
    if layout == "hwc" and a.ndim == 4:
        a = a.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(a).reshape(-1)


def from_layout(flat, shape, layout: str, flattened_from=None):
    """Inverse of to_layout: back to the model's NCHW shape."""
    shape = tuple(shape)
    if flattened_from is not None and len(shape) == 2:
        return from_layout(flat, flattened_from, layout).reshape(shape)
    if layout == "hwc" and len(shape) == 4:
        n, c, h, w = shape
        return np.asarray(flat).reshape(n, h, w, c).transpose(0, 3, 1, 2)
    return np.asarray(flat).reshape(shape)


def flattened_from(layer, graph, op_def):
    """The 4-D (1,C,H,W) shape a Linear's input was flattened from (H*W > 1), else None:
    on a target whose activations are HWC its weight columns must follow that order."""
    t = layer.inputs[0]
    while True:
        p = graph.producer(t)
        if p is None or not op_def(p.op).alias:
            return None
        src = graph.tensor(p.inputs[0]).shape
        if len(src) == 4:
            return tuple(src) if src[2] * src[3] > 1 else None
        t = p.inputs[0]


def flattened_layouts(graph, op_def) -> dict:
    """{reshape output: the 4-D shape it flattens}: on an HWC target those tensors hold
    their 4-D input's HWC bytes, and their goldens must too (TargetPlan.tensor_layouts)."""
    out = {}
    for layer in graph.layers:
        if op_def(layer.op).alias:
            src = graph.tensor(layer.inputs[0]).shape
            if layer.inputs[0] in out:
                out[layer.output] = out[layer.inputs[0]]
            elif len(src) == 4:
                out[layer.output] = list(src)
    return out
