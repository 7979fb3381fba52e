"""The k210 target end to end: placement, AI-RAM and SRAM planning, the K210 reference as the
goldens, emul and qemu runs, what a placement edit rebuilds, and the user errors."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import steps
from nnscons import ir
from nnscons.reference import run_layer
from nnscons.targets.k210 import kpu, mapping

B = "build/k210/simplecnn"


def conv_graph(c, o, h, w, k, stride, pads, groups=1, seed=0, act=(-128, 127)):
    rng = np.random.default_rng(seed)
    oh = (h + pads[0] + pads[2] - k) // stride + 1
    ow = (w + pads[1] + pads[3] - k) // stride + 1
    tensors = {"x": ir.Tensor("x", (1, c, h, w), ir.QParams(0.05, -3)),
               "y": ir.Tensor("y", (1, o, oh, ow), ir.QParams(0.08, 5))}
    layer = ir.Layer("L", "conv2d", ["x"], "y",
                     dict(kernel=(k, k), stride=(stride, stride), dilation=(1, 1), pads=tuple(pads), groups=groups),
                     weight=rng.integers(-127, 128, (o, c // groups, k, k)).astype(np.int8),
                     weight_scale=rng.uniform(0.001, 0.01, o), bias=rng.integers(-3000, 3000, o).astype(np.int32),
                     act_min=act[0], act_max=act[1])
    return layer, ir.Graph("g", "x", "y", tensors, [layer]), rng


@pytest.mark.parametrize("k,stride,pads,groups,want", [
    (3, 1, (1, 1, 1, 1), 1, kpu.POOL_BYPASS),
    (1, 1, (0, 0, 0, 0), 1, kpu.POOL_BYPASS),
    (3, 1, (1, 1, 1, 1), 8, kpu.POOL_BYPASS),             # depthwise
    (3, 2, (1, 1, 1, 1), 1, kpu.POOL_LEFT_TOP_2_S2),      # PyTorch symmetric padding
    (3, 2, (1, 0, 1, 1), 1, kpu.POOL_RIGHT_TOP_2_S2),
    (1, 2, (0, 0, 0, 0), 1, kpu.POOL_LEFT_TOP_2_S2),      # ResNet's downsample
])
def test_kpu_layers_compute_the_models_own_conv(k, stride, pads, groups, want):
    """Every mapped conv, strided ones included, samples the model's own pixels: the K210
    reference differs from the generic integer reference by rounding only (<= 1 LSB)."""
    layer, graph, rng = conv_graph(8, 8, 12, 20, k, stride, pads, groups)
    pool, reason = mapping.constraint(layer, graph)
    assert (pool, reason) == (want, None)
    kl = mapping.build(layer, graph, pool)
    x = rng.integers(-128, 128, (1, 8, 12, 20)).astype(np.int8)
    got, ref = kl.run(x).astype(int), run_layer(layer, graph, [x]).astype(int)
    assert got.shape == ref.shape
    assert np.abs(got - ref).max() <= 1 and (got == ref).mean() > 0.99


def pool_graph(op, k, stride, pads, h=12, w=20, c=8, seed=0):
    rng = np.random.default_rng(seed)
    oh, ow = (h + pads[0] + pads[2] - k) // stride + 1, (w + pads[1] + pads[3] - k) // stride + 1
    tensors = {"x": ir.Tensor("x", (1, c, h, w), ir.QParams(0.05, -3)),
               "y": ir.Tensor("y", (1, c, oh, ow), ir.QParams(0.05, -3))}
    layer = ir.Layer("P", op, ["x"], "y", dict(kernel=(k, k), stride=(stride, stride), pads=tuple(pads),
                                               ceil_mode=0, count_include_pad=0))
    return layer, ir.Graph("g", "x", "y", tensors, [layer]), rng


@pytest.mark.parametrize("op,k,want", [("maxpool", 2, kpu.POOL_MAX_2_S2), ("maxpool", 4, kpu.POOL_MAX_4_S4),
                                       ("avgpool", 2, kpu.POOL_MEAN_2_S2), ("avgpool", 4, kpu.POOL_MEAN_4_S4)])
def test_pools_run_on_the_kpu_as_identity_conv_plus_pool(op, k, want):
    """Max pools are the generic ones bit for bit (equal scales: no rounding at all); the KPU's
    mean truncates the mean of the activated values: at most 1 LSB below the rounded mean."""
    layer, graph, rng = pool_graph(op, k, k, (0, 0, 0, 0))
    pool, reason = mapping.constraint(layer, graph)
    assert (pool, reason) == (want, None)
    kl = mapping.build(layer, graph, pool)
    x = rng.integers(-128, 128, (1, 8, 12, 20)).astype(np.int8)
    got, ref = kl.run(x).astype(int), run_layer(layer, graph, [x]).astype(int)
    if op == "maxpool":
        assert np.array_equal(got, ref)
    else:
        assert ((ref - got) >= 0).all() and ((ref - got) <= 1).all()
    layer, graph, _ = pool_graph("maxpool", 3, 2, (1, 1, 1, 1))
    assert "the KPU pools 2x2/2 and 4x4/4" in mapping.constraint(layer, graph)[1]


def test_fully_connected_runs_on_the_kpu_as_a_padded_1x1():
    rng = np.random.default_rng(5)
    tensors = {"x": ir.Tensor("x", (1, 300), ir.QParams(0.05, 7)), "y": ir.Tensor("y", (1, 20), ir.QParams(0.1, -4))}
    layer = ir.Layer("fc", "linear", ["x"], "y", {}, weight=rng.integers(-127, 128, (20, 300)).astype(np.int8),
                     weight_scale=rng.uniform(0.001, 0.01, 20), bias=rng.integers(-3000, 3000, 20).astype(np.int32))
    graph = ir.Graph("g", "x", "y", tensors, [layer])
    pool, reason = mapping.constraint(layer, graph)
    kl = mapping.build(layer, graph, pool)
    assert kl.fc and kl.in_chw == (300, 4, 4) and kl.out_chw == (20, 4, 4)
    x = rng.integers(-128, 128, (1, 300)).astype(np.int8)
    got, ref = kl.run(x).astype(int), run_layer(layer, graph, [x]).astype(int)
    assert got.shape == (1, 20) and np.abs(got - ref).max() <= 1


@pytest.mark.parametrize("shape,reason", [
    ((8, 8, 12, 20, 3, 2, (0, 0, 1, 1)), "TF SAME"),       # samples (1,1) of each 2x2 block
    ((8, 8, 12, 20, 5, 1, (2, 2, 2, 2)), "kernel 5x5"),
    ((8, 8, 12, 20, 3, 1, (0, 0, 0, 0)), "pads"),
    ((8, 8, 3, 20, 3, 1, (1, 1, 1, 1)), "outside the KPU"),
    ((8, 8, 12, 600, 1, 1, (0, 0, 0, 0)), "outside the KPU"),
    ((8, 1100, 12, 20, 1, 1, (0, 0, 0, 0)), "1100 channels"),
    ((8, 8, 12, 20, 3, 3, (1, 1, 1, 1)), "stride [3, 3]"),
])
def test_what_the_kpu_cannot_run_goes_to_the_cpu_with_a_reason(shape, reason):
    layer, graph, _ = conv_graph(*shape)
    pool, why = mapping.constraint(layer, graph)
    assert pool is None and reason in why


def test_simplecnn_emul_then_qemu(prebuilt):
    project, r = prebuilt("target=k210", "model=simplecnn")
    assert "Test PASSED [k210] simplecnn" in r.stdout
    report = json.loads(project.read(f"{B}/emul/report.json"))
    on = {l["name"]: (l["runs_on"], l["reason"]) for l in report["layers"]}
    assert on["conv1"] == ("kpu", None) and on["conv2"] == ("kpu", None)
    assert on["pool1"] == ("kpu", None) and on["fc"] == ("kpu", None)        # fc: a 1x1 on a 4x4 map
    assert on["flatten"] == ("cpu", "reshape: not a KPU op")
    assert report["layers"][1]["kpu_pool"] == "max_2_s2"
    conv1 = report["layers"][0]
    assert conv1["ai_ram_peak"] == kpu.tensor_bytes(1, 28, 28) + kpu.tensor_bytes(8, 28, 28)
    assert len(conv1["kpu_words"]) == 12 and conv1["qdq_within_1lsb"] >= 0.99
    assert report["qdq_output_within_1lsb"] >= 0.99 and report["kpu_layers"] == 5
    assert "KPU: 5 of 6 layers" in r.stdout and "within 1 LSB" in r.stdout
    # the words in the C source are those of the report, addresses aside
    src = project.read(f"{B}/src/layers/conv1.c")
    assert "/* kernel_pool_type_cfg */" in src and "kpu_hal_run(w);" in src
    q = project.scons("target=k210", "model=simplecnn", "platform=qemu")
    assert "Test PASSED [k210] simplecnn" in q.stdout
    assert not [s for s in steps(q.stdout) if s.startswith(("GOLDEN", "WEIGHTS", "CODEGEN"))]
    assert project.read(f"{B}/qemu/run.log").count(": OK") == 6


def test_placement_edit_rebuilds_that_layer_and_the_network(prebuilt):
    project, _ = prebuilt("target=k210", "model=simplecnn")
    text = project.read("targets.yaml")
    old = "    targets:\n      host:\n        layers:\n          conv1: {l1_budget: 8KiB}\n"
    assert old in text
    project.write("targets.yaml", text.replace(old, old + "      k210:\n        layers:\n          conv2: {on: cpu}\n"))
    r = project.scons("target=k210", "model=simplecnn")
    built = steps(r.stdout)
    assert "RUN simplecnn on emul" in built, built    # passes: CHECK reruns only when run.log changed
    codegen = sorted(s for s in built if s.startswith(("CODEGEN", "CC ")))
    # conv2 on the CPU needs row-band scratch in the arena: ARENA_SIZE (and one KPU address
    # fewer in the context) change the header, so what includes it compiles again
    assert codegen == ["CC conv2", "CC main", "CC nn_conv2d", "CC nns_simplecnn", "CC nns_simplecnn_api",
                       "CODEGEN conv2", "CODEGEN nns_simplecnn.c", "CODEGEN nns_simplecnn.h"], codegen
    assert "AR libnns_simplecnn.a" in built and "LINK firmware" in built
    # conv2's numbers change (generic requantization on the CPU), so its golden and those
    # downstream; nothing upstream
    assert sorted(s for s in built if s.startswith("GOLDEN")) == ["GOLDEN conv2", "GOLDEN fc", "GOLDEN flatten",
                                                                   "GOLDEN pool2"]
    assert "WEIGHTS conv2" in built and "WEIGHTS conv1" not in built
    report = json.loads(project.read(f"{B}/emul/report.json"))
    assert report["layers"][2]["runs_on"] == "cpu" and report["layers"][2]["reason"] == "on: cpu in targets.yaml"
    assert steps(project.scons("target=k210", "model=simplecnn").stdout) == []


def _override(project, layer, body):
    text = project.read("targets.yaml")
    old = "    targets:\n      host:\n        layers:\n          conv1: {l1_budget: 8KiB}\n"
    project.write("targets.yaml", text.replace(old, old + f"      k210:\n        layers:\n          {layer}: {body}\n"))


def test_forcing_an_ineligible_layer_on_the_kpu_is_an_error(project):
    _override(project, "flatten", "{on: kpu}")
    r = project.scons("target=k210", "model=simplecnn", check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "targets.yaml:" in r.stderr and "layer 'flatten' cannot run on the KPU: reshape: not a KPU op" in r.stderr


def test_layer_that_does_not_fit_the_ai_ram_names_it_and_the_numbers(project):
    text = project.read("targets.yaml")
    project.write("targets.yaml", text.replace("      ai_ram: 2MiB ", "      ai_ram: 8KiB "))
    r = project.scons("target=k210", "model=simplecnn", check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "layer 'conv1' does not fit the KPU's AI RAM" in r.stderr
    assert "8,960 B > memory.ai_ram = 8,192 B" in r.stderr and "targets.k210.memory.ai_ram" in r.stderr


@pytest.mark.slow
def test_resnet18_ends_in_a_clear_sram_error(project):
    r = project.scons("target=k210", "model=resnet18", check=False, timeout=600)
    assert r.returncode == 2 and "Traceback" not in r.stderr + r.stdout
    assert "does not fit the K210's SRAM: parameters 11," in r.stderr and "memory.sram = 6,291,456 B" in r.stderr


@pytest.mark.slow
def test_mobilenetv1_on_qemu(project):
    r = project.scons("target=k210", "model=mobilenetv1", "platform=qemu", timeout=900)
    assert "Test PASSED [k210] mobilenetv1: all 30 layers" in r.stdout
    report = json.loads(project.read("build/k210/mobilenetv1/qemu/report.json"))
    convs = [l for l in report["layers"] if l["op"] == "conv2d"]
    assert len(convs) == 27 and all(l["runs_on"] == "kpu" for l in convs)
    assert [l["name"] for l in report["layers"] if l["runs_on"] == "cpu"] == ["avgpool", "flatten"]
    assert sum(l["kpu_pool"] == "left_top_2_s2" for l in convs) == 5     # conv1 and 4 strided depthwise
    assert report["qdq_output_within_1lsb"] >= 0.99
    assert all(l["qdq_own_within_1lsb"] >= 0.99 for l in report["layers"])
    assert 0 < report["ai_ram_peak_bytes"] <= 2 * 1024 * 1024


def test_k210_clean_builds_are_byte_identical_and_j1_equals_j2(project):
    import shutil

    project.scons("target=k210", "model=simplecnn", "-j1")
    one = project.build_outputs()
    shutil.rmtree(project.file("build"))
    project.scons("target=k210", "model=simplecnn", "-j2")
    two = project.build_outputs()
    assert sorted(one) == sorted(two) and [f for f in one if one[f] != two[f]] == []
    for rel, data in one.items():
        if rel.endswith((".c", ".h", ".json", ".log")):
            assert project.path.encode() not in data, rel


def test_small_mobilenet_mixes_kpu_and_cpu_convs(project):
    """MobileNetV1 0.25 at 96x96: the last blocks are 3x3 maps, below the KPU's 4 rows, so their
    convs run on the CPU between KPU layers; the run stays bit exact."""
    text = project.read("targets.yaml")
    project.write("targets.yaml", text.replace("\n  resnet18:\n", "\n  mnv1small:\n    zoo: mobilenetv1_025\n"
                                               "    input_shape: [1, 3, 96, 96]\n\n  resnet18:\n"))
    r = project.scons("target=k210", "model=mnv1small")
    assert "Test PASSED [k210] mnv1small: all 30 layers" in r.stdout
    report = json.loads(project.read("build/k210/mnv1small/emul/report.json"))
    cpu = {l["name"]: l["reason"] for l in report["layers"] if l["runs_on"] == "cpu" and l["op"] == "conv2d"}
    assert sorted(cpu) == ["block12.pw", "block13.dw", "block13.pw"]
    assert all("outside the KPU's 4<=H<=256" in why for why in cpu.values())
    assert report["layers"][23]["runs_on"] == "kpu"       # block12.dw: 6x6 -> 3x3 through left_top
