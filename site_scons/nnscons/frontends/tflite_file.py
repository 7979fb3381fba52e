"""Read and validate a .tflite flatbuffer (the `tflite` package's generated reader, never
TensorFlow): every problem becomes a ModelError naming the file and the operator."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..errors import ModelError

# TensorType -> numpy dtype name (the types nnscons reads; others are named in errors)
DTYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 6: "bool",
          7: "int16", 9: "int8", 10: "float64"}


@dataclass
class TflTensor:
    index: int
    name: str
    shape: tuple
    dtype: str                              # numpy name, or "type<N>" for the unsupported
    scale: Optional[np.ndarray] = None      # float64 (values of the file's float32), or None
    zero_point: Optional[np.ndarray] = None  # int64
    quantized_dimension: int = 0
    data: Optional[np.ndarray] = None       # constant contents in `shape`, or None
    sparse: bool = False                    # stored in TFLite's sparse format (not decoded)

    @property
    def quantized(self) -> bool:
        return self.scale is not None and self.scale.size > 0

    @property
    def is_const(self) -> bool:
        return self.data is not None


@dataclass
class TflOp:
    index: int
    code: str                     # builtin operator name as in the schema (CONV_2D, ...)
    inputs: list                  # tensor indices (-1: an omitted optional input)
    outputs: list
    options: dict = field(default_factory=dict)
    version: int = 1

    @property
    def label(self) -> str:
        """The layer name: the operator and its position in the file."""
        return f"{self.code.lower()}_{self.index}"


@dataclass
class TfliteFile:
    path: str
    tensors: list
    ops: list
    inputs: list                  # tensor indices
    outputs: list
    description: str = ""


def _code_names() -> dict:
    import tflite
    return {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}


def _options_class(type_id: int):
    import importlib
    import tflite
    names = {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}
    name = names.get(type_id)
    if not name or name == "NONE":
        return None
    try:
        return getattr(importlib.import_module(f"tflite.{name}"), name)
    except (ImportError, AttributeError):
        return None


def _options(op) -> dict:
    """The operator's builtin options as {field name in snake_case: value}."""
    cls = _options_class(op.BuiltinOptionsType())
    table = op.BuiltinOptions()
    if cls is None or table is None:
        return {}
    obj = cls()
    obj.Init(table.Bytes, table.Pos)
    out = {}
    for attr in dir(cls):
        if attr.startswith("_") or attr in ("Init",) or attr.startswith("GetRootAs") \
                or attr.endswith("BufferHasIdentifier"):
            continue
        fn = getattr(obj, attr)
        if attr.endswith("AsNumpy"):
            v = fn()
            out[_snake(attr[:-len("AsNumpy")])] = [] if isinstance(v, int) else [int(x) for x in v]
        elif attr.endswith(("Length", "IsNone")) or hasattr(obj, attr + "AsNumpy"):
            continue
        else:
            try:
                out[_snake(attr)] = fn()
            except TypeError:     # a method that takes an index (vectors are read AsNumpy)
                continue
    return out


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and (not name[i - 1].isupper() or
                                   (i + 1 < len(name) and name[i + 1].islower())):
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def _buffer_data(model, raw: bytes, index: int):
    buf = model.Buffers(index)
    if buf is None:
        return None
    offset, size = (buf.Offset(), buf.Size()) if hasattr(buf, "Offset") else (0, 0)
    if offset > 1 and size:          # large models keep buffers after the flatbuffer
        return raw[offset:offset + size]
    data = buf.DataAsNumpy()
    if isinstance(data, int) or len(data) == 0:
        return None
    return data.tobytes()


