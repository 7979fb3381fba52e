"""The BRGEMM kernel generator: every ISA variant against a plain C reference for every
M, N in 1..64 and K in {1, 3, 8, 16, 27, 64, 128, 576} (random data, -128/127 everywhere,
requantization ties), blocking keys and what they rebuild, threads, isa, bench."""
from __future__ import annotations

import json
import os
import platform
import subprocess

import numpy as np
import pytest

from conftest import ROOT, adhoc, steps
from nnscons import kernelgen
from nnscons.kernelgen.isa import ISAS

KS = (1, 3, 8, 16, 27, 64, 128, 576)
# the full sweep with the default blocking; other register blockings on two K values
CASES = [(k, 6, 16, 2) for k in KS] + [(k, mr, nr, ku) for k in (3, 64)
                                       for mr, nr, ku in ((4, 24, 1), (3, 32, 4), (12, 8, 3), (1, 8, 1))]
# the double-precision epilogue where the driver's data keep |acc + bias| * mult < 2**53
CASES += [(k, 6, 16, 2, "f64") for k in KS if k <= 128] + [(64, 3, 32, 4, "f64"), (3, 1, 8, 1, "f64")]
# the avx2u8 variant's own blocking (kernelgen.U8_BLOCKING: 10x8, k_unroll 2) on every K; the
# cases above run it too (every variant runs every case)
CASES += [(k, 10, 8, 2) for k in KS] + [(k, 10, 8, 2, "f64") for k in KS if k <= 128]
# avx512vnni's wide blockings (32 registers: kernelgen.vnni_blocking), too big for the
# 16-register variants, which skip them
# (a few K: every K runs at 6x16, which it runs too; each wide case adds about 50
# microkernels to the driver's compile, the suite's longest single step)
CASES += [(k, 6, 32, 2) for k in (1, 27, 576)] + [(k, 8, 24, 2) for k in (3, 64)] + [(64, 6, 32, 2, "f64")]
# avx512vnni512's own (zmm: 16 channels per register, kernelgen.VNNI512_NR): 5x64 and 4x48
# fit only it; 4x24 and 3x32 above run its ymm tail (an odd count of 8-channel groups)
CASES += [(k, 5, 64, 2) for k in (3, 576)] + [(64, 4, 48, 2), (64, 5, 64, 2, "f64")]
B = "build/host/simplecnn"


@pytest.fixture(scope="module")
def kerneltest(tmp_path_factory):
    d = tmp_path_factory.mktemp("kerneltest")
    src = d / "kerneltest.c"
    src.write_text(kernelgen.gemm_test_source(CASES))
    exe = d / "kerneltest"
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror",
                    "-I", os.path.join(ROOT, "kernels", "common"), str(src), "-o", str(exe)], check=True)
    return str(exe)


# the variants this machine's compiler builds: the Arm ones run under qemu in test_arm64.py
_GUARD = {"x86_64": "NN_HAVE_X86", "amd64": "NN_HAVE_X86", "aarch64": "NN_HAVE_ARM64", "arm64": "NN_HAVE_ARM64"}
NATIVE = sorted(n for n, isa in ISAS.items()
                if isa.guard.split(" && ")[0] in ("1", _GUARD.get(platform.machine().lower())))


@pytest.mark.slow   # the driver's compile: 115 s of CPU (14 MB of C), then 36 s of runs (Zen 3)
@pytest.mark.xdist_group("kernelgen-driver")   # one worker compiles the driver once
@pytest.mark.parametrize("isa", NATIVE)
def test_every_variant_matches_the_reference_for_every_shape(kerneltest, isa):
    proc = subprocess.run([kerneltest, isa], stdout=subprocess.PIPE, text=True, timeout=600)
    if proc.returncode == 77:
        # a variant this CPU cannot run is still built (AVX-VNNI here on a Zen 4): only a
        # compiler without its intrinsics may leave it out
        assert "built, but this CPU cannot run it" in proc.stdout or "compiler" in proc.stdout, proc.stdout
        pytest.skip(proc.stdout.strip())   # e.g. AVX2 on a CPU without it
    assert proc.returncode == 0, proc.stdout
    assert f"{isa}: " in proc.stdout and " 0 mismatching" in proc.stdout


