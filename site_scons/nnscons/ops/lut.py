"""lut: any unary elementwise op as an exact int8 lookup table built at lowering time.

The table is the QDQ semantics of the op evaluated by onnx's reference evaluator in
float64 for each of the 256 int8 inputs: out[q] = clamp(round_half_even(f((q - zp_in) *
s_in) / s_out) + zp_out, act_min, act_max), so it equals the exact oracle bit for bit.
Binary ops with one constant operand (Add/Sub/Mul/Div by a constant: the converters of
those ops call const_binary) and BatchNormalization that follows no conv are tables too.
Constant operands (PRelu's slope, ...) that vary along the channel axis give one table per
channel: Layer.weight is int8 (T, 256) with T = 1 or C; attrs keep the ONNX op type, its
attributes and constant operands (for the QDQ export).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from ..opkit import onnx_operands as X
from ..opkit import onnx_qoperator
from ..opkit.onnx_attrs import attributes
from ..opkit.opgraph import Op
from ..opkit.opdef import OpDef
from ._common import first_input_shape, n_out

# ONNX op type -> number of constant operands after the activation input
UNARY = {"Sigmoid": 0, "HardSigmoid": 0, "HardSwish": 0, "Tanh": 0, "LeakyRelu": 0,
         "PRelu": 1, "Elu": 0, "Selu": 0, "Softplus": 0, "Exp": 0, "Celu": 0, "Softsign": 0,
         "Abs": 0, "Neg": 0, "Erf": 0, "ThresholdedRelu": 0,
         # the rest of ONNX's elementwise math as exporters emit it (LayerNorm's Sqrt,
         # Reciprocal, Pow by a constant; Log, rounding, trigonometry)
         "Sqrt": 0, "Reciprocal": 0, "Log": 0, "Floor": 0, "Ceil": 0, "Round": 0, "Sign": 0,
         "Sin": 0, "Cos": 0, "Pow": 1}
OPSET = 17
# export opset where the default (13) lacks the op, or onnx's reference evaluator gets it
# wrong (BatchNormalization before 15 runs in training mode there)
NEEDS_OPSET = {"HardSwish": 14, "BatchNormalization": 15}


def _attr_value(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, (list, tuple)):
        return tuple(v)
    return v


def table_op(w, name, node, ins, out, x_pos=0, n_operands=None):
    """An Op 'lut' for ONNX node `node` whose inputs other than ins[x_pos] are constants.
    fn_consts: ((position, shape, values), ...) in input order."""
    n = len(ins) if n_operands is None else n_operands
    consts = []
    for pos, t in enumerate(ins[:n]):
        if pos == x_pos or not t:
            continue
        arr = np.asarray(w.const(t, name, node, "operand"), dtype=np.float64)
        consts.append((pos, tuple(int(d) for d in arr.shape),
                       tuple(float(v) for v in arr.reshape(-1))))
    attrs = {k: _attr_value(v) for k, v in sorted(attributes(node).items())}
    return Op(name, "lut", [X.activation(w, name, node, ins[x_pos])], out, node.op_type,
              attrs={"fn": node.op_type, "fn_attrs": tuple(attrs.items()),
                     "fn_consts": tuple(consts), "x_pos": x_pos})


def convert(w, name, node, ins, out):
    return table_op(w, name, node, ins, out, 0, 1 + UNARY[node.op_type])


def const_binary(w, name, node, ins, out):
    """Add/Sub/Mul/Div with one constant operand (per tensor or per channel), or None
    when both operands are activations."""
    if len(ins) != 2:
        return None
    is_c = [w.is_const(t) for t in ins]
    if is_c == [False, True]:
        return table_op(w, name, node, ins, out, 0)
    if is_c == [True, False]:
        return table_op(w, name, node, ins, out, 1)
    return None


# Ops whose 1-D constant operands are per channel by definition (not numpy broadcasting)
CHANNEL_OPERANDS = ("BatchNormalization",)


def _steps(attrs) -> tuple:
    """The lut's float steps (fn, fn_attrs, fn_consts, x_pos): a merged island chain, then its own."""
    return tuple(attrs.get("chain", ())) + ((attrs["fn"], attrs["fn_attrs"], attrs["fn_consts"],
                                            attrs["x_pos"]),)


