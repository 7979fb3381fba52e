"""The cortex-m target: TFLite-numerics zoo models bit-exact under qemu-system-arm on a
Cortex-M55 (CMSIS-NN's Helium/MVE path, mps3-an547), a Cortex-M4 (its DSP path,
mps2-an386), a Cortex-M33 (DSP path, Secure state on mps2-an505) and a Cortex-M3 (plain C, mps2-an385) with conv, depthwise and add running CMSIS-NN; an ONNX-numerics model on the
portable kernels; CMSIS-NN taken from $CMSIS_NN/$CMSIS_CORE (here: ../shared/cmsis
unpacked) and a clear error without it.  Needs Debian's gcc-arm-none-eabi,
libnewlib-arm-none-eabi and qemu-system-arm, and the CMSIS archives of ../shared/cmsis."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

import cmsis_project
from conftest import ROOT, Project, _ignore

CC, QEMU, NM = "arm-none-eabi-gcc", "qemu-system-arm", "arm-none-eabi-nm"
pytestmark = [
    pytest.mark.xdist_group("cortex-m-proj"),   # the module's fixture (compiled or built once) on one worker
    pytest.mark.skipif(not (shutil.which(CC) and shutil.which(QEMU)),
                       reason="needs arm-none-eabi-gcc and qemu-system-arm (Debian: apt-get install "
                              "gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm)"),
    pytest.mark.skipif(len(cmsis_project.ARCHIVES) != 2, reason=cmsis_project.MISSING),
]


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    """A copy of the project (without ../shared beside it) with CMSIS_NN and CMSIS_CORE
    naming an unpacked copy, as a user's own CMSIS-NN would be given."""
    tmp = tmp_path_factory.mktemp("cortexm")
    dst = tmp / "proj"
    shutil.copytree(ROOT, dst, ignore=_ignore)
    with cmsis_project.environ(cmsis_project.unpack(tmp)):
        yield Project(dst)


def _build(proj, target, model):
    proc = proj.scons(f"target={target}", f"model={model}", timeout=1800)
    log = proj.read(f"build/{target}/{model}/run.log")
    assert "Test PASSED" in log and "MISMATCH" not in log and "ERROR" not in log, proc.stdout[-3000:] + log
    report = json.loads(proj.read(f"build/{target}/{model}/report.json"))
    return log, report


def _kernels(report) -> dict:
    return {layer["name"]: layer.get("kernel") for layer in report["layers"]}


