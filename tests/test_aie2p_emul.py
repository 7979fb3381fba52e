"""aie2p on platform=emul: scalar kernels built natively, fed by the DMA-pattern emulator,
bit-exact against the integer reference; generated designs; unmappable layers."""
from __future__ import annotations

import ast
import json
import os

import numpy as np
import pytest

from aie2p_models import MIX_LAYERS, add_mix, add_pad
from conftest import steps

B = "build/aie2p/mix"


def design_imports(text):
    mods = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            mods += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mods.append(node.module)
    return mods


@pytest.mark.slow   # a cold build, designs and a tiling edit: 11.8 s of CPU (simplecnn's fallback build stays quick)
def test_mixed_model_bit_exact_designs_and_tiling_edit(project):
    add_mix(project)
    proc = project.scons("target=aie2p", "model=mix", "platform=emul", "-j2")
    assert "Test PASSED [aie2p] mix: all 7 layers match" in proc.stdout
    log = project.read(f"{B}/run.log")
    assert log.startswith("nnscons run: 7 layers\n")          # the host target's harness, on the library
    assert [l.split(":")[0] for l in log.splitlines()[1:8]] == [f"layer {i} {n}" for i, n in enumerate(MIX_LAYERS)]
    report = json.loads(project.read(f"{B}/report.json"))
    layers = {l["name"]: l for l in report["layers"]}
    assert layers["conv2"]["cores_x_cols"] == "2x2" and layers["conv1"]["tile"]["T"] == 7
    assert layers["conv1"]["aie"]["macs"] == 16 * 10 * 14 * 8 * 9
    for name in ("conv1", "conv2", "conv3", "conv4", "fc1", "fc2"):
        a = layers[name]["aie"]
        assert a["l1_bytes"] <= 64 * 1024 and a["memtile_bytes"] <= 512 * 1024 and a["kernel_calls"] > 0
        text = project.read(f"{B}/src/layers/{name}_design.py")
        assert all(m == "aie" or m.startswith("aie.") for m in design_imports(text)), name
        assert "AIEDevice.npu2" in text and "object_fifo_link" in text and "shim_dma_single_bd_task" in text
        dma = json.loads(project.read(f"{B}/src/layers/{name}_dma.json"))["dma"]
        assert json.dumps(dma["act_l1"]["mm2s"]) in text     # the design carries the same patterns
    assert "tile(1, 3)" in project.read(f"{B}/src/layers/conv2_design.py")   # 2 columns x 2 cores
    assert "for _ in range_" in project.read(f"{B}/src/layers/conv2_design.py")

    assert steps(project.scons("target=aie2p", "model=mix", "platform=emul").stdout) == []
    # one layer's tiling: that layer's design, kernel, dma patterns and native kernel, then the run
    text = project.read("targets.yaml").replace("conv3: {tiles_per_call: 7}", "conv3: {tiles_per_call: 1}")
    project.write("targets.yaml", text)
    s = steps(project.scons("target=aie2p", "model=mix", "platform=emul").stdout)
    # (and on emul that layer's DMA patterns in C, the library, the harness's link)
    assert sorted(s) == ["AR libnns_mix.a", "CC conv3", "CHECK mix", "CODEGEN conv3 (conv3.cc)",
                         "CODEGEN conv3 (conv3_design.py)", "CODEGEN conv3 (conv3_dma.json)",
                         "CODEGEN conv3 (conv3_emul.c)", "CXX conv3", "LINK firmware", "REPORT mix", "RUN mix"]
    assert json.loads(project.read(f"{B}/report.json"))["layers"][2]["tile"]["T"] == 1
    assert "Test PASSED" in project.read(f"{B}/run.log")


def test_uint8_rgba_patch_conv_with_repeat_chunks(project):
    """conv2dk14 on a 28x224 image: uint8 activations, 72 channel groups (two shim tasks of
    64 + 8 repeats), two cores."""
    project.write("targets.yaml", project.read("targets.yaml").rstrip("\n") + """
  k14:
    zoo: conv2dk14
    seed: 3
    input_shape: [1, 4, 28, 224]
    targets:
      aie2p:
        layers:
          patch_embed: {cores: 2}
""")
    proc = project.scons("target=aie2p", "model=k14", "platform=emul")
    assert "Test PASSED [aie2p] k14: the 1 layer matches" in proc.stdout
    dma = json.loads(project.read("build/aie2p/k14/src/layers/patch_embed_dma.json"))
    assert dma["act_dtype"] == "uint8" and dma["dma"]["n_iter"] == 36
    out = np.load(project.file("build/aie2p/k14/output.npy"))
    assert out.shape == (1, 1152, 2, 16) and np.unique(out).size > 50


def test_a_layer_that_does_not_map_is_named(project):
    proc = project.scons("target=aie2p", "model=simplecnn", "platform=emul", check=False)
    assert proc.returncode == 2
    # conv1 (3x3 pad 1 on one channel, staged to 8), conv2, flatten and fc map; the pools do not
    err = proc.stderr
    assert "layer 'pool1' (MaxPool) does not map onto target kind 'aie2p': op 'maxpool' has no AIE kernel" in err
    assert "layer 'pool2' (MaxPool) does not map" in err
    assert "conv1" not in err and "conv2" not in err and "'fc'" not in err
    assert "mapping: {fallback: host}" in err
    assert "Traceback" not in proc.stdout + proc.stderr


