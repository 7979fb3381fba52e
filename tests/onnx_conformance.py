"""ONNX's own backend node test cases (onnx.backend.test.case.node), adapted to what an
nnscons model is: one float32 batch-1 network input, constant weights, one output.

`cases()` lists the single-node cases of every op type the registry declares supported
(nnscons.ops.onnx_types() and the graph walker's WALKER_OPS), `adapt()` turns one into an
ONNX file nnscons can load (or a Skip naming why it cannot), `run()` loads and runs it
through the integer reference and returns the verdict. tests/test_onnx_conformance.py
checks every verdict and writes the summary table.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import warnings
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from nnscons import ops
from nnscons.frontends import onnx_ops

# 8-bit activations are all the IR has; file dtype -> offset to the IR's int8 codes
CODE_OFFSET = {np.dtype(np.int8): 0, np.dtype(np.uint8): 128}


def supported_op_types() -> set:
    """What the registry declares supported: the converters' op types and the walker's."""
    return set(ops.onnx_types()) | set(onnx_ops.WALKER_OPS)


def _mentions(path: str, op_types) -> bool:
    with open(path, encoding="utf-8") as f:
        src = f.read()
    return any(f'"{t}"' in src for t in op_types)


_CASES: list = []


def cases() -> list:
    """The single-node backend cases of the supported op types (not the `_expanded` function
    bodies: those test other ops). Only onnx's case modules that name a supported op type
    are imported: importing all of them computes every op's expected outputs (~15 s, most of
    it LpPool's)."""
    if _CASES:
        return _CASES
    import onnx.backend.test.case.node as node_cases
    supported = supported_op_types()
    folder = os.path.dirname(node_cases.__file__)
    with warnings.catch_warnings():   # the case generators overflow casts on purpose
        warnings.simplefilter("ignore")
        for mod in pkgutil.iter_modules([folder]):
            if not mod.ispkg and _mentions(os.path.join(folder, mod.name + ".py"), supported):
                importlib.import_module(f"{node_cases.__name__}.{mod.name}")
    for case in node_cases._NodeTestCases:
        nodes = case.model.graph.node
        if (len(nodes) == 1 and nodes[0].op_type in supported
                and nodes[0].domain in ("", "ai.onnx", "com.microsoft")
                and not case.name.endswith("_expanded") and "_expanded_ver" not in case.name):
            _CASES.append(case)
    _CASES.sort(key=lambda c: (c.model.graph.node[0].op_type, c.name))
    return _CASES


@dataclass
class Skip:
    reason: str


@dataclass
class Adapted:
    path: str                  # the ONNX file nnscons loads
    x: np.ndarray              # its float32 input
    expected: np.ndarray       # the case's expected output (float, or integer codes)
    quantized: bool            # integer output: compared code for code
    out_offset: int = 0        # expected code - IR int8 code (uint8: 128)
    calibration: list = field(default_factory=list)   # .npy files (float cases)


def _opset(node, model) -> int:
    domain = node.domain or ""
    return max(o.version for o in model.opset_import if (o.domain or "") == domain)


def activation_inputs(node, model) -> list:
    """Positions of the node's data inputs: the first, and the inputs ONNX defines as the
    same data -- the rest of a variadic input (Sum, Concat) and the other operand of an
    elementwise op with multidirectional broadcasting (Add, Sub, Mul, Div of two tensors).
    Every other input (weights, bias, scales, zero points, shapes, axes, slopes) is a
    constant in an nnscons model."""
    schema = onnx.defs.get_schema(node.op_type, _opset(node, model), node.domain)
    formal = list(schema.inputs)
    first = formal[0]
    elementwise = "multidirectional" in schema.doc
    keep = [0]
    for k in range(1, len(node.input)):
        p = formal[min(k, len(formal) - 1)]   # a variadic input is the last formal one
        if p.name == first.name or (elementwise and p.type_str == first.type_str):
            keep.append(k)
    return [k for k in keep if node.input[k]]


def _graph_value(model, name):
    """The case's declared graph input or output `name` (its ONNX element type), or None."""
    return next((v for v in list(model.graph.input) + list(model.graph.output)
                 if v.name == name), None)


def _value_info(name, arr):
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(arr.dtype),
                                         list(arr.shape))


