"""Self-consistency: the exported quantized.onnx, evaluated exactly (the oracle: the QDQ
graph in float64, export/ort_oracle.py), must compute what the integer reference computes
on the run's input, tensor by tensor; the check proves the program equals that reference,
so together output.npy equals quantized.onnx's own output bit for bit.

The per-layer check cannot see a disagreement between the IR and its QDQ spelling (both
sides of it read the IR); this one can, and names the first layer where they part.
Written as consistency.json ({"self_consistency": {...}, "summary_lines": [...]}, and a
`check_failure` the report turns into a failed verdict). It is part of the check when the
float64 evaluation is cheap (CHEAP_MACS), and the `verify` alias builds it for any model.
Only for ONNX numerics: a TFLite model's quantized.onnx is QDQ's rounding, not TFLite's.
"""
from __future__ import annotations

import json

import numpy as np

from ...fileio import write_if_changed

# onnx's float64 reference evaluator takes ~3 ns per MAC (ResNet-18 at 224x224: 4.9 s on
# a Zen 3); below this the check includes it, above it the `verify` alias does
CHEAP_MACS = 200_000_000


def applies(graph) -> bool:
    return getattr(graph, "numerics", "onnx") == "onnx"


# ops whose integer rule is documented within 1 LSB of the ONNX op (softmax: its exp table);
# a departure of at most 1 LSB there is said, and the layers after it are not compared
WITHIN_ONE_LSB = ("softmax",)


def compare(graph, want: dict, got: dict) -> dict:
    """The first layer (model order) whose output differs between the oracle (`want`,
    keyed by IR tensor) and the reference (`got`)."""
    compared = 0
    for layer in graph.layers:
        t = layer.output
        if t not in want:
            continue
        a = got[t].astype(np.int32)
        b = want[t].reshape(a.shape).astype(np.int32)
        compared += 1
        bad = int(np.count_nonzero(a != b))
        if bad and layer.op in WITHIN_ONE_LSB and int(np.abs(a - b).max()) <= 1:
            return {"equal": True, "layers_compared": compared, "within_one_lsb": layer.name,
                    "op": layer.op, "mismatches": bad, "elements": int(a.size)}
        if bad:
            return {"equal": False, "layers_compared": compared, "first_layer": layer.name,
                    "op": layer.op, "mismatches": bad, "elements": int(a.size),
                    "max_diff_lsb": int(np.abs(a - b).max())}
    return {"equal": True, "layers_compared": compared}


def measure(session, qdq_path: str) -> dict:
    from ... import reference
    from ...export.ort_oracle import run_intermediates
    g = session.graph
    codes = session.quantized_input()
    if isinstance(codes, dict):
        x = {t: reference.dequantize(g.tensor(t), codes[t]).astype(np.float64) for t in g.inputs}
    else:
        x = reference.dequantize(g.tensor(g.input), codes).astype(np.float64)
    want = run_intermediates(qdq_path, x)
    # the goldens' run when they are the IR's reference (a target's own, k210's, is not)
    got = session.reference() if session.plan.reference is None else reference.run_graph(g, codes)
    result = compare(g, want, got)
    name = session.model_cfg.name
    if result["equal"]:
        line = (f"self-consistency: quantized.onnx evaluated exactly (float64 QDQ) equals the "
                f"integer reference on this input ({result['layers_compared']} layer outputs)")
        if "within_one_lsb" in result:
            line += (f"; at layer '{result['within_one_lsb']}' ({result['op']}, an exp table) "
                     f"{result['mismatches']} of {result['elements']} values within 1 LSB, the "
                     f"layers after it not compared")
        return {"self_consistency": result, "summary_lines": [line]}
    msg = (f"CHECK FAILED [{session.target_cfg.name}] {name}: quantized.onnx evaluated exactly "
           f"(float64 QDQ) parts from the integer reference at layer '{result['first_layer']}' "
           f"({result['op']}): {result['mismatches']} of {result['elements']} elements differ, "
           f"max {result['max_diff_lsb']} LSB; the build computes something else than the model it "
           f"exports (an nnscons bug: please report it with the model)")
    return {"self_consistency": result, "summary_lines": [msg],
            "check_failure": {"verdict": msg, "layer": result["first_layer"]}}


def write_consistency(target, source, env):
    result = measure(env["NNS_SESSION"], str(source[0]))
    write_if_changed(str(target[0]), json.dumps(result, indent=2, sort_keys=True) + "\n")
    return 0


def print_consistency(target, source, env):
    """The `verify` alias: print the result (also when nothing was rebuilt)."""
    with open(str(source[0])) as fh:
        result = json.load(fh)
    for line in result["summary_lines"]:
        print(line)
    return 1 if "check_failure" in result else 0
