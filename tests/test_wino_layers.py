"""Winograd F(4,3) layers on the host (kernelgen.wino) bit for bit against the integer
reference: odd H/W (not multiples of 4), pads 1, 0 and asymmetric, an odd channel count,
C_in / C_out not multiples of 8 or 16, zero points and clamps (ReLU), a fused residual add,
on every variant this CPU runs (auto: avx512vnni512 here, the zmm one, on 1 and 2 threads: its
two-panel blocks, OC 37's odd panel alone; avx512vnni, avx2, portable);
weights at the 2^25 bound (all +-127 over 228 channels, inputs saturated: |y| = 2^24.98)
and past it (230 channels: the direct kernel, the report says why)."""
from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import adhoc, steps
from modelgen import quantize_qdq
from nnscons.targets.host import measure

TARGETS = {"host-wino": "winograd: true", "host-wino-avx2": "winograd: true, isa: avx2",
           "host-wino-portable": "winograd: true, isa: portable", "host-wino-2t": "winograd: true, threads: 2",
           "host-wino-512": "winograd: true, isa: avx512vnni512", "host-wino-ymm": "winograd: true, isa: avx512vnni"}
# the forced AVX-512 variants run where the CPU has AVX-512 VNNI (and BW: the zmm one)
ZMM = measure.cannot_run("avx512vnni512", measure.cpu_info())
RUN = [t for t in TARGETS if not (ZMM and ("512" in t or "ymm" in t))]


def _targets(project):
    text = project.read("targets.yaml")
    extra = "".join(f"  {t}:\n    kind: host\n    description: test\n    kernel: {{{k}}}\n\n" for t, k in TARGETS.items())
    project.write("targets.yaml", text.replace("\ntargets:\n", "\ntargets:\n" + extra, 1))


def _save(nodes, inits, shape, out_shape, path):
    graph = helper.make_graph(nodes, "wino", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def shapes_model(path, seed=0):
    rng = np.random.default_rng(seed)

    def init(name, shape, s):
        return numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float32), name)
    nodes = [helper.make_node("Conv", ["x", "wa", "ba"], ["a"], "conv_a", pads=[1, 1, 1, 1]),      # 5 -> 20, 13x11
             helper.make_node("Relu", ["a"], ["ar"]),
             helper.make_node("Conv", ["ar", "wb", "bb"], ["b"], "conv_b", pads=[0, 0, 0, 0]),     # 20 -> 24, 11x9
             helper.make_node("Conv", ["b", "wc", "bc"], ["c"], "conv_c", pads=[1, 1, 1, 1]),      # 24 -> 24
             helper.make_node("Add", ["c", "b"], ["s"], "add"),                                   # fused into conv_c
             helper.make_node("Relu", ["s"], ["sr"]),
             helper.make_node("Conv", ["sr", "wd", "bd"], ["d"], "conv_d", pads=[0, 1, 1, 0]),     # 24 -> 37, 10x9
             helper.make_node("GlobalAveragePool", ["d"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1)]
    inits = [init("wa", (20, 5, 3, 3), 0.3), init("ba", (20,), 0.1), init("wb", (24, 20, 3, 3), 0.15),
             init("bb", (24,), 0.1), init("wc", (24, 24, 3, 3), 0.12), init("bc", (24,), 0.1),
             init("wd", (37, 24, 3, 3), 0.12), init("bd", (37,), 0.1), init("wf", (5, 37), 0.3), init("bf", (5,), 0.1)]
    return _save(nodes, inits, [1, 5, 13, 11], [1, 5], path)


def bound_model(path):
    """Two convs of all-+-1 weights (quantized to +-127): 228 input channels (128 * 9 * 228 *
    127 < 2^25: Winograd) and 230 (128 * 9 * 230 * 127 > 2^25: direct); channel 0 positive, 1
    negative."""
    def w(ic):
        a = np.ones((2, ic, 3, 3), np.float32)
        a[1] = -1
        return a
    nodes = [helper.make_node("Slice", ["x", "s0", "s1", "ax"], ["x228"]),
             helper.make_node("Conv", ["x228", "w0"], ["a"], "conv_in", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["x", "w1"], ["b"], "conv_over", pads=[1, 1, 1, 1]),
             helper.make_node("Concat", ["a", "b"], ["y"], axis=1)]
    x = np.ones((1, 230, 6, 7), np.float32)
    inits = [numpy_helper.from_array(w(228), "w0"), numpy_helper.from_array(w(230), "w1")]
    inits += [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("s0", [0]), ("s1", [228]), ("ax", [1]))]
    return _save(nodes, inits, list(x.shape), [1, 4, 6, 7], path), x


def _report(project, target, stem):
    return {l["name"]: l for l in json.loads(project.read(os.path.join(adhoc(project, target, stem), "report.json")))["layers"]}