def test_packing_matches_the_microkernel_layout():
    wm = np.arange(3 * 2 * 3, dtype=np.int8).reshape(3, 2, 3)     # N=3, 2 taps, IC=3
    packed = kernelgen.pack_weights(wm, icp=4, nr=8)
    assert packed.size == 8 * 2 * 4
    # panel 0, pair 1 (tap 0, channels 2 and 3), output channel 2: (w[2,0,2], 0)
    assert list(packed[(1 * 8 + 2) * 2:(1 * 8 + 2) * 2 + 2]) == [wm[2, 0, 2], 0]
    assert list(packed[(2 * 8 + 1) * 2:(2 * 8 + 1) * 2 + 2]) == [wm[1, 1, 0], wm[1, 1, 1]]


def _u8_emulated(packed, xu, nr, ntaps, q, taps):
    """The avx2u8 microkernel's arithmetic in numpy (isa.Avx2U8) for one pixel whose window
    is xu (u8, flat, tap offsets `taps`): per step the vpmaddubsw pair sums saturated to
    int16 as the instruction does, widened as d - 65535 * h - 32768 * steps; per channel."""
    w = packed["weight"].astype(np.int64)
    out, base = [], 0
    for pn in range(len(packed["xidx"]) - 1):
        offs = [t + 4 * k for t in taps for k in range(q)] + list(packed["xo"][packed["xidx"][pn]:packed["xidx"][pn + 1]])
        steps = w[base:base + len(offs) * nr * 4].reshape(len(offs), nr, 4)
        base += len(offs) * nr * 4
        x = np.stack([xu[o:o + 4] for o in offs]).astype(np.int64)[:, None, :]       # (steps, 1, 4)
        pairs = np.clip((x * steps).reshape(len(offs), nr, 2, 2).sum(-1), -32768, 32767)
        out.append(pairs.sum(axis=(0, 2)))
    return np.concatenate(out)


def test_u8_split_makes_every_vpmaddubsw_pair_exact():
    """pack_u8's proof: every packed pair of A and B cannot saturate, A + B = W, and the
    kernel's arithmetic on them (saturation emulated) is the exact dot product for u8
    inputs 0, 255 and random, where the unsplit weights do saturate; on both u8 layouts
    (7 channels: 3 runs of 21 values would pad to 18 quads, so im2col rows of 16 quads;
    8 channels: runs of 24, no padding, per-row segments)."""
    rng = np.random.default_rng(1)
    for ic, im2col in ((7, True), (8, False)):
        g = dict(ic=ic, ih=5, iw=5, oc=20, oh=3, ow=3, kh=3, kw=3, sh=1, sw=1, dh=1, dw=1, pt=0, pl=0, pb=0, pr=0)
        assert kernelgen.u8_im2col(g) == im2col
        p = kernelgen.padded(g)
        taps, utaps = kernelgen.tap_offsets(g), kernelgen.u8_taps(g)
        q = kernelgen.u8_quads(g)
        for wm in (rng.integers(-128, 128, (20, 9, ic)), np.full((20, 9, ic), 127), np.full((20, 9, ic), -128)):
            wm = wm.astype(np.int8)
            packed = kernelgen.pack_u8(wm, g, 8)
            assert kernelgen.u8_pairs_safe(packed["weight"])
            assert packed["xo"].size > 0 and len(packed["steps"]) == 3
            for xu in (np.zeros(p["hp"] * p["wp"] * p["icp"] + 4, np.int64), np.full(p["hp"] * p["wp"] * p["icp"] + 4, 255),
                       rng.integers(0, 256, p["hp"] * p["wp"] * p["icp"] + 4)):
                window = np.stack([xu[t:t + g["kw"] * g["ic"]] for t in taps])           # (kh, kw*ic)
                exact = (kernelgen.segments(wm, g).astype(np.int64) * window[None]).sum(axis=(1, 2))
                # the buffer the microkernel reads: the padded rows, or the pixel's im2col row
                xk = np.concatenate([window.reshape(-1), np.full(4 * q + 4 - window.size, 99)]) if im2col else xu
                got = _u8_emulated(packed, xk, 8, len(utaps), q, utaps)[:20]
                assert (got == exact).all()
    # the check is not vacuous: without the split, 127s saturate on 255s
    raw = np.full((8, 1, 4), 127, np.int64)
    assert not kernelgen.u8_pairs_safe(raw.astype(np.int8))
    assert np.clip((255 * raw).reshape(8, 2, 2).sum(-1), -32768, 32767).sum() != (255 * raw).sum()