def _channels(g, op, x):
    """Number of tables: C when a constant operand of any step varies along the channel axis."""
    c = x[1] if len(x) >= 2 else 1
    return max(_step_channels(g, op, fn, consts, x, c) for fn, _, consts, _ in _steps(op.attrs))


def _step_channels(g, op, fn, consts, x, c):
    if fn in CHANNEL_OPERANDS:
        sizes = {int(np.prod(s)) for _, s, _ in consts}
        if sizes - {1, c}:
            raise g.fail(op, f"operands of sizes {sorted(sizes)} do not match {c} channels")
        return c if c in sizes and c > 1 else 1
    per = 1
    for _, shape, values in consts:
        arr = np.asarray(values).reshape(shape)
        if arr.size <= 1:
            continue
        try:
            b = np.broadcast_to(arr, x)
        except ValueError:
            raise g.fail(op, f"constant operand of shape {shape} does not broadcast to the "
                             f"input {x}") from None
        moved = np.moveaxis(b, 1, 0).reshape(c, -1)
        if np.any(moved != moved[:, :1]):
            raise g.fail(op, f"constant operand of shape {shape} varies along an axis other "
                             f"than the channels; only per-tensor or per-channel operands are "
                             f"supported")
        per = c
    return per


def shape(g, op, ins):
    op.attrs["tables"] = _channels(g, op, ins[0])
    return ins[0]