def _symbols(proj, target, model) -> set:
    out = subprocess.run([NM, proj.file(f"build/{target}/{model}/firmware.elf")], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


@pytest.mark.slow   # 11-17.5 s of CPU per core (a CMSIS-NN build and ResNet-8 under qemu)
@pytest.mark.parametrize("target", ["cortex-m55", "cortex-m4", "cortex-m33", "cortex-m3"])
def test_tfl_resnet8_bit_exact_through_cmsis_nn(proj, target):
    log, report = _build(proj, target, "tfl_resnet8")
    kernels = _kernels(report)
    convs = [n for n in kernels if n.startswith("conv_2d")]
    adds = [n for n in kernels if n.startswith("add_")]
    assert len(convs) == 9 and len(adds) == 3, kernels
    assert all(kernels[n] == "cmsis-nn arm_convolve_wrapper_s8" for n in convs), kernels
    assert all(kernels[n] == "cmsis-nn arm_elementwise_add_s8" for n in adds), kernels
    assert kernels["average_pool_2d_12"] == "cmsis-nn arm_avgpool_s8", kernels
    # every layer checked on the device against its golden
    assert log.count(": OK") == len(kernels), log
    syms = _symbols(proj, target, "tfl_resnet8")
    assert {"arm_convolve_wrapper_s8", "arm_elementwise_add_s8", "nn_cm_reset"} <= syms
    # the core's own CMSIS-NN path: Helium (MVE) on the M55, the DSP extension on the M4
    # and M33, plain C on the M3
    path = {"cortex-m55": "mve", "cortex-m4": "dsp", "cortex-m33": "dsp", "cortex-m3": "scalar"}[target]
    for p in ("mve", "dsp"):
        assert (f"arm_convolve_wrapper_s8_get_buffer_size_{p}" in syms) == (p == path), (p, path)
    assert report["cortex_m"]["cmsis_nn_path"] == path
    # flash and RAM per memory: the weights are in the code memory, the arena in the data one
    mem = report["cortex_m_memory"]
    params = sum(layer["param_bytes"] for layer in report["layers"])
    assert params < mem["code_bytes"] <= mem["code_size"], mem
    assert mem["data_bytes"] <= mem["data_size"], mem
    # instructions per layer (qemu -icount): every layer measured, the total their sum
    assert all(layer["insns"] > 0 for layer in report["layers"]), report["layers"]
    assert report["total_insns"] == sum(layer["insns"] for layer in report["layers"])
    assert "not cycles" in report["insns_source"]


def test_simplecnn_on_the_cortex_m33_in_secure_state(proj):
    """mps2-an505 boots the M33 Secure from 0x10000000: the firmware is linked to the Secure
    aliases of the SSRAMs (code 0x10000000, data 0x38000000) and runs CMSIS-NN's DSP path."""
    _, report = _build(proj, "cortex-m33", "simplecnn")
    assert report["cortex_m"]["machine"] == "mps2-an505" and report["cortex_m"]["cmsis_nn_path"] == "dsp"
    assert report["cortex_m"]["cmsis_nn_layers"] == 5, _kernels(report)
    assert all(layer["insns"] > 0 for layer in report["layers"]), report["layers"]
    out = subprocess.run([NM, proj.file("build/cortex-m33/simplecnn/firmware.elf")], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    addr = {line.split()[-1]: int(line.split()[0], 16) for line in out.splitlines() if len(line.split()) == 3}
    assert 0x10000000 <= addr["nn_cm_reset"] < 0x10400000, hex(addr["nn_cm_reset"])
    assert 0x38000000 <= addr["__bss_start"] < addr["__stack_top"] == 0x38400000, addr


def _conv_macs_per_insn(report) -> float:
    convs = [layer for layer in report["layers"] if layer["op"] == "conv2d"]
    return sum(layer["macs"] for layer in convs) / sum(layer["insns"] for layer in convs)


@pytest.mark.slow   # two of the ResNet-8 builds above (after them in CI: the module's project has them)
def test_helium_does_4x_the_macs_per_instruction_of_scalar_on_the_convs(proj):
    """The same ResNet-8 convs on CMSIS-NN's MVE path (M55) and its plain C (M3)."""
    rates = {t: _conv_macs_per_insn(_build(proj, t, "tfl_resnet8")[1]) for t in ("cortex-m55", "cortex-m3")}
    assert rates["cortex-m55"] >= 4 * rates["cortex-m3"], rates


def test_tfl_dscnn_depthwise_bit_exact_on_m55(proj):
    _, report = _build(proj, "cortex-m55", "tfl_dscnn")
    kernels = _kernels(report)
    dws = [n for n in kernels if n.startswith("depthwise")]
    assert len(dws) == 4 and all(kernels[n] == "cmsis-nn arm_depthwise_conv_wrapper_s8" for n in dws), kernels


# TFLite operator test models (tests/tflite_cases.py) and the kernel each layer must run
OP_CASES = {
    "conv/same_stride2_relu": ["arm_convolve_wrapper_s8"],
    "conv/valid_dilated": ["arm_convolve_wrapper_s8"],
    "conv/relu_n1_to_1_5x3": ["arm_convolve_wrapper_s8"],
    "depthwise/m1_relu6": ["arm_depthwise_conv_wrapper_s8"],
    "depthwise/m3_dilated": ["portable"],          # channel multiplier 3: the portable grouped conv
    "add/relu": ["arm_depthwise_conv_wrapper_s8", "arm_elementwise_add_s8"],
    "sub/relu6": ["arm_depthwise_conv_wrapper_s8", "portable"],    # SUB: TFLite negates after rounding
    "maxpool/same": ["arm_max_pool_s8"],
    "maxpool/valid_relu6": ["arm_max_pool_s8"],
    "avgpool/same": ["arm_avgpool_s8"],
    "avgpool/valid": ["arm_avgpool_s8"],
}


@pytest.mark.parametrize("target", ["cortex-m55", "cortex-m4"])
def test_tflite_operators_bit_exact_on_their_cmsis_nn_kernels(proj, target):
    import numpy as np
    from tflite_cases import CASES
    names = {}
    for i, case in enumerate(sorted(OP_CASES)):
        b, _ = CASES[case](np.random.default_rng(0))
        rel = f"cm_cases/c{i}.tflite"
        proj.write(rel, b.finish(description=case))
        names[f"cmcase{i}"] = (rel, case)
    text = proj.read("targets.yaml")
    if "cmcase0:" not in text:
        proj.write("targets.yaml", text + "\n" + "".join(f"  {n}:\n    source: {rel}\n"
                                                          for n, (rel, _) in names.items()))
    proc = proj.scons(f"target={target}", f"model={','.join(names)}", "-j2", "-k", check=False, timeout=1800)
    for n, (_, case) in names.items():
        assert f"Test PASSED [{target}] {n}:" in proc.stdout, (case, proc.stdout[-3000:], proc.stderr[-2000:])
        report = json.loads(proj.read(f"build/{target}/{n}/report.json"))
        ran = [k.replace("cmsis-nn ", "") for k in _kernels(report).values()]
        assert ran == OP_CASES[case], (case, ran)


def _add_target(proj, name, body):
    text = proj.read("targets.yaml")
    if f"\n  {name}:" not in text:
        proj.write("targets.yaml", text.replace("\ntargets:\n", f"\ntargets:\n  {name}:\n{body}", 1))


def test_onnx_model_on_cmsis_nn_with_its_departures_from_onnx_counted(proj):
    """numerics cmsis (the default): simplecnn's convs, max pools and FC (after a flatten
    of 16x7x7: HWC columns) run CMSIS-NN, checked bit for bit against a reference that
    rounds as TFLite does there; the report counts each layer's 1-LSB departures from the
    ONNX rule on this input, and quantized.onnx still equals the ONNX-rule reference."""
    import numpy as np
    _, report = _build(proj, "cortex-m4", "simplecnn")
    kernels = _kernels(report)
    assert kernels == {"conv1": "cmsis-nn arm_convolve_wrapper_s8", "pool1": "cmsis-nn arm_max_pool_s8",
                       "conv2": "cmsis-nn arm_convolve_wrapper_s8", "pool2": "cmsis-nn arm_max_pool_s8",
                       "flatten": "portable", "fc": "cmsis-nn arm_fully_connected_per_channel_s8"}, kernels
    info = report["cmsis_numerics"]
    assert info["model_rule"] == "onnx" and "ties away from zero" in info["rule"]
    assert set(info["layers"]) == {"conv1", "pool1", "conv2", "pool2", "fc"}
    for name, entry in info["layers"].items():
        assert entry["max_diff_lsb"] <= 1 and 0 <= entry["departures"] <= entry["elements"], info
        layer = next(l for l in report["layers"] if l["name"] == name)
        assert layer["rule_departures"] == entry["departures"]
    assert info["layers"]["pool1"]["departures"] == 0          # max pooling: no rounding at all
    assert info["departures"] == sum(e["departures"] for e in info["layers"].values()) > 0, info
    # conv1's, recomputed: the ONNX rule on the run's input against the golden the device matched
    import pickle
    import numpy as np
    from nnscons.reference.runner import run_layer
    b = proj.file("build/cortex-m4/simplecnn")
    with open(os.path.join(b, "cache", "model.pkl"), "rb") as f:
        graph = pickle.load(f)["graph"]
    conv1 = next(l for l in graph.layers if l.name == "conv1")
    x = np.fromfile(os.path.join(b, "bin", "input.bin"), np.int8).reshape(1, 1, 28, 28)
    golden = np.fromfile(os.path.join(b, "bin", "golden", "conv1.bin"), np.int8).reshape(28, 28, 8)
    onnx_rule = run_layer(conv1, graph, [x])[0].transpose(1, 2, 0)
    assert int(np.count_nonzero(onnx_rule != golden)) == info["layers"]["conv1"]["departures"] > 0
    assert report["self_consistency"]["equal"], report["self_consistency"]


def test_onnx_exact_keeps_the_portable_kernels(proj):
    """An ONNX model's requantization rounds as ONNX does, which CMSIS-NN does not compute:
    with numerics onnx-exact every layer keeps the portable kernels, and is exact."""
    _add_target(proj, "cm4-exact", "    kind: cortex-m\n    toolchain: {cpu: cortex-m4}\n"
                                   "    cmsis_nn: {numerics: onnx-exact}\n")
    _, report = _build(proj, "cm4-exact", "simplecnn")
    assert set(_kernels(report).values()) == {"portable"}
    assert "cmsis_numerics" not in report and report["cortex_m"]["numerics"] == "onnx-exact"


def test_numerics_per_layer(proj):
    """A layer's own `numerics: onnx-exact` keeps that layer on the portable kernels in the
    ONNX rule while the others run CMSIS-NN in TFLite's; the run is bit-exact and the
    departures are counted for the switched layers only."""
    text = proj.read("targets.yaml")
    marker = "    targets:\n      host:\n        layers:\n          conv1: {l1_budget: 8KiB}\n"
    assert marker in text, "the manifest's simplecnn entry changed: update this test"
    proj.write("targets.yaml", text.replace(marker, marker + "      cortex-m4:\n        layers:\n"
                                            "          conv2: {numerics: onnx-exact}\n", 1))
    try:
        _, report = _build(proj, "cortex-m4", "simplecnn")
    finally:
        proj.write("targets.yaml", text)
    kernels = _kernels(report)
    assert kernels["conv2"] == "portable" and kernels["conv1"] == "cmsis-nn arm_convolve_wrapper_s8", kernels
    assert set(report["cmsis_numerics"]["layers"]) == {"conv1", "pool1", "pool2", "fc"}


def test_without_cmsis_nn_a_clear_error(proj, monkeypatch):
    monkeypatch.setenv("CMSIS_NN", str(proj.file("no-such-cmsis")))
    proc = proj.scons("target=cortex-m55", "model=tfl_autoencoder", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out
    assert "needs CMSIS-NN: set CMSIS_NN" in out, out


# the issue's goals: the zoo's MLPerf Tiny models and simplecnn on the three cores' qemu
# machines (ONNX models: CMSIS-NN with numerics cmsis), the TFLite ones bit-exact with the
# LiteRT-checked reference; ResNet-8 within the AN547's 512 KiB ITCM and DTCM
GOAL_MODELS = ["simplecnn", "ic_resnet8", "kws_dscnn", "vww_mobilenetv1", "ad_autoencoder",
               "tfl_resnet8", "tfl_dscnn", "tfl_mobilenetv1"]


@pytest.mark.slow
@pytest.mark.parametrize("target", ["cortex-m55", "cortex-m7", "cortex-m4"])
def test_goal_models_pass_on_the_three_cores(proj, target):
    proc = proj.scons(f"target={target}", f"model={','.join(GOAL_MODELS)}", "-j2", "-k", check=False, timeout=7200)
    for model in GOAL_MODELS:
        assert f"Test PASSED [{target}] {model}:" in proc.stdout, (model, proc.stdout[-3000:], proc.stderr[-2000:])
        report = json.loads(proj.read(f"build/{target}/{model}/report.json"))
        assert report["passed"] and report["total_insns"] > 0
        if model not in ("ad_autoencoder", "tfl_autoencoder"):     # FC-only models: no conv
            assert report["cortex_m"]["cmsis_nn_layers"] > 0, model
    mem = json.loads(proj.read(f"build/{target}/ic_resnet8/report.json"))["cortex_m_memory"]
    if target == "cortex-m55":
        assert mem["code_size"] == mem["data_size"] == 512 * 1024
    assert mem["code_bytes"] <= mem["code_size"] and mem["data_bytes"] <= mem["data_size"], mem
