"""gap9: activations in L3 when the liveness-planned arena does not fit L2 (issue 25, part 4).

A skip connection keeps the network input alive across two convs, so the arena holds three
tensors at once while no layer needs more than two: on a target whose L2 is between the two,
every tensor lives in L3 RAM, each layer reads its inputs into L2 and writes its output back
(the fabric controller's pi_ram_read/pi_ram_write), and every layer still matches its golden
bit for bit on the emulation (whose RAM is reachable only through the RAM API) and on qemu.
"""
from __future__ import annotations

import glob
import json
import shutil

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

# a target whose L2 holds one layer's working set but not the network's live tensors:
# liveness arena 49,152 B (input 8 KiB kept for the add + 32 KiB + 8 KiB), largest layer 40,960 B;
# 52 KiB of L2 for the network and the harness's 2 KiB compare buffer
TARGET = """
  gap9-small-l2:
    kind: gap9
    memory: {l1: 128KiB, l1_reserved: 16KiB, l2: 116KiB, l2_reserved: 64KiB, l3_device: ram,
             l3_size: 1MiB, l3_threshold: 36KiB}
    run: {platform: emul}
"""


def skip_model(path):
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[1, 1, 1, 1], name="wide"),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w2", "b2"], ["n"], pads=[1, 1, 1, 1], name="narrow"),
             helper.make_node("Add", ["n", "x"], ["y"], name="skip")]
    inits = [numpy_helper.from_array(rng.normal(0, s, shape).astype(np.float32), n) for n, shape, s in
             (("w1", (32, 8, 3, 3), 0.2), ("b1", (32,), 0.1), ("w2", (8, 32, 3, 3), 0.1), ("b2", (8,), 0.1))]
    graph = helper.make_graph(nodes, "skip", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 32, 32])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


def _project(project):
    skip_model(project.file("skip.onnx"))
    y = project.read("targets.yaml")
    project.write("targets.yaml", y.replace("\n  pulp-open:\n", TARGET + "\n  pulp-open:\n", 1))


def test_the_activations_live_in_l3_and_every_layer_matches(project):
    _project(project)
    proc = project.scons("target=gap9-small-l2", "model=skip.onnx")
    assert "Test PASSED [gap9-small-l2] skip" in proc.stdout
    assert "activations in L3" in proc.stdout
    [path] = glob.glob(project.file("build/gap9-small-l2/*skip*/emul/report.json"))
    with open(path) as f:
        r = json.load(f)
    assert r["activations_l3_bytes"] >= 49152
    assert r["l3_bytes"] >= r["activations_l3_bytes"]


@pytest.mark.skipif(not shutil.which("qemu-system-riscv32"), reason="qemu-system-riscv32 not installed")
def test_the_same_on_qemu(project):
    _project(project)
    proc = project.scons("target=gap9-small-l2", "model=skip.onnx", "platform=qemu")
    assert "Test PASSED [gap9-small-l2] skip" in proc.stdout


def test_without_l3_ram_the_error_says_what_would_help(project):
    _project(project)
    y = project.read("targets.yaml").replace("l2_reserved: 64KiB, l3_device: ram,", "l2_reserved: 64KiB, l3_device: flash,")
    project.write("targets.yaml", y)
    proc = project.scons("target=gap9-small-l2", "model=skip.onnx", check=False)
    assert proc.returncode == 2
    out = proc.stdout + proc.stderr
    assert "does not fit GAP9's L2" in out and "with memory.l3_device: ram the activations could live in L3" \
        in out, out[-2000:]


@pytest.mark.slow
def test_resnet50_at_224_passes_on_emul_with_its_activations_in_l3(project):
    """ResNet-50's 56x56x256 residual adds (three 802,816 B tensors) and its stem do not fit
    GAP9's 1.5 MiB L2 together: the activations live in L3, the adds stream their inputs from
    there, and every parameter is staged from L3 (the default l3_threshold leaves too many in L2)."""
    proc = project.scons("target=gap9", "model=resnet50", "platform=emul", timeout=1800)
    assert "Test PASSED [gap9] resnet50: all 73 layers match" in proc.stdout
    assert "activations in L3" in proc.stdout and "staged from L3 instead" in proc.stdout
    with open(project.file("build/gap9/resnet50/emul/report.json")) as f:
        r = json.load(f)
    assert r["activations_l3_bytes"] >= 2408448 and r["peak_l2_bytes"] <= r["l2_bytes"]
    adds = [lay for lay in r["layers"] if lay["op"] == "add"]
    assert adds and all(lay["tier"].endswith("(in: L3)") for lay in adds)
