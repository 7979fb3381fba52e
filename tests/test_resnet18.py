"""ResNet-18 on the host, end to end, and the edit-one-layer loop at full size."""
from __future__ import annotations

import json

import pytest

from conftest import steps


@pytest.mark.slow
def test_resnet18_runs_and_one_layer_edit_rebuilds_only_that_layer(project):
    proc = project.scons("-j2", "target=host", "model=resnet18", timeout=1800)
    # 32 layers in the model; the host fuses the 8 residual adds into the convs before them
    assert "Test PASSED [host] resnet18: all 24 layers match" in proc.stdout
    report = json.loads(project.read("build/host/resnet18/report.json"))
    assert report["total_macs"] > 1.8e9 and len(report["layers"]) == 24
    assert sum(1 for l in report["layers"] if l.get("gemm", {}).get("residual")) == 8
    assert steps(project.scons("model=resnet18").stdout) == []

    text = project.read("targets.yaml")
    entry = ("  resnet18:\n    zoo: resnet18\n    seed: 0\n    input_shape: [1, 3, 224, 224]\n"
             "    quantization:\n      calibration: {count: 4, seed: 0}\n")
    assert entry in text                    # the override goes under resnet18's own entry
    project.write("targets.yaml", text.replace(entry, entry + "    targets:\n      host:\n        layers:\n"
                                               "          layer4.1.conv1: {l1_budget: 16KiB}\n"))
    # (a direct-kernel layer: on a Winograd one, layer1-3's, a budget under one tile row's
    # transformed input turns the layer direct, which changes the network's scratch too)
    assert steps(project.scons("model=resnet18").stdout) == [
        "CODEGEN layer4.1.conv1", "CC layer4.1.conv1", "AR libnns_resnet18.a", "LINK firmware", "RUN resnet18", "REPORT resnet18",
        "CHECK resnet18"]
    layers = json.loads(project.read("build/host/resnet18/report.json"))["layers"]
    tile = next(l for l in layers if l["name"] == "layer4.1.conv1")["tile"]
    assert tile["l1_bytes"] <= 16 * 1024
    # a Winograd layer whose budget no longer holds one tile row's transformed input (7 tiles x
    # 36 x 128 channels x 2 B = 64,512 B) runs the direct kernel, and says why (winograd: true:
    # the cost rule's choice is timed on a core whose L2 its 1.2 MB of weights overflow)
    l21 = next(l for l in layers if l["name"] == "layer2.1.conv1")
    assert "winograd" in l21["blocking"] or l21["gemm"]["winograd"].startswith("measured slower")
    text = project.read("targets.yaml")
    project.write("targets.yaml", text.replace("          layer4.1.conv1: {l1_budget: 16KiB}\n",
                                               "          layer4.1.conv1: {l1_budget: 16KiB}\n"
                                               "          layer2.1.conv1: {l1_budget: 32KiB, winograd: true}\n"))
    proc = project.scons("model=resnet18")
    assert "Test PASSED [host] resnet18" in proc.stdout and "CODEGEN layer2.1.conv1" in steps(proc.stdout)
    l21 = next(l for l in json.loads(project.read("build/host/resnet18/report.json"))["layers"]
               if l["name"] == "layer2.1.conv1")
    assert "winograd" not in l21["blocking"] and "64512 B, over the l1_budget 32768 B" in l21["gemm"]["winograd"]