def _evaluate(fn, fn_attrs, consts, x_pos, x):
    """fn applied to float64 x by onnx's reference evaluator."""
    from onnx.reference import ReferenceEvaluator
    names = [f"c{pos}" for pos, _, _ in consts]
    inits = [numpy_helper.from_array(np.asarray(v, np.float64).reshape(s), n)
             for n, (_, s, v) in zip(names, consts)]
    order = dict(zip([pos for pos, _, _ in consts], names))
    order[x_pos] = "x"
    inputs = [order.get(i, "") for i in range(max(order) + 1)]
    node = helper.make_node(fn, inputs, ["y"], **dict(fn_attrs))
    graph = helper.make_graph([node], "lut", [helper.make_tensor_value_info(
        "x", TensorProto.DOUBLE, list(x.shape))], [helper.make_tensor_value_info(
        "y", TensorProto.DOUBLE, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    with np.errstate(all="ignore"):
        return np.asarray(ReferenceEvaluator(model).run(None, {"x": x})[0], dtype=np.float64)


def table(fn, fn_attrs, consts, x_pos, tables, in_q, out_q, act_min=-128, act_max=127, chain=()):
    """int8 (tables, 256): entry [t, q + 128] is the QDQ result for input q on channel t
    (chain: float steps (fn, fn_attrs, fn_consts, x_pos) applied first, unrounded)."""
    y = island_values(tuple(chain) + ((fn, fn_attrs, consts, x_pos),), tables, in_q)
    y = np.nan_to_num(y / np.float64(out_q.scale), nan=0.0, posinf=1e9, neginf=-1e9)
    out = np.rint(y) + out_q.zero_point
    return np.clip(out, max(-128, act_min), min(127, act_max)).astype(np.int8)


def island_values(steps, tables, in_q) -> np.ndarray:
    """float64 (tables, 256): the float steps applied to code q - 128's value, per channel."""
    q = np.arange(-128, 128, dtype=np.float64)
    x = (q - in_q.zero_point) * np.float64(in_q.scale)
    per_channel = tables > 1 or any(f in CHANNEL_OPERANDS for f, _, _, _ in steps)
    xs = np.broadcast_to(x, (1, tables, 1, 256)).copy() if per_channel else x
    for f, f_attrs, f_consts, f_pos in steps:
        # a one-value operand of any rank (TF exports' (1, 1, 1, 1)) is that value: against
        # the 256 codes its rank would broadcast them to (1, 1, 1, 256)
        f_consts = [(p, (1,) if int(np.prod(s)) == 1 else s, v) for p, s, v in f_consts]
        if tables > 1 and f not in CHANNEL_OPERANDS:   # broadcast along axis 1 of (1, C, 1, 256)
            f_consts = [(p, (1, tables, 1, 1) if int(np.prod(s)) == tables else s, v)
                        for p, s, v in f_consts]
        xs = np.broadcast_to(_evaluate(f, f_attrs, f_consts, f_pos, xs), np.shape(xs)).copy()
    return xs.reshape(tables, 256) if per_channel else np.broadcast_to(xs, (tables, 256)).copy()


# ---- TFLite's elementwise operators: the table of its integer kernel (reference.tflite_math)

def _tfl_lut(w, op, fn, table_, fn_attrs=(), fn_consts=()):
    """A lut layer whose (T, 256) table TFLite's kernel gives; fn (an ONNX op type with its
    attributes and constant operands) describes it for the QDQ export."""
    x, out = w.act(op, 0), w.out(op)
    t = np.asarray(table_, dtype=np.int8).reshape(-1, 256)
    return Op(op.label, "lut", [x], out, op.code,
              attrs={"fn": fn, "fn_attrs": tuple(fn_attrs), "fn_consts": tuple(fn_consts),
                     "x_pos": 0, "table": t})


def _channel_shape(w, op, n: int, k: int = 0) -> tuple:
    """The shape of a per-channel constant operand against the IR tensor of input k."""
    from ..opkit.layout import ir_shape
    if n == 1:
        return (1,)
    return (n, 1, 1) if len(ir_shape(w.input_tensor(op, k).shape)) == 4 else (n,)


def _q(w, op):
    qi, qo = w.qparams[w.act(op, 0)], w.qparams_of(w.tensor(op.outputs[0]), op)
    return qi.scale, qi.zero_point, qo.scale, qo.zero_point


def tfl_unary(w, op):
    from ..reference import tflite_math as T
    si, zi, so, zo = _q(w, op)
    code = op.code
    if code == "LOGISTIC":
        return _tfl_lut(w, op, "Sigmoid", T.logistic_table(si, zi, so, zo))
    if code == "TANH":
        return _tfl_lut(w, op, "Tanh", T.tanh_table(si, zi, so, zo))
    if code == "HARD_SWISH":
        if si >= 128 * so:
            raise w.fail(op, f"input scale {si} >= 128 x the output scale {so}, which TFLite's "
                             f"HARD_SWISH refuses")
        return _tfl_lut(w, op, "HardSwish", T.hard_swish_table(si, zi, so, zo))
    if code == "LEAKY_RELU":
        alpha = float(op.options.get("alpha", 0.2))
        return _tfl_lut(w, op, "LeakyRelu", T.leaky_relu_table(si, zi, so, zo, alpha),
                        fn_attrs=(("alpha", alpha),))
    lo, hi = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0),
              "RELU_0_TO_1": (0.0, 1.0)}[code]
    consts = ((1, (), (lo,)),) + (((2, (), (hi,)),) if hi is not None else ())
    return _tfl_lut(w, op, "Clip", T.relu_table(si, zi, so, zo, kind=code), fn_consts=consts)


def tfl_prelu(w, op):
    """PRELU with a constant slope per tensor or per channel: one table per channel."""
    from ..reference import tflite_math as T
    si, zi, so, zo = _q(w, op)
    a = w.input_tensor(op, 1, "alpha")
    if not a.is_const or not a.quantized or a.dtype not in ("int8", "uint8"):
        raise w.fail(op, "alpha must be a constant quantized int8 tensor")
    vals = a.data.astype(np.int64).reshape(-1)
    zpa = int(a.zero_point[0])
    c = w.input_tensor(op, 0).shape[-1]
    if vals.size not in (1, c) or (vals.size == c and int(np.prod(a.shape)) != c):
        raise w.fail(op, f"alpha of shape {list(a.shape)} is neither one value nor one per "
                         f"channel ({c})")
    params = T.prelu_params(si, float(a.scale[0]), so)
    v = np.arange(-128, 128, dtype=np.int64)
    tables = np.stack([T.prelu(v, np.full(256, k), zi, zpa, zo, params) for k in vals])
    slope = (vals - zpa) * float(a.scale[0])
    shape = _channel_shape(w, op, vals.size)
    return _tfl_lut(w, op, "PRelu", tables, fn_consts=((1, shape, tuple(float(x) for x in slope)),))


def _const_operand(w, op):
    """(k, codes per channel (or one), zero point, scale) of the constant operand k of a
    binary operator whose other operand is the activation, in the IR's int8 domain."""
    k = 1 if w.input_tensor(op, 1).is_const else 0
    c_t = w.input_tensor(op, k)
    if not c_t.quantized or c_t.dtype not in ("int8", "uint8"):
        raise w.fail(op, "the constant operand must be a quantized int8 tensor")
    x_shape = w.input_tensor(op, 1 - k).shape
    if tuple(w.tensor(op.outputs[0]).shape) != tuple(x_shape):
        raise w.fail(op, f"the constant operand {list(c_t.shape)} would broadcast the "
                         f"activation {list(x_shape)} to a larger shape")
    raw = c_t.data.astype(np.int64) - (128 if c_t.dtype == "uint8" else 0)
    zc = int(c_t.zero_point[0]) - (128 if c_t.dtype == "uint8" else 0)
    cvals = np.broadcast_to(raw, x_shape).reshape(-1, x_shape[-1] if x_shape else 1)
    if np.any(cvals != cvals[:1]):
        raise w.fail(op, f"the constant operand {list(c_t.shape)} varies along other axes "
                         f"than the channels (the last axis)")
    per = cvals[0]
    if np.all(per == per[0]):
        per = per[:1]
    return k, per, zc, float(c_t.scale[0])


def tfl_minmax(w, op):
    """MAXIMUM/MINIMUM with a constant operand. TFLite's int8 kernel compares the codes as
    they are (the converter gives both operands and the output one scale and zero point;
    LiteRT does not check it), so the table is max(code, c) per channel."""
    if not (w.input_tensor(op, 0).is_const or w.input_tensor(op, 1).is_const):
        raise w.fail(op, f"{op.code} of two activations is not supported (one constant "
                         f"operand is: a clamp)")
    k, per, zc, sc = _const_operand(w, op)
    pick = np.maximum if op.code == "MAXIMUM" else np.minimum
    v = np.arange(-128, 128, dtype=np.int64)
    tables = np.stack([pick(v, cv) for cv in per]).astype(np.int8)
    real = (per - zc) * sc
    return Op(op.label, "lut", [w.act(op, 1 - k)], w.out(op), op.code,
              attrs={"fn": "Max" if op.code == "MAXIMUM" else "Min", "fn_attrs": (), "x_pos": 1 - k,
                     "fn_consts": ((k, _channel_shape(w, op, per.size, 1 - k), tuple(float(r) for r in real)),),
                     "table": tables})


def tfl_const_binary(w, op):
    """ADD/SUB/MUL with one constant operand (per tensor or per channel): TFLite's kernel on
    every int8 value, one table per channel."""
    from ..reference import tflite_math as T
    k, per, zc, sc = _const_operand(w, op)
    x_k = 1 - k
    qx = w.qparams[w.act(op, x_k)]
    qo = w.qparams_of(w.tensor(op.outputs[0]), op)
    v = np.arange(-128, 128, dtype=np.int64)
    lo, hi = w.act_range(op)
    tables = []
    for cv in per:
        a, b = (v, np.full(256, cv)) if x_k == 0 else (np.full(256, cv), v)
        (sa, za), (sb, zb) = ((qx.scale, qx.zero_point), (sc, zc)) if x_k == 0 else \
            ((sc, zc), (qx.scale, qx.zero_point))
        if op.code == "MUL":
            t = T.mul(a, b, za, zb, qo.zero_point, T.mul_params(sa, sb, qo.scale), lo, hi)
        else:
            fn = T.add if op.code == "ADD" else T.sub
            pf = T.add_params if op.code == "ADD" else T.sub_params
            t = fn(a, b, za, zb, qo.zero_point, pf(sa, sb, qo.scale), lo, hi)
        tables.append(t)
    real = (per - zc) * sc
    shape = _channel_shape(w, op, per.size, x_k)
    onnx_fn = {"ADD": "Add", "SUB": "Sub", "MUL": "Mul"}[op.code]
    x = w.act(op, x_k)
    out = w.out(op)
    return Op(op.label, "lut", [x], out, op.code,
              attrs={"fn": onnx_fn, "fn_attrs": (), "x_pos": x_k,
                     "fn_consts": ((k, shape, tuple(float(r) for r in real)),),
                     "table": np.stack(tables).astype(np.int8)})


TFLITE_CONVERTERS = {**{c: tfl_unary for c in ("LOGISTIC", "TANH", "HARD_SWISH", "LEAKY_RELU",
                                               "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1")},
                     "PRELU": tfl_prelu, "MAXIMUM": tfl_minmax, "MINIMUM": tfl_minmax}


def lower(g, op, layer):
    if "table" in op.attrs:            # given by the frontend (TFLite's integer kernels)
        layer.weight = np.asarray(op.attrs["table"], dtype=np.int8)
        return
    layer.weight = table(op.attrs["fn"], op.attrs["fn_attrs"], op.attrs["fn_consts"],
                         op.attrs["x_pos"], op.attrs["tables"], g.qparams[op.inputs[0]], g.qparams[op.output],
                         layer.act_min, layer.act_max, op.attrs.get("chain", ()))


def reference(layer, graph, inputs):
    (x,) = inputs
    t = layer.weight
    idx = x.astype(np.int64) + 128
    if t.shape[0] == 1:
        return t[0][idx]
    ch = np.arange(t.shape[0]).reshape((1, -1) + (1,) * (x.ndim - 2))
    return t[ch, idx]


def export(w, layer, ins, core_out):
    x = ins[0]
    *chain, last = _steps(layer.attrs)
    for k, step in enumerate(chain):            # a merged island's unrounded steps
        step_out = w.names.fresh(f"{layer.name}_step{k}")
        _export_step(w, f"{layer.name}_step{k}", *step, x, step_out, False)
        x = step_out
    _export_step(w, layer.name, *last, x, core_out, True)


def _export_step(w, name, fn, fn_attrs, consts, x_pos, x, out, exact_name):
    order = {x_pos: x}
    for pos, s, v in consts:
        order[pos] = w.const(f"{name}_operand{pos}", np.asarray(v, np.float32).reshape(s))
    inputs = [order.get(i, "") for i in range(max(order) + 1)]
    w.opset = max(w.opset, NEEDS_OPSET.get(fn, 0))
    w.node(fn, inputs, [out], name, exact_name=exact_name, **dict(fn_attrs))


def merge_island_chains(g) -> None:
    """A float island's chain of elementwise ops (a BatchNormalization table, then a
    HardSwish, ...: onnxruntime's quantizer leaves them in float between a QuantizeLinear and
    the next) is one table: ONNX rounds once, at the chain's end, and so does the table.
    Merged when the tensor between two luts has no quantization of the model's and only the
    second reads it; a clamp fused into the first becomes a Clip step. Where the model also
    rounds that tensor for other readers but the second lut reads its float value (MobileNetV3's
    BatchNormalization -> HardSigmoid beside the BatchNormalization's QuantizeLinear, as
    onnxruntime's QOperator quantizer leaves it: OpGraph.unrounded), the second lut takes a copy
    of the first's steps and the first stays for the others."""
    for op in [o for o in g.ops if o.kind == "lut"]:
        if op not in g.ops or "table" in op.attrs:
            continue
        reader = op
        while True:
            p = g.producer(op.inputs[0])      # read by `reader` (op, or the lut merged last)
            if (p is None or p.kind != "lut" or "table" in p.attrs or p.output in g.outputs
                    or p.act_range is not None):
                break
            sole = p.output not in g.qparams and g.consumers(p.output) == [op]
            if not sole and (reader.name, p.output) not in g.unrounded:
                break
            steps = _steps(p.attrs)
            lo, hi = p.clamp
            if lo is not None or hi is not None:
                steps += (("Clip", (), tuple((k, (), (float(v),)) for k, v in ((1, lo), (2, hi))
                                              if v is not None), 0),)
            op.attrs["chain"] = steps + tuple(op.attrs.get("chain", ()))
            op.inputs = list(p.inputs)
            op.source_ops = p.source_ops + op.source_ops
            if sole:
                op.fused = [p.name] + p.fused + op.fused
                g.ops.remove(p)
            reader = p
        if op.attrs.get("chain"):
            op.attrs["tables"] = _channels(g, op, g.shapes[op.inputs[0]])


OPS = [OpDef("lut", onnx={t: convert for t in UNARY},
             attrs=("fn", "fn_attrs", "fn_consts", "x_pos", "tables", "chain"), shape=shape,
             reference=reference, lower=lower, macs=n_out, export=export, fusable=True,
             doc="fn fn_attrs fn_consts tables  (unary op as int8 table(s): weight (T, 256), "
                 "T = 1 or C)")]

# onnxruntime's QOperator form of the same op (opkit/onnx_qoperator.py)
CONVERTERS = onnx_qoperator.converters("QLinearSigmoid", "QLinearLeakyRelu")
