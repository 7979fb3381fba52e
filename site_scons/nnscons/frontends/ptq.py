"""Post-training quantization of a float ONNX model: activation ranges from onnxruntime.

Every IR tensor is observed by running the float model with that tensor added as a graph
output; per-tensor min/max over all samples (widened to include 0) gives asymmetric int8
params. Weights and biases are quantized later, when lowering (passes/quantize.py).
"""
from __future__ import annotations

import threading

import numpy as np
import onnx

from .. import ops
from ..errors import ModelError
from ..overlap import beside, in_turn
from ..opkit.opgraph import OpGraph
from ..passes.quantize import inherit_qparams, inherit_qparams_backward, minmax_qparams
from .onnx_file import OnnxFile, cap_ir_version

DEFAULT_COUNT = 8
DEFAULT_SEED = 0
# the same on every machine: onnxruntime splits a conv's outputs between threads, never its
# sums, so the ranges equal one thread's (tests/test_frontend_onnx.py checks it)
THREADS = 2
# beside the caller's own work (calibrate's meanwhile): one thread, so that the two share a
# 2-core machine without onnxruntime's spinning workers waiting on the caller's core
BESIDE_THREADS = 1
# up to this many samples onnxruntime runs the graph as written (no fusions, no NCHWc
# layout): its session then costs 0.08 s instead of 0.18-0.23 s (resnet18, a fresh process,
# Zen 4), more than its passes lose (4 samples: 0.31 s against 0.40 s in sum); a larger set
# amortizes the optimized session.  The ranges agree to ~1e-6 relative either way.
UNOPTIMIZED_MAX_SAMPLES = 8


def _arrays(path: str, files):
    """(file label, key in its .npz or None, array) of every .npy file and of every array in
    an .npz."""
    for name in files:
        name = str(name)
        try:
            data = np.load(name, allow_pickle=False)
            if isinstance(data, np.lib.npyio.NpzFile):
                with data:
                    arrays = [(f"{name}[{k}]", k, data[k]) for k in sorted(data.files)]
            else:
                arrays = [(name, None, data)]
        except Exception as e:
            raise ModelError(f"{path}: cannot read calibration file {name!r} "
                             f"({type(e).__name__}: {e})") from None
        yield from arrays


def _file_samples(path: str, files, shape: tuple) -> list:
    samples = []
    for label, _, arr in _arrays(path, files):
        samples.extend(_as_samples(path, label, arr, shape))
    return samples


def _options(path: str, calibration) -> tuple:
    """(files, None, None) or (None, count, seed) of a calibration mapping, checked."""
    cal = dict(calibration or {})
    unknown = set(cal) - {"files", "count", "seed"}
    if unknown:
        raise ModelError(f"{path}: unknown calibration keys {sorted(unknown)}; "
                         f"use files, count, seed")
    if cal.get("files"):
        return cal["files"], None, None
    try:
        count, seed = int(cal.get("count", DEFAULT_COUNT)), int(cal.get("seed", DEFAULT_SEED))
    except (TypeError, ValueError):
        raise ModelError(f"{path}: calibration count and seed must be integers") from None
    if count < 1:
        raise ModelError(f"{path}: calibration count must be at least 1, got {count}")
    return None, count, seed


def calibration_samples(path: str, shape: tuple, calibration) -> list:
    files, count, seed = _options(path, calibration)
    if files:
        return _file_samples(path, files, shape)
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


def calibration_feeds(f: OnnxFile, calibration) -> list:
    """One {input name: float32 array} per calibration sample. A model with several inputs
    takes .npz files keyed by input name (each array one sample or a batch), or random
    normal samples of every input."""
    names, shapes = list(f.inputs or (f.input,)), list(f.input_shapes or (f.input_shape,))
    if len(names) == 1:
        return [{names[0]: x} for x in calibration_samples(f.path, shapes[0], calibration)]
    files, count, seed = _options(f.path, calibration)
    if not files:
        rng = np.random.default_rng(seed)
        return [{n: rng.standard_normal(s).astype(np.float32) for n, s in zip(names, shapes)}
                for _ in range(count)]
    feeds = []
    for name in files:
        per_input = {key: (label, arr) for label, key, arr in _arrays(f.path, [name])}
        if set(per_input) != set(names):
            raise ModelError(f"{f.path}: calibration file {str(name)!r} holds {sorted(k for k in per_input if k)}; "
                             f"a model with inputs {names} takes .npz files with one array per input name")
        batches = [_as_samples(f.path, *per_input[n], s) for n, s in zip(names, shapes)]
        if len({len(b) for b in batches}) != 1:
            raise ModelError(f"{f.path}: calibration file {str(name)!r}: the inputs' arrays hold "
                             f"different numbers of samples ({[len(b) for b in batches]})")
        feeds += [dict(zip(names, xs)) for xs in zip(*batches)]
    return feeds


