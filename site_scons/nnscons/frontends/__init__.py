"""Model import: ONNX QDQ, ONNX float (+ post-training quantization), TFLite int8 and ARES
export dirs.

    load_model(source, *, name, input_shape=None, fmt="auto", calibration=None) -> ir.Graph

fmt: "auto" (a directory is an ARES export; a .tflite file is TFLite; a .onnx file with
QuantizeLinear/DequantizeLinear nodes is QDQ, any other .onnx is float), "onnx" (a .onnx
file, QDQ or float as its nodes say: the manifest's `format: onnx`), "qdq", "float",
"tflite" (an int8 .tflite file, imported under TFLite's arithmetic) or "ares".
The returned graph carries a plain attribute `default_input`: the path of an input sample
that came with the model (ARES test_cases), or None.
"""
from __future__ import annotations

import os

from ..errors import ModelError
from ..ir import Graph
from ..overlap import in_turn
from ..passes import prepare, to_ir
from ..passes.lower import quantize_weights
from ..passes.quantize import inherit_qparams, inherit_qparams_backward, minmax_qparams, requantize_aliases
from .onnx_file import is_qdq, read_onnx

FORMATS = ("auto", "onnx", "qdq", "float", "tflite", "ares")


def _finite_initializers(f) -> None:
    """A float model's weights hold numbers: a NaN or an infinity (a diverged training, a
    damaged export) cannot be quantized, and would otherwise fail deep in the scales."""
    import numpy as np
    proto, source = f.proto, f.path
    users = {}
    for node in proto.graph.node:
        for i in node.input:
            users.setdefault(i, node.name or node.op_type)
    for init in proto.graph.initializer:
        if init.data_type not in (1, 10, 11, 16):       # float, float16, double, bfloat16
            continue
        a = f.initializer_array(init)
        bad = int(a.size - np.count_nonzero(np.isfinite(a)))
        if bad:
            raise ModelError(f"{source}: weights {init.name!r} (used by {users.get(init.name, 'no node')!r}) hold "
                             f"{bad} NaN or infinite value(s) of {a.size}; a float model's weights must be "
                             f"finite to be quantized: re-export the model from a checkpoint whose "
                             f"weights are finite")


def _load_onnx(source, name, input_shape, fmt, calibration, generated=None, weights=None,
               meanwhile=None) -> Graph:
    from .ptq import calibrate, calibration_feeds

    f = read_onnx(source, input_shape, generated, weights)
    quantized = is_qdq(f.proto)
    if fmt in ("auto", "onnx"):
        fmt = "qdq" if quantized else "float"
    if fmt == "qdq" and not quantized:
        raise ModelError(f"{source}: no QuantizeLinear/DequantizeLinear nodes, so this is not "
                         f"a QDQ model; load it as a float model to quantize it")
    if fmt == "float" and quantized:
        raise ModelError(f"{source}: the model is already quantized (QDQ); load it as a QDQ "
                         f"model")
    if calibration and fmt != "float":
        raise ModelError(f"{source}: calibration applies to float models only; this one is "
                         f"already quantized")
    from ..opkit.onnx_qoperator import to_qdq
    # imported here, not at the top: onnx_graph imports this package's onnx_ops, and a
    # package whose __init__ imports a submodule that another thread (SCons -j: an action's
    # lazy import, export/ort_oracle) imports directly can be left half-initialized
    from .onnx_graph import OnnxWalker
    g = OnnxWalker(f, shapes_proto=to_qdq(f.proto)).walk()
    prepare(g)
    notes, quantized = [], {}
    if fmt == "float":
        _finite_initializers(f)
        if meanwhile is not None:   # this thread's wait for onnxruntime's session
            meanwhile = in_turn(meanwhile, lambda: quantized.update(quantize_weights(g)))
        calibrate(f, g, calibration_feeds(f, calibration), meanwhile=meanwhile)
        float_source = {"path": os.path.abspath(source), "input_shape": list(f.input_shape),
                        "input_shapes": {n: list(s) for n, s in zip(f.inputs, f.input_shapes)},
                        "calibration": _calibration_text(calibration)}
    else:
        inherit_qparams(g)
        inherit_qparams_backward(g)
        from ..ops.lut import merge_island_chains
        merge_island_chains(g)
        from ..ops.island_pool import fold_island_pools
        fold_island_pools(g)
        bare = [t for t in g.inputs if t not in g.qparams]
        islands = [op.output for op in g.ops if op.output not in g.qparams]
        if islands or bare:
            # float islands (ops the quantizer left in float), the network inputs that feed
            # one included: the built-in calibration quantizes them, from the QDQ model's own
            # values on seeded random inputs
            feeds = calibration_feeds(f, None)
            if bare:
                g.qparams.update({t: minmax_qparams(min(float(x[t].min()) for x in feeds),
                                                    max(float(x[t].max()) for x in feeds)) for t in bare})
                inherit_qparams(g)
                islands = [op.output for op in g.ops if op.output not in g.qparams]
                notes += _averaged_inputs(g, bare)
            if islands:
                calibrate(f, g, feeds, only=islands)
            notes.append(f"{len(bare + islands)} tensor(s) left in float by the model's quantizer "
                         f"were quantized with the built-in calibration: "
                         f"{', '.join((bare + islands)[:8])}{' ...' if len(bare + islands) > 8 else ''}")
    requantize_aliases(g)
    graph = to_ir(g, name, quantized)
    graph.float_source = float_source if fmt == "float" else None   # builders/reports/fidelity.py
    if len(f.inputs) > 1 and any(len(s) == 3 for s in f.input_shapes):
        raise ModelError(f"{source}: a 1-D model (rank-3 inputs) with several inputs is not "
                         f"supported yet; give it one input")
    if len(f.input_shape) == 3:     # a 1-D network: the run's arrays keep (1, C, L)
        outputs = {t: _ncl(graph.tensor(t).shape) for t in graph.outputs}
        graph.model_layout = {"input": tuple(f.input_shape), "channels": "first",
                              "outputs": outputs, "output": outputs[graph.output]}
    graph.default_input = None
    graph.notes = notes
    return graph