def _tensor(model, raw, t, index: int, path: str) -> TflTensor:
    name = (t.Name() or b"").decode("utf-8", "replace") or f"tensor_{index}"
    shape = t.ShapeAsNumpy()
    shape = () if isinstance(shape, int) else tuple(int(d) for d in shape)
    dtype = DTYPES.get(t.Type(), f"type{t.Type()}")
    tensor = TflTensor(index, name, shape, dtype)
    q = t.Quantization()
    if q is not None:
        scale, zp = q.ScaleAsNumpy(), q.ZeroPointAsNumpy()
        if not isinstance(scale, int) and len(scale):
            tensor.scale = np.asarray(scale, dtype=np.float32).astype(np.float64)
            tensor.zero_point = (np.zeros(tensor.scale.size, np.int64) if isinstance(zp, int)
                                 else np.asarray(zp, dtype=np.int64))
            tensor.quantized_dimension = int(q.QuantizedDimension())
    if t.Sparsity() is not None:
        # the buffer holds only the stored values (DENSIFY or a sparse kernel expands them),
        # so its size never matches the shape: read_tflite names the operator that reads it
        tensor.sparse = True
        return tensor
    data = _buffer_data(model, raw, t.Buffer())
    if data is not None:
        if dtype not in DTYPES.values():
            raise ModelError(f"{path}: constant tensor #{index} {name!r} has type {dtype}, "
                             f"which nnscons cannot read")
        arr = np.frombuffer(data, dtype=np.dtype(dtype).newbyteorder("<"))
        count = int(np.prod(shape)) if shape else 1
        if arr.size != count:
            raise ModelError(f"{path}: constant tensor #{index} {name!r} holds {arr.size} "
                             f"values for shape {list(shape)}; the file is corrupt -- export "
                             f"it again")
        tensor.data = arr.astype(np.dtype(dtype)).reshape(shape)
    return tensor


def read_tflite(path: str) -> TfliteFile:
    if not os.path.isfile(path):
        raise ModelError(f"{path}: model file not found")
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8 or raw[4:8] != b"TFL3":
        raise ModelError(f"{path}: not a TFLite flatbuffer (no 'TFL3' identifier); the file is "
                         f"corrupt, truncated or of another format")
    import tflite
    try:
        model = tflite.Model.GetRootAsModel(raw, 0)
        n_sub = model.SubgraphsLength()
        if n_sub != 1:
            raise ModelError(f"{path}: the model has {n_sub} subgraphs; nnscons imports models "
                             f"with exactly one (no control flow: WHILE/IF/CALL_ONCE)")
        sg = model.Subgraphs(0)
        codes = _code_names()
        opcodes = []
        for i in range(model.OperatorCodesLength()):
            oc = model.OperatorCodes(i)
            code = max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode()))
            name = codes.get(code, f"BUILTIN_{code}")
            if name == "CUSTOM":
                custom = (oc.CustomCode() or b"").decode("utf-8", "replace")
                name = f"CUSTOM:{custom}"
            opcodes.append((name, int(oc.Version())))
        tensors = [_tensor(model, raw, sg.Tensors(i), i, path) for i in range(sg.TensorsLength())]
        ops = []
        for i in range(sg.OperatorsLength()):
            op = sg.Operators(i)
            name, version = opcodes[op.OpcodeIndex()]
            ins = op.InputsAsNumpy()
            outs = op.OutputsAsNumpy()
            ops.append(TflOp(i, name, [] if isinstance(ins, int) else [int(x) for x in ins],
                             [] if isinstance(outs, int) else [int(x) for x in outs],
                             _options(op), version))
        inputs = [int(x) for x in sg.InputsAsNumpy()]
        outputs = [int(x) for x in sg.OutputsAsNumpy()]
        description = (model.Description() or b"").decode("utf-8", "replace")
    except ModelError:
        raise
    except Exception as e:  # noqa: BLE001 - a damaged flatbuffer fails anywhere in the reader
        raise ModelError(f"{path}: cannot read the TFLite file ({type(e).__name__}: {e}); the "
                         f"file is corrupt or truncated -- export it again") from None
    if not ops:
        raise ModelError(f"{path}: the TFLite model has no operators")
    for t in inputs + outputs + [x for op in ops for x in op.inputs + op.outputs if x >= 0]:
        if not 0 <= t < len(tensors):
            raise ModelError(f"{path}: tensor index {t} is out of range ({len(tensors)} "
                             f"tensors); the file is corrupt -- export it again")
    for op in ops:
        for t in (x for x in op.inputs if x >= 0 and tensors[x].sparse):
            raise ModelError(f"{path}: operator #{op.index} {op.code} reads tensor #{t} "
                             f"{tensors[t].name!r}, stored in TFLite's sparse format; nnscons "
                             f"reads dense constants only (convert the model without sparsity)")
    return TfliteFile(path, tensors, ops, inputs, outputs, description)
