"""A small deterministic writer of int8 .tflite flatbuffers (schema version 3, one subgraph).

Built on the `tflite` package's generated builder functions and `flatbuffers.Builder`; no
TensorFlow.  Same calls -> byte-identical bytes (nothing depends on dict hashing, time or
randomness).  Meant for tests and the zoo: hand-written quantized models that LiteRT runs.

    b = TfliteWriter()
    x = b.input("input", (1, 49, 10, 1), scale=0.1, zero_point=-10)          # int8 by default
    q, ws = quantize_per_channel(w_float, axis=0)                             # OHWI weights
    w = b.const("conv/w", q, scale=ws, zero_point=0, quantized_dimension=0)
    bias = b.const("conv/b", bias_int32(b_float, x.scale[0], ws), scale=x.scale[0] * ws)
    y = b.op("CONV_2D", [x, w, bias], "conv", (1, 25, 5, 64), 0.05, -128,
             options=dict(padding="SAME", stride_w=2, stride_h=2, fused_activation_function="RELU"))
    b.output(y)
    data = b.finish(description="my model")

Tensors
    b.tensor(name, shape, dtype="int8", scale=None, zero_point=None, data=None,
             quantized_dimension=0) -> Tensor
        The generic form.  `scale`/`zero_point` are scalars (per tensor) or sequences (per
        channel along `quantized_dimension`); scale None = no quantization parameters (float32
        activations, int32 shape/axes tensors).  `data` (array-like) makes a constant tensor
        stored in its own buffer; data None = an activation (buffer 0, the empty one).
    b.const(name, data, dtype=None, scale=None, zero_point=None, quantized_dimension=0)
        A constant; dtype defaults to the array's dtype (int8, uint8, int16, int32, int64,
        float32, bool); shape = the array's shape.
    b.input(name, shape, scale=None, zero_point=None, dtype="int8") -> Tensor
        An activation registered as a subgraph input (in call order).
    b.output(*tensors)
        Registers subgraph outputs (in call order).

Operators
    b.op(opname, inputs, out_name, out_shape, out_scale=None, out_zp=None, options=None,
         out_dtype=None, version=None) -> Tensor (or list of Tensors)
        `opname` is a BuiltinOperator name ("CONV_2D").  `inputs` are Tensors or None (an
        omitted optional input, index -1).  For several outputs (SPLIT) give lists for
        out_name, out_shape, out_scale and out_zp; a list of Tensors is returned.  out_dtype
        None = the dtype of the first non-constant input (float32 for DEQUANTIZE, int8 for
        QUANTIZE).  `options` are the operator's builtin options in the schema's snake_case
        field names; enum fields take names ("SAME", "RELU6"), vector fields (new_shape,
        squeeze_dims) take lists.  Per-operator defaults (e.g. strides 1) are in OPTIONS.
        `version` None = op_version(...): VERSIONS[opname] with a few variant bumps.
    b.op_outputs(opname, inputs, outputs, options=None, version=None)
        The same with already-made output Tensors.

Quantization helpers (tflite_quantize.py; the operator tables: tflite_op_options.py)
    quantize_per_channel(w, axis) -> (int8 array, float32 scales)   symmetric, [-127, 127]
    quantize_per_tensor(x, scale, zero_point, dtype="int8")         round-half-away, clipped
    qparams_from_range(lo, hi, dtype="int8") -> (scale, zero_point) asymmetric, zero in range
    bias_int32(b, in_scale, w_scales) -> int32 array                  round(b / (s_in * s_w))

Layouts are TFLite's: activations NHWC; CONV_2D weights OHWI (qdim 0); DEPTHWISE_CONV_2D
weights 1HW(C*m) (qdim 3); FULLY_CONNECTED weights (out, in) (qdim 0); TRANSPOSE_CONV
weights OHWI and inputs (output_shape, weights, input[, bias]).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .tflite_op_options import DTYPES, OPTIONS, VERSIONS, op_version
from .tflite_quantize import (bias_int32, qparams_from_range,  # noqa: F401  (part of this module's API)
                              quantize_per_channel, quantize_per_tensor)

__all__ = ["TfliteWriter", "Tensor", "OPTIONS", "VERSIONS", "op_version", "quantize_per_channel",
           "quantize_per_tensor", "qparams_from_range", "bias_int32", "DTYPES"]

_FLOAT_FIELDS = {"beta", "alpha"}
_BOOL_FIELDS = {"keep_num_dims", "keep_dims", "align_corners", "half_pixel_centers",
                "asymmetric_quantize_inputs", "pot_scale_int16", "offset"}
_ENUM_FIELDS = {"padding": "Padding", "fused_activation_function": "ActivationFunctionType",
                "weights_format": "FullyConnectedOptionsWeightsFormat",
                "quantized_bias_type": "TensorType"}


def _tfl():
    import tflite  # imported lazily: only building a model needs it
    return tflite


def _camel(snake: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in snake.split("_"))


@dataclass
class Tensor:
    """A tensor of the model being written (index = its position in the subgraph)."""
    index: int
    name: str
    shape: tuple
    dtype: str
    scale: tuple | None = None          # None = not quantized
    zero_point: tuple | None = None
    quantized_dimension: int = 0
    buffer: int = 0                     # 0 = no data (an activation)
    data: np.ndarray | None = field(default=None, repr=False)
    csr: tuple | None = None            # (row segments, column indices): stored sparse

    @property
    def is_const(self) -> bool:
        return self.data is not None


@dataclass
class _Op:
    opname: str
    version: int
    inputs: list
    outputs: list
    options_table: str | None
    options: dict


def _as_tuple(v, n=None):
    if v is None:
        return None
    a = np.asarray(v).reshape(-1)
    if n is not None and a.size == 1 and n > 1:
        a = np.repeat(a, n)
    return tuple(a.tolist())


class TfliteWriter:
    """Collects tensors, buffers and operators; finish() serializes them."""

    def __init__(self):
        self.tensors: list[Tensor] = []
        self.buffers: list[bytes] = [b""]   # buffer 0: the empty buffer TFLite requires
        self.operators: list[_Op] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self._names: set[str] = set()

    # ---- tensors -------------------------------------------------------------------------
    def tensor(self, name, shape, dtype="int8", scale=None, zero_point=None, data=None,
               quantized_dimension=0) -> Tensor:
        if dtype not in DTYPES:
            raise ValueError(f"unsupported dtype {dtype!r}; expected one of {sorted(DTYPES)}")
        if name in self._names:
            raise ValueError(f"duplicate tensor name {name!r}")
        shape = tuple(int(d) for d in shape)
        scale_t = _as_tuple(scale)
        if scale_t is not None:
            zp_t = _as_tuple(0 if zero_point is None else zero_point, len(scale_t))
            scale_t = tuple(float(s) for s in scale_t)
            zp_t = tuple(int(z) for z in zp_t)
            if len(zp_t) != len(scale_t):
                raise ValueError(f"{name}: {len(scale_t)} scales but {len(zp_t)} zero points")
            if len(scale_t) > 1 and shape[quantized_dimension] != len(scale_t):
                raise ValueError(f"{name}: {len(scale_t)} scales for dimension "
                                 f"{quantized_dimension} of shape {shape}")
        else:
            if zero_point is not None:
                raise ValueError(f"{name}: zero_point without scale")
            zp_t = None
        buf = 0
        arr = None
        if data is not None:
            arr = np.asarray(data)
            npdt = DTYPES[dtype][1]
            if arr.dtype != npdt:
                if np.issubdtype(npdt, np.integer) and np.issubdtype(arr.dtype, np.integer):
                    info = np.iinfo(npdt)
                    if arr.size and (arr.min() < info.min or arr.max() > info.max):
                        raise ValueError(f"{name}: data out of range for {dtype}")
                arr = arr.astype(npdt)
            if tuple(arr.shape) != shape and arr.size != int(np.prod(shape, dtype=np.int64)):
                raise ValueError(f"{name}: data of shape {arr.shape} for tensor shape {shape}")
            arr = np.ascontiguousarray(arr.reshape(shape))
            buf = len(self.buffers)
            self.buffers.append(arr.astype(arr.dtype.newbyteorder("<")).tobytes())
        t = Tensor(len(self.tensors), name, shape, dtype, scale_t, zp_t, int(quantized_dimension),
                   buf, arr)
        self.tensors.append(t)
        self._names.add(name)
        return t

    def const(self, name, data, dtype=None, scale=None, zero_point=None,
              quantized_dimension=0) -> Tensor:
        arr = np.asarray(data)
        if dtype is None:
            dtype = {np.dtype(v[1]): k for k, v in DTYPES.items()}.get(arr.dtype)
            if dtype is None:
                raise ValueError(f"{name}: give dtype for data of dtype {arr.dtype}")
        return self.tensor(name, arr.shape, dtype, scale, zero_point, arr, quantized_dimension)

    def sparse_const(self, name, data, dtype, scale=None, zero_point=None) -> Tensor:
        """A 2-D constant in TFLite's sparse format, as the converter stores pruned weights:
        rows dense, each row's non-zero values in CSR (the buffer holds only those)."""
        dense = np.asarray(data)
        if dense.ndim != 2:
            raise ValueError(f"{name}: sparse_const takes a 2-D array, not {dense.shape}")
        rows, cols = np.nonzero(dense)
        segments = np.searchsorted(rows, np.arange(dense.shape[0] + 1)).astype(np.int32)
        t = self.tensor(name, (rows.size,), dtype, scale, zero_point, dense[rows, cols])
        t.shape, t.csr = tuple(dense.shape), (segments, cols.astype(np.int32))
        return t

    def input(self, name, shape, scale=None, zero_point=None, dtype="int8") -> Tensor:
        if dtype != "float32" and scale is None:
            raise ValueError(f"input {name}: a quantized input needs a scale")
        t = self.tensor(name, shape, dtype, scale, zero_point)
        self.inputs.append(t.index)
        return t

    def output(self, *tensors) -> None:
        for t in tensors:
            if isinstance(t, (list, tuple)):
                self.output(*t)
            else:
                self.outputs.append(t.index)

    # ---- operators -----------------------------------------------------------------------
    def op(self, opname, inputs, out_name, out_shape, out_scale=None, out_zp=None, options=None,
           out_dtype=None, version=None):
        self._options_table(opname, options)          # fail before any tensor is made
        multi = isinstance(out_name, (list, tuple))
        names = list(out_name) if multi else [out_name]
        shapes = list(out_shape) if multi else [out_shape]
        n = len(names)
        scales = list(out_scale) if multi and isinstance(out_scale, (list, tuple)) else [out_scale] * n
        zps = list(out_zp) if multi and isinstance(out_zp, (list, tuple)) else [out_zp] * n
        if out_dtype is None:
            out_dtype = self._default_out_dtype(opname, inputs)
        outs = []
        for nm, sh, sc, zp in zip(names, shapes, scales, zps):
            if out_dtype == "float32" or sc is None:
                outs.append(self.tensor(nm, sh, out_dtype))
            else:
                outs.append(self.tensor(nm, sh, out_dtype, sc, 0 if zp is None else zp))
        self.op_outputs(opname, inputs, outs, options, version)
        return outs if multi else outs[0]

    def op_outputs(self, opname, inputs, outputs, options=None, version=None) -> None:
        table, opts = self._options_table(opname, options)
        ver = version if version is not None else op_version(opname, inputs, opts)
        ins = [-1 if t is None else t.index for t in inputs]
        outs = [t.index for t in outputs]
        self.operators.append(_Op(opname, int(ver), ins, outs, table, opts))

    @staticmethod
    def _options_table(opname, options):
        """(options table name or None, options with defaults); checks names and fields."""
        tfl = _tfl()
        if not hasattr(tfl.BuiltinOperator, opname):
            raise ValueError(f"unknown builtin operator {opname!r}")
        table, defaults = OPTIONS.get(opname, (None, {}))
        opts = dict(defaults)
        opts.update(options or {})
        if opts and table is None:
            guess = _camel(opname.lower()) + "Options"
            if not hasattr(tfl.BuiltinOptions, guess):
                raise ValueError(f"{opname}: no options table known; options {sorted(opts)}")
            table = guess
        for key in opts:
            if not hasattr(tfl, f"{table}Add{_camel(key)}"):
                raise ValueError(f"{opname}: {table} has no field {key!r}")
        return table, opts

    def _default_out_dtype(self, opname, inputs):
        if opname == "DEQUANTIZE":
            return "float32"
        if opname == "QUANTIZE":
            return "int8"
        given = [t for t in inputs if t is not None]
        live = [t for t in given if not t.is_const]
        return (live or given)[0].dtype if given else "int8"

    # ---- serialization -------------------------------------------------------------------
    def finish(self, description: str = "nnscons tflite_writer") -> bytes:
        import flatbuffers
        tfl = _tfl()
        fb = flatbuffers.Builder(1024)

        # operator codes, in order of first use
        codes: list[tuple[str, int]] = []
        code_index = {}
        for op in self.operators:
            key = (op.opname, op.version)
            if key not in code_index:
                code_index[key] = len(codes)
                codes.append(key)

        # buffers (data 16-byte aligned, as the schema's force_align asks)
        buf_offs = []
        for data in self.buffers:
            vec = None
            if data:
                fb.StartVector(1, len(data), 16)
                fb.head = fb.head - len(data)
                fb.Bytes[fb.head:fb.head + len(data)] = data
                vec = fb.EndVector()
            tfl.BufferStart(fb)
            if vec is not None:
                tfl.BufferAddData(fb, vec)
            buf_offs.append(tfl.BufferEnd(fb))
        buffers_vec = self._offsets(fb, tfl.ModelStartBuffersVector, buf_offs)

        # tensors
        ten_offs = []
        for t in self.tensors:
            name = fb.CreateString(t.name)
            shape = fb.CreateNumpyVector(np.asarray(t.shape, dtype=np.int32))
            quant = None
            if t.scale is not None:
                sc = fb.CreateNumpyVector(np.asarray(t.scale, dtype=np.float32))
                zp = fb.CreateNumpyVector(np.asarray(t.zero_point, dtype=np.int64))
                tfl.QuantizationParametersStart(fb)
                tfl.QuantizationParametersAddScale(fb, sc)
                tfl.QuantizationParametersAddZeroPoint(fb, zp)
                tfl.QuantizationParametersAddQuantizedDimension(fb, t.quantized_dimension)
                quant = tfl.QuantizationParametersEnd(fb)
            sparsity = self._sparsity(fb, tfl, t) if t.csr is not None else None
            tfl.TensorStart(fb)
            tfl.TensorAddShape(fb, shape)
            tfl.TensorAddType(fb, getattr(tfl.TensorType, DTYPES[t.dtype][0]))
            tfl.TensorAddBuffer(fb, t.buffer)
            tfl.TensorAddName(fb, name)
            if quant is not None:
                tfl.TensorAddQuantization(fb, quant)
            if sparsity is not None:
                tfl.TensorAddSparsity(fb, sparsity)
            ten_offs.append(tfl.TensorEnd(fb))
        tensors_vec = self._offsets(fb, tfl.SubGraphStartTensorsVector, ten_offs)

        # operators
        op_offs = []
        for op in self.operators:
            ins = fb.CreateNumpyVector(np.asarray(op.inputs, dtype=np.int32))
            outs = fb.CreateNumpyVector(np.asarray(op.outputs, dtype=np.int32))
            opt_off = self._options(fb, tfl, op) if op.options_table else None
            tfl.OperatorStart(fb)
            tfl.OperatorAddOpcodeIndex(fb, code_index[(op.opname, op.version)])
            tfl.OperatorAddInputs(fb, ins)
            tfl.OperatorAddOutputs(fb, outs)
            if opt_off is not None:
                tfl.OperatorAddBuiltinOptionsType(fb, getattr(tfl.BuiltinOptions, op.options_table))
                tfl.OperatorAddBuiltinOptions(fb, opt_off)
            op_offs.append(tfl.OperatorEnd(fb))
        ops_vec = self._offsets(fb, tfl.SubGraphStartOperatorsVector, op_offs)

        sg_in = fb.CreateNumpyVector(np.asarray(self.inputs, dtype=np.int32))
        sg_out = fb.CreateNumpyVector(np.asarray(self.outputs, dtype=np.int32))
        sg_name = fb.CreateString("main")
        tfl.SubGraphStart(fb)
        tfl.SubGraphAddTensors(fb, tensors_vec)
        tfl.SubGraphAddInputs(fb, sg_in)
        tfl.SubGraphAddOutputs(fb, sg_out)
        tfl.SubGraphAddOperators(fb, ops_vec)
        tfl.SubGraphAddName(fb, sg_name)
        subgraph = tfl.SubGraphEnd(fb)
        subgraphs_vec = self._offsets(fb, tfl.ModelStartSubgraphsVector, [subgraph])

        code_offs = []
        for opname, version in codes:
            code = getattr(tfl.BuiltinOperator, opname)
            tfl.OperatorCodeStart(fb)
            tfl.OperatorCodeAddDeprecatedBuiltinCode(fb, min(code, 127))
            tfl.OperatorCodeAddBuiltinCode(fb, code)
            tfl.OperatorCodeAddVersion(fb, version)
            code_offs.append(tfl.OperatorCodeEnd(fb))
        codes_vec = self._offsets(fb, tfl.ModelStartOperatorCodesVector, code_offs)

        desc = fb.CreateString(description)
        tfl.ModelStart(fb)
        tfl.ModelAddVersion(fb, 3)
        tfl.ModelAddOperatorCodes(fb, codes_vec)
        tfl.ModelAddSubgraphs(fb, subgraphs_vec)
        tfl.ModelAddDescription(fb, desc)
        tfl.ModelAddBuffers(fb, buffers_vec)
        model = tfl.ModelEnd(fb)
        fb.Finish(model, file_identifier=b"TFL3")
        return bytes(fb.Output())

    @staticmethod
    def _sparsity(fb, tfl, t):
        """SparsityParameters of a CSR tensor: dimension 0 dense, dimension 1 SPARSE_CSR."""
        def int32_vector(values):
            vec = fb.CreateNumpyVector(np.asarray(values, dtype=np.int32))
            tfl.Int32VectorStart(fb)
            tfl.Int32VectorAddValues(fb, vec)
            return tfl.Int32VectorEnd(fb)
        segments, indices = (int32_vector(v) for v in t.csr)
        tfl.DimensionMetadataStart(fb)
        tfl.DimensionMetadataAddFormat(fb, tfl.DimensionType.DENSE)
        tfl.DimensionMetadataAddDenseSize(fb, t.shape[0])
        dims = [tfl.DimensionMetadataEnd(fb)]
        tfl.DimensionMetadataStart(fb)
        tfl.DimensionMetadataAddFormat(fb, tfl.DimensionType.SPARSE_CSR)
        tfl.DimensionMetadataAddArraySegmentsType(fb, tfl.SparseIndexVector.Int32Vector)
        tfl.DimensionMetadataAddArraySegments(fb, segments)
        tfl.DimensionMetadataAddArrayIndicesType(fb, tfl.SparseIndexVector.Int32Vector)
        tfl.DimensionMetadataAddArrayIndices(fb, indices)
        dims.append(tfl.DimensionMetadataEnd(fb))
        order = fb.CreateNumpyVector(np.asarray([0, 1], dtype=np.int32))
        dim_vec = TfliteWriter._offsets(fb, tfl.SparsityParametersStartDimMetadataVector, dims)
        tfl.SparsityParametersStart(fb)
        tfl.SparsityParametersAddTraversalOrder(fb, order)
        tfl.SparsityParametersAddDimMetadata(fb, dim_vec)
        return tfl.SparsityParametersEnd(fb)

    @staticmethod
    def _offsets(fb, start, offs):
        start(fb, len(offs))
        for o in reversed(offs):
            fb.PrependUOffsetTRelative(o)
        return fb.EndVector()

    @staticmethod
    def _options(fb, tfl, op):
        table = op.options_table
        # vectors first: a table cannot be open while a vector is built
        vectors = {}
        for key, val in op.options.items():
            if isinstance(val, (list, tuple, np.ndarray)):
                start = getattr(tfl, f"{table}Start{_camel(key)}Vector", None)
                if start is None:
                    raise ValueError(f"{op.opname}: {table} has no vector field {key!r}")
                vals = [int(v) for v in val]
                start(fb, len(vals))
                for v in reversed(vals):
                    fb.PrependInt32(v)
                vectors[key] = fb.EndVector()
        getattr(tfl, f"{table}Start")(fb)
        for key, val in op.options.items():
            add = getattr(tfl, f"{table}Add{_camel(key)}", None)
            if add is None:
                raise ValueError(f"{op.opname}: {table} has no field {key!r}")
            if key in vectors:
                add(fb, vectors[key])
            elif key in _ENUM_FIELDS:
                enum = getattr(tfl, _ENUM_FIELDS[key])
                add(fb, getattr(enum, val.upper()) if isinstance(val, str) else int(val))
            elif key in _FLOAT_FIELDS:
                add(fb, float(val))
            elif key in _BOOL_FIELDS:
                add(fb, bool(val))
            else:
                add(fb, int(val))
        return getattr(tfl, f"{table}End")(fb)
