"""Built-in model zoo: deterministic float32 ONNX generators and int8 TFLite networks
(no downloads).

Each generator module provides DEFAULT_INPUT_SHAPE, check_input_shape(shape) (raises
ValueError) and build(seed, input_shape) -> onnx.ModelProto. onnx is imported only
when a model is built: the manifest reads ZOO on every scons call, a no-op one too.
The tfl_* entries are int8 .tflite files written by nnscons.frontends.tflite_writer
(tfl_nets.py): their build returns the file's bytes, FORMAT says "tflite".
Same arguments -> byte-identical model, in any process.
"""
from __future__ import annotations

import importlib
import os
from collections.abc import Mapping

class _TflEntry:
    """A TFLite network of tfl_nets.py seen as a zoo generator (fixed input shape)."""
    FORMAT = "tflite"

    def __init__(self, name):
        from . import tfl_nets
        self.name = name
        self.DEFAULT_INPUT_SHAPE = tfl_nets.NETS[name].input_shape
        self.__doc__ = tfl_nets.NETS[name].doc

    def check_input_shape(self, shape) -> None:
        if tuple(shape) != tuple(self.DEFAULT_INPUT_SHAPE):
            raise ValueError(f"{self.name} is an int8 TFLite network with the fixed input "
                             f"shape {list(self.DEFAULT_INPUT_SHAPE)}")

    def build(self, seed, input_shape=None) -> bytes:
        from . import tfl_nets
        self.check_input_shape(input_shape or self.DEFAULT_INPUT_SHAPE)
        return tfl_nets.build(self.name, seed)


TFLITE = ("tfl_dscnn", "tfl_resnet8", "tfl_mobilenetv1_025", "tfl_autoencoder")

# mobilenetv1.VARIANTS's names (tests/test_zoo.py checks that they are)
MOBILENETV1 = ("mobilenetv1_100", "mobilenetv1_075", "mobilenetv1_050", "mobilenetv1_025")


def _generator(module: str, variant: str | None = None):
    def load():
        m = importlib.import_module(f"{__name__}.{module}")
        return m if variant is None else m.VARIANTS[variant]
    return load


class _Zoo(Mapping):
    """{name: generator}, each generator's module imported when its entry is first read:
    the manifest checks every call's names against the keys, and a build imports the one
    generator it runs, not the other dozen (about 0.08 s of a cold build's imports)."""

    def __init__(self, loaders: dict):
        self._loaders, self._loaded = loaders, {}

    def __getitem__(self, name):
        if name not in self._loaded:
            self._loaded[name] = self._loaders[name]()
        return self._loaded[name]

    def __iter__(self):
        return iter(self._loaders)

    def __len__(self):
        return len(self._loaders)

    def __contains__(self, name):
        return name in self._loaders


ZOO = _Zoo({"conv2dk14": _generator("conv2dk14"), "resnet18": _generator("resnet18"),
            "resnet50": _generator("resnet50"), "simplecnn": _generator("simplecnn"),
            **{name: _generator("mobilenetv1", name) for name in MOBILENETV1},
            "mobilenetv2": _generator("mobilenetv2"), "mobilenetv3": _generator("mobilenetv3"),
            "dscnn": _generator("dscnn"), "resnet8": _generator("resnet8"),
            "autoencoder": _generator("autoencoder"), "encdec": _generator("encdec"),
            "tcn": _generator("tcn"),
            **{name: (lambda name=name: _TflEntry(name)) for name in TFLITE}})


def model_format(name: str) -> str:
    """The frontend format of a zoo model's file: "onnx" or "tflite"."""
    return getattr(_module(name), "FORMAT", "onnx")


def model_file(name: str) -> str:
    """The file name a zoo model is written to in its build folder."""
    return "model.tflite" if model_format(name) == "tflite" else "model.onnx"


def _module(name: str):
    if name not in ZOO:
        raise ValueError(f"unknown zoo model {name!r}; expected one of: {', '.join(sorted(ZOO))}")
    return ZOO[name]


def build(name: str, seed: int = 0, input_shape=None):
    """The model as an onnx.ModelProto; input_shape None = the model's default."""
    module = _module(name)
    return module.build(seed, tuple(input_shape or module.DEFAULT_INPUT_SHAPE))


def build_with_weights(name: str, seed: int = 0, input_shape=None):
    """(build()'s model, {initializer name: the read-only float32 array it was written
    from}) for an importer that would otherwise decode every weight from the proto again
    (resnet18: 47 MB); {} when the model is not a Builder's (a .tflite network's bytes)."""
    from . import _graph
    with _graph.collecting() as builders:
        model = build(name, seed, input_shape)
    return model, next((b.arrays for b in builders if b.proto is model), {})


def write(name: str, seed: int, input_shape, path) -> bool:
    """Write the model to path unless the file already holds these bytes (atomically, so a
    parallel reader never sees half a model). Returns True if the file was (re)written."""
    from nnscons.fileio import write_if_changed
    model = build(name, seed, input_shape)
    data = model if isinstance(model, bytes) else model.SerializeToString(deterministic=True)
    return write_if_changed(os.fspath(path), data)