@pytest.mark.slow    # six builds of a five-layer model (about 90 s on a loaded Zen 4)
def test_winograd_layers_bit_exact_on_every_variant(project, tmp_path):
    if ZMM:
        print(f"isa avx512vnni512 and avx512vnni not run: {ZMM}")
    _targets(project)
    q = quantize_qdq(shapes_model(tmp_path / "f.onnx"), tmp_path / "winoshapes.onnx")
    proc = project.scons(f"target={','.join(RUN)}", f"model={q}")
    assert proc.stdout.count("match the integer reference bit for bit") == len(RUN), proc.stdout[-3000:]
    for t in RUN:
        rep = _report(project, t, "winoshapes")
        wino = sorted(n for n, l in rep.items() if "winograd" in str(l.get("blocking", "")))
        assert wino == ["conv_a", "conv_b", "conv_c", "conv_d"], (t, wino)
        assert rep["conv_c"]["gemm"]["residual"] == "add"
        assert rep["conv_d"]["gemm"]["variants"] == {"host-wino-avx2": ["avx2"], "host-wino-portable": ["portable"],
                                                     "host-wino-512": ["avx512vnni512"],
                                                     "host-wino-ymm": ["avx512vnni"]}.get(
            t, ["avx512vnni512", "avx2", "portable"])      # isa auto: the zmm variant (wino.CPUID)


@pytest.mark.slow
def test_winograd_at_the_bound(project, tmp_path):
    _targets(project)
    path, x = bound_model(tmp_path / "f.onnx")
    q = quantize_qdq(path, tmp_path / "winobound.onnx")
    np.save(tmp_path / "x.npy", x * 50)      # every input code saturated: |y| = 127 * 127 * 9 * 228
    run = ["host-wino", "host-wino-portable"] + ([] if ZMM else ["host-wino-ymm"])
    proc = project.scons(f"target={','.join(run)}", f"model={q}", f"input={tmp_path / 'x.npy'}")
    assert proc.stdout.count("match the integer reference bit for bit") == len(run), proc.stdout[-3000:]
    rep = _report(project, "host-wino", "winobound")
    assert "winograd" in rep["conv_in"]["blocking"]
    assert "winograd" not in rep["conv_over"]["blocking"]
    assert "2**25" in rep["conv_over"]["gemm"]["winograd"]


@pytest.mark.slow    # ic_resnet8 on two targets (about 40 s on a loaded Zen 4)
def test_resnet8_host_and_2t_with_winograd_layers(project):
    """The cost rule's Winograd layers (ResNet-8: the 16x16x32 and 8x8x64 3x3 convs) in a
    residual network, on one thread and on two (host-2t: tile rows split), bit for bit."""
    proc = project.scons("target=host,host-2t", "model=ic_resnet8")
    assert proc.stdout.count("match the integer reference bit for bit") == 2, proc.stdout[-3000:]
    for t, threads in (("host", 1), ("host-2t", 2)):
        rep = {l["name"]: l for l in json.loads(project.read(f"build/{t}/ic_resnet8/report.json"))["layers"]}
        wino = sorted(n for n, l in rep.items() if "winograd" in str(l.get("blocking", "")))
        assert wino == ["stack1.conv2", "stack2.conv2"], (t, wino)
        assert rep["stack1.conv2"]["gemm"]["threads"] == threads
        assert rep["stack0.conv1"]["gemm"]["winograd"] == "cost rule: direct"
    # bench.json names the algorithm each Winograd layer ran (its GMAC/s count the direct MACs)
    project.scons("target=host", "model=ic_resnet8", "bench", "iterations=2")
    bench = {l["name"]: l for l in json.loads(project.read("build/host/ic_resnet8/bench.json"))["layers"]}
    assert bench["stack1.conv2"]["variant"].startswith("wino-")
    assert bench["stack1.conv2"]["algorithm"] == "winograd F(4,3)"
    assert not bench["stack0.conv1"]["variant"].startswith("wino-") and "algorithm" not in bench["stack0.conv1"]


def test_cost_rule():
    """gemm.winograd_pays on ResNet-18's and ResNet-8's 3x3 stride-1 convs (README "winograd"):
    layer1-3 pay (layer3 where its l1_budget holds a tile row's V), layer4's 18 MiB of int16
    weights do not, nor layers of 16 input channels."""
    from nnscons.kernelgen import wino
    from nnscons.targets.host.gemm import winograd_pays

    def g(hw, c):
        return {"oh": hw, "ow": hw, "ic": c, "oc": c}
    assert [winograd_pays(g(hw, c)) for hw, c in ((56, 64), (28, 128), (14, 256), (7, 512))] == [True, True, True, False]
    assert [winograd_pays(g(hw, c)) for hw, c in ((32, 16), (16, 32), (8, 64))] == [False, True, True]
    # 56x56, input -> output channels (README "winograd")
    assert [winograd_pays(dict(g(56, i), oc=o)) for i, o in ((16, 32), (16, 64), (24, 64), (64, 16))] == \
        [False, False, True, True]
    assert wino.row_bytes(dict(g(14, 256), oh=14)) == 73728 == 72 * 1024    # layer3: the default budget holds it


