"""The K210 reference: what the firmware computes, layer by layer.

KPU layers follow the NumPy KPU model (kpu.py, through mapping.KpuLayer.run: int8 -> uint8
by + 128, the KPU's conv/batch-norm/activation/pool, back by - 128); CPU layers follow the
generic integer reference (nnscons.reference), on the K210 values of their inputs.
"""
from __future__ import annotations

import numpy as np

from ...reference import run_layer


def run_graph(graph, x_q: np.ndarray, kpu_layers: dict) -> dict:
    shape = tuple(graph.tensor(graph.input).shape)
    if x_q.dtype != np.int8 or x_q.shape != shape:
        raise ValueError(f"network input must be int8 {shape}, got {x_q.dtype} {x_q.shape}")
    values = {graph.input: x_q}
    for layer in graph.layers:
        inputs = [values[t] for t in layer.inputs]
        kl = kpu_layers.get(layer.name)
        out = kl.run(inputs[0]) if kl is not None else run_layer(layer, graph, inputs)
        assert out.shape == tuple(graph.tensor(layer.output).shape), (layer.name, out.shape)
        values[layer.output] = out
    return values
