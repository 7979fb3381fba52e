"""Which residual adds can fuse into the layer that produces one of their operands: the
analysis the host (targets/host/gemm.fuse_residual_adds) and gap9/pulp-open
(targets/gap9/residual.py) share; each target says which producers its fused epilogue covers
and how the fused layer is written."""
from __future__ import annotations


def candidates(graph, impls: dict, producer_ok) -> dict:
    """{add name: [(producer index, operand k, producer layer)], the later producer first} for
    each 2-input add whose op table entry (`impls`, a target's OPS) says `residual`, one of whose
    operands is the output of a layer `producer_ok` accepts, read by that add only and not a
    network output (a fused producer's own output is never materialised), the other operand
    ready before that producer runs (a network input or an earlier layer's output).  Later
    first: in ResNet's downsample block the add goes into the 1x1 downsample conv, whose
    residual (the 3x3 conv's output) is then ready."""
    index = {l.output: i for i, l in enumerate(graph.layers)}
    readers = {}
    for l in graph.layers:
        for t in l.inputs:
            readers.setdefault(t, []).append(l.name)
    found = {}
    for add in graph.layers:
        if not getattr(impls.get(add.op), "residual", False) or len(add.inputs) != 2 or add.inputs[0] == add.inputs[1]:
            continue
        options = []
        for k, t in enumerate(add.inputs):
            other = add.inputs[1 - k]
            i = index.get(t)
            if i is None or t in graph.outputs or readers.get(t) != [add.name]:
                continue
            p = graph.layers[i]
            if not producer_ok(p):
                continue
            if other not in graph.inputs and index.get(other, len(graph.layers)) >= i:
                continue
            options.append((i, k, p))
        if options:
            found[add.name] = sorted(options, key=lambda o: -o[0])
    return found


def first_free(cands: dict, layers, take=lambda add, producer: True) -> dict:
    """{producer name: (add layer, operand k)}: each add (in `layers`' order) into its first
    candidate producer not already taken that `take(add, producer)` accepts."""
    by_name = {l.name: l for l in layers}
    fusions = {}
    for add_name, options in cands.items():
        add = by_name[add_name]
        for _, k, p in options:
            if p.name not in fusions and take(add, p):
                fusions[p.name] = (add, k)
                break
    return fusions
