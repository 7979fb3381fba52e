"""How far the K210 reference (this target's goldens) is from the ONNX QDQ model, per layer.

The QDQ side is quantized.onnx evaluated by onnxruntime with graph optimizations disabled
(each QDQ op on its own: ONNX semantics, see export/ort_oracle.py), on the same float input;
every tensor is compared in the int8 domain. Per layer: the fraction of elements within
1 LSB, the largest difference, and the same for the network output in the summary.
"""
from __future__ import annotations

import json

import numpy as np

from ...fileio import write_if_changed


def compare(k210: dict, qdq: dict, graph) -> dict:
    layers = {}
    for layer in graph.layers:
        t = layer.output
        if t not in qdq:
            continue
        a = k210[t].astype(np.int32).reshape(-1)
        b = qdq[t].astype(np.int32).reshape(-1)
        d = np.abs(a - b)
        layers[layer.name] = {"qdq_within_1lsb": round(float((d <= 1).mean()), 6),
                              "qdq_max_err": int(d.max()) if d.size else 0,
                              "qdq_agree": f"{100 * float((d <= 1).mean()):.1f}%/{int(d.max()) if d.size else 0}"}
    return layers


def write_agreement(target, source, env):
    from ...export.ort_oracle import run_intermediates
    session = env["NNS_SESSION"]
    graph = session.graph
    qdq = run_intermediates(str(source[0]), session.input_float, exact=False)
    layers = compare(session.reference(), qdq, graph)
    out_name = graph.producer(graph.output).name
    last = layers.get(out_name)
    summary = {"layers": layers, "qdq_output_within_1lsb": last and last["qdq_within_1lsb"],
               "qdq_output_max_err": last and last["qdq_max_err"]}
    if last:
        summary["summary_lines"] = [
            f"K210 reference vs ONNX QDQ (onnxruntime, no graph optimization): network output "
            f"{100 * last['qdq_within_1lsb']:.2f}% within 1 LSB, max error {last['qdq_max_err']} LSB; "
            f"worst layer '{min(layers, key=lambda n: layers[n]['qdq_within_1lsb'])}' "
            f"{100 * min(v['qdq_within_1lsb'] for v in layers.values()):.2f}%"]
    write_if_changed(str(target[0]), json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return 0
