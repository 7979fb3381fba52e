"""Residual adds fused into the cluster conv that produces one of their operands (gap9 and
pulp-open): the plan-level fusion the host does (targets/host/gemm.fuse_residual_adds).

The fused layer keeps the conv's name, weights and requantization, reads [the conv's input,
the add's other operand], writes the add's output tensor (checked against the add's golden;
the conv's own output is never materialised) and lists the add in `fused`.  Its tiles load
the residual box beside the output tile, and after the conv's fork the cores run the add's
own kernel (nn_xp_add_short_s8 where add_short.py proves its 32-bit rule exact for the add, as
the add layer does, else nn_xp_add_s8 / nn_add_s8, the add's constants) on the L1 tile in place: the
conv's int8 result, then the add's rule exactly, so goldens and numerics do not change.
The add layer disappears (no second pass over three tensors through L2<->L1 DMA).
"""
from __future__ import annotations

from dataclasses import replace

from ... import numerics
from ... import ops as registry
from ...planning import residual as shared
from . import add_short
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
    return shared.candidates(graph, OPS, registry.is_conv)


def fuse(graph, eligible) -> tuple:
    """(the graph the target runs, {conv name: the original conv layer}); eligible(conv) says
    whether that conv runs on a template with the fused epilogue (the cluster's conv2d.c.j2,
    not NE16's)."""
    fusions = shared.first_free(candidates(graph), graph.layers, lambda add, p: eligible(p))
    into = {add.name: p for p, (add, _) in fusions.items()}
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
    rq = registry.requant_params(add, graph)
    other = graph.tensor(add.inputs[1 - k])
    zps = [int(graph.tensor(n).q.zero_point) for n in (*add.inputs, add.output)]
    return {"add": add.name, "conv_is_a": k == 0,
            # the 32-bit rule add_short.py proves exact for the add (the add layer's own, ops._add_spec)
            "short": len(zps) == 3 and add_short.layer_rule(rq, *zps, int(add.act_min), int(add.act_max)) or None,
            "conv_zp": int(graph.tensor(conv.output).q.zero_point), "other_zp": int(other.q.zero_point),
            "mult": [int(m) for m in rq["mult"]], "shift": [int(s) for s in rq["shift"]],
            "out_zp": int(graph.tensor(add.output).q.zero_point),
            "act": [int(add.act_min), int(add.act_max)], "res_c": int(other.shape[1])}