def _as_samples(path, label, arr, shape) -> list:
    if arr.dtype.kind != "f":
        raise ModelError(f"{path}: calibration file {label!r} has dtype {arr.dtype}; float32 "
                         f"samples are expected")
    if arr.shape == tuple(shape[1:]):
        arr = arr[None]
    elif arr.ndim != len(shape) or arr.shape[1:] != tuple(shape[1:]) or len(arr) == 0:
        raise ModelError(f"{path}: calibration file {label!r} has shape {arr.shape}; "
                         f"expected one sample {tuple(shape[1:])} or a batch (N,) + {tuple(shape[1:])}")
    return [arr[i:i + 1].astype(np.float32) for i in range(len(arr))]


def _observer_model(f: OnnxFile, tensors: list, batch_dim: bool = False) -> bytes:
    """The float model with concrete input shapes and `tensors` as its outputs (batch_dim:
    the inputs' first dimension symbolic, for one batched pass over the samples)."""
    proto = onnx.ModelProto()
    proto.CopyFrom(f.proto)
    cap_ir_version(proto)
    graph = proto.graph
    shapes = dict(zip(f.inputs or (f.input,), f.input_shapes or (f.input_shape,)))
    for inp in graph.input:
        if inp.name not in shapes:
            continue
        inp.type.tensor_type.shape.Clear()
        for i, d in enumerate(shapes[inp.name]):
            dim = inp.type.tensor_type.shape.dim.add()
            if batch_dim and i == 0:
                dim.dim_param = "calibration_batch"
            else:
                dim.dim_value = d
    for node in graph.node:   # onnxruntime rejects duplicate node names; it needs none
        node.name = ""
    del graph.output[:]
    graph.output.extend(onnx.helper.make_tensor_value_info(t, onnx.TensorProto.FLOAT, None)
                        for t in tensors)
    return proto.SerializeToString()


def _copy_fields(dst, src, skip: str) -> None:
    """dst := src's fields but `skip` (a shallow message copy that leaves out one field)."""
    for fd, value in src.ListFields():
        if fd.name == skip:
            continue
        repeated = getattr(fd, "is_repeated", None)      # protobuf >= 5; `label` before
        if repeated is None:
            repeated = fd.label == fd.LABEL_REPEATED
        if repeated:
            getattr(dst, fd.name).extend(value)
        elif fd.message_type is not None:
            getattr(dst, fd.name).CopyFrom(value)
        else:
            setattr(dst, fd.name, value)


# float weights at least this large go to onnxruntime as arrays, not inside the model bytes
_EXTERNAL_MIN_BYTES = 4096


def _observer_parts(f: OnnxFile, tensors: list, batch_dim: bool = False) -> tuple:
    """(model bytes, weight names, weight arrays) of _observer_model(f, tensors, batch_dim)
    whose large float weights are handed over as arrays (SessionOptions.add_external_initializers):
    the model is neither deep-copied nor serialized with its weights (for resnet18, 47 MB
    twice).  onnxruntime computes the same values either way (tests/test_calibration_batch.py).
    Python work that holds the GIL: made before onnxruntime's thread starts, which then
    holds it only briefly."""
    import sys
    source = f.proto
    light = onnx.ModelProto()
    _copy_fields(light, source, "graph")
    _copy_fields(light.graph, source.graph, "initializer")
    names, arrays = [], []
    for init in source.graph.initializer:
        if (sys.byteorder == "little" and init.data_type == onnx.TensorProto.FLOAT
                and init.HasField("raw_data")
                and 4 * int(np.prod(init.dims)) >= _EXTERNAL_MIN_BYTES):
            header = light.graph.initializer.add()
            _copy_fields(header, init, "raw_data")
            header.data_location = onnx.TensorProto.EXTERNAL
            del header.external_data[:]
            entry = header.external_data.add()
            entry.key, entry.value = "location", "nnscons-calibration-weights"
            names.append(init.name)
            # the walker's decoded array (its raw_data is copied out of the proto once)
            arrays.append(np.ascontiguousarray(f.initializer_array(init), np.float32))
        else:
            light.graph.initializer.add().CopyFrom(init)
    model = _observer_model(OnnxFile(f.path, light, f.input, f.output, f.input_shape, f.opset,
                                     f.inputs, f.input_shapes, f.outputs, f.decoded), tensors, batch_dim)
    return model, names, arrays


