"""The K210 reference: what the firmware computes, layer by layer.

KPU layers follow the NumPy KPU model (kpu.py, through mapping.KpuLayer.run: int8 -> uint8
by + 128, the KPU's conv/batch-norm/activation/pool, back by - 128); CPU layers follow the
generic integer reference (nnscons.reference), on the K210 values of their inputs.
"""
from __future__ import annotations

import numpy as np

from ...reference import run_layer


def run_graph(graph, x_q, kpu_layers: dict) -> dict:
    """x_q: the input's codes, or {input name: codes} (every input of a model with several)."""
    feeds = x_q if isinstance(x_q, dict) else {graph.input: x_q}
    values = {}
    for t in graph.inputs:
        x, shape = np.asarray(feeds[t]), tuple(graph.tensor(t).shape)
        if x.dtype != np.int8 or x.shape != shape:
            raise ValueError(f"network input {t!r} must be int8 {shape}, got {x.dtype} {x.shape}")
        values[t] = x
    for layer in graph.layers:
        inputs = [values[t] for t in layer.inputs]
        kl = kpu_layers.get(layer.name)
        out = kl.run(inputs[0]) if kl is not None else run_layer(layer, graph, inputs)
        assert out.shape == tuple(graph.tensor(layer.output).shape), (layer.name, out.shape)
        values[layer.output] = out
    return values
