"""Post-training quantization of a float ONNX model: activation ranges from onnxruntime.

Every IR tensor is observed by running the float model with that tensor added as a graph
output; per-tensor min/max over all samples (widened to include 0) gives asymmetric int8
params. Weights and biases are quantized later, when lowering (passes/quantize.py).
"""
from __future__ import annotations


import numpy as np
import onnx

from .. import ops
from ..errors import ModelError
from ..passes.opgraph import OpGraph
from ..passes.quantize import inherit_qparams, minmax_qparams
from .onnx_file import OnnxFile, cap_ir_version

DEFAULT_COUNT = 8
DEFAULT_SEED = 0
# the same on every machine: onnxruntime splits a conv's outputs between threads, never its
# sums, so the ranges equal one thread's (tests/test_frontend_onnx.py checks it)
THREADS = 2


def _arrays(path: str, files):
    """(file label, array) of every .npy file and of every array in an .npz."""
    for name in files:
        name = str(name)
        try:
            data = np.load(name, allow_pickle=False)
            if isinstance(data, np.lib.npyio.NpzFile):
                with data:
                    arrays = [(f"{name}[{k}]", data[k]) for k in sorted(data.files)]
            else:
                arrays = [(name, data)]
        except Exception as e:
            raise ModelError(f"{path}: cannot read calibration file {name!r} "
                             f"({type(e).__name__}: {e})") from None
        yield from arrays


def _file_samples(path: str, files, shape: tuple) -> list:
    samples = []
    for npy, arr in _arrays(path, files):
        if arr.dtype.kind != "f":
            raise ModelError(f"{path}: calibration file {npy!r} has dtype {arr.dtype}; "
                             f"float32 samples are expected")
        if arr.shape == shape[1:]:
            arr = arr[None]
        elif arr.ndim != len(shape) or arr.shape[1:] != shape[1:] or len(arr) == 0:
            raise ModelError(f"{path}: calibration file {npy!r} has shape {arr.shape}; "
                             f"expected one sample {shape[1:]} or a batch (N,) + {shape[1:]}")
        samples.extend(arr[i:i + 1].astype(np.float32) for i in range(len(arr)))
    return samples


def calibration_samples(path: str, shape: tuple, calibration) -> list:
    cal = dict(calibration or {})
    unknown = set(cal) - {"files", "count", "seed"}
    if unknown:
        raise ModelError(f"{path}: unknown calibration keys {sorted(unknown)}; "
                         f"use files, count, seed")
    if cal.get("files"):
        return _file_samples(path, cal["files"], shape)
    try:
        count, seed = int(cal.get("count", DEFAULT_COUNT)), int(cal.get("seed", DEFAULT_SEED))
    except (TypeError, ValueError):
        raise ModelError(f"{path}: calibration count and seed must be integers") from None
    if count < 1:
        raise ModelError(f"{path}: calibration count must be at least 1, got {count}")
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


def _observer_model(f: OnnxFile, tensors: list) -> bytes:
    """The float model with a concrete input shape and `tensors` as its outputs."""
    proto = onnx.ModelProto()
    proto.CopyFrom(f.proto)
    cap_ir_version(proto)
    graph = proto.graph
    (inp,) = [i for i in graph.input if i.name == f.input]
    inp.type.tensor_type.shape.Clear()
    for d in f.input_shape:
        inp.type.tensor_type.shape.dim.add().dim_value = d
    for node in graph.node:   # onnxruntime rejects duplicate node names; it needs none
        node.name = ""
    del graph.output[:]
    graph.output.extend(onnx.helper.make_tensor_value_info(t, onnx.TensorProto.FLOAT, None)
                        for t in tensors)
    return proto.SerializeToString()


def calibrate(f: OnnxFile, g: OpGraph, samples: list, only=None) -> None:
    """Fill g.qparams for the input and every op output from min/max over `samples`
    (only: just these tensors, keeping the model's other parameters)."""
    import onnxruntime as ort

    observed = [op.output for op in g.ops if not ops.get(op.kind).calib_inherit]
    if only is not None:
        observed = [t for t in only]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = THREADS
    opts.log_severity_level = 3
    try:
        if observed:
            sess = ort.InferenceSession(_observer_model(f, observed), opts,
                                        providers=["CPUExecutionProvider"])
            runs = [sess.run(observed, {f.input: x}) for x in samples]
        else:           # only range-preserving ops: the input's range is every range
            runs = []
    except Exception as e:
        raise ModelError(f"{f.path}: onnxruntime cannot run the float model for calibration "
                         f"({type(e).__name__}: {e})") from None
    ranges = {} if only is not None else {g.input: [np.stack(samples)]}
    for outs in runs:
        for t, v in zip(observed, outs):
            ranges.setdefault(t, []).append(v)
    got = {t: minmax_qparams(min(v.min() for v in vs), max(v.max() for v in vs))
           for t, vs in ranges.items()}
    if only is not None:
        g.qparams.update(got)
    else:
        g.qparams = got
    inherit_qparams(g)
