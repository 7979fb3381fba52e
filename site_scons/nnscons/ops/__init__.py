"""The op registry: everything the Python side knows about an op, in one module per op.

Each module in this folder (discovered by name, in sorted order) defines ``OPS``, a list of
OpDef, and may define ``CONVERTERS`` ({ONNX op type: converter}) for ONNX ops that become
ops defined elsewhere (ReduceMean -> global_avgpool), and ``TFLITE_CONVERTERS`` ({TFLite
builtin operator name: converter}) likewise for TFLite builtins (frontends/tflite_graph.py). An OpDef is either an IR op (``ir=True``: a Layer.op that the reference, the
targets and the QDQ export know) or a pre-IR kind that a pass removes or lowers
(``ir=False``: e.g. ``bn`` folded into a conv, ``clamp`` fused or lowered to ``requant``).

The rest of the code asks the registry (``get``, ``for_onnx``, ``ir_ops``) and never
compares op names; per target, an op is one entry in that target's op table
(targets/<kind>/ops.py).  What a planner needs to know about an op beyond its table entry
is a field or hook here (``window``, ``dense``, ``hwc_params``), so that a planner asks the
op's entry instead of its name; tests/test_op_names.py greps for a comparison of an op's
name outside ops/ and the op tables.

An op module imports from opkit/ (the floor below the registry, the frontends and the passes),
ops/_common.py, reference/, numerics and ir, never from frontends/ or passes/ (they import this
registry, which imports every op module: tests/test_import_cycles.py counts that edge).
"""
from __future__ import annotations

import importlib
import os
import pkgutil
from typing import Callable, Optional

from ..opkit.opdef import DONE, OpDef



_REGISTRY: dict = {}
_ONNX: dict = {}
_TFLITE: dict = {}


def _load() -> None:
    if _REGISTRY:
        return
    here = os.path.dirname(__file__)
    for mod in sorted(m.name for m in pkgutil.iter_modules([here])):
        if mod.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{mod}")
        for d in getattr(module, "OPS", ()):
            assert d.name not in _REGISTRY, f"op {d.name!r} registered twice"
            _REGISTRY[d.name] = d
            for op_type, fn in d.onnx.items():
                assert op_type not in _ONNX, f"ONNX op {op_type!r} registered twice"
                _ONNX[op_type] = fn
            for code, fn in d.tflite.items():
                assert code not in _TFLITE, f"TFLite op {code!r} registered twice"
                _TFLITE[code] = fn
        for op_type, fn in getattr(module, "CONVERTERS", {}).items():
            assert op_type not in _ONNX, f"ONNX op {op_type!r} registered twice"
            _ONNX[op_type] = fn
        for code, fn in getattr(module, "TFLITE_CONVERTERS", {}).items():
            assert code not in _TFLITE, f"TFLite op {code!r} registered twice"
            _TFLITE[code] = fn


def get(name: str) -> OpDef:
    _load()
    return _REGISTRY[name]


def find(name: str) -> Optional[OpDef]:
    _load()
    return _REGISTRY.get(name)


def all_ops() -> list:
    _load()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def ir_ops() -> tuple:
    """Every IR op name, sorted."""
    return tuple(d.name for d in all_ops() if d.ir)


def for_onnx(op_type: str) -> Optional[Callable]:
    """The converter of an ONNX op type, or None."""
    _load()
    return _ONNX.get(op_type)


def for_tflite(code: str) -> Optional[Callable]:
    """The converter of a TFLite builtin operator (its schema name, e.g. CONV_2D), or None."""
    _load()
    return _TFLITE.get(code)


def tflite_types() -> tuple:
    _load()
    return tuple(sorted(_TFLITE))


def onnx_types() -> tuple:
    _load()
    return tuple(sorted(_ONNX))


def ir_name(kind: str) -> str:
    """The IR op a pre-IR kind lowers to."""
    d = get(kind)
    return d.lowers_to or d.name


def requant_params(layer, graph) -> dict:
    d = get(layer.op)
    return d.requant(layer, graph) if d.requant else {}


def requant_counts(layer, graph) -> dict:
    d = get(layer.op)
    return d.counts(layer, graph) if d.counts else {}


def macs(layer, graph) -> int:
    d = get(layer.op)
    return int(d.macs(layer, graph)) if d.macs else 0


def has_window(layer) -> bool:
    """The layer slides a kernel window (its attrs hold kernel, stride, pads, dilation)."""
    return get(layer.op).window


def is_dense(layer) -> bool:
    """The layer is one GEMM over all its input channels (conv groups 1, linear)."""
    d = get(layer.op)
    return bool(d.dense and d.dense(layer))


def is_conv(layer) -> bool:
    """A convolution: weights over a sliding window."""
    d = get(layer.op)
    return d.window and d.weighted


def check(layer, graph):
    """Why no target can run this layer (a string), or None."""
    d = get(layer.op)
    return d.check(layer, graph) if d.check else None


__all__ = ["OpDef", "DONE", "get", "find", "all_ops", "ir_ops", "for_onnx", "onnx_types",
           "for_tflite", "tflite_types",
           "ir_name", "requant_params", "requant_counts", "macs", "has_window", "is_dense", "is_conv", "check"]