def test_cost_model_blocking_fits_the_register_file():
    for m, n, k2 in ((3136, 64, 288), (49, 512, 2304), (1, 1000, 256), (12544, 64, 98)):
        b = kernelgen.default_blocking(m, n, k2)
        assert b["mr"] * (b["nr"] // 8) + b["nr"] // 8 + 1 <= 16 and b["nr"] % 8 == 0


def test_core_limits_keep_zen1_narrow_and_widen_elsewhere():
    """The cost model's register limits by /proc/cpuinfo: Zen 1 keeps 8 accumulators and a
    spare register (4x16 on a 3x3 conv), a Zen 3 or an Intel core 12 and none (6x16), a
    text without the fields the wide ones."""
    zen1 = "vendor_id\t: AuthenticAMD\ncpu family\t: 23\nmodel\t\t: 1\n"
    zen3 = "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
    intel = "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"
    zen2 = "vendor_id\t: AuthenticAMD\ncpu family\t: 23\nmodel\t\t: 49\n"
    assert kernelgen.core_limits(zen1) == (kernelgen.MAX_ACCUMULATORS, 1)
    for text in (zen3, intel, zen2, "", "cpu family : x\n"):
        assert kernelgen.core_limits(text) == (kernelgen.WIDE_ACCUMULATORS, 0)
    assert kernelgen.default_blocking(3136, 64, 288, kernelgen.core_limits(zen1))["mr"] == 4
    wide = kernelgen.default_blocking(3136, 64, 288, kernelgen.core_limits(zen3))
    assert (wide["mr"], wide["nr"]) == (6, 16)
    for mr, nr in kernelgen.candidates(limits=kernelgen.core_limits(zen3)):
        assert mr * (nr // 8) + nr // 8 + 2 <= 16 and mr * (nr // 8) <= kernelgen.WIDE_ACCUMULATORS


def _layer_keys(project, layer, keys):
    text = project.read("targets.yaml")
    old = "          conv1: {l1_budget: 8KiB}\n"
    project.write("targets.yaml", text.replace(old, old + f"          {layer}: {keys}\n"))


def test_blocking_edit_rebuilds_that_layer_only(prebuilt):
    project, first = prebuilt("target=host", "model=simplecnn")
    assert "Test PASSED [host] simplecnn" in first.stdout
    # mr changes the code only
    _layer_keys(project, "conv2", "{mr: 3}")
    assert steps(project.scons().stdout) == [
        "CODEGEN conv2", "CC conv2", "AR libnns_simplecnn.a", "LINK firmware", "RUN simplecnn",
        "REPORT simplecnn", "CHECK simplecnn"]
    rep = json.loads(project.read(f"{B}/report.json"))["layers"][2]
    assert rep["gemm"]["mr"] == 3 and rep["gemm"]["origin"] == "layer" and rep["status"] == "ok"
    # nr changes the packed weights too
    project.write("targets.yaml", project.read("targets.yaml").replace("conv2: {mr: 3}", "conv2: {mr: 3, nr: 8}"))
    got = steps(project.scons().stdout)
    assert sorted(got) == sorted([
        "CODEGEN conv2", "CC conv2", "WEIGHTS conv2", "AS conv2",
        "AR libnns_simplecnn.a", "LINK firmware", "RUN simplecnn", "REPORT simplecnn", "CHECK simplecnn"]), got
    assert "Test PASSED" in project.read(f"{B}/check.txt")
    # a blocking the register file cannot hold is an error naming the key
    project.write("targets.yaml", project.read("targets.yaml").replace("conv2: {mr: 3, nr: 8}",
                                                                       "conv2: {mr: 9, nr: 16}"))
    proc = project.scons(check=False)
    assert proc.returncode == 2 and "layers.conv2.mr" in proc.stderr and "vector registers" in proc.stderr


@pytest.mark.slow   # two cold host builds (portable ISA on 3 threads, 2 threads): 20.7 s of CPU
def test_portable_isa_and_threads_are_bit_exact(project):
    text = project.read("targets.yaml")
    project.write("targets.yaml", text.replace("  host-asan:\n", "  host-p3:\n    kind: host\n"
                                               "    kernel: {isa: portable, threads: 3}\n\n"
                                               "  host-t2:\n    kind: host\n    tiling: {l1_budget: 2KiB}\n"
                                               "    kernel: {threads: 2}\n\n  host-asan:\n"))
    proc = project.scons("target=host-p3", "model=simplecnn")
    assert "Test PASSED [host-p3] simplecnn" in proc.stdout
    src = project.read("build/host-p3/simplecnn/src/layers/conv2.c")
    assert "run_avx2" not in src and "nn_parallel_for(x->pool, 3," in src
    # small bands: each thread takes whole bands in its own buffer
    proc = project.scons("target=host-t2", "model=simplecnn")
    assert "Test PASSED [host-t2] simplecnn" in proc.stdout
    assert "(long)i * " in project.read("build/host-t2/simplecnn/src/layers/conv1.c")   # its own band buffer


def test_tuning_file_and_bench(prebuilt):
    project, first = prebuilt("target=host", "model=simplecnn")
    assert "Test PASSED" in first.stdout
    # naming a tuning file rebuilds exactly the layers whose blocking it changes (and the
    # network table: conv2's weights .bin grows to 24 channels)
    project.write("tuning.json", json.dumps({"model": "simplecnn",
                                             "layers": {"conv2": {"mr": 2, "nr": 24, "k_unroll": 1}}}))
    text = project.read("targets.yaml")
    project.write("targets.yaml", text.replace("    kind: host\n    description: generated",
                                               "    kind: host\n    kernel: {tuning: tuning.json}\n"
                                               "    description: generated", 1))
    rebuilt = sorted(["CODEGEN conv2", "CC conv2", "WEIGHTS conv2", "AS conv2", "CODEGEN nns_simplecnn.c",
                      "CC nns_simplecnn", "AR libnns_simplecnn.a", "LINK firmware", "RUN simplecnn",
                      "REPORT simplecnn", "CHECK simplecnn"])
    got = steps(project.scons().stdout)
    assert sorted(got) == rebuilt, got
    rep = json.loads(project.read(f"{B}/report.json"))["layers"][2]["gemm"]
    assert (rep["mr"], rep["nr"], rep["k_unroll"], rep["origin"]) == (2, 24, 1, "tuned")
    assert "Test PASSED" in project.read(f"{B}/check.txt")
    # a tuning file for another model changes nothing here
    project.write("tuning.json", json.dumps({"model": "resnet18", "layers": {"conv2": {"mr": 1}}}))
    assert sorted(steps(project.scons().stdout)) == rebuilt
    assert json.loads(project.read(f"{B}/report.json"))["layers"][2]["gemm"]["origin"] == "model"

    proc = project.scons("target=host", "model=simplecnn", "bench", "iterations=3")
    assert "BENCH [host] simplecnn: median" in proc.stdout
    bench = json.loads(project.read(f"{B}/bench.json"))
    assert bench["iterations"] == 3 and bench["threads"] == 1 and bench["median_ms"] > 0
    assert [l["name"] for l in bench["layers"]] == ["conv1", "pool1", "conv2", "pool2", "flatten", "fc"]
    assert all(l["median_ms"] >= 0 for l in bench["layers"])
    # the variant each layer ran is the firmware's word (its checked run says the same)
    ran = {l.split()[1]: l.split()[2] for l in project.read(f"{B}/run.log").splitlines() if l.startswith("variant ")}
    assert {l["name"]: l["variant"] for l in bench["layers"] if "variant" in l} == ran and "conv2" in ran


def _depthwise_model(path, channels=12):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)

    def w(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)
    c = channels
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], "expand", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["a", "w1", "b1"], ["b"], "dw5", pads=[2, 2, 2, 2], strides=[2, 2], group=c),
             helper.make_node("Relu", ["b"], ["r"], "relu"),
             helper.make_node("Conv", ["r", "w2"], ["d"], "dw3dil", pads=[2, 2, 2, 2], dilations=[2, 2], group=c)]
    graph = helper.make_graph(nodes, "dw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 17, 19])],
                              [helper.make_tensor_value_info("d", TensorProto.FLOAT, [1, c, 9, 10])],
                              [w("w0", c, 3, 3, 3), w("w1", c, 1, 5, 5), w("b1", c), w("w2", c, 1, 3, 3)])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    return path