def _observer_session(parts: tuple, opts):
    """An onnxruntime session of _observer_parts' model (its creation releases the GIL)."""
    import onnxruntime as ort
    model, names, arrays = parts
    if names:
        values = [ort.OrtValue.ortvalue_from_numpy(a) for a in arrays]
        opts.add_external_initializers(names, values)
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    sess._nnscons_weights = (arrays, values) if names else None    # alive as long as the session
    return sess


# At most this many samples go through onnxruntime in one batched pass (memory: every
# observed tensor of every sample in the batch is held at once).
BATCH = 8
# ONNX ops that may mix the samples of a batch along axis 0 while keeping every shape
# per-sample (which the shape check after a batched pass would not see)
_AXIS_OPS = ("Softmax", "LogSoftmax", "Hardmax", "LayerNormalization")
_MIXING_OPS = {"CumSum", "Size", "Einsum", "LSTM", "GRU", "RNN", "Scan", "Loop", "If", "Unique",
               "NonZero", "TopK", "Compress", "ReverseSequence", "Multinomial"}


def _batchable(f: OnnxFile, g: OpGraph, observed: list) -> bool:
    """Whether one batched pass (samples stacked on axis 0) computes what one pass per
    sample does: every input and observed tensor has batch 1 on axis 0, and no node can mix
    samples along axis 0 (the shapes of the batched outputs are checked again after it)."""
    try:
        return _batch_safe(f, g, observed)
    except Exception:          # noqa: BLE001 - an odd attribute: the per-sample passes judge it
        return False


def _batch_safe(f: OnnxFile, g: OpGraph, observed: list) -> bool:
    shapes = list(f.input_shapes or (f.input_shape,))
    if any(not s or s[0] != 1 for s in shapes):
        return False
    if any(not g.shapes.get(t) or g.shapes[t][0] != 1 for t in observed):
        return False
    opset = max((o.version for o in f.proto.opset_import if o.domain in ("", "ai.onnx")), default=13)
    for node in f.proto.graph.node:
        if node.domain not in ("", "ai.onnx") or node.op_type in _MIXING_OPS:
            return False
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type in _AXIS_OPS:
            default = -1 if node.op_type == "LayerNormalization" or opset >= 13 else 1
            axis = attrs.get("axis", default)
            rank = len(g.shapes.get(node.input[0]) or ())
            if axis == 0 or axis < 0 and (not rank or axis + rank <= 0):
                return False
        if node.op_type == "Transpose" and list(attrs.get("perm", [1]))[:1] != [0]:
            return False
        if node.op_type == "BatchNormalization" and attrs.get("training_mode", 0):
            return False
    return True


def _options_copy(opts):
    """A fresh SessionOptions like opts (external initializers are added to one per session)."""
    import onnxruntime as ort
    new = ort.SessionOptions()
    new.intra_op_num_threads = opts.intra_op_num_threads
    new.log_severity_level = opts.log_severity_level
    new.graph_optimization_level = opts.graph_optimization_level
    return new


