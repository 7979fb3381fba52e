"""`cmsis_nn.numerics: cmsis` on a model whose own rule is not CMSIS-NN's: which layers
switch to TFLite's integer rule (CMSIS-NN's), the reference that computes them so, and the
count of their departures from the model's own rule on the run's input.

CMSIS-NN computes TFLite's requantization (SRDHM then a rounding right shift, ADD's
three-multiplier recipe, pooling's average of codes with ties away from zero).  An ONNX
model rounds once, half to even; the two agree except near ties, where they part by 1 LSB.
A switched layer is computed as CMSIS-NN computes it, in the goldens too (each layer is
still checked bit for bit), and the report counts, per layer, how many of its outputs
differ from the model's own rule given the same inputs.  The model's own graph is not
changed: the switched layers are computed against a view of it whose rule is TFLite's.
"""
from __future__ import annotations

import copy

import numpy as np

from ... import numerics
from .schema import NUMERICS as CHOICES  # noqa: F401  (the manifest's cmsis_nn.numerics)

DEFAULT = "cmsis"
RULE = ("TFLite's integer requantization (CMSIS-NN's): SRDHM (ties toward +inf) then a "
        "rounding right shift (ties away from zero); ADD with left shift 20 and three "
        "multipliers; average pooling of codes, ties away from zero")


def tflite_view(graph):
    """The graph as a TFLite-rule graph: what ops compute for a layer under TFLite's rule
    (a shallow copy: tensors and layers are shared, read-only)."""
    view = copy.copy(graph)
    view.numerics = "tflite"
    return view


def switchable(graph) -> bool:
    """A TFLite model's layers already compute LiteRT's rules, CMSIS-NN's where CMSIS-NN
    can run them (FULLY_CONNECTED's double-precision rule is not its integer one: that
    layer stays exact with LiteRT on the portable kernel); an ONNX model's switch."""
    return numerics.graph_rule(graph) != "tflite"


def same_qparams(graph, a: str, b: str) -> bool:
    qa, qb = graph.tensor(a).q, graph.tensor(b).q
    return float(qa.scale) == float(qb.scale) and int(qa.zero_point) == int(qb.zero_point)


def reference(switched: set, view):
    """reference(graph, codes) -> {tensor: int8}: the model's own rule, except for the
    switched layers (names), computed against the TFLite view (a TargetPlan.reference)."""
    def run(graph, x_q):
        from ...reference.runner import run_layer
        feeds = x_q if isinstance(x_q, dict) else {graph.input: x_q}
        values = {}
        for t in graph.inputs:
            x = np.asarray(feeds[t])
            if x.dtype != np.int8 or x.shape != tuple(graph.tensor(t).shape):
                raise ValueError(f"network input {t!r} must be int8 {tuple(graph.tensor(t).shape)}, "
                                 f"got {x.dtype} {x.shape}")
            values[t] = x
        for layer in graph.layers:
            values[layer.output] = run_layer(layer, view if layer.name in switched else graph,
                                             [values[t] for t in layer.inputs])
        return values
    return run


def departures(graph, values: dict, switched: list) -> dict:
    """{layer name: {"departures", "elements", "max_diff_lsb"}}: a switched layer's outputs
    (values: the goldens) against the model's own rule on the same inputs."""
    from ...reference.runner import run_layer
    out = {}
    for layer in graph.layers:
        if layer.name not in switched:
            continue
        own = run_layer(layer, graph, [values[t] for t in layer.inputs]).astype(np.int32)
        got = values[layer.output].astype(np.int32)
        diff = np.abs(own - got)
        out[layer.name] = {"departures": int(np.count_nonzero(diff)), "elements": int(diff.size),
                           "max_diff_lsb": int(diff.max()) if diff.size else 0}
    return out


def write_report(target, source, env):
    """numerics.json: the rule, the switched layers and their departures (report_extra)."""
    import json
    from ...fileio import write_if_changed
    session = env["NNS_SESSION"]
    info = session.plan.extra["cmsis_rule"]
    layers = departures(session.graph, session.reference(), info["switched"])
    total = sum(v["departures"] for v in layers.values())
    worst = max((v["max_diff_lsb"] for v in layers.values()), default=0)
    doc = {"layers": {name: {"rule_departures": v["departures"]} for name, v in layers.items()},
           "cmsis_numerics": {"numerics": "cmsis", "model_rule": numerics.graph_rule(session.graph),
                              "rule": RULE, "layers": layers, "departures": total, "max_diff_lsb": worst}}
    doc["summary_lines"] = [
        f"numerics cmsis: {len(layers)} layer(s) of this {numerics.graph_rule(session.graph).upper()} model on "
        f"CMSIS-NN compute TFLite's rounding (checked bit for bit against a reference that does); "
        f"{total} output(s) differ from the model's own rule on this input (at most {worst} LSB; "
        f"cmsis_nn.numerics: onnx-exact keeps the model's rule on the portable kernels)"]
    write_if_changed(str(target[0]), json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return 0