# three builds each (host, portable, asan): 25-27 s of CPU; 12 channels (a partial vector) stays
# quick, 72 runs in CI
@pytest.mark.parametrize("channels", [12, pytest.param(72, marks=pytest.mark.slow)])
def test_depthwise_vector_kernel_is_bit_exact(project, channels):
    path = _depthwise_model(project.file(f"m/dw{channels}.onnx"), channels)
    text = project.read("targets.yaml")
    project.write("targets.yaml", text.replace("  host-asan:\n", "  host-portable:\n    kind: host\n"
                                               "    kernel: {isa: portable}\n\n  host-asan:\n"))
    for target in ("host", "host-portable", "host-asan"):
        proc = project.scons(f"target={target}", f"model={path}")
        assert f"Test PASSED [{target}] dw{channels}" in proc.stdout
    assert "nn_dwconv_band_fast(0," in project.read(f"{adhoc(project, 'host', f'dw{channels}')}/src/layers/dw5.c")


@pytest.mark.slow   # 63.5 s of CPU measured in the quick tier (CI runs it)
def test_residual_add_fuses_into_the_conv_epilogue(project):
    """ResNet-8: each Add goes into the generated conv that produces one operand (the later
    one: the 1x1 shortcut in a downsampling block), checked against the Add's golden; the
    plan has no add layer; editing a fused layer's blocking rebuilds that layer only."""
    proc = project.scons("target=host", "model=ic_resnet8")
    assert "Test PASSED [host] ic_resnet8: all 12 layers match" in proc.stdout
    layers = json.loads(project.read("build/host/ic_resnet8/report.json"))["layers"]
    assert not any(l["op"] == "add" for l in layers)
    fused = {l["name"]: l["gemm"]["residual"] for l in layers if l.get("gemm", {}).get("residual")}
    assert fused == {"stack0.conv2": "stack0.add", "stack1.shortcut": "stack1.add",
                     "stack2.shortcut": "stack2.add"}
    assert all(fused[l["name"]] in l["fused"] for l in layers if l["name"] in fused)
    src = project.read("build/host/ic_resnet8/src/layers/stack1_shortcut.c")
    assert "nn_res_init(&res, " in src and "nn_avx2_requant_res8(" in src
    text = project.read("targets.yaml")
    entry = "  ic_resnet8:\n    zoo: resnet8           # MLPerf Tiny image classification\n"
    assert entry in text
    project.write("targets.yaml", text.replace(entry, entry + "    targets:\n      host:\n        layers:\n"
                                               "          stack1.shortcut: {mr: 3}\n"))
    assert steps(project.scons("target=host", "model=ic_resnet8").stdout) == [
        "CODEGEN stack1.shortcut", "CC stack1.shortcut", "AR libnns_ic_resnet8.a", "LINK firmware",
        "RUN ic_resnet8", "REPORT ic_resnet8", "CHECK ic_resnet8"]
    proc = project.scons("target=host-asan", "model=ic_resnet8")
    assert "Test PASSED [host-asan] ic_resnet8: all 12 layers match" in proc.stdout