def test_tiling_that_cannot_fit_names_the_key(project):
    add_mix(project)
    text = project.read("targets.yaml").replace("conv3: {tiles_per_call: 7}", "conv3: {channels_per_call: 12}")
    project.write("targets.yaml", text)
    proc = project.scons("target=aie2p", "model=mix", "platform=emul", check=False)
    assert proc.returncode == 2
    assert "layers.conv3.channels_per_call: must be a multiple of 8" in proc.stderr


@pytest.mark.slow
def test_conv2dk14_full_size_bit_exact(project):
    """The headline: 896x896x4 uint8 RGBA, 1152 channels, 14x14 stride 14."""
    proc = project.scons("target=aie2p", "model=conv2dk14", "platform=emul", timeout=1200)
    assert "Test PASSED [aie2p] conv2dk14: the 1 layer matches" in proc.stdout
    rep = json.loads(project.read("build/aie2p/conv2dk14/report.json"))["layers"][0]
    assert rep["aie"]["kernel_calls"] == 72 * 64 * 4 and rep["macs"] == 64 * 64 * 1152 * 784
    assert rep["aie"]["call_bytes"] == {"act": 12544, "weights": 12736, "out": 256}


def test_padded_convs_bit_exact(project):
    """3x3 pad 1 (stride 1 and 2, a 3-channel input staged to 8), 1x1, asymmetric pads,
    5x5 pad 2 stride 2, Flatten of 16x3x4 into a 10-output Linear: all on the NPU."""
    add_pad(project)
    proc = project.scons("target=aie2p", "model=pad", "platform=emul")
    assert "Test PASSED [aie2p] pad: all 7 layers match" in proc.stdout, proc.stdout
    report = json.loads(project.read("build/aie2p/pad/report.json"))
    layers = {l["name"]: l["aie"] for l in report["layers"]}
    assert layers["conv1"]["border_classes"] == 9 and layers["conv1"]["ddr_stage"] == {
        "pad": [1, 1, 1, 1], "to": [13, 15, 8]}
    assert layers["conv3"]["border_classes"] == 1 and layers["conv4"]["border_classes"] == 3 * 3
    assert layers["fc"]["ddr_stage"]["to"] == [1, 1, 192]


def _fallback(project):
    text = project.read("targets.yaml")
    head, tail = text.split("    kind: aie2p\n", 1)
    project.write("targets.yaml", head + "    kind: aie2p\n    mapping: {fallback: host}\n" + tail)


def test_simplecnn_with_host_fallback_bit_exact(project):
    """conv1 (one channel staged to 8, pad 1), conv2 and fc (10 of 16 channels) on the NPU,
    the max pools on the host CPU with the host target's C kernels."""
    _fallback(project)
    proc = project.scons("target=aie2p", "model=simplecnn", "platform=emul")
    assert "Test PASSED [aie2p] simplecnn: all 6 layers match" in proc.stdout, proc.stdout
    assert "CC nn_pool" in proc.stdout and "CC pool1" in proc.stdout      # the host layers' C, in the library
    report = json.loads(project.read("build/aie2p/simplecnn/report.json"))
    on = {l["name"]: l["runs_on"] for l in report["layers"]}
    assert on == {"conv1": "npu", "pool1": "host", "conv2": "npu", "pool2": "host",
                  "flatten": "view", "fc": "npu"}
    rep = {l["name"]: l for l in report["layers"]}
    assert "maxpool" in rep["pool1"]["aie"]["why_not_npu"]
    assert rep["conv1"]["aie"]["ddr_stage"] == {"pad": [1, 1, 1, 1], "to": [30, 30, 8]}
    assert steps(project.scons("target=aie2p", "model=simplecnn", "platform=emul").stdout) == []


@pytest.mark.slow   # 13.8 s of CPU
def test_resnet18_with_host_fallback_bit_exact(project):
    """resnet18 end to end: 7x7/2 pad 3 on 3 channels, 3x3 pad 1 stride 1 and 2, 1x1/2
    downsamples and fc on the NPU (layers that do not fit L1 at T=16 shrink T/Cc); max pool,
    the residual adds and the global average pool on the host."""
    _fallback(project)
    proc = project.scons("target=aie2p", "model=resnet18", "platform=emul", "-j2")
    assert "Test PASSED [aie2p] resnet18: all 32 layers match" in proc.stdout, proc.stdout
    report = json.loads(project.read("build/aie2p/resnet18/report.json"))
    on = [l["runs_on"] for l in report["layers"]]
    assert on.count("npu") == 21 and on.count("host") == 10 and on.count("view") == 1
    for l in report["layers"]:
        if l["runs_on"] == "npu":
            assert l["aie"]["l1_bytes"] <= 64 * 1024, l["name"]