def _averaged_inputs(g, bare) -> list:
    """A network input the quantizer left in float and an average reads first (a QOperator
    graph whose first op is a GlobalAveragePool): ONNX rounds the float input's average once;
    the network's int8 input rounds every element before it, and no integer network can read
    the float values, so the average may depart by up to half an input step in output LSB.
    Say how far (the departure stays; nothing that works is refused). Elementwise float ops
    on the input ((x - mean) / std in the graph) round twice the same way: say so (an input
    range mapped back from the model's first QuantizeLinear was tried: no saturation, but a
    coarser input step, 80% within 1 LSB against 92%)."""
    notes = []
    for t in bare:
        for op in g.consumers(t):
            averages = op.kind in ("global_avgpool", "avgpool") or (
                op.kind == "reduce" and op.attrs.get("fn") in ("mean", "sum"))
            if averages and op.output in g.qparams:
                bound = 0.5 * g.qparams[t].scale / g.qparams[op.output].scale
                notes.append(f"network input {t!r} is averaged by {op.name!r} before the model rounds it: "
                             f"ONNX rounds the float average once, the int8 network input rounds each element "
                             f"first (input step {g.qparams[t].scale:.4g}, output step "
                             f"{g.qparams[op.output].scale:.4g}): the average may depart by up to "
                             f"{bound:.2f} output LSB; a QuantizeLinear on the input before the average makes it exact")
        tables = [op.name for op in g.consumers(t) if op.kind == "lut"]
        if tables:
            notes.append(f"network input {t!r} goes through float elementwise ops ({', '.join(tables[:3])}) "
                         f"before the model rounds it: the int8 network input (range from the built-in "
                         f"calibration) rounds first, so their outputs may depart from ONNX's by a few LSB, "
                         f"more where the run's input lies outside the calibrated range; a QuantizeLinear on "
                         f"the input makes it exact")
    return notes


def _ncl(shape) -> tuple:
    """A 1-D network's tensor in its model shape: (1, C, 1, L) -> (1, C, L)."""
    shape = tuple(shape)
    return shape[:2] + shape[3:] if len(shape) == 4 else shape


def _calibration_text(calibration) -> str:
    from .ptq import DEFAULT_COUNT, DEFAULT_SEED
    cal = dict(calibration or {})
    if cal.get("files"):
        return f"calibration files ({len(cal['files'])})"
    return (f"random calibration (seed {cal.get('seed', DEFAULT_SEED)}, "
            f"{cal.get('count', DEFAULT_COUNT)} normal samples)")


def load_model(source: str, *, name: str, input_shape: tuple | None = None,
               fmt: str = "auto", calibration: dict | None = None, generated=None,
               weights=None, meanwhile=None) -> Graph:
    """Import a model into the quantized IR; every user error raises ModelError.
    generated: the onnx.ModelProto the .onnx file `source` holds, as the zoo generated it
    in this process (read_onnx), weights the arrays its float initializers were written
    from (by name; not decoded from the proto again).  meanwhile: a callable run on this thread while
    onnxruntime calibrates a float model on others (the caller's head start on what it
    needs next; not called for other models)."""
    source = os.fspath(source)
    if fmt not in FORMATS:
        raise ModelError(f"{source}: unknown model format {fmt!r}; use one of {FORMATS}")
    if generated is None and not os.path.exists(source):    # generated: its file may be in writing
        raise ModelError(f"{source}: model file or directory not found")
    if fmt == "ares" or (fmt == "auto" and os.path.isdir(source)):
        from .ares import load_ares
        if not os.path.isfile(os.path.join(source, "network_info.json")):
            raise ModelError(f"{source}: a folder without network_info.json{' (empty)' if not os.listdir(source) else ''}"
                             f" is not an ARES export; give a .onnx or .tflite model file or an ARES "
                             f"export folder")
        if calibration:
            raise ModelError(f"{source}: calibration applies to float models only; an ARES "
                             f"export is already quantized")
        return load_ares(source, name=name, input_shape=input_shape)
    if fmt == "tflite" or (fmt == "auto" and source.lower().endswith(".tflite")):
        if os.path.isdir(source):
            raise ModelError(f"{source}: format tflite expects a .tflite file, got a directory")
        if calibration:
            raise ModelError(f"{source}: calibration applies to float models only; a TFLite "
                             f"model is already quantized")
        from .tflite_graph import load_tflite
        return load_tflite(source, name=name, input_shape=input_shape)
    if fmt == "onnx" and os.path.isdir(source):
        raise ModelError(f"{source}: format onnx expects a .onnx file, got a directory")
    if fmt == "auto" and not source.lower().endswith(".onnx"):
        raise ModelError(f"{source}: cannot tell the model format; expected a .onnx file, a "
                         f".tflite file or an ARES export directory (declare the model in "
                         f"targets.yaml with 'format: onnx', 'format: tflite' or 'format: ares')")
    return _load_onnx(source, name, input_shape, fmt, calibration, generated, weights, meanwhile)


__all__ = ["load_model", "FORMATS"]
