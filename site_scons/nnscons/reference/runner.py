"""Layer dispatch (each op's OpDef.reference) and whole-graph execution."""
from __future__ import annotations

import numpy as np

from .. import ir
from .. import ops


def run_layer(layer: ir.Layer, graph: ir.Graph, inputs: list) -> np.ndarray:
    """int8 output of one layer (IR layout) from its int8 inputs (IR layout)."""
    out = ops.get(layer.op).reference(layer, graph, inputs)
    expected = tuple(graph.tensor(layer.output).shape)
    assert out.shape == expected and out.dtype == np.int8, (layer.name, out.shape, expected)
    return out


def run_graph(graph: ir.Graph, x_q) -> dict:
    """{tensor name: int8 array} for the network inputs and every layer output. x_q: the
    input's codes, or {input name: codes} (every input of a model with several)."""
    feeds = x_q if isinstance(x_q, dict) else {graph.input: x_q}
    values = {}
    for t in graph.inputs:
        x = np.asarray(feeds[t])
        shape = tuple(graph.tensor(t).shape)
        if x.dtype != np.int8 or x.shape != shape:
            raise ValueError(f"network input {t!r} must be int8 {shape}, got {x.dtype} {x.shape}")
        values[t] = x
    for layer in graph.layers:
        values[layer.output] = run_layer(layer, graph, [values[t] for t in layer.inputs])
    return values
