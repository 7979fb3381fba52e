"""ARES export directory import (synthetic export written in tmp_path)."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "site_scons"))

from nnscons.errors import ModelError  # noqa: E402
from nnscons.frontends import load_model  # noqa: E402


def ares_dir(root, edit=None):
    """input_quant, conv1+relu1, pool, conv2+relu2, add(relu2, pool), gap, flatten, fc."""
    rng = np.random.default_rng(0)
    info = {
        "input_quant": {"type": "QuantIdentity", "scale": 0.0078125},
        "conv1": {"type": "QuantConv2d", "in_channels": 1, "out_channels": 4,
                  "kernel_size": [3, 3], "stride": [1, 1], "padding": [1, 1],
                  "scale_input": 0.0078125, "scale_weight": 0.003456, "scale_output": 0.015},
        "relu1": {"type": "QuantReLU", "scale_input": 0.015, "scale_output": 0.012},
        "pool": {"type": "MaxPool2d", "kernel_size": 2, "stride": 2},
        "conv2": {"type": "QuantConv2d", "kernel_size": [3, 3], "padding": 1,
                  "scale_input": 0.012, "scale_weight": [0.01, 0.02, 0.03, 0.04],
                  "scale_output": 0.02},
        "relu2": {"type": "QuantReLU", "scale_input": 0.02, "scale_output": 0.02},
        "add": {"type": "QuantAdd", "input1": "relu2_out", "input2": "pool_out",
                "scale1": 0.02, "scale2": 0.012, "scale_output": 0.025},
        "gap": {"type": "AdaptiveAvgPool2d", "output_size": [1, 1]},
        "flatten": {"type": "Flatten"},
        "fc": {"type": "QuantLinear", "in_features": 4, "out_features": 3,
               "scale_input": 0.025, "scale_weight": 0.01, "scale_output": 0.05},
        "__layer_order__": ["input_quant", "conv1", "relu1", "pool", "conv2", "relu2", "add",
                            "gap", "flatten", "fc"],
    }
    weights = {"conv1": (4, 1, 3, 3), "conv2": (4, 4, 3, 3), "fc": (3, 4)}
    if edit:
        edit(info, weights)
    os.makedirs(root / "weights")
    for layer, shape in weights.items():
        np.save(root / "weights" / f"{layer}_weight_int8.npy",
                rng.integers(-127, 128, shape).astype(np.int8))
        np.save(root / "weights" / f"{layer}_bias_fp32.npy",
                rng.standard_normal(shape[0]).astype(np.float32) * 0.1)
    for case in (2, 10):
        d = root / "test_cases" / f"test_case_{case}"
        os.makedirs(d)
        np.save(d / "input_fp32.npy", rng.standard_normal((1, 1, 8, 8)).astype(np.float32))
    (root / "network_info.json").write_text(json.dumps(info))
    return str(root)


def test_ares_import(tmp_path):
    path = ares_dir(tmp_path / "net")
    g = load_model(path, name="net")
    assert [(l.name, l.op) for l in g.layers] == [
        ("conv1", "conv2d"), ("pool", "maxpool"), ("conv2", "conv2d"), ("add", "add"),
        ("gap", "global_avgpool"), ("flatten", "reshape"), ("fc", "linear")]
    assert g.input == "input_quant_out" and g.output == "fc_out"
    assert g.default_input == os.path.join(path, "test_cases", "test_case_2", "input_fp32.npy")
    conv1, conv2 = g.layers[0], g.layers[2]
    assert conv1.fused == ["relu1"] and conv1.source_ops == ["QuantConv2d", "QuantReLU"]
    assert conv1.output == "relu1_out" and conv1.act_min == 0
    assert g.tensor("relu1_out").q.scale == pytest.approx(0.012)
    assert g.tensor("pool_out").q == g.tensor("relu1_out").q
    assert g.layers[3].inputs == ["relu2_out", "pool_out"]
    np.testing.assert_allclose(conv1.weight_scale, [0.003456] * 4, rtol=1e-6)
    np.testing.assert_allclose(conv2.weight_scale, [0.01, 0.02, 0.03, 0.04], rtol=1e-6)
    w = np.load(os.path.join(path, "weights", "conv1_weight_int8.npy"))
    b = np.load(os.path.join(path, "weights", "conv1_bias_fp32.npy"))
    np.testing.assert_array_equal(conv1.weight, w)
    np.testing.assert_array_equal(conv1.bias, np.round(b / (0.0078125 * conv1.weight_scale)))
    assert g.tensor("fc_out").shape == (1, 3) and g.tensor("gap_out").shape == (1, 4, 1, 1)
    assert all(t.q.zero_point == 0 for t in g.tensors.values())


def test_ares_input_shape_override_and_standalone_relu(tmp_path):
    def edit(info, weights):   # a relu after the maxpool cannot be fused: it becomes requant
        info["relu_p"] = {"type": "QuantReLU", "scale_output": 0.012}
        info["__layer_order__"].insert(4, "relu_p")
        info["add"]["input2"] = "relu_p"
    path = ares_dir(tmp_path / "net", edit)
    g = load_model(path, name="net", input_shape=(1, 1, 8, 8))
    relu = next(l for l in g.layers if l.name == "relu_p")
    assert relu.op == "requant" and relu.act_min == 0 and relu.source_ops == ["QuantReLU"]
    with pytest.raises(ModelError, match="does not match"):
        load_model(path, name="net", input_shape=(1, 1, 9, 9))


@pytest.mark.parametrize("edit, match", [
    (lambda i, w: i["pool"].update(type="Dropout2d"),
     r"layer 'pool' \(Dropout2d\): layer type 'Dropout2d' is not supported"),
    (lambda i, w: i["relu1"].update(scale_input=0.5), r"'relu1' \(QuantReLU\): scale_input=0.5"),
    (lambda i, w: i["add"].update(input2="nowhere"), r"'add' \(QuantAdd\): input2='nowhere'"),
    (lambda i, w: i["fc"].pop("scale_output"), r"'fc' \(QuantLinear\): missing field 'scale_output'"),
    (lambda i, w: w.pop("conv2"), r"'conv2' \(QuantConv2d\): weight file weights/conv2_weight_int8.npy"),
    (lambda i, w: i["gap"].update(output_size=2), r"'gap' \(AdaptiveAvgPool2d\): output_size 2"),
    (lambda i, w: i["__layer_order__"].append("ghost"), r"layer 'ghost' in __layer_order__"),
])
def test_ares_errors(tmp_path, edit, match):
    with pytest.raises(ModelError, match=match):
        load_model(ares_dir(tmp_path / "net", edit), name="net")


def test_ares_not_a_directory_export(tmp_path):
    os.makedirs(tmp_path / "empty")
    with pytest.raises(ModelError, match=r"a folder without network_info.json \(empty\) is not an ARES export"):
        load_model(str(tmp_path / "empty"), name="net")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "network_info.json").write_text("{not json")
    with pytest.raises(ModelError, match="cannot read JSON"):
        load_model(str(tmp_path / "bad"), name="net")
