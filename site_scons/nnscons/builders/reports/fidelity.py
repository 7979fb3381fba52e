"""Fidelity to the float model: how far the quantized network is from the float network it
was made from, on the run's input.

The build's check proves the code equals the integer reference; it says nothing about
whether the integer network still computes what the float one does (a random calibration
far from the real inputs can pass every check and be useless). For a float ONNX model
(quantized here) the float model runs in onnxruntime on the run's input with every layer's
tensor as an output; each IR tensor the float model also has is compared with the
reference's dequantized codes:

  per layer      sqnr_db = 10 log10(sum(f^2) / sum((q - f)^2)) (100 when q equals f)
  network        the output's SQNR, its largest error in output LSB, top-1 agreement (a
                 vector output), the share of the input that saturates the input's
                 quantization, and which calibration made the scales

written as fidelity.json ({"layers": {name: {"sqnr_db": x}}, "fidelity": {...},
"summary_lines": [...]}), which the report merges. A warning line (not an error) when the
scales come from the built-in random calibration, when the input saturates, or when the
output's SQNR is below WARN_SQNR_DB.
"""
from __future__ import annotations

import json
import math

import numpy as np

from ...fileio import write_if_changed

WARN_SQNR_DB = 20.0
EXACT_DB = 100.0


def sqnr_db(ref: np.ndarray, got: np.ndarray) -> float:
    ref, got = np.asarray(ref, np.float64).reshape(-1), np.asarray(got, np.float64).reshape(-1)
    noise = float(np.sum((got - ref) ** 2))
    signal = float(np.sum(ref ** 2))
    if noise == 0.0:
        return EXACT_DB
    if signal == 0.0:
        return -EXACT_DB
    return round(min(EXACT_DB, 10.0 * math.log10(signal / noise)), 2)


def _float_values(source: dict, names: list, x) -> tuple[dict, np.ndarray]:
    """(the float model's values of the tensors it also names, its first output). x: the
    input, or {input name: array} for a model with several."""
    import onnxruntime as ort

    from ...frontends.onnx_file import read_onnx
    from ...frontends.ptq import _observer_model
    shapes = source.get("input_shapes") or {}
    f = read_onnx(source["path"], None if len(shapes) > 1 else tuple(source["input_shape"]))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    known = _onnx_tensor_names(f.proto)
    out = f.proto.graph.output[0].name
    names = [n for n in names if n in known and n != out] + [out]
    sess = ort.InferenceSession(_observer_model(f, names), opts, providers=["CPUExecutionProvider"])
    feeds = ({k: v.reshape(tuple(shapes[k])).astype(np.float32) for k, v in x.items()}
             if isinstance(x, dict) else {f.input: x.reshape(tuple(source["input_shape"])).astype(np.float32)})
    outs = sess.run(names, feeds)
    return dict(zip(names, outs)), outs[-1]


def _onnx_tensor_names(proto) -> set:
    names = {o for n in proto.graph.node for o in n.output}
    return names | {i.name for i in proto.graph.input}


def measure(session) -> dict:
    from ...reference import dequantize
    g = session.graph
    source = g.float_source
    ref = session.reference()
    tensors = [l.output for l in g.layers]
    floats, f_out = _float_values(source, tensors, session.input_float)
    floats[g.output] = f_out    # by position: a QOperator model renames its tensors
    layers = {}
    for layer in g.layers:
        f = floats.get(layer.output)
        if f is None or f.size != ref[layer.output].size:
            continue
        layers[layer.name] = {"sqnr_db": sqnr_db(f, dequantize(g.tensor(layer.output), ref[layer.output]))}
    out_t = g.tensor(g.output)
    xs = session.input_float if isinstance(session.input_float, dict) else {g.input: session.input_float}
    outside = 0
    for t, x in xs.items():
        q_in = g.tensor(t).q
        lo, hi = (-128 - q_in.zero_point) * q_in.scale, (127 - q_in.zero_point) * q_in.scale
        outside += int(np.count_nonzero((x < lo - q_in.scale / 2) | (x > hi + q_in.scale / 2)))
    saturated = outside / sum(x.size for x in xs.values())
    net = {"calibration": source["calibration"], "input_saturated": round(saturated, 6)}
    lines = []
    if f_out.size == ref[g.output].size:
        q_out = dequantize(out_t, ref[g.output]).reshape(-1)
        f_out = f_out.reshape(-1)
        net["output_sqnr_db"] = sqnr_db(f_out, q_out)
        net["output_max_err_lsb"] = round(float(np.max(np.abs(q_out - f_out)) / out_t.q.scale), 2)
        if f_out.size > 1:
            net["top1_agrees"] = bool(int(np.argmax(q_out)) == int(np.argmax(f_out)))
        top1 = (f", top-1 {'agrees' if net['top1_agrees'] else 'DIFFERS'}" if "top1_agrees" in net else "")
        lines.append(f"fidelity to the float model on this input: output SQNR {net['output_sqnr_db']:.1f} dB, "
                     f"max error {net['output_max_err_lsb']:g} LSB{top1}; scales from {source['calibration']}")
        if net["output_sqnr_db"] < WARN_SQNR_DB:
            lines.append(f"warning: the output's SQNR ({net['output_sqnr_db']:.1f} dB) is below "
                         f"{WARN_SQNR_DB:g} dB: the quantized network no longer computes what the float "
                         f"one does on this input; calibrate with inputs like it (calibration: files)")
    if saturated > 0:
        lines.append(f"warning: {100 * saturated:.2f}% of the input lies outside the input's quantization "
                     f"range [{lo:.4g}, {hi:.4g}] (scales from {source['calibration']})")
    if source["calibration"].startswith("random") and not any(l.startswith("warning") for l in lines):
        lines.append("note: the scales come from the built-in random calibration (seeded normal "
                     "inputs); give calibration: files for real ranges")
    return {"layers": layers, "fidelity": net, "summary_lines": lines}


def write_fidelity(target, source, env):
    result = measure(env["NNS_SESSION"])
    write_if_changed(str(target[0]), json.dumps(result, indent=2, sort_keys=True) + "\n")
    return 0
