"""The integer reference against onnxruntime.

Layer by layer: each layer of the imported model runs on the oracle's own int8 input for
that layer, and must agree with the oracle's int8 output within 1 LSB on every element
(the oracle: the QDQ graph evaluated exactly, in float64; see export/ort_oracle.py).
End to end on the zoo: bit for bit with the exact evaluation, and within 1 LSB of
onnxruntime's float32 evaluation (unoptimized) on nearly every element.
"""
from __future__ import annotations

import numpy as np
import pytest

import modelgen
from nnscons import frontends, reference
from nnscons.export import ort_oracle, qdq_onnx


def layer_by_layer(graph, model_path, x):
    ort = ort_oracle.run_intermediates(model_path, x)
    compared = 0
    for layer in graph.layers:
        if layer.output not in ort or not all(t in ort for t in layer.inputs):
            continue
        ours = reference.run_layer(layer, graph, [ort[t] for t in layer.inputs])
        diff = np.abs(ours.astype(np.int32) - ort[layer.output].reshape(ours.shape).astype(np.int32))
        assert diff.max() <= 1, f"{layer.name}: max |diff| {diff.max()} LSB"
        compared += 1
    return compared


@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("uint8", [False, True])
def test_ort_quantized_model_layer_by_layer(tmp_path, per_channel, uint8):
    fp = modelgen.float_cnn(tmp_path / "f.onnx", seed=3)
    qdq = modelgen.quantize_qdq(fp, tmp_path / "q.onnx", per_channel=per_channel, uint8_activations=uint8)
    graph = frontends.load_model(qdq, name="q")
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    assert layer_by_layer(graph, qdq, x) >= len(graph.layers) - 2  # all but flatten-like aliases


@pytest.mark.parametrize("zoo,shape", [("simplecnn", (1, 1, 28, 28)), ("resnet18", (1, 3, 64, 64))])
def test_zoo_reference_matches_onnxruntime(tmp_path, zoo, shape):
    from models import zoo as zoo_mod
    src = tmp_path / "m.onnx"
    zoo_mod.write(zoo, 0, shape, str(src))
    graph = frontends.load_model(str(src), name=zoo, input_shape=shape, calibration={"count": 4, "seed": 0})
    qdq = tmp_path / "q.onnx"
    qdq_onnx.write_qdq(graph, str(qdq))
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    assert layer_by_layer(graph, str(qdq), x) >= len(graph.layers) - 2
    # end to end: our integer pipeline against onnxruntime on the same QDQ model
    ours = reference.run_graph(graph, reference.quantize_input(graph, x))[graph.output]
    exact = ort_oracle.run_intermediates(str(qdq), x)[graph.output].reshape(ours.shape)
    np.testing.assert_array_equal(ours, exact)
    ort32 = ort_oracle.run_intermediates(str(qdq), x, exact=False)[graph.output].reshape(ours.shape)
    within = np.mean(np.abs(ours.astype(int) - ort32.astype(int)) <= 1)
    assert within >= 0.95, within
