"""What third-party model files (from package registries: TFLite from Silicon Labs' MLTK,
MediaPipe, openWakeWord; ONNX from RapidOCR, openWakeWord, silero-vad) showed, each as a
small synthetic model with the same feature (no third-party file is kept here)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

import opsgen
from nnscons.errors import ModelError
from nnscons.frontends import load_model
from nnscons.frontends.tflite_writer import TfliteWriter, bias_int32
from test_ops import check_against_oracle


def test_sparse_tflite_weights_are_named_not_called_a_corrupt_file(tmp_path):
    """MediaPipe's face_detection_full_range_sparse.tflite keeps pruned weights in TFLite's
    sparse format (the buffer holds the non-zero values only): that was read as a dense
    buffer of the wrong size and called a corrupt file."""
    rng = np.random.default_rng(0)
    w = rng.integers(-127, 128, (6, 16)) * (rng.random((6, 16)) < 0.3)
    b = TfliteWriter()
    x = b.input("x", (1, 16), 0.05, -1)
    wt = b.sparse_const("fc_w", w, "int8", scale=0.02)
    bt = b.const("fc_b", bias_int32(rng.standard_normal(6) * 0.1, 0.05, 0.02), "int32")
    b.output(b.op("FULLY_CONNECTED", [x, wt, bt], "y", (1, 6), 0.1, 4))
    path = tmp_path / "sparse.tflite"
    path.write_bytes(b.finish())
    with pytest.raises(ModelError) as e:
        load_model(str(path), name="sparse")
    msg = str(e.value)
    assert "operator #0 FULLY_CONNECTED reads tensor #1 'fc_w'" in msg, msg
    assert "sparse format" in msg and "corrupt" not in msg, msg


ONE_VALUE = {"k": np.full((1, 1, 1, 1), -0.4)}


@pytest.mark.parametrize("nodes", [
    [helper.make_node("Add", ["c", "k"], ["y"], "add")],
    [helper.make_node("Max", ["c", "k"], ["y"], "max")],
    [helper.make_node("LeakyRelu", ["c"], ["l"], "leaky", alpha=0.2),
     helper.make_node("Max", ["l", "k"], ["y"], "max")],
], ids=["add", "max", "leakyrelu_max"])
def test_a_one_value_constant_of_rank_4_makes_a_table(tmp_path, nodes):
    """openWakeWord's embedding model (tf2onnx): Max(LeakyRelu(x), c) with c of shape
    (1, 1, 1, 1). Its table is computed on the 256 codes as a vector, which the constant's
    rank broadcast to (1, 1, 1, 256): a numpy ValueError escaped as a traceback."""
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, ONE_VALUE, c=4, hw=4)
    g = check_against_oracle(tmp_path, path, roundtrip=False)
    assert g.layers[-1].op == "lut"


def _with_input_dims(path, dims):
    m = onnx.load(path)
    shape = m.graph.input[0].type.tensor_type.shape
    shape.Clear()
    for d in dims:
        shape.dim.add().dim_value = d
    onnx.save(m, path)


def test_a_minus_one_dimension_is_dynamic(tmp_path):
    """RapidOCR's Paddle2ONNX models declare their input [-1, 3, -1, -1]: -1 was taken as a
    fixed size, so no input_shape could match it."""
    path = opsgen.conv_then(tmp_path / "m.onnx", [helper.make_node("Relu", ["c"], ["y"])])
    _with_input_dims(path, [-1, 3, -1, -1])
    g = load_model(path, name="m", input_shape=(1, 3, 6, 6))
    assert g.tensor(g.input).shape == (1, 3, 6, 6)
    with pytest.raises(ModelError, match="symbolic dimensions"):
        load_model(path, name="m")
    with pytest.raises(ModelError, match="at axis 1"):
        load_model(path, name="m", input_shape=(1, 4, 6, 6))


def test_a_batch_other_than_one_names_the_input(tmp_path):
    """silero-vad's OpenVINO export has a second input 'state' of shape (2, 1, 128): the
    message said 'batch size 2 in input shape (2, 1, 128)' without saying which input."""
    f32 = onnx.TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Relu", ["state"], ["z"])],
        "two", [helper.make_tensor_value_info("x", f32, [1, 3, 4, 4]),
                helper.make_tensor_value_info("state", f32, [2, 1, 8])],
        [helper.make_tensor_value_info("y", f32, [1, 3, 4, 4]),
         helper.make_tensor_value_info("z", f32, [2, 1, 8])])
    path = str(tmp_path / "two.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    with pytest.raises(ModelError, match=r"batch size 2 in the shape \(2, 1, 8\) of input 'state'"):
        load_model(path, name="two")


def test_a_dead_channel_with_a_bias_is_quantized(tmp_path):
    """RapidOCR's PP-OCRv4 detector (float) has output channels whose weights are ~1e-34
    (dead channels of a trained network) and whose bias is not: the built-in quantization
    gave them scale max|w| / 127, where the bias was no int32 ('bias does not fit int32')."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 3, 3, 3)) * 0.4
    w[1] = 1.2e-34 * np.sign(w[1])
    w[3] = 0.0
    b = np.array([0.1, 0.2, -0.3, 0.5])
    path = opsgen.save([helper.make_node("Conv", ["x", "w", "b"], ["c"], "conv", pads=[1, 1, 1, 1]),
                        helper.make_node("Relu", ["c"], ["y"], "relu")],
                       {"w": w, "b": b}, (1, 3, 6, 6), (1, 4, 6, 6), tmp_path / "m.onnx")
    g = check_against_oracle(tmp_path, path, roundtrip=False)
    conv = g.layers[0]
    assert np.all(conv.weight[1] == 0) and np.abs(conv.bias).max() < 2 ** 30


def test_the_host_harness_writes_the_run_log_on_one_stream(prebuilt, tmp_path):
    """DenseNet-121 (onnx's light_densenet121.onnx, 487 layers) failed its check with 'the
    run log has no result for layer #223': the harness wrote each layer's kernel variant to
    stderr, unbuffered, which landed inside a 4 KiB block of stdout's layer lines
    ('lay' ... 'er 223 n416: OK') when run.log took both. Everything is on stdout now."""
    import subprocess
    from pathlib import Path
    project, _ = prebuilt("target=host", "model=simplecnn")
    b = Path(project.path) / "build" / "host" / "simplecnn"
    proc = subprocess.run([str(b / "firmware"), str(b / "bin"), str(tmp_path / "out.bin")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
    assert proc.stderr == "" and "variant conv1 " in proc.stdout, proc.stderr


def test_symbolic_dimensions_of_a_model_with_several_inputs(tmp_path):
    """silero_vad.onnx (inputs 'input' [?, ?], 'state', 'sr'): the message told to give
    input_shape, which a model with several inputs then refuses."""
    f32 = onnx.TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Relu", ["s"], ["z"])],
        "two", [helper.make_tensor_value_info("x", f32, ["batch", "n"]),
                helper.make_tensor_value_info("s", f32, [1, 8])],
        [helper.make_tensor_value_info("y", f32, ["batch", "n"]),
         helper.make_tensor_value_info("z", f32, [1, 8])])
    path = str(tmp_path / "two.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    with pytest.raises(ModelError, match="fix the shapes of its 2 inputs in the model") as e:
        load_model(path, name="two")
    assert "targets.yaml" not in str(e.value)
