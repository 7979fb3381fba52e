"""Calibration in batched passes (frontends/ptq.py): the samples stacked on axis 0 and run
through onnxruntime at once give exactly the ranges one pass per sample gives, and a model
whose graph cannot take a batch (a Reshape to a fixed batch 1, a Softmax over axis 0) is
calibrated one sample at a time."""
from __future__ import annotations

import os
import sys

import numpy as np
from onnx import helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "site_scons"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from nnscons.frontends import load_model, ptq  # noqa: E402
from test_frontend_onnx import cnn, save_model  # noqa: E402


def _qparams(path, monkeypatch, batched: bool, count=5):
    """The imported graph's tensor parameters, and how many onnxruntime runs calibration made."""
    calls = []
    real = ptq._BatchedPasses.run

    def spy(self):
        runs = real(self)
        calls.append(runs is not None)
        return runs
    monkeypatch.setattr(ptq._BatchedPasses, "run", spy)
    monkeypatch.setattr(ptq, "BATCH", 2)          # 5 samples: passes of 2, 2 and 1
    if not batched:
        monkeypatch.setattr(ptq, "_batchable", lambda *a: False)
    g = load_model(path, name="n", calibration={"count": count, "seed": 1})
    monkeypatch.undo()
    return {k: v.q for k, v in g.tensors.items()}, calls


def test_batched_ranges_equal_per_sample_ranges(tmp_path, monkeypatch):
    path = cnn(tmp_path / "f.onnx", bn=True)
    batched, calls = _qparams(path, monkeypatch, True)
    assert calls == [True]                        # the batched passes ran and were used
    per_sample, calls = _qparams(path, monkeypatch, False)
    assert calls == []
    assert batched == per_sample


def test_a_zoo_network_batched_equals_per_sample(tmp_path, monkeypatch):
    from nnscons.resources import zoo
    path = tmp_path / "m.onnx"
    path.write_bytes(zoo().build("mobilenetv2", 0, (1, 3, 96, 96)).SerializeToString())
    batched, calls = _qparams(path, monkeypatch, True, count=3)
    assert calls == [True]
    assert batched == _qparams(path, monkeypatch, False, count=3)[0]


def test_the_caller_runs_passes_beside_the_calibration_thread(tmp_path, monkeypatch):
    """Once its own work is done, the caller runs chunks of the batched passes on the same
    session instead of waiting: here the calibration thread's chunk waits until the caller
    has taken the other, so both threads certainly ran one; the ranges are the same."""
    import threading
    path = cnn(tmp_path / "f.onnx", bn=True)
    alone = load_model(path, name="n", calibration={"count": 4, "seed": 1})
    real, ran, caller_took = ptq._BatchedPasses._pass, [], threading.Event()

    def pass_(self, chunk):
        ran.append(threading.current_thread())
        if threading.current_thread() is threading.main_thread():
            caller_took.set()
        else:
            assert caller_took.wait(60), "the caller never took a chunk"
        return real(self, chunk)
    monkeypatch.setattr(ptq._BatchedPasses, "_pass", pass_)
    beside = load_model(path, name="n", calibration={"count": 4, "seed": 1}, meanwhile=lambda: None)
    assert len(ran) == 2 and threading.main_thread() in ran and ran[0] is not ran[1]
    assert {k: v.q for k, v in alone.tensors.items()} == {k: v.q for k, v in beside.tensors.items()}


def _reshape_net(tmp_path, shape):
    """conv, then a Reshape to `shape` (a fixed batch 1 in it, or -1), relu, gemm."""
    rng = np.random.default_rng(0)
    f32 = np.float32
    inits = {"w": (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(f32),
             "shape": np.array(shape, np.int64),
             "wf": (rng.standard_normal((5, 256)) * 0.1).astype(f32),
             "bf": np.zeros(5, f32)}
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], "conv", pads=[1, 1, 1, 1]),
             helper.make_node("Reshape", ["c", "shape"], ["f"], "reshape"),
             helper.make_node("Relu", ["f"], ["r"], "relu"),
             helper.make_node("Gemm", ["r", "wf", "bf"], ["y"], "fc", transB=1)]
    return save_model(tmp_path / "r.onnx", nodes, inits, out_shape=[1, 5])