def big_model(path):
    """One 3x3 conv of 256 -> 256 channels on 8x8 pixels (4 tiles): the cost rule runs it as
    Winograd (4,718,592 B of transformed weights, within its 5 MiB), beyond most cores' L2."""
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], "conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    inits = [numpy_helper.from_array((rng.standard_normal((256, 256, 3, 3)) * 0.03).astype(np.float32), "w"),
             numpy_helper.from_array((rng.standard_normal(256) * 0.1).astype(np.float32), "b")]
    return _save(nodes, inits, [1, 256, 8, 8], [1, 256, 8, 8], path)


@pytest.mark.slow    # four builds of one 37.7M-MAC conv and one timing of it (about 15 s)
def test_winograd_past_this_cores_l2_is_timed_against_the_direct_kernel(project, tmp_path):
    """`kernel.choose: auto` (the host's default): a layer whose Winograd the cost rule picks
    but whose transformed weights overflow this core's L2 is timed both ways (one line
    printed), the faster built and the result cached; the next build times nothing and
    rebuilds nothing; an edited cache decides the kernel; `choose: cpuid` keeps the rule."""
    from nnscons.cpuinfo import l2_bytes
    from nnscons.kernelgen import wino
    from nnscons.targets.host import autochoice
    u = wino.u_bytes({"ic": 256, "oc": 256, "oh": 8, "ow": 8})
    if (l2 := l2_bytes()) is not None and l2 >= u:
        pytest.skip(f"this core's L2 ({l2} B) holds the layer's {u} B of transformed weights: the cost rule decides")
    text = project.read("targets.yaml")
    project.write("targets.yaml", text.replace("\ntargets:\n", "\ntargets:\n  host-cpuid:\n    kind: host\n"
                                               "    description: test\n    kernel: {choose: cpuid}\n\n", 1))
    q = quantize_qdq(big_model(tmp_path / "f.onnx"), tmp_path / "winobig.onnx")
    proc = project.scons("target=host", f"model={q}")
    assert "the integer reference bit for bit" in proc.stdout, proc.stdout[-3000:]
    assert proc.stdout.count("WINOGRAD conv: winograd ") == 1 and "overflow this core's L2" in proc.stdout
    gm = _report(project, "host", "winobig")["conv"]["gemm"]
    best = "winograd" if gm["choice"]["winograd_ms"] < gm["choice"]["direct_ms"] else "direct"
    assert gm["winograd"].startswith("measured " + ("faster" if best == "winograd" else "slower"))
    assert ("winograd" in _report(project, "host", "winobig")["conv"]["blocking"]) == (best == "winograd")
    cache = os.path.join(project.path, adhoc(project, "host", "winobig"), gm["choice"]["cache"])
    doc = json.loads(open(cache).read())
    (key, entry), = doc["layers"].items()
    assert key.startswith("wd-") and set(entry["median_ms"]) == {"winograd", "direct"} and entry["best"] == best
    proc = project.scons("target=host", f"model={q}")
    assert "WINOGRAD" not in proc.stdout and not [s for s in steps(proc.stdout) if s.startswith(("CODEGEN", "CC"))]
    # the cache decides: the other kernel recorded faster
    other = "direct" if best == "winograd" else "winograd"
    doc["layers"][key] = dict(entry, best=other, median_ms={best: 2.0, other: 1.0})
    open(cache, "w").write(json.dumps(doc))
    proc = project.scons("target=host", f"model={q}")
    assert "WINOGRAD" not in proc.stdout and "CODEGEN conv" in steps(proc.stdout)
    assert "the integer reference bit for bit" in proc.stdout, proc.stdout[-3000:]
    assert ("winograd" in _report(project, "host", "winobig")["conv"]["blocking"]) == (other == "winograd")
    # choose: cpuid: the cost rule alone; under qemu (another CPU) nothing is timed either
    proc = project.scons("target=host-cpuid", f"model={q}")
    assert "WINOGRAD" not in proc.stdout and "the integer reference bit for bit" in proc.stdout
    assert _report(project, "host-cpuid", "winobig")["conv"]["gemm"]["winograd"] == "cost rule"
    spec = {"gemm": {"wino": {"why": "cost rule"}, "geom": {"ic": 256, "oc": 256, "oh": 8, "ow": 8}}}
    assert autochoice.uncertain(spec, {"run": {"platform": "native"}, "build": {"dir": "b"}})
    assert not autochoice.uncertain(spec, {"run": {"platform": "qemu"}, "build": {"dir": "b"}})
