"""User mistakes through the real command line: one clear message, exit status 2,
no traceback, nothing written outside build/."""
from __future__ import annotations

import numpy as np
import pytest

import modelgen


def fails(project, *args, expect):
    before = project.snapshot()
    proc = project.scons(*args, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out, out
    for text in expect:
        assert text in out, out
    assert project.snapshot() == before
    return out


def test_unknown_target_lists_known_ones(project):
    fails(project, "target=gap10", expect=["gap10", "host", "host-asan"])


def test_unknown_model_lists_known_ones(project):
    fails(project, "model=resnet19", expect=["resnet19", "resnet18", "simplecnn"])


def test_unknown_command_line_option(project):
    fails(project, "modle=simplecnn", expect=["modle", "target, model, input, platform, iterations, verbose"])


def test_malformed_yaml_names_file_and_line(project):
    text = project.read("targets.yaml").replace("    kind: host\n", "    kind: [host\n", 1)
    project.write("targets.yaml", text)
    fails(project, expect=["targets.yaml:", "YAML"])


def test_unknown_manifest_key_names_line_and_choices(project):
    text = project.read("targets.yaml").replace("conv1: {l1_budget: 8KiB}", "conv1: {l1_budgt: 8KiB}")
    project.write("targets.yaml", text)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "l1_budgt" in l)
    fails(project, expect=[f"targets.yaml:{line}", "l1_budgt", "l1_budget"])


def test_override_for_a_layer_the_model_does_not_have(project):
    text = project.read("targets.yaml").replace("conv1: {l1_budget: 8KiB}", "conv9: {l1_budget: 8KiB}")
    project.write("targets.yaml", text)
    fails(project, "model=simplecnn", expect=["targets.yaml:", "conv9", "conv1"])


def test_budget_too_small_for_one_row_names_layer_and_need(project):
    text = project.read("targets.yaml").replace("conv1: {l1_budget: 8KiB}", "conv1: {l1_budget: 100}")
    project.write("targets.yaml", text)
    fails(project, "model=simplecnn", expect=["targets.yaml:", "conv1", "needs at least", "l1_budget"])


def test_input_with_wrong_shape(project):
    np.save(project.file("x.npy"), np.zeros((1, 3, 28, 28), np.float32))
    fails(project, "model=simplecnn", "input=x.npy", expect=["x.npy", "(1, 3, 28, 28)", "(1, 1, 28, 28)"])


def test_missing_input_file(project):
    fails(project, "input=nope.npy", expect=["nope.npy"])


def test_missing_model_file(project):
    fails(project, "model=models/missing.onnx", expect=["missing.onnx"])


def test_truncated_onnx(project):
    fp = modelgen.float_cnn(project.file("m/t.onnx"))
    data = open(fp, "rb").read()
    project.write("m/t.onnx", data[: len(data) // 2])
    fails(project, "model=m/t.onnx", expect=["t.onnx"])


def test_unsupported_op_names_node_and_supported_ops(project):
    import onnx
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], "the_softmax")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])])
    project.write("m/soft.onnx", helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
                  .SerializeToString())
    fails(project, "model=m/soft.onnx", expect=["the_softmax", "Softmax", "Conv"])


def test_help_lists_targets_models_and_options(project):
    proc = project.scons("-h")
    for text in ("target", "model", "input", "verbose", "host-asan", "resnet18", "simplecnn"):
        assert text in proc.stdout
