"""Walk a TFLite subgraph into a pre-IR OpGraph under TFLite's arithmetic.

Every TFLite builtin has a converter in its op's module (nnscons.ops: OpDef.tflite or the
module's TFLITE_CONVERTERS); this walker gives them the file's tensors in the IR's layout
(opkit.layout: NHWC -> (1, C, H, W)), the quantization parameters exactly as stored
(uint8 tensors become int8 with zero point - 128, bit-exact), and handles the ops that
only mark the graph's ends: QUANTIZE of the float input, DEQUANTIZE of the output.
"""
from __future__ import annotations

import numpy as np

from .. import ops
from ..errors import ModelError
from ..ir import QParams
from ..opkit.opgraph import Op, OpGraph
from ..opkit import layout
from .tflite_file import TflOp, TfliteFile, TflTensor

ACT_TYPES = ("int8", "uint8")
WALKER_OPS = ("QUANTIZE", "DEQUANTIZE")


def supported_list() -> str:
    return "supported TFLite operators: " + ", ".join(sorted(ops.tflite_types() + WALKER_OPS))


class TfliteWalker:
    def __init__(self, f: TfliteFile):
        self.f = f
        self.ops: list = []
        self.qparams: dict = {}
        self.alias: dict = {}        # tensor index -> the tensor index whose IR tensor it is
        self._names: dict = {}       # tensor index -> IR tensor name
        self._taken: set = set()
        self.tfl_shape: dict = {}    # IR tensor name -> the TFLite shape it stands for

    # -- messages and tensors -------------------------------------------------------------
    def fail(self, op: TflOp, message: str) -> ModelError:
        return ModelError(f"{self.f.path}: operator #{op.index} {op.code}: {message}")

    def tensor(self, index: int) -> TflTensor:
        return self.f.tensors[index]

    def input_tensor(self, op: TflOp, k: int, what: str = "input") -> TflTensor:
        if k >= len(op.inputs) or op.inputs[k] < 0:
            raise self.fail(op, f"{what} (input {k}) is missing")
        return self.tensor(op.inputs[k])

    def has_input(self, op: TflOp, k: int) -> bool:
        return k < len(op.inputs) and op.inputs[k] >= 0

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self._taken:
            name = f"{base}_{k}"
            k += 1
        self._taken.add(name)
        return name

    def name(self, index: int) -> str:
        index = self.alias.get(index, index)
        if index not in self._names:
            t = self.tensor(index)
            self._names[index] = self.fresh(t.name)
            self.tfl_shape[self._names[index]] = t.shape
        return self._names[index]

    def qparams_of(self, t: TflTensor, op: TflOp = None) -> QParams:
        where = (lambda m: self.fail(op, m)) if op else (lambda m: ModelError(f"{self.f.path}: {m}"))
        if t.dtype not in ACT_TYPES:
            raise where(f"tensor {t.name!r} has type {t.dtype}; activations must be int8 or "
                        f"uint8 (int16 activations and float layers are not supported)")
        if not t.quantized:
            raise where(f"tensor {t.name!r} has no quantization parameters")
        if t.scale.size != 1:
            raise where(f"tensor {t.name!r} is quantized per axis; activations must be "
                        f"quantized per tensor")
        scale = float(t.scale[0])
        if not (scale > 0 and np.isfinite(scale)):
            raise where(f"tensor {t.name!r} has scale {scale}; it must be positive and finite")
        zp = int(t.zero_point[0]) - (128 if t.dtype == "uint8" else 0)
        if not -128 <= zp <= 127:
            raise where(f"tensor {t.name!r} has zero point {int(t.zero_point[0])}, outside "
                        f"its type's range")
        return QParams(scale, zp)

    def act(self, op: TflOp, k: int = 0, what: str = "input") -> str:
        """The IR tensor of activation input k."""
        t = self.input_tensor(op, k, what)
        if t.is_const:
            raise self.fail(op, f"{what} {t.name!r} is a constant; it must be computed from the "
                                f"network input")
        name = self.name(t.index)
        if name not in self.qparams:
            raise self.fail(op, f"{what} {t.name!r} is not produced by any supported operator "
                                f"before it")
        return name

    def out(self, op: TflOp, k: int = 0) -> str:
        """The IR tensor of output k (its quantization parameters registered)."""
        if k >= len(op.outputs):
            raise self.fail(op, f"output {k} is missing")
        t = self.tensor(op.outputs[k])
        name = self.name(t.index)
        self.qparams[name] = self.qparams_of(t, op)
        return name

    def const(self, op: TflOp, k: int, what: str) -> np.ndarray:
        t = self.input_tensor(op, k, what)
        if not t.is_const:
            raise self.fail(op, f"{what} {t.name!r} must be a constant tensor")
        return t.data

    def act_range(self, op: TflOp, out_k: int = 0) -> tuple:
        """The fused activation (options' fused_activation_function) as int8 bounds,
        TFLite's CalculateActivationRangeQuantized: zp + round(f / scale) in float32, ties
        away from zero, intersected with the type's range."""
        fused = int(op.options.get("fused_activation_function", 0))
        t = self.tensor(op.outputs[out_k])
        q = self.qparams_of(t, op)
        lo_type, hi_type = (-128, 127)

        def quant(f):
            from ..reference.tflite_math import round_half_away
            return q.zero_point + int(round_half_away(np.float32(f) / np.float32(q.scale)))
        if fused == 0:
            return lo_type, hi_type
        if fused == 1:     # RELU
            return max(lo_type, quant(0.0)), hi_type
        if fused == 2:     # RELU_N1_TO_1
            return max(lo_type, quant(-1.0)), min(hi_type, quant(1.0))
        if fused == 3:     # RELU6
            return max(lo_type, quant(0.0)), min(hi_type, quant(6.0))
        names = {4: "TANH", 5: "SIGN_BIT", 6: "RELU_0_TO_1"}
        raise self.fail(op, f"fused activation {names.get(fused, fused)} is not supported "
                            f"(NONE, RELU, RELU6, RELU_N1_TO_1)")

    # -- layout ---------------------------------------------------------------------------
    def relayout(self, op: TflOp, src: str, src_shape: tuple, dst_shape: tuple, out: str,
                 name: str = None) -> Op:
        """An op that turns src (the TFLite tensor of shape src_shape) into the tensor of
        shape dst_shape with the same elements in TFLite's (row-major, channels-last)
        order: an alias when the IR orders agree, else a gather (move)."""
        from ..ops.move import layout_steps
        # element i (TFLite order) sits at IR index a[i] in src and b[i] in dst
        a, b = layout.flat_order(src_shape), layout.flat_order(dst_shape)
        if np.array_equal(a, b):
            return Op(name or op.label, "reshape", [src], out, op.code,
                      attrs={"shape": layout.ir_shape(dst_shape)})
        return Op(name or op.label, "move", [src], out, op.code,
                  attrs={"steps": layout_steps(src_shape, dst_shape)})

    def ir_axis(self, op: TflOp, rank: int, axis: int) -> int:
        """The IR axis of axis `axis` of a rank-`rank` TFLite tensor."""
        if not -rank <= axis < rank:
            raise self.fail(op, f"axis {axis} is out of range for a rank-{rank} tensor")
        axis %= rank
        return {4: (0, 2, 3, 1), 3: (0, 3, 1), 2: (0, 1), 1: (1,)}[rank][axis]

    # -- walk -----------------------------------------------------------------------------
    def _ends(self):
        f = self.f
        if len(f.inputs) != 1 or len(f.outputs) != 1:
            raise ModelError(f"{f.path}: the model has {len(f.inputs)} inputs and "
                             f"{len(f.outputs)} outputs; exactly one of each is supported")
        t_in = self.tensor(f.inputs[0])
        self.model_in_shape = t_in.shape
        self.input_index = f.inputs[0]
        if t_in.dtype == "float32":
            users = [op for op in f.ops if f.inputs[0] in op.inputs]
            if len(users) != 1 or users[0].code != "QUANTIZE":
                raise ModelError(f"{f.path}: the float32 input {t_in.name!r} must feed exactly "
                                 f"one QUANTIZE operator (a float model is not supported: "
                                 f"convert it with full-integer quantization)")
            self.input_index = users[0].outputs[0]
        elif t_in.dtype not in ACT_TYPES:
            raise ModelError(f"{f.path}: the input {t_in.name!r} has type {t_in.dtype}; int8, "
                             f"uint8 or float32 (followed by QUANTIZE) is supported")
        q_in = self.tensor(self.input_index)
        name = self.name(self.input_index)
        self.qparams[name] = self.qparams_of(q_in)
        self.tfl_shape[name] = self.model_in_shape
        t_out = self.tensor(f.outputs[0])
        self.model_out_shape = t_out.shape
        self.output_index = f.outputs[0]
        if t_out.dtype == "float32":
            prod = [op for op in f.ops if f.outputs[0] in op.outputs]
            if len(prod) != 1 or prod[0].code != "DEQUANTIZE":
                raise ModelError(f"{f.path}: the float32 output {t_out.name!r} must come from a "
                                 f"DEQUANTIZE operator (a float model is not supported)")
            self.output_index = prod[0].inputs[0]

    def _shape_computations(self) -> set:
        """The operators that only compute a RESHAPE's shape operand from integer tensors
        (Keras's Reshape keeps the batch dynamic: SHAPE -> STRIDED_SLICE -> PACK): RESHAPE
        takes the shape the file declares for its output, which is static, so they are
        skipped. TFLite lists operators in execution order: readers come later."""
        readers: dict = {}
        for op in self.f.ops:
            for k, t in enumerate(op.inputs):
                readers.setdefault(t, []).append((op, k))
        skip: set = set()
        for op in reversed(self.f.ops):
            uses = [r for t in op.outputs for r in readers.get(t, [])]
            if uses and all(self.tensor(t).dtype in ("int32", "int64") and t not in self.f.outputs
                            for t in op.outputs) and \
                    all(r.index in skip or (r.code == "RESHAPE" and k == 1) for r, k in uses):
                skip.add(op.index)
        return skip

    def walk(self) -> OpGraph:
        self._ends()
        shape_ops = self._shape_computations()
        for op in self.f.ops:
            if op.index in shape_ops:
                continue
            if op.code == "QUANTIZE" and self.tensor(op.inputs[0]).dtype == "float32":
                if op.outputs[0] != self.input_index:
                    raise self.fail(op, "QUANTIZE of a float tensor is supported at the network "
                                        "input only (float layers are not supported)")
                continue
            if op.code == "DEQUANTIZE":
                if op.outputs[0] not in self.f.outputs:
                    raise self.fail(op, "DEQUANTIZE is supported at the network output only "
                                        "(float layers are not supported)")
                continue
            if op.code == "QUANTIZE":
                self._requantize(op)
                continue
            fn = ops.for_tflite(op.code)
            if fn is None:
                raise self.fail(op, f"operator {op.code} is not supported; {supported_list()}")
            for k in op.outputs:
                if self.tensor(k).dtype not in ACT_TYPES:
                    raise self.fail(op, f"output {self.tensor(k).name!r} has type "
                                        f"{self.tensor(k).dtype}; only int8 and uint8 "
                                        f"activations are supported (int16 and float layers "
                                        f"are not)")
            try:
                got = fn(self, op)
            except (ValueError, TypeError, IndexError, KeyError) as e:   # malformed values
                raise self.fail(op, f"malformed operator ({type(e).__name__}: {e}); fix or "
                                    f"re-export the model") from None
            self.ops.extend(got if isinstance(got, list) else [got])
        return self._graph()

    def _requantize(self, op: TflOp):
        """QUANTIZE between integer types: a change of quantization (an alias when the
        parameters agree in the int8 domain: uint8 <-> int8 with zero points 128 apart)."""
        src = self.act(op, 0)
        q_out = self.qparams_of(self.tensor(op.outputs[0]), op)
        if self.qparams[src] == q_out and op.outputs[0] not in self.f.outputs:
            self.alias[op.outputs[0]] = self.alias.get(op.inputs[0], op.inputs[0])
            return
        self.ops.append(Op(op.label, "requant", [src], self.out(op), op.code))

    def _graph(self) -> OpGraph:
        inp = self.name(self.input_index)
        out = self.name(self.output_index)
        g = OpGraph(source=self.f.path, input=inp, output=out,
                    input_shape=layout.ir_shape(self.model_in_shape), ops=self.ops,
                    qparams=self.qparams, numerics="tflite")
        if out == inp or g.producer(out) is None:
            raise ModelError(f"{self.f.path}: the network output "
                             f"{self.tensor(self.output_index).name!r} is not computed by any "
                             f"supported operator")
        return g

    def check_shapes(self, g: OpGraph) -> None:
        """Each tensor's inferred IR shape against the file's (a layout mistake, or a file
        whose shapes contradict its operators, stops here, naming the operator)."""
        for op in g.ops:
            want = self.tfl_shape.get(op.output)
            if want is None or not want:
                continue
            ir = layout.ir_shape(want)
            got = g.shapes.get(op.output)
            if got is not None and int(np.prod(got)) == int(np.prod(ir)) and tuple(got) != ir:
                continue   # same elements, another IR view of them (global pool keepdims)
            if got is not None and tuple(got) != ir:
                raise g.fail(op, f"computes shape {got} (IR layout) but the file declares "
                                 f"{list(want)} for {op.output!r}")


def load_tflite(path: str, *, name: str, input_shape=None):
    """The TFLite model as a quantized IR graph under TFLite's arithmetic."""
    from ..passes import prepare, to_ir
    from .tflite_file import read_tflite
    f = read_tflite(path)
    w = TfliteWalker(f)
    g = w.walk()
    if input_shape is not None and tuple(int(d) for d in input_shape) != tuple(w.model_in_shape):
        raise ModelError(f"{path}: input_shape {list(input_shape)} differs from the model's "
                         f"input shape {list(w.model_in_shape)}; a TFLite model's shapes are "
                         f"fixed (re-export it for another shape)")
    if w.model_in_shape and w.model_in_shape[0] != 1:
        raise ModelError(f"{path}: batch size {w.model_in_shape[0]} in the input shape "
                         f"{list(w.model_in_shape)}; only batch 1 is supported")
    prepare(g)
    w.check_shapes(g)
    graph = to_ir(g, name)
    graph.model_layout = {"input": tuple(w.model_in_shape), "output": tuple(w.model_out_shape)}
    graph.model_dtype = {"input": w.tensor(w.f.inputs[0]).dtype,
                         "output": w.tensor(w.f.outputs[0]).dtype}
    graph.default_input = None
    graph.notes = []
    return graph
