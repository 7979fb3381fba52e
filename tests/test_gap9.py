"""GAP9 target: tiling and memory plans, and the generated PMSIS code run on the PMSIS
emulation (platform=emul, threads + capped L1 + DMA that lands at wait) and on qemu."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import modelgen
from conftest import adhoc, steps

B = "build/gap9/simplecnn"


# ---- planning (no compiler)

@pytest.mark.parametrize("seed", range(6))
def test_tiles_fit_the_budget_and_never_beat_the_lower_bound(seed):
    from nnscons.targets.gap9 import tiling
    rng = np.random.default_rng(seed)
    for _ in range(40):
        k = int(rng.choice([1, 3, 5, 7]))
        s, d = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        c, h, w = int(rng.integers(1, 40)), int(rng.integers(k * d, 60)), int(rng.integers(k * d, 60))
        groups = c if rng.random() < 0.3 else 1
        oc = c if groups > 1 else int(rng.integers(1, 70))
        p = int(rng.integers(0, k // 2 + 1))
        oh, ow = (h + 2 * p - d * (k - 1) - 1) // s + 1, (w + 2 * p - d * (k - 1) - 1) // s + 1
        g = tiling.Window(c=c, h=h, w=w, oc=oc, oh=oh, ow=ow, kh=k, kw=k, sh=s, sw=s, dh=d, dw=d, pt=p, pl=p,
                          groups=groups, w_per_oc=(c // groups) * k * k, p_per_oc=12, p_fixed=0)
        budget = int(rng.integers(256, 64 * 1024))
        t, smallest = tiling.plan_window(g, budget)
        if t is None:
            assert smallest > budget
            t, _ = tiling.plan_window(g, smallest)
            assert t is not None and t.l1_bytes == smallest
            continue
        assert t.l1_bytes <= budget and t.l2_l1_bytes >= t.lower_bound
        assert t.n_h == -(-oh // t.th) and t.n_w == -(-ow // t.tw) and t.n_c == -(-oc // t.tc)
        assert t.in_rows <= h and t.in_cols <= w
        whole, _ = tiling.plan_window(g, 1 << 30)
        assert whole.n_tiles == 1 and whole.l2_l1_bytes == whole.lower_bound or s > 1 or d > 1


def _session(project, model, **edits):
    """The planned session of `model` on gap9 (platform=emul), in the project copy."""
    from nnscons import manifest
    from nnscons.builders.graph.session import Session
    from nnscons.targets import schemas
    cwd = os.getcwd()
    os.chdir(project.path)
    try:
        m = manifest.load_manifest("targets.yaml", schemas())
        t, mc = m.select("gap9", model)
        return Session(project.path, m, t, mc, None, "emul")
    finally:
        os.chdir(cwd)


def test_resnet18_224_fits_gap9_l2_with_its_weights_in_l3(project):
    s = _session(project, "resnet18")
    mem = s.plan.extra["memory"]
    assert mem["peak_l2"] <= mem["l2_avail"] <= 1536 * 1024
    assert mem["l3_bytes"] > 11_000_000                 # ResNet-18's 11.7 M int8 weights
    for lp in s.plan.layers:
        big = lp.layer.weight is not None and lp.layer.weight.size > 36 * 1024
        assert (lp.spec["tier"] == "L3") == big, lp.layer.name
        t = lp.spec["tile"]
        if t:
            assert t["l1_bytes"] <= lp.report["l1_budget"] <= 112 * 1024
    # every staged byte crosses L3 -> L2 exactly once, one slab per channel tile
    staged = [lp for lp in s.plan.layers if lp.spec["tier"] == "L3"]
    assert len(mem["slabs"]) == sum(lp.spec["tile"]["n_c"] for lp in staged)
    moved = sum(r["size"] for sl in mem["slabs"] for r in sl["reads"])
    assert moved == sum(sum(sec["per_oc"] for sec in lp.spec["sections"]) * lp.spec["out"]["c"]
                        for lp in staged)
    assert moved == sum(lp.report["l3_l2_bytes"] for lp in staged)


def set_gap9(project, text_after_marker, marker="      platform: auto       # gvsoc when the GAP SDK is found, else emul\n"):
    y = project.read("targets.yaml")
    assert marker in y
    project.write("targets.yaml", y.replace(marker, marker + text_after_marker))


def gap9_override(project, model, layer, budget):
    """models.<model>.targets.gap9.layers.<layer>.l1_budget = budget."""
    import re
    y = project.read("targets.yaml")
    key = f"    targets:\n      host:\n" if model == "simplecnn" else None
    block = f"      gap9:\n        layers:\n          {layer}: {{l1_budget: {budget}}}\n"
    if f"          {layer}: {{l1_budget: " in y.split("      gap9:\n        layers:\n")[-1][:400]:
        y = re.sub(rf"(      gap9:\n        layers:\n(?:          .*\n)*?          {layer}: ){{l1_budget: [^}}]*}}",
                   rf"\g<1>{{l1_budget: {budget}}}", y, count=1)
    elif f"      gap9:\n        layers:\n" in y:
        y = y.replace(f"      gap9:\n        layers:\n", block, 1)
    else:
        assert key in y
        y = y.replace(key, f"    targets:\n" + block + "      host:\n", 1)
    project.write("targets.yaml", y)


def test_model_that_does_not_fit_l2_is_a_clear_error(project):
    y = project.read("targets.yaml").replace("      l2: 1.5MiB\n", "      l2: 80KiB\n")
    project.write("targets.yaml", y)
    before = project.snapshot()
    proc = project.scons("target=gap9", "model=simplecnn", "platform=emul", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "targets.yaml:" in proc.stderr and "does not fit GAP9's L2" in proc.stderr
    assert "memory.l3_threshold" in proc.stderr
    assert project.snapshot() == before


def test_budget_too_small_names_the_layer_and_the_smallest_budget(project):
    gap9_override(project, "simplecnn", "conv2", "100")
    proc = project.scons("target=gap9", "model=simplecnn", "platform=emul", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    err = proc.stderr
    assert "layer 'conv2'" in err and "smallest tiling needs" in err and "l1_budget" in err
    need = int(err.split("smallest tiling needs ")[1].split(" B")[0])
    gap9_override(project, "simplecnn", "conv2", str(need))
    assert "Test PASSED" in project.scons("target=gap9", "model=simplecnn", "platform=emul").stdout


# ---- emul: the generated code, run

def test_simplecnn_on_emul_then_incremental_edits(prebuilt):
    project, first = prebuilt("target=gap9", "model=simplecnn", "platform=emul", "-j2")
    assert "Test PASSED [gap9] simplecnn" in first.stdout
    rep = json.loads(project.read(f"{B}/emul/report.json"))
    assert rep["peak_l2_bytes"] <= rep["l2_bytes"] and rep["platform"] == "emul"
    conv1 = rep["layers"][0]
    for key in ("tile_shape", "n_tiles", "l1_bytes", "l1_budget", "l2_l1_bytes", "l2_l1_lower_bound",
                "l3_l2_bytes", "tier", "fused_kernel"):
        assert key in conv1, key
    assert conv1["fused_kernel"] == "conv2d+relu+quant" and conv1["l1_bytes"] <= conv1["l1_budget"]
    assert "L2 peak" in first.stdout and "tile HxWxC" in first.stdout
    assert steps(project.scons("target=gap9", "model=simplecnn", "platform=emul").stdout) == []

    # one layer's l1_budget: that layer only, then link and run; weights and goldens stay
    gap9_override(project, "simplecnn", "conv2", "3KiB")
    got = steps(project.scons("target=gap9", "model=simplecnn", "platform=emul").stdout)
    assert got[:2] == ["CODEGEN conv2", "CC conv2"]
    assert got[2:] == ["AR libnns_simplecnn.a", "LINK firmware", "RUN simplecnn on emul", "REPORT simplecnn",
                       "CHECK simplecnn"]
    assert json.loads(project.read(f"{B}/emul/report.json"))["layers"][2]["n_tiles"] > 1

    # the global budget: exactly the layers whose resolved tiling changes
    def tiles():
        return {l["name"]: l["tile"] for l in json.loads(project.read(f"{B}/emul/report.json"))["layers"]}
    before = tiles()
    y = project.read("targets.yaml").replace("      l1_budget: 112KiB    # per-layer default",
                                            "      l1_budget: 4KiB    # per-layer default")
    project.write("targets.yaml", y)
    got = steps(project.scons("target=gap9", "model=simplecnn", "platform=emul").stdout)
    after = tiles()
    changed = {name for name in before if before[name] != after[name]}
    assert changed and "conv2" not in changed               # conv2 keeps its own 3KiB budget
    assert {s.split()[1] for s in got if s.startswith("CODEGEN")} == changed
    assert {s.split()[1] for s in got if s.startswith("CC")} == changed
    assert not any(s.startswith(("WEIGHTS", "GOLDEN", "INPUT")) for s in got)
    assert json.loads(project.read(f"{B}/emul/report.json"))["passed"]


def test_staging_threshold_rebuilds_only_what_the_memory_plan_changes(prebuilt):
    project, _ = prebuilt("target=gap9", "model=simplecnn", "platform=emul", "-j2")
    # simplecnn's largest weights: conv2 16x8x3x3 = 1152 B, fc 10x784 = 7840 B
    y = project.read("targets.yaml").replace("      l3_threshold: 36KiB", "      l3_threshold: 4KiB")
    project.write("targets.yaml", y)
    proc = project.scons("target=gap9", "model=simplecnn", "platform=emul")
    got = steps(proc.stdout)
    assert json.loads(project.read(f"{B}/emul/report.json"))["passed"]
    # the library's source and its header (its L2 and L3 sizes)
    assert sorted(s for s in got if s.startswith("CODEGEN")) == ["CODEGEN fc", "CODEGEN nns_simplecnn.c",
                                                                "CODEGEN nns_simplecnn.h"]
    assert not any(s.startswith(("WEIGHTS", "GOLDEN")) for s in got)
    fc = json.loads(project.read(f"{B}/emul/report.json"))["layers"][-1]
    assert fc["tier"] == "L3" and fc["l3_l2_bytes"] == 10 * 784 + 10 * 4 * 3   # weights, bias, mult, shift


def _conv_sweep_model(path):
    """Convs a tiler gets wrong first: odd sizes, stride 2, asymmetric padding, dilation,
    depthwise, channel counts that are not multiples of 8, a 1x1 and a strided 1x1."""
    rng = np.random.default_rng(3)
    specs = [  # (name, out_c, k, stride, dil, pads, groups)
        ("odd3x3", 11, 3, 1, 1, [1, 1, 1, 1], 1),
        ("stride2", 13, 3, 2, 1, [1, 0, 1, 2], 1),
        ("dilated", 13, 3, 1, 2, [2, 2, 2, 2], 1),
        ("depthwise", 13, 3, 1, 1, [1, 1, 1, 1], 13),
        ("pointwise", 6, 1, 1, 1, [0, 0, 0, 0], 1),
        ("k5s2", 10, 5, 2, 1, [2, 1, 2, 2], 1),
        ("s2pw", 9, 1, 2, 1, [0, 0, 0, 0], 1),
    ]
    nodes, inits, c, x = [], [], 5, "x"
    for name, oc, k, s, d, pads, g in specs:
        w = (rng.standard_normal((oc, c // g, k, k)) * 0.4).astype(np.float32)
        b = (rng.standard_normal(oc) * 0.1).astype(np.float32)
        inits += [numpy_helper.from_array(w, name + "_w"), numpy_helper.from_array(b, name + "_b")]
        nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [name], name, pads=pads,
                                      strides=[s, s], dilations=[d, d], group=g))
        nodes.append(helper.make_node("Relu", [name], [name + "_r"], name + "_relu"))
        x, c = name + "_r", oc
    graph = helper.make_graph(nodes, "convsweep",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, 37, 29])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["n", c, "h", "w"])], inits)
    return modelgen._save(graph, path)


def test_conv_sweep_many_tiles_in_both_dimensions_is_bit_exact(project):
    path = _conv_sweep_model(project.file("m/convsweep.onnx"))
    y = project.read("targets.yaml").replace("      l1_budget: 112KiB    # per-layer default",
                                            "      l1_budget: 1200    # per-layer default")
    project.write("targets.yaml", y)
    proc = project.scons("target=gap9", f"model={path}", "platform=emul", "-j2")
    assert "Test PASSED [gap9] convsweep" in proc.stdout
    layers = json.loads(project.read(f"{adhoc(project, 'gap9', 'convsweep')}/emul/report.json"))["layers"]
    assert_planned_dma_is_what_moved(layers)
    both = [l["name"] for l in layers if l["op"] == "conv2d" and l["tile"]["n_h"] > 1 and l["tile"]["n_w"] > 1]
    assert len(both) >= 5, both
    assert all(l["l1_bytes"] <= 1200 for l in layers if l.get("l1_bytes"))


def assert_planned_dma_is_what_moved(layers):
    """The planner's L2<->L1 figure per layer equals the bytes the emulation's cluster DMA
    moved for that layer: the report is measured, not estimated."""
    for l in layers:
        assert l["measured"]["dma_bytes"] == l.get("l2_l1_bytes", 0), l["name"]


@pytest.mark.parametrize("quantized", [False, True])
def test_every_op_on_emul_with_tiny_dma_limits(project, quantized):
    """All ops, bit-exact, with 2 DMA commands in flight and 256-byte transfers: the
    emulation fails the run if the generated code ever exceeds either."""
    path = modelgen.float_all_ops(project.file("m/allops.onnx"))
    if quantized:
        path = modelgen.quantize_qdq(path, project.file("m/allops_qdq.onnx"))
    name = os.path.splitext(os.path.basename(path))[0]
    y = project.read("targets.yaml").replace("    dma: {max_inflight: 8, max_transfer: 64KiB}",
                                            "    dma: {max_inflight: 2, max_transfer: 256}")
    y = y.replace("      l1_budget: 112KiB    # per-layer default", "      l1_budget: 3KiB    # per-layer default")
    project.write("targets.yaml", y)
    proc = project.scons("target=gap9", f"model={path}", "platform=emul", "-j2")
    assert f"Test PASSED [gap9] {name}" in proc.stdout
    layers = json.loads(project.read(f"{adhoc(project, 'gap9', name)}/emul/report.json"))["layers"]
    assert {"conv2d", "concat", "avgpool", "add", "maxpool", "global_avgpool", "reshape", "linear"} <= {
        l["op"] for l in layers}
    assert_planned_dma_is_what_moved(layers)


@pytest.mark.slow
def test_resnet18_64x64_on_emul(project):
    y = project.read("targets.yaml").replace("    input_shape: [1, 3, 224, 224]", "    input_shape: [1, 3, 64, 64]")
    project.write("targets.yaml", y)
    proc = project.scons("target=gap9", "model=resnet18", "platform=emul", "-j2", timeout=1500)
    assert "Test PASSED [gap9] resnet18" in proc.stdout
    rep = json.loads(project.read("build/gap9/resnet18/emul/report.json"))
    assert_planned_dma_is_what_moved(rep["layers"])
    assert rep["l3_bytes"] > 11_000_000 and any(l["tier"] == "L3" for l in rep["layers"])


def test_simplecnn_on_qemu(project):
    from nnscons.targets.gap9 import qemu
    missing = [t for t in (qemu.cross_flags()["CC"], "qemu-system-riscv32") if not shutil.which(t)]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (apt-get install gcc-riscv64-unknown-elf "
                    f"picolibc-riscv64-unknown-elf qemu-system-misc)")
    proc = project.scons("target=gap9", "model=simplecnn", "platform=qemu", "-j2", timeout=1500)
    assert "Test PASSED [gap9] simplecnn" in proc.stdout


def test_weights_staged_from_flash_when_the_memory_map_says_so(project):
    """l3_device: flash keeps the big weights in their readfs files; the cluster reads each
    slab with pi_cl_fs_copy, and the next slab loads while the current one computes."""
    y = project.read("targets.yaml").replace("      l3_device: ram ", "      l3_device: flash ")
    y = y.replace("      l3_threshold: 36KiB", "      l3_threshold: 1KiB")
    y = y.replace("      l1_budget: 112KiB    # per-layer default", "      l1_budget: 4KiB    # per-layer default")
    project.write("targets.yaml", y)
    proc = project.scons("target=gap9", "model=simplecnn", "platform=emul")
    assert "Test PASSED [gap9] simplecnn" in proc.stdout
    rep = json.loads(project.read(f"{B}/emul/report.json"))
    staged = [l for l in rep["layers"] if l["tier"] == "L3"]
    assert {l["name"] for l in staged} == {"conv2", "fc"} and rep["l3_device"] == "flash"
    assert all(l["n_tiles"] > 1 for l in staged)            # several slabs each
    net = project.read(f"{B}/src/nns_simplecnn.c")
    assert "pi_ram_open" not in net and "staged_files" in net


def test_the_inner_pipeline_with_weights_staged_from_l3_runs_channel_tiles_outer(project):
    """A conv on the inner pipeline (spatial tiles outer) whose weights stream from L3: the
    stage hands out its slabs in channel order only, so the layer runs the same buffers with
    channel tiles outer; bit-exact on emul."""
    y = project.read("targets.yaml").replace("      l3_threshold: 36KiB", "      l3_threshold: 1KiB")
    project.write("targets.yaml", y)
    gap9_override(project, "simplecnn", "conv2", "1KiB")     # many spatial tiles
    proc = project.scons("target=gap9", "model=simplecnn", "platform=emul")
    assert "Test PASSED [gap9] simplecnn" in proc.stdout
    conv2 = next(l for l in json.loads(project.read(f"{B}/emul/report.json"))["layers"] if l["name"] == "conv2")
    assert conv2["tier"] == "L3"
    src = project.read(f"{B}/src/layers/conv2.c")
    assert "inner pipeline" in src and "spatial tiles inner (parameters from L3)" in src


def test_a_missing_dma_wait_in_the_generated_code_is_caught_on_emul(project):
    """The emulation lands a DMA only at its wait: generated code that computes on a tile
    before waiting for it reads stale L1 and fails the check, naming the layer."""
    # the spatial pipeline's wait (_window.j2) and the conv's inner pipeline's (conv2d.c.j2)
    for path, wait in (("templates/gap9/_window.j2",
                        "        nn_dma_wait_all(&qin);                              /* tile k is in L1 */\n"),
                       ("templates/gap9/conv2d.c.j2",
                        "        nn_dma_wait_all(&qin);                              /* tile k's input and parameters */\n")):
        tpl = project.read(path)
        assert wait in tpl
        project.write(path, tpl.replace(wait, "", 1))
    gap9_override(project, "simplecnn", "conv2", "1KiB")     # many spatial tiles
    proc = project.scons("target=gap9", "model=simplecnn", "platform=emul", check=False)
    assert proc.returncode != 0
    assert "CHECK FAILED [gap9] simplecnn: first wrong layer" in proc.stdout or "RUN FAILED" in proc.stdout


@pytest.mark.slow
def test_kernels_xpulp_off_builds_on_the_plain_c_kernels(prebuilt):
    """kernels.xpulp picks the layer kernels: the Xpulp ones by default (conv on its direct
    and im2col paths, linear, maxpool), the plain C ones when false; both bit-exact on emul."""
    def layer(name):
        return project.read(f"{B}/src/layers/{name}.c")
    project, first = prebuilt("target=gap9", "model=simplecnn", "platform=emul", "-j2")
    assert "Test PASSED" in first.stdout
    assert "nn_xp_conv2d_im2col_s8" in layer("conv1")       # one input channel: im2col path
    assert "#define CONV nn_xp_conv2d_s8" in layer("conv2")   # 8 channels after a ReLU: direct
    assert "nn_xp_linear_s8(" in layer("fc") and "nn_xp_maxpool_s8(" in layer("pool1")
    y = project.read("targets.yaml").replace("  gap9:\n    kind: gap9\n", "  gap9:\n    kind: gap9\n"
                                                                           "    kernels: {xpulp: false}\n")
    project.write("targets.yaml", y)
    assert "Test PASSED" in project.scons("target=gap9", "model=simplecnn", "platform=emul").stdout
    for name in ("conv1", "conv2"):
        assert "#define CONV nn_hwc_conv2d_s8" in layer(name) and "nn_xp_" not in layer(name)
    assert "nn_linear_s8(" in layer("fc") and "nn_hwc_maxpool_s8(" in layer("pool1")


def test_layer4s_stride2_conv_takes_the_inner_pipeline_within_the_budget():
    """ResNet-18's layer4.0.conv1 (256 -> 512 3x3/2, 14 -> 7) on pulp-open's 52 KiB: spatial
    tiles outer, channel tiles inner (the input loaded and flipped once per spatial tile), 4 x 7
    x 8 tiles with one input and one parameter buffer (measured 13.3 MACs/cycle on GVSoC
    pulp-open, 10.8 on the spatial pipeline's 4 x 4 x 8); 64 -> 128 3x3/2 at 56 keeps the
    spatial pipeline (the inner one's estimate is not a twentieth lower there); a fused
    residual add never takes it."""
    from nnscons.targets.gap9 import tiling
    from nnscons.targets.gap9.ops import l1_parts
    w = dict(c=256, h=14, w=14, oc=512, oh=7, ow=7, kh=3, kw=3, sh=2, sw=2, dh=1, dw=1, pt=1, pl=1, groups=1,
             w_per_oc=2304, p_per_oc=12, p_fixed=0, tc_multiple=4, kernel="direct", cores=8)
    t, _ = tiling.plan_window(tiling.Window(**w), 52 * 1024)
    assert (t.pipeline, t.th, t.tw, t.tc, t.in_bufs, t.params_single) == ("inner", 4, 7, 8, 1, True)
    assert t.l1_bytes <= 52 * 1024 and sum(n for _, n in l1_parts(t)) == t.l1_bytes
    assert [n for n, _ in l1_parts(t)] == ["in0", "par0", "out0", "out1"]
    assert tiling.plan_window(tiling.Window(**w, residual=True), 52 * 1024)[0].pipeline == "spatial"
    w.update(c=64, h=56, w=56, oc=128, oh=28, ow=28, w_per_oc=576)
    assert tiling.plan_window(tiling.Window(**w), 52 * 1024)[0].pipeline == "spatial"