def _save(nodes, inp, out, inits, model, path):
    graph = helper.make_graph(nodes, "case", [inp], [out],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    proto = helper.make_model(graph, opset_imports=list(model.opset_import))
    proto.ir_version = model.ir_version
    onnx.save(proto, path)
    return path


def _identity_reshape(tensor, shape, nodes, inits):
    """A Reshape to the same shape: the one IR layer of a graph whose op nnscons reads as
    quantization parameters or an alias (QuantizeLinear, DequantizeLinear, Identity), so the
    model has a layer to run."""
    inits["__same_shape"] = np.array(shape, dtype=np.int64)
    nodes.append(helper.make_node("Reshape", [tensor, "__same_shape"], ["__out"]))
    return "__out"


def adapt(case, folder: str):
    model = case.model
    (node,) = model.graph.node
    (inputs, outputs), = case.data_sets
    names = [t for t in node.input if t]
    if not names:
        return Skip("the node has no input: an nnscons model computes from one network input")
    values = dict(zip(names, inputs))
    x0 = np.asarray(values[node.input[0]]) if node.input[0] else None
    if x0 is None:
        return Skip("the first input is omitted: nothing to feed as the network input")
    out_name = node.output[0]
    expected = np.asarray(outputs[0])
    acts = activation_inputs(node, model)
    inits = {t: np.asarray(v) for t, v in values.items()
             if t not in {node.input[k] for k in acts}}
    new_node = onnx.NodeProto()
    new_node.CopyFrom(node)
    new_node.name = node.name or node.op_type   # refusals name it whatever comes before it
    nodes = [new_node]
    path = os.path.join(folder, "case.onnx")

    in_dt, out_dt = x0.dtype, expected.dtype
    floats = (np.dtype(np.float32),)
    for what, dt, vi in (("first input", in_dt, _graph_value(model, node.input[0])),
                         ("output", out_dt, _graph_value(model, out_name))):
        if dt not in floats and dt not in CODE_OFFSET:
            name = (helper.tensor_dtype_to_string(vi.type.tensor_type.elem_type).split(".")[-1].lower()
                    if vi and vi.type.tensor_type.elem_type else dt)
            return Skip(f"the {what} is {name}: an nnscons model reads and writes float32, "
                        f"and its tensors are int8/uint8 codes"
                        + (" (an int32 output such as ConvInteger's or MatMulInteger's "
                           "accumulator has no IR tensor)" if what == "output" and
                           dt == np.int32 else ""))
    if x0.ndim < 2:
        return Skip(f"the first input {x0.shape} has rank {x0.ndim}: no batch axis (nnscons "
                    f"inputs are (1, F), (1, C, L) or (1, C, H, W))")
    if x0.shape[0] != 1:       # the case's first sample: its expected output recomputed
        one = _first_sample(case, node, values, acts)
        if isinstance(one, Skip):
            return one
        values, expected = one
        x0 = np.asarray(values[node.input[0]])
    if in_dt in floats and out_dt in floats:
        if len(acts) > 1:
            if any(np.asarray(values[node.input[k]]).dtype != in_dt for k in acts):
                return Skip("the data inputs have different types; the adapter packs them "
                            "into one float32 network input")
            _pack(node, acts, values, nodes, inits)
            x = np.concatenate([np.asarray(values[node.input[k]]).reshape(1, -1)
                                for k in acts], axis=1)
            inp = _value_info("__packed", x)
        else:
            x = x0
            inp = _value_info(node.input[0], x0)
        out = out_name
        if node.op_type in onnx_ops.WALKER_OPS:
            out = _identity_reshape(out, expected.shape, nodes, inits)
        _save(nodes, inp, _value_info(out, expected), inits, model, path)
        cal = os.path.join(folder, "x.npy")
        np.save(cal, x)
        return Adapted(path, x, expected, False, calibration=[cal])

    # quantized: int8/uint8 codes in and/or out, wrapped in QuantizeLinear/DequantizeLinear
    # at the case's own scales so the network input and output are float
    if len(acts) > 1:
        return Skip(f"{len(acts)} integer activation inputs: the adapter quantizes one "
                    f"network input")
    schema = onnx.defs.get_schema(node.op_type, _opset(node, model), node.domain)
    formal = [p.name for p in schema.inputs]

    def q_of(prefix):   # (scale, zero point) tensors the schema names <prefix>_scale, ...
        s = f"{prefix}_scale"
        if s not in formal or formal.index(s) >= len(node.input):
            return None
        k = formal.index(s)
        zp = node.input[k + 1] if k + 1 < len(node.input) else ""
        return node.input[k], zp

    if in_dt in CODE_OFFSET:
        q = q_of(formal[0])
        if q is None or q[0] not in values:
            return Skip(f"the first input is {in_dt} codes and {node.op_type} has no "
                        f"{formal[0]}_scale input: an nnscons network input is float32, "
                        f"quantized at its scale, so these codes have no float value to feed")
        scale, zp = values[q[0]], (values[q[1]] if q[1] else np.zeros((), in_dt))
        if np.asarray(scale).size != 1:
            return Skip("per-axis input quantization: activations are quantized per tensor")
        x = ((x0.astype(np.int64) - np.int64(zp)) * np.float32(scale)).astype(np.float32)
        inits["__xs"], inits["__xz"] = np.asarray(scale, np.float32), np.asarray(zp, in_dt)
        nodes.insert(0, helper.make_node("QuantizeLinear", ["__x", "__xs", "__xz"],
                                         [node.input[0]]))
        inp = helper.make_tensor_value_info("__x", TensorProto.FLOAT, list(x0.shape))
    else:
        x = x0
        inp = _value_info(node.input[0], x0)
    out = out_name
    offset = 0
    if out_dt in CODE_OFFSET:
        q = q_of("y")
        if q is None or q[0] not in values:
            return Skip(f"the output is {out_dt} codes and {node.op_type} has no y_scale "
                        f"input: an nnscons network output is dequantized at its scale")
        zp = values[q[1]] if q[1] else np.zeros((), out_dt)
        if np.asarray(values[q[0]]).size != 1 or np.asarray(zp).size != 1:
            return Skip("per-axis output quantization: activations are quantized per tensor")
        inits["__ys"], inits["__yz"] = np.asarray(values[q[0]], np.float32), np.asarray(zp, out_dt)
        nodes.append(helper.make_node("DequantizeLinear", [out_name, "__ys", "__yz"], ["__y"]))
        out, offset = "__y", CODE_OFFSET[out_dt]
    if node.op_type in onnx_ops.WALKER_OPS:
        out = _identity_reshape(out, expected.shape, nodes, inits)
    _save(nodes, inp, helper.make_tensor_value_info(out, TensorProto.FLOAT, list(expected.shape)),
          inits, model, path)
    if out_dt in floats:   # DequantizeLinear: the output's codes are the input's
        return Adapted(path, x, expected, False)
    return Adapted(path, x, expected, True, out_offset=offset)


def _first_sample(case, node, values: dict, acts: list):
    """The case cut to batch 1 (issue 23: "adapted mechanically, batch 1"): every data input
    keeps its first sample, and the expected output is the case's own node evaluated on them
    by onnx's reference evaluator, with the oracle's fixes (export/ort_oracle.py: LRN over the
    channels, inference BatchNormalization). ({name: value}, expected) or a Skip."""
    from nnscons.export.ort_oracle import _evaluator, _inference_batchnorm
    n = np.asarray(values[node.input[0]]).shape[0]
    values = dict(values)
    for k in acts:
        v = np.asarray(values[node.input[k]])
        if v.ndim < 1 or v.shape[0] != n:
            return Skip(f"batch {n}: data input {k} {v.shape} does not share the first input's "
                        f"batch axis, so the case does not cut to batch 1")
        values[node.input[k]] = v[:1]
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    _inference_batchnorm(model)
    feeds = {i.name: values[i.name] for i in model.graph.input if i.name in values}
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            expected = np.asarray(_evaluator(model).run(None, feeds)[0])
    except Exception as e:   # noqa: BLE001 - shapes or attributes tied to the batch
        return Skip(f"batch {n}: the case's node does not evaluate on its first sample alone "
                    f"({type(e).__name__})")
    if expected.ndim < 1 or expected.shape[0] != 1:
        return Skip(f"batch {n}: on its first sample the output is {expected.shape}, not batch 1")
    return values, expected


def _pack(node, acts, values, nodes, inits):
    """Several data inputs from the one network input: they are concatenated, flattened,
    into a (1, N) input, and a Slice and a Reshape give each back (both `move`s in nnscons,
    which keep the input's quantization)."""
    start = 0
    front = []
    for k in acts:
        t = node.input[k]
        a = np.asarray(values[t])
        inits[f"__s{k}"] = np.array([start], np.int64)
        inits[f"__e{k}"] = np.array([start + a.size], np.int64)
        inits[f"__a{k}"] = np.array([1], np.int64)
        inits[f"__shape{k}"] = np.array(a.shape, np.int64)
        front.append(helper.make_node("Slice", ["__packed", f"__s{k}", f"__e{k}", f"__a{k}"],
                                      [f"__flat{k}"]))
        front.append(helper.make_node("Reshape", [f"__flat{k}", f"__shape{k}"], [t]))
        start += a.size
    nodes[:0] = front


# -- running a case --------------------------------------------------------------------------
@dataclass
class Verdict:
    outcome: str        # "passed", "refused" (a ModelError) or "skipped" (the adapter's reason)
    detail: str = ""


def _per_tensor_int8(w: np.ndarray) -> np.ndarray:
    """w on a symmetric int8 grid of one scale (max |w| / 127): coarser than (or, for one
    output channel, equal to) the per-output-channel grid nnscons quantizes weights on."""
    m = float(np.abs(w).max()) if w.size else 0.0
    if m == 0.0:
        return w
    s = m / 127
    return (np.rint(w / s) * s).astype(w.dtype)


def _float_model(path: str, x: np.ndarray, quantize_weights: bool) -> np.ndarray:
    """The adapted float model's output on x, by onnx's reference evaluator (it reads every
    opset the cases are written in; the pinned onnxruntime does not), with its float
    weights (initializers of rank >= 2) on an int8 grid if asked."""
    from onnx.reference import ReferenceEvaluator
    proto = onnx.load(path)
    if quantize_weights:
        for i, init in enumerate(proto.graph.initializer):
            a = numpy_helper.to_array(init)
            if a.dtype == np.float32 and a.ndim >= 2:
                proto.graph.initializer[i].CopyFrom(
                    numpy_helper.from_array(_per_tensor_int8(a), init.name))
    sess = ReferenceEvaluator(proto)
    return np.asarray(sess.run(None, {proto.graph.input[0].name: x})[0])


# The tolerance of a float case, per element:
#     tol = 2 * |F(x^, w^) - F(x, w)| + 2 * s_out
# F is the adapted float model evaluated by onnx's reference evaluator, x^ the network input
# nnscons computes with (its int8 codes, dequantized), w^ the float weights (initializers of
# rank >= 2) on a per-tensor int8 grid. The first term is what quantizing the input and the
# weights does to the op's output on this very input: measured rather than bounded by the
# op's Lipschitz constant, so it stays tight for smooth ops and is still right where the op
# jumps (ThresholdedRelu, nearest Resize: x^ crosses a jump in both). It is doubled because
# nnscons puts weights on a per-output-channel grid, not this per-tensor one (per tensor is at
# least as coarse, so its error is of the same order or larger). The second term is the
# output's own rounding (1/2 LSB) plus at most 1 LSB from the integer requantization or
# table, 1.5 LSB, rounded up to 2 LSB. Neither term reads the expected output: an op that
# computes something else than the case (a wrong attribute default) fails.
TOL_OUT_LSB = 2.0
TOL_INPUT_FACTOR = 2.0


def run(case, folder: str) -> Verdict:
    """Adapt, load (built-in PTQ calibrated on the case's own input for a float case), run
    the integer reference and compare. Raises AssertionError when a case nnscons accepts
    computes something else than the case's expected output."""
    from nnscons.errors import ModelError
    from nnscons.frontends import load_model
    from nnscons.reference import dequantize, quantize_input, run_graph

    a = adapt(case, folder)
    if isinstance(a, Skip):
        return Verdict("skipped", a.reason)
    try:
        g = load_model(a.path, name="case",
                       calibration={"files": a.calibration} if a.calibration else None)
    except ModelError as e:
        msg = str(e).replace(a.path, "case.onnx")
        # one message naming the model (then the node, the input shape it cannot take, or
        # why the calibration cannot run the model)
        assert msg.startswith("case.onnx: "), msg
        return Verdict("refused", msg)
    xq = quantize_input(g, a.x)
    codes = run_graph(g, xq)[g.output]
    out_t = g.tensor(g.output)
    exp = a.expected
    assert codes.size == exp.size, f"{case.name}: output {codes.shape}, expected {exp.shape}"
    if a.quantized:
        got = codes.reshape(exp.shape).astype(np.int32) + a.out_offset
        bad = np.flatnonzero(got != exp.astype(np.int32))
        assert bad.size == 0, (f"{case.name}: {bad.size} of {exp.size} codes differ, e.g. "
                               f"got {got.flat[bad[0]]} expected {exp.flat[bad[0]]}")
        return Verdict("passed", "exact")
    got = dequantize(out_t, codes).reshape(exp.shape).astype(np.float64)
    if not a.calibration:   # DequantizeLinear: exact (the codes are the case's own)
        np.testing.assert_array_equal(got.astype(np.float32), exp, err_msg=case.name)
        return Verdict("passed", "exact")
    x_hat = dequantize(g.tensor(g.input), xq).reshape(a.x.shape)
    f_hat = _float_model(a.path, x_hat, quantize_weights=True).reshape(exp.shape)
    f = _float_model(a.path, a.x, quantize_weights=False).reshape(exp.shape)
    s_out = float(out_t.q.scale)
    tol = TOL_INPUT_FACTOR * np.abs(f_hat - f) + TOL_OUT_LSB * s_out
    err = np.abs(got - exp)
    bad = np.flatnonzero(err > tol)
    assert bad.size == 0, (f"{case.name}: {bad.size} of {exp.size} values beyond tolerance, "
                           f"worst {err.flat[bad[0]]:.4g} > {tol.flat[bad[0]]:.4g} "
                           f"(got {got.flat[bad[0]]:.5g}, expected {exp.flat[bad[0]]:.5g}, "
                           f"output scale {s_out:.4g})")
    return Verdict("passed", f"max error {err.max() / s_out:.2f} output LSB (tolerance {tol.max() / s_out:.2f} at most)")
