"""Activation buffer plan: one arena, liveness-based offsets.

A tensor lives from the layer that writes it to the last layer that reads it
(the network output lives to the end). Outputs of alias ops (OpDef.alias: reshape) share their input's bytes.
Placement is greedy first-fit, largest first, with a deterministic order.
"""
from __future__ import annotations

import numpy as np

from .. import ops

ALIGN = 16


def _size(graph, name) -> int:
    return int(np.prod(graph.tensor(name).shape))


def plan_buffers(graph) -> dict:
    """{'arena_size': int, 'tensors': {tensor name: {'offset', 'size'}}, 'lives': {buffer
    tensor: [first layer writing or reading it, last layer reading it]} (-1: the input)}."""
    root = {t: t for t in graph.inputs}
    birth = {t: -1 for t in graph.inputs}
    death = {t: -1 for t in graph.inputs}
    for i, layer in enumerate(graph.layers):
        for t in layer.inputs:
            death[root[t]] = max(death[root[t]], i)
        if ops.get(layer.op).alias:
            root[layer.output] = root[layer.inputs[0]]
        else:
            root[layer.output] = layer.output
            birth[layer.output] = i
            death[layer.output] = i
    for t in graph.outputs:          # every network output lives to the end
        death[root[t]] = len(graph.layers)

    order = sorted(birth, key=lambda t: (-_size(graph, t), birth[t]))
    placed = []  # (offset, end, birth, death)
    offsets = {}
    for t in order:
        size = -(-_size(graph, t) // ALIGN) * ALIGN
        live = sorted((o, e) for o, e, b, d in placed if not (d < birth[t] or death[t] < b))
        offset = 0
        for o, e in live:
            if offset + size <= o:
                break
            offset = max(offset, e)
        offsets[t] = offset
        placed.append((offset, offset + size, birth[t], death[t]))
    arena = max((e for _, e, _, _ in placed), default=0)
    tensors = {name: {"offset": offsets[r], "size": _size(graph, name)} for name, r in root.items()}
    lives = {t: [birth[t], death[t]] for t in birth}
    return {"arena_size": arena, "tensors": tensors, "lives": lives}