def _residual_model(path, channels=12):
    """conv -> relu -> conv -> add(the relu's output) -> relu: channel counts that are not a
    multiple of 8 (the epilogue's partial vectors), the add's operands in both orders."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(5)

    def w(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)
    c = channels
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["a"], "conv_a", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["ra"], "relu_a"),
             helper.make_node("Conv", ["ra", "w1", "b1"], ["b"], "conv_b", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["ra", "b"], ["s"], "add_b"),
             helper.make_node("Relu", ["s"], ["rs"], "relu_s"),
             helper.make_node("Conv", ["rs", "w2"], ["d"], "conv_d", pads=[0, 0, 0, 0]),
             helper.make_node("Add", ["d", "rs"], ["y"], "add_d")]
    graph = helper.make_graph(nodes, "res", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, 9, 11])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 9, 11])],
                              [w("w0", c, 5, 3, 3), w("b0", c), w("w1", c, c, 3, 3), w("b1", c), w("w2", c, c, 1, 1)])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    return path


def _cpu_has(flag: str) -> bool:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        return f" {flag}" in f.read()


# ResNet-8 on host and host-asan: 33.3 s of CPU on an AVX2 machine (CI runs both)
@pytest.mark.slow
@pytest.mark.parametrize("isa, flag", [("avx2u8", "avx2"), ("avx512vnni", "avx512_vnni"),
                                       ("avx512vnni512", "avx512_vnni"), ("avxvnni", "avx_vnni")])
def test_forced_u8_variant_is_bit_exact_on_a_model(project, isa, flag):
    """isa: avx2u8 / avx512vnni / avx512vnni512 / avxvnni on ResNet-8 (a 3-channel first conv, 3x3 and 1x1 convs
    with fused residual adds, a linear layer): every generated layer runs only that
    variant (avx2u8 with correction groups) and matches the integer reference, also under
    the sanitizers."""
    if not _cpu_has(flag):
        pytest.skip(f"the forced {isa} variant needs a CPU with {flag}")
    text = project.read("targets.yaml")
    # the int16 blocking's mr (6) above the variant's own (avx2u8: 5): blocks are counted
    # with the running variant's mr
    project.write("targets.yaml", text.replace("  host-asan:\n", "  host-u8:\n    kind: host\n"
                                               f"    kernel: {{isa: {isa}, mr: 6, nr: 8}}\n\n  host-asan:\n"))
    proc = project.scons("target=host-u8", "model=ic_resnet8")
    assert "Test PASSED [host-u8] ic_resnet8: all 12 layers match" in proc.stdout
    gemms = [l["gemm"] for l in json.loads(project.read("build/host-u8/ic_resnet8/report.json"))["layers"]
             if "gemm" in l]
    assert len(gemms) == 10 and all(g["variants"] == [isa] for g in gemms)
    if isa == "avx2u8":
        assert sum(g["u8"]["correction_quads"] for g in gemms) > 0
    else:
        assert all("vnni" in g for g in gemms)
    src = project.read("build/host-u8/ic_resnet8/src/layers/stack1_shortcut.c")
    assert f"run_{isa}" in src and "fill_u8(" in src and "run_avx2(" not in src
    text = project.read("targets.yaml")
    project.write("targets.yaml", text.replace("      ldflags: [\"-fsanitize=address,undefined\"]\n",
                                               "      ldflags: [\"-fsanitize=address,undefined\"]\n"
                                               f"    kernel: {{isa: {isa}}}\n", 1))
    proc = project.scons("target=host-asan", "model=ic_resnet8")
    assert "Test PASSED [host-asan] ic_resnet8: all 12 layers match" in proc.stdout


@pytest.mark.slow   # three builds (host, portable, asan): 26.1 s of CPU
def test_fused_residual_add_with_partial_vectors_on_every_variant(project):
    path = _residual_model(project.file("m/res12.onnx"))
    text = project.read("targets.yaml")
    project.write("targets.yaml", text.replace("  host-asan:\n", "  host-portable:\n    kind: host\n"
                                               "    kernel: {isa: portable}\n\n  host-asan:\n"))
    for target in ("host", "host-portable", "host-asan"):
        proc = project.scons(f"target={target}", f"model={path}")
        assert f"Test PASSED [{target}] res12: all 3 layers match" in proc.stdout
    layers = json.loads(project.read(f"{adhoc(project, 'host', 'res12')}/report.json"))["layers"]
    assert {l["name"]: l["gemm"].get("residual") for l in layers} == {
        "conv_a": None, "conv_b": "add_b", "conv_d": "add_d"}


def _p56_model(project) -> str:
    """A 1x1 conv of 336 -> 56 channels on 3x3 pixels (sections of sizes no power of two)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array((rng.standard_normal((56, 336, 1, 1)) * 0.05).astype(np.float32), "w")
    b = numpy_helper.from_array((rng.standard_normal(56) * 0.1).astype(np.float32), "b")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w", "b"], ["y"], "proj")], "p56",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 336, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 56, 3, 3])], [w, b])
    path = project.file("m/p56.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    return path


def test_every_weights_section_starts_on_a_cache_line(project):
    """The weights .bin is linked 64-byte aligned and each of its sections starts on a
    64-byte boundary, so a zmm kernel's 64-byte weight loads never straddle two cache lines
    (at 16, as before, ResNet-18 ran 7.2 ms against 6.4 on an Intel Xeon)."""
    import re
    import subprocess
    path = _p56_model(project)
    proc = project.scons("target=host", f"model={path}")
    assert "Test PASSED [host] p56" in proc.stdout, proc.stdout[-3000:]
    b = os.path.join(project.path, adhoc(project, "host", "p56"))
    with open(os.path.join(b, "src", "layers", "proj.c")) as f:
        offsets = [int(o) for o in re.findall(r"params \+ (\d+)\)", f.read())]
    assert len(offsets) >= 6 and any(o % 256 for o in offsets), offsets     # sections of odd sizes
    assert all(o % 64 == 0 for o in offsets), offsets
    nm = subprocess.run(["nm", os.path.join(b, "firmware")], stdout=subprocess.PIPE, text=True, check=True).stdout
    params = [int(line.split()[0], 16) for line in nm.splitlines() if "_params_proj" in line]
    assert params and all(a % 64 == 0 for a in params), nm


def test_every_variant_reads_whole_panels_of_multipliers_under_the_sanitizers(project):
    """A 1x1 conv of 336 -> 56 channels on 3x3 pixels: the int16 kernels' panels of 8 end at 56,
    a vnni variant's panels of 32 at 64. Its epilogue set-up reads the multipliers and shifts of
    whole panels, so those sections are padded to the widest panel (shift 31): before, the second
    panel read 8 values of the next section, and UBSan stopped at a shift of 10^8 (MobileNetV2's
    block5_0_project on host-asan)."""
    path = _p56_model(project)
    proc = project.scons("target=host-asan", f"model={path}")
    assert "Test PASSED [host-asan] p56" in proc.stdout, proc.stdout[-3000:]
    gemm = json.loads(project.read(f"{adhoc(project, 'host-asan', 'p56')}/report.json"))["layers"][0]["gemm"]
    widest = max(b["nr"] for b in gemm["variant_blocking"].values())
    assert widest > gemm["nr"] and 56 % widest, gemm["variant_blocking"]   # the case: panels past 56
