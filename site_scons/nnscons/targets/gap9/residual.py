"""Residual adds fused into the cluster conv that produces one of their operands (gap9 and
pulp-open): the plan-level fusion the host does (targets/host/gemm.fuse_residual_adds).

The fused layer keeps the conv's name, weights and requantization, reads [the conv's input,
the add's other operand], writes the add's output tensor (checked against the add's golden;
the conv's own output is never materialised) and lists the add in `fused`.  Its tiles load
the residual box beside the output tile, and after the conv's fork the cores run the add's
own kernel (nn_xp_add_s8 / nn_add_s8, the add's constants) on the L1 tile in place: the
conv's int8 result, then the add's rule exactly, so goldens and numerics do not change.
The add layer disappears (no second pass over three tensors through L2<->L1 DMA).
"""
from __future__ import annotations

from dataclasses import replace

from ... import numerics
from ... import ops as registry
from .ops import OPS            # the gap9 op table: which ops fuse as a residual add


def candidates(graph) -> dict:
    """{add name: [(producer index, operand k, producer layer)]} for each 2-input add one of
    whose operands is a conv2d's output read by that add only (not a network output), the
    other operand ready before that conv runs (a network input or an earlier layer's output);
    the later conv first (ResNet's downsample block: the 1x1 conv's add; the 3x3 conv's output
    is then the residual).  TFLite graphs keep their adds (their ADD's three-multiplier rule is
    the add template's)."""
    if numerics.graph_rule(graph) == "tflite":
        return {}
    index = {l.output: i for i, l in enumerate(graph.layers)}
    readers = {}
    for l in graph.layers:
        for t in l.inputs:
            readers.setdefault(t, []).append(l.name)
    found = {}
    for add in graph.layers:
        if not getattr(OPS.get(add.op), "residual", False) or len(add.inputs) != 2 or add.inputs[0] == add.inputs[1]:
            continue
        options = []
        for k, t in enumerate(add.inputs):
            other = add.inputs[1 - k]
            i = index.get(t)
            if i is None or t in graph.outputs or readers.get(t) != [add.name]:
                continue
            p = graph.layers[i]
            if not registry.is_conv(p):
                continue
            if other not in graph.inputs and index.get(other, len(graph.layers)) >= i:
                continue
            options.append((i, k, p))
        if options:
            found[add.name] = sorted(options, key=lambda o: -o[0])
    return found


def fuse(graph, eligible) -> tuple:
    """(the graph the target runs, {conv name: the original conv layer}); eligible(conv) says
    whether that conv runs on a template with the fused epilogue (the cluster's conv2d.c.j2,
    not NE16's)."""
    fusions, into = {}, {}
    for add_name, options in candidates(graph).items():
        for _, k, p in options:
            if p.name not in fusions and eligible(p):
                fusions[p.name] = (next(l for l in graph.layers if l.name == add_name), k)
                into[add_name] = p.name
                break
    if not fusions:
        return graph, {}
    layers, origs = [], {}
    for l in graph.layers:
        if l.name in into:
            continue
        if l.name in fusions:
            add, k = fusions[l.name]
            origs[l.name] = l
            l = replace(l, inputs=[l.inputs[0], add.inputs[1 - k]], output=add.output,
                        fused=list(l.fused) + [add.name] + list(add.fused),
                        attrs=dict(l.attrs, residual=spec(l, add, k, graph)))
        layers.append(l)
    return replace(graph, layers=layers), origs


def spec(conv, add, k, graph) -> dict:
    """What the fused epilogue needs: the add's operands in its own order (a = inputs[0]),
    which of them is the conv's result, their zero points, its multipliers and shift, its
    output zero point and clamp, and the residual tensor's channels (its row stride in L2)."""
    rq = numerics.requant_params(add, graph)
    other = graph.tensor(add.inputs[1 - k])
    return {"add": add.name, "conv_is_a": k == 0,
            "conv_zp": int(graph.tensor(conv.output).q.zero_point), "other_zp": int(other.q.zero_point),
            "mult": [int(m) for m in rq["mult"]], "shift": [int(s) for s in rq["shift"]],
            "out_zp": int(graph.tensor(add.output).q.zero_point),
            "act": [int(add.act_min), int(add.act_max)], "res_c": int(other.shape[1])}
