"""The imported, quantized model, cached in build/ by the content hash of its inputs.

Every scons call plans the whole graph while reading the SConstruct, a no-op call too.
Importing ONNX (and calibrating a float model) costs seconds for resnet18; loading the
pickled IR costs milliseconds. The key covers everything the import reads: the model
bytes (or the zoo generator's code and arguments), the input shape, calibration
settings and files, and the frontend code itself, so a stale cache is never trusted.
"""
from __future__ import annotations

import glob
import os
import pickle

from .. import ops
from ..errors import ModelError
from ..fileio import file_digest, write_if_changed
from ..overlap import in_turn
from ..resources import zoo
from .keys import digest
from .zoo_cache import code_digest, zoo_code_digest

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE_VERSION = 1


def _source_digest(path: str) -> str:
    if os.path.isdir(path):
        files = sorted(f for f in glob.glob(os.path.join(path, "**", "*"), recursive=True)
                       if os.path.isfile(f))
        return digest([os.path.relpath(f, path) for f in files], *[file_digest(f) for f in files])
    return file_digest(path)


def cache_key(model_cfg, root: str) -> str:
    frontend = code_digest([os.path.join(_PKG, d, "**", "*.py") for d in ("frontends", "passes", "ops", "opkit")]
                            + [os.path.join(_PKG, "ir.py"), os.path.join(_PKG, "numerics.py")])
    if model_cfg.zoo:
        source = ["zoo", model_cfg.zoo, model_cfg.seed, zoo_code_digest()]
    else:
        source = ["file", _source_digest(model_cfg.source), model_cfg.fmt]
    calib = dict(model_cfg.calibration or {})
    calib_files = [file_digest(f) for f in calib.get("files", [])]
    return digest(CACHE_VERSION, source, list(model_cfg.input_shape or []),
                  sorted(calib.items(), key=lambda kv: kv[0]), calib_files, frontend,
                  model_cfg.float_source)


def load_graph(model_cfg, root: str, model_dir: str, cache_path: str, meanwhile=None):
    """Return the IR graph for model_cfg, importing it only when the cache is stale.
    meanwhile: called while the zoo generator runs or, for a model file, while onnxruntime
    calibrates it (frontends.load_model); not called when the cache is fresh."""
    key = cache_key(model_cfg, root)
    try:
        with open(cache_path, "rb") as f:
            cached = pickle.load(f)
        if cached.get("key") == key:
            return cached["graph"]
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, KeyError):
        pass  # missing or from another version of the code: import again

    from . import zoo_cache
    source, fmt, generated, weights = model_cfg.source, model_cfg.fmt or "auto", None, None
    if model_cfg.zoo:
        source = zoo_cache.model_path(model_dir, model_cfg.zoo)
        fmt = zoo().model_format(model_cfg.zoo)
        fmt = "auto" if fmt == "onnx" else fmt
        # the frontends imported and the caller's work done while the generator runs on
        # another thread (and onnxruntime, for the calibration of an ONNX model)
        beside = in_turn(_import_frontends, meanwhile, _import_calibration if fmt == "auto" else None)
        generated = zoo_cache.materialize_async(model_cfg.zoo, model_cfg.seed,
                                                model_cfg.input_shape, source, meanwhile=beside)
        meanwhile = in_turn()    # calibrated beside all the same: this thread runs passes too
        weights = zoo_cache.generated_weights(model_cfg.zoo, model_cfg.seed, model_cfg.input_shape,
                                              source)
    frontends = _import_frontends()
    graph = frontends.load_model(source, name=model_cfg.name, input_shape=model_cfg.input_shape,
                                 fmt=fmt, calibration=model_cfg.calibration, generated=generated,
                                 weights=weights, meanwhile=meanwhile)
    _check_requantization(graph, model_cfg.source or model_cfg.zoo)
    if model_cfg.float_source:
        graph.float_source = _given_float_source(graph, model_cfg)
    write_if_changed(cache_path, pickle.dumps({"key": key, "graph": graph}, protocol=5))
    return graph


def _import_frontends():
    from .. import frontends  # onnx/onnxruntime load only on a cache miss
    return frontends


def _import_calibration():
    """onnxruntime, which a zoo model's calibration needs next: loading its library (~25 ms)
    holds the GIL, so it is done while the generator still runs, not after it."""
    import onnxruntime  # noqa: F401


def _given_float_source(graph, model_cfg) -> dict:
    """`float_source:` of a quantized model: the float model its fidelity is measured
    against (builders/reports/fidelity.py); it must take the quantized model's input."""
    from ..frontends.onnx_file import read_onnx
    if getattr(graph, "float_source", None):
        raise ModelError(f"{model_cfg.source}: float_source applies to quantized models; this "
                         f"model is float, quantized here, and measured against itself already")
    shape = tuple((graph.model_layout or {}).get("input") or graph.tensor(graph.input).shape)
    f = read_onnx(model_cfg.float_source, shape)
    if tuple(f.input_shape) != shape:
        raise ModelError(f"{model_cfg.float_source}: the float model's input has shape "
                         f"{list(f.input_shape)}; the quantized model {model_cfg.source} takes "
                         f"{list(shape)}")
    return {"path": model_cfg.float_source, "input_shape": list(shape),
            "calibration": "the model's own quantization"}


def _check_requantization(graph, source) -> None:
    """Scales that no integer multiplier can express are the model's fault: say which layer."""
    for layer in graph.layers:
        try:
            ops.requant_params(layer, graph)
        except ValueError as e:
            raise ModelError(f"{source}: layer '{layer.name}' ({layer.op}): {e}; check the "
                             f"quantization scales of its input and output tensors") from None
