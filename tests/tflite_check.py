"""Running a .tflite model through nnscons's import and integer reference, and through
LiteRT's reference kernels (the oracle), on the same input."""
from __future__ import annotations

import numpy as np

from nnscons import reference
from nnscons.frontends import load_model
from nnscons.opkit import layout


def model_input_codes(graph, x):
    """The IR's int8 input for an input array in the model's dtype and layout."""
    x = np.asarray(x)
    if x.dtype == np.float32:
        return reference.quantize_input(graph, layout.to_ir(x, graph.model_layout["input"]))
    codes = x.astype(np.int64) - (128 if x.dtype == np.uint8 else 0)
    return layout.to_ir(codes, graph.model_layout["input"]).astype(np.int8)


def ours(path, x, name="m"):
    """(graph, {IR tensor: int8 array}, output in the model's layout as codes in the
    model's output dtype's int8 domain, or as float32 when the model dequantizes)."""
    g = load_model(path, name=name)
    values = reference.run_graph(g, model_input_codes(g, x))
    out = values[g.output]
    return g, values, layout.from_ir(out, g.model_layout["output"])


def oracle_codes(out):
    """LiteRT's output as int8-domain codes (uint8 shifted by 128), or float32 as is."""
    if out.dtype == np.float32:
        return out
    return out.astype(np.int64) - (128 if out.dtype == np.uint8 else 0)


def compare(path, data, x, run_litert):
    """(our output, LiteRT's) in comparable form: codes, or float32 for DEQUANTIZE outputs."""
    g, values, out = ours(path, x)
    (lite,), _ = run_litert(data, [x])
    if lite.dtype == np.float32:
        t = g.tensor(g.output)
        mine = layout.from_ir(reference.dequantize(t, values[g.output]), g.model_layout["output"])
        return mine, lite
    return out.astype(np.int64), oracle_codes(lite)