class _BatchedPasses:
    """Batched passes over `samples` with the session of `parts` (_observer_parts with
    batch_dim), in chunks that two threads can run at once on the one session (onnxruntime's
    Run is thread-safe and releases the GIL): the calibration thread creates the session and
    runs chunks (run()); the caller, once its own work beside it is done, runs chunks too
    (help()) instead of waiting.  On a quiet 2-core machine that halves the passes (resnet18,
    4 samples: 0.105 against 0.213 s, Zen 4); on a busy one the same work is merely shared."""

    def __init__(self, parts: tuple, opts, observed: list, samples: list, g: OpGraph):
        self.parts, self.opts, self.observed, self.g = parts, opts, observed, g
        size = min(BATCH, -(-len(samples) // 2))
        self.chunks = [samples[i:i + size] for i in range(0, len(samples), size)]
        self.outs = [None] * len(self.chunks)
        self.next = 0
        self.busy = 0
        self.lock = threading.Condition()
        self.ready = threading.Event()
        self.session = None

    def run(self):
        """[(min, max) of each observed tensor] of every chunk, or None when onnxruntime
        refuses the batch or an output's shape is not the per-sample one times the batch (a
        model whose graph fixes batch 1 somewhere): then one pass per sample."""
        try:
            self.session = _observer_session(self.parts, _options_copy(self.opts))
        except Exception:          # noqa: BLE001 - the per-sample session says what is wrong
            return None
        finally:
            self.ready.set()
        self._take_chunks()
        with self.lock:
            self.lock.wait_for(lambda: self.busy == 0)
        return None if any(o is None for o in self.outs) else self.outs

    def help(self) -> None:
        self.ready.wait()
        if self.session is not None:
            self._take_chunks()

    def _take_chunks(self) -> None:
        while True:
            with self.lock:
                if self.next == len(self.chunks):
                    return
                i, self.next = self.next, self.next + 1
                self.busy += 1
            try:
                self.outs[i] = self._pass(self.chunks[i])
            finally:
                with self.lock:
                    self.busy -= 1
                    self.lock.notify_all()

    def _pass(self, chunk: list):
        feed = {name: np.concatenate([s[name] for s in chunk]) for name in chunk[0]}
        try:
            outs = self.session.run(self.observed, feed)
        except Exception:          # noqa: BLE001 - a fixed batch of 1 somewhere: one per sample
            return None
        for t, v in zip(self.observed, outs):
            if tuple(v.shape) != (len(chunk),) + tuple(self.g.shapes[t][1:]):
                return None
        return _extremes(outs)


def _extremes(outs: list) -> list:
    """(min, max) of each output array: reduced by the thread that ran the pass (NumPy's
    reductions release the GIL), and the arrays let go at once."""
    return [(v.min(), v.max()) for v in outs]


def calibrate(f: OnnxFile, g: OpGraph, samples: list, only=None, meanwhile=None) -> None:
    """Fill g.qparams for the inputs and every op output from min/max over `samples`
    ({input name: array} each; only: just these tensors, keeping the model's other
    parameters).  meanwhile: called on this thread while onnxruntime's session and passes
    run on another (onnxruntime releases the GIL in both)."""
    import onnxruntime as ort   # here, not in the other thread: no import runs on two threads

    # tensors a converter made up (a Concat along W joins transposed inputs) are not the
    # model's: they take their parameters from their neighbours (inherit_qparams*, below),
    # so an op that would inherit from one is observed itself
    known = {o for n in f.proto.graph.node for o in n.output} | set(g.inputs)
    observed = [op.output for op in g.ops
                if not ops.get(op.kind).calib_inherit or (op.inputs and op.inputs[0] not in known)]
    if only is not None:
        observed = [t for t in only]
    observed = [t for t in observed if t in known]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = THREADS if meanwhile is None else BESIDE_THREADS
    opts.log_severity_level = 3
    if len(samples) <= UNOPTIMIZED_MAX_SAMPLES:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    batchable = observed and len(samples) > 1 and _batchable(f, g, observed)
    # passes of up to BATCH samples: onnxruntime's per-run and per-layer overheads once
    batched = None
    if batchable:
        try:
            batched = _BatchedPasses(_observer_parts(f, observed, batch_dim=True), opts,
                                     observed, samples, g)
        except Exception:          # noqa: BLE001 - the per-sample session says what is wrong
            pass
    if meanwhile is not None and batched is not None:
        meanwhile = in_turn(meanwhile, batched.help)

    def passes():
        runs = None
        if batched is not None:
            runs = batched.run()
        if observed and runs is None:
            sess = _observer_session(_observer_parts(f, observed), _options_copy(opts))
            runs = [_extremes(sess.run(observed, feed)) for feed in samples]
        elif not observed:  # only range-preserving ops: the input's range is every range
            runs = []
        return runs
    try:
        runs = (passes() if meanwhile is None or not observed
                else beside(passes, meanwhile, "nnscons-calibration"))
    except Exception as e:
        raise ModelError(f"{f.path}: onnxruntime cannot run the float model for calibration "
                         f"({type(e).__name__}: {e})") from None
    ranges = {} if only is not None else {t: [_extremes([np.stack([feed[t] for feed in samples])])[0]]
                                          for t in g.inputs}
    for extremes in runs:
        for t, lo_hi in zip(observed, extremes):
            ranges.setdefault(t, []).append(lo_hi)
    got = {t: minmax_qparams(min(lo for lo, _ in vs), max(hi for _, hi in vs))
           for t, vs in ranges.items()}
    if only is not None:
        g.qparams.update(got)
    else:
        g.qparams = got
    inherit_qparams(g)
    inherit_qparams_backward(g)