def test_a_graph_fixed_at_batch_1_falls_back_to_one_pass_per_sample(tmp_path, monkeypatch):
    path = _reshape_net(tmp_path, [1, 256])       # a batch of 2 cannot be reshaped to it
    batched, calls = _qparams(path, monkeypatch, True)
    assert calls == [False]                       # tried, refused, then one run per sample
    assert batched == _qparams(path, monkeypatch, False)[0]


def test_a_batch_taking_reshape_is_batched(tmp_path, monkeypatch):
    path = _reshape_net(tmp_path, [-1, 256])
    batched, calls = _qparams(path, monkeypatch, True)
    assert calls == [True]
    assert batched == _qparams(path, monkeypatch, False)[0]


def test_ops_that_mix_samples_along_axis_0_are_never_batched(tmp_path):
    """A Softmax over axis 0 keeps every shape but would mix the samples: no batched pass
    (the importer refuses that Softmax today; the guard does not rely on it)."""
    from nnscons.frontends.onnx_file import read_onnx
    from nnscons.frontends.onnx_graph import OnnxWalker
    for axis, want in ((0, False), (-2, False), (1, True), (-1, True)):
        nodes = [helper.make_node("Flatten", ["x"], ["f"], "flat"),
                 helper.make_node("Softmax", ["f"], ["y"], "softmax", axis=axis)]
        path = save_model(tmp_path / f"s{axis}.onnx", nodes, {}, out_shape=[1, 192])
        f = read_onnx(path)
        g = OnnxWalker(f).walk()
        g.shapes = {"x": (1, 3, 8, 8), "f": (1, 192), "y": (1, 192)}
        observed = [op.output for op in g.ops]
        assert ptq._batchable(f, g, observed) is want, axis


def test_weights_handed_over_as_arrays_give_the_same_values(tmp_path):
    """_observer_session (large float weights as onnxruntime external initializers) computes
    exactly what the model with its weights inside computes."""
    import onnxruntime as ort
    from nnscons.frontends.onnx_file import read_onnx
    from nnscons.resources import zoo
    path = tmp_path / "m.onnx"
    path.write_bytes(zoo().build("mobilenetv2", 0, (1, 3, 96, 96)).SerializeToString())
    f = read_onnx(str(path))
    x = {f.input: np.random.default_rng(0).standard_normal(f.input_shape).astype(np.float32)}
    outs = [n.output[0] for n in f.proto.graph.node][::7] + [f.output]
    plain = ort.InferenceSession(ptq._observer_model(f, outs), providers=["CPUExecutionProvider"])
    arrays = ptq._observer_session(ptq._observer_parts(f, outs), ort.SessionOptions())
    assert arrays._nnscons_weights is not None          # the weights did go as arrays
    for a, b in zip(plain.run(outs, x), arrays.run(outs, x)):
        assert a.shape == b.shape and (a == b).all()


def test_calibration_beside_the_callers_work_gives_the_same_model(tmp_path):
    """load_model(meanwhile=...): onnxruntime calibrates on another thread (one intra-op
    thread) while the caller's function runs on its own; the quantized model is the same."""
    import threading
    path = tmp_path / "f.onnx"
    cnn(path, bn=True)
    calls = []
    alone = load_model(path, name="n", calibration={"count": 3, "seed": 1})
    beside = load_model(path, name="n", calibration={"count": 3, "seed": 1},
                        meanwhile=lambda: calls.append(threading.current_thread()))
    assert calls == [threading.main_thread()]
    assert {k: v.q for k, v in alone.tensors.items()} == {k: v.q for k, v in beside.tensors.items()}
    assert all((a.weight == b.weight).all() and (a.bias == b.bias).all()
               for a, b in zip(alone.layers, beside.layers) if a.weight is not None)


def test_a_calibration_failure_on_the_other_thread_is_the_same_clear_error(tmp_path, monkeypatch):
    import pytest
    from nnscons.errors import ModelError
    path = tmp_path / "f.onnx"
    cnn(path)

    def refused(*args, **kwargs):
        raise RuntimeError("no kernel for this node")
    monkeypatch.setattr(ptq, "_observer_session", refused)
    for meanwhile in (None, lambda: None):
        with pytest.raises(ModelError, match=r"f\.onnx: onnxruntime cannot run the float model for "
                                             r"calibration \(RuntimeError: no kernel for this node\)"):
            load_model(path, name="n", meanwhile=meanwhile)
