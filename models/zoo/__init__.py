"""Built-in model zoo: deterministic float32 ONNX generators (no downloads).

Each generator module provides DEFAULT_INPUT_SHAPE, check_input_shape(shape) (raises
ValueError) and build(seed, input_shape) -> onnx.ModelProto. onnx is imported only
when a model is built: the manifest reads ZOO on every scons call, a no-op one too.
Same arguments -> byte-identical model, in any process.
"""
from __future__ import annotations

import os

from . import (autoencoder, conv2dk14, dscnn, encdec, mobilenetv1, mobilenetv2, mobilenetv3, resnet8,
               resnet18, simplecnn, tcn)

ZOO = {"conv2dk14": conv2dk14, "resnet18": resnet18, "simplecnn": simplecnn, **mobilenetv1.VARIANTS,
       "mobilenetv2": mobilenetv2, "mobilenetv3": mobilenetv3, "dscnn": dscnn, "resnet8": resnet8,
       "autoencoder": autoencoder, "encdec": encdec, "tcn": tcn}


def _module(name: str):
    if name not in ZOO:
        raise ValueError(f"unknown zoo model {name!r}; expected one of: {', '.join(sorted(ZOO))}")
    return ZOO[name]


def build(name: str, seed: int = 0, input_shape=None):
    """The model as an onnx.ModelProto; input_shape None = the model's default."""
    module = _module(name)
    return module.build(seed, tuple(input_shape or module.DEFAULT_INPUT_SHAPE))


def write(name: str, seed: int, input_shape, path) -> bool:
    """Write the model to path unless the file already holds these bytes (atomically, so a
    parallel reader never sees half a model). Returns True if the file was (re)written."""
    from nnscons.fileio import write_if_changed
    return write_if_changed(os.fspath(path), build(name, seed, input_shape).SerializeToString(deterministic=True))
