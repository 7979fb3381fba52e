"""How far the K210 reference (this target's goldens) is from the ONNX QDQ model, per layer
(for a TFLite model: from TFLite's arithmetic, the generic integer reference under TFLite's
rule, which is LiteRT's reference kernels bit for bit -- tests/test_tflite.py).

The QDQ side is quantized.onnx evaluated by onnxruntime with graph optimizations disabled
(each QDQ op on its own: ONNX semantics, see export/ort_oracle.py), on the same float input;
every tensor is compared in the int8 domain. Per layer, two figures (fraction of elements
within 1 LSB, largest difference):
  chained (qdq_*)      the goldens against QDQ: what the network really computes, rounding
                       differences of every layer upstream included
  own (qdq_own_*)      this layer's K210 arithmetic on the QDQ values of its inputs against
                       its QDQ output: the layer's own error, nothing inherited
and the network output's chained figures in the summary.
"""
from __future__ import annotations

import json

import numpy as np

from ...fileio import write_if_changed


def _diff(a, b):
    d = np.abs(a.astype(np.int32).reshape(-1) - b.astype(np.int32).reshape(-1))
    return round(float((d <= 1).mean()), 6), int(d.max()) if d.size else 0


def compare(k210: dict, qdq: dict, graph, run_own) -> dict:
    """run_own(layer, inputs) -> the layer's K210 output on given inputs."""
    layers = {}
    for layer in graph.layers:
        t = layer.output
        if t not in qdq:
            continue
        frac, err = _diff(k210[t], qdq[t])
        entry = {"qdq_within_1lsb": frac, "qdq_max_err": err}
        if all(i in qdq for i in layer.inputs):
            own_frac, own_err = _diff(run_own(layer, [qdq[i] for i in layer.inputs]), qdq[t])
            entry.update(qdq_own_within_1lsb=own_frac, qdq_own_max_err=own_err)
            own = f"{100 * own_frac:.1f}%/{own_err}"
        else:
            own = "-"
        entry["qdq_agree"] = f"{100 * frac:.1f}%/{err} {own}"
        layers[layer.name] = entry
    return layers


def write_agreement(target, source, env):
    from ... import numerics
    from ...export.ort_oracle import run_intermediates
    from ...reference import run_graph, run_layer
    session = env["NNS_SESSION"]
    graph = session.graph
    if numerics.graph_rule(graph) == "tflite":
        qdq = run_graph(graph, session.quantized_input())
        oracle = "TFLite (LiteRT's reference kernels' arithmetic)"
    else:
        qdq = run_intermediates(str(source[0]), session.input_float, exact=False)
        oracle = "ONNX QDQ (onnxruntime, no graph optimization)"
    codes = session.quantized_input()
    qdq.update(codes if isinstance(codes, dict) else {graph.input: codes})
    kpu_layers = session.plan.extra["kpu_layers"]

    def run_own(layer, inputs):
        kl = kpu_layers.get(layer.name)
        return kl.run(inputs[0]) if kl is not None else run_layer(layer, graph, inputs)

    layers = compare(session.reference(), qdq, graph, run_own)
    # the network output's figures: the worst of its outputs
    ends = [layers[graph.producer(o).name] for o in graph.outputs if graph.producer(o).name in layers]
    last = min(ends, key=lambda e: (e["qdq_within_1lsb"], -e["qdq_max_err"])) if ends else None
    summary = {"layers": layers, "qdq_output_within_1lsb": last and last["qdq_within_1lsb"],
               "qdq_output_max_err": last and last["qdq_max_err"]}
    if last:
        summary["summary_lines"] = [
            f"K210 reference vs {oracle}: network output "
            f"{100 * last['qdq_within_1lsb']:.2f}% within 1 LSB, max error {last['qdq_max_err']} LSB; "
            f"chained, worst layer '{min(layers, key=lambda n: layers[n]['qdq_within_1lsb'])}' "
            f"{100 * min(v['qdq_within_1lsb'] for v in layers.values()):.2f}%; each layer's own arithmetic "
            f"(on the oracle's inputs): worst {100 * min(v.get('qdq_own_within_1lsb', 1.0) for v in layers.values()):.2f}% "
            f"within 1 LSB, max error {max(v.get('qdq_own_max_err', 0) for v in layers.values())} LSB"]
    write_if_changed(str(target[0]), json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return 0
