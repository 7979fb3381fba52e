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


def run_graph(graph: ir.Graph, x_q: np.ndarray) -> dict:
    """{tensor name: int8 array} for the network input and every layer output."""
    x_q = np.asarray(x_q)
    shape = tuple(graph.tensor(graph.input).shape)
    if x_q.dtype != np.int8 or x_q.shape != shape:
        raise ValueError(f"network input must be int8 {shape}, got {x_q.dtype} {x_q.shape}")
    values = {graph.input: x_q}
    for layer in graph.layers:
        values[layer.output] = run_layer(layer, graph, [values[t] for t in layer.inputs])
    return values
