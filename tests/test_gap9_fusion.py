"""Residual adds fused into the producing cluster conv on gap9 / pulp-open
(targets/gap9/residual.py): which adds fuse, and the fused networks bit-exact on the PMSIS
emulation and on GVSoC's pulp-open."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import SCONS, Project  # noqa: F401  (Project: the fixture's type)
from nnscons.ir import Graph, Layer, QParams, Tensor
from nnscons.targets.gap9 import ops, residual, tiling
from nnscons.targets.pulp_open import gvsoc_open

GVSOC = gvsoc_open.find_gvsoc()
HAVE_CC = bool(shutil.which(gvsoc_open.CC)) and os.path.isdir("/usr/lib/picolibc/riscv64-unknown-elf")


def _graph(numerics="onnx", extra_reader=False):
    """x -> c1 (3x3) -> c2 (3x3) -> add(c2, d) -> y, d = 1x1 downsample of x (ResNet's
    downsample block); extra_reader: c2's output also feeds a second layer (a network output)."""
    rng = np.random.default_rng(0)
    t = {n: Tensor(n, (1, 8, 6, 6), QParams(0.05 + 0.01 * i, -128 if n != "x" else 3))
         for i, n in enumerate(("x", "a", "b", "d", "y", "z"))}

    def conv(name, src, dst, k):
        return Layer(name, "conv2d", [src], dst,
                     attrs={"kernel": (k, k), "stride": (1, 1), "pads": (k // 2,) * 4, "groups": 1},
                     weight=rng.integers(-100, 100, (8, 8, k, k)).astype(np.int8),
                     weight_scale=np.full(8, 0.01), bias=np.zeros(8, np.int32), act_min=-128)
    layers = [conv("c1", "x", "a", 3), conv("c2", "a", "b", 3), conv("ds", "x", "d", 1),
              Layer("add", "add", ["b", "d"], "y", act_min=-128, act_max=127)]
    outputs = []
    if extra_reader:
        layers.append(conv("c3", "b", "z", 1))
        outputs = ["z"]
    return Graph("g", "x", "y", t, layers, numerics=numerics, extra_outputs=outputs)


def test_the_add_fuses_into_the_later_conv_of_its_operands():
    g = _graph()
    fused, origs = residual.fuse(g, lambda conv: True)
    assert [l.name for l in fused.layers] == ["c1", "c2", "ds"] and list(origs) == ["ds"]
    ds = fused.layers[2]
    # the 1x1 downsample (the later producer) reads its input and the 3x3 conv's output
    assert ds.inputs == ["x", "b"] and ds.output == "y" and ds.fused == ["add"]
    r = ds.attrs["residual"]
    assert r["add"] == "add" and r["conv_is_a"] is False and r["conv_zp"] == -128 and r["res_c"] == 8
    assert len(r["mult"]) == 2 and len(r["shift"]) == 1
    # the spec requantizes the conv to its own zero point and carries the add's constants
    til, _ = ops.plan_tiling(ds, fused, 64 * 1024, 8, True)
    assert til.l1_res == til.l1_out > 0 and ["res", til.l1_res] in ops.l1_parts(til)
    spec = ops.layer_spec(ds, fused, "ds", [], "L2", til, True)
    assert spec["out"]["zp"] == g.tensors["d"].q.zero_point and spec["residual"] == r
    # the plain tiling of the same conv has no residual buffer
    plain, _ = ops.plan_tiling(origs["ds"], g, 64 * 1024, 8, True)
    assert plain.l1_res == 0 and plain.l1_bytes < til.l1_bytes


def test_adds_that_cannot_fuse_stay_layers():
    # the downsample on another engine (NE16): c2 cannot take the add, d is not ready when it runs
    g = _graph()
    fused, origs = residual.fuse(g, lambda conv: conv.name != "ds")
    assert [l.name for l in fused.layers] == ["c1", "c2", "ds", "add"] and origs == {}
    # with the downsample first, the add goes into c2 (the later conv), with d as its residual
    g.layers = [g.layers[2], g.layers[0], g.layers[1], g.layers[3]]
    fused, origs = residual.fuse(g, lambda conv: True)
    assert list(origs) == ["c2"] and fused.layers[2].inputs == ["a", "d"]
    assert fused.layers[2].attrs["residual"]["conv_is_a"] is True
    assert residual.fuse(g, lambda conv: conv.name != "c2")[1] == {}
    # neither is eligible: nothing changes
    same, none = residual.fuse(g, lambda conv: False)
    assert same is g and none == {}
    # c2's output read twice, d's ready after c2: only the downsample may take the add
    g2 = _graph(extra_reader=True)
    fused2, origs2 = residual.fuse(g2, lambda conv: conv.name != "ds")
    assert origs2 == {} and "add" in [l.name for l in fused2.layers]
    # TFLite's ADD keeps its own template (three multipliers)
    assert residual.fuse(_graph("tflite"), lambda conv: True)[1] == {}


def test_the_residual_tile_costs_l1_and_dma_in_the_tiling():
    w = dict(c=64, h=56, w=56, oc=64, oh=56, ow=56, kh=3, kw=3, sh=1, sw=1, dh=1, dw=1, pt=1, pl=1, groups=1,
             w_per_oc=576, p_per_oc=12, p_fixed=0, tc_multiple=4, kernel="direct")
    plain, _ = tiling.plan_window(tiling.Window(**w), 52 * 1024)
    fused, _ = tiling.plan_window(tiling.Window(**w, residual=True), 52 * 1024)
    assert fused.l1_res == fused.l1_out and fused.l1_bytes <= 52 * 1024
    assert fused.lower_bound == plain.lower_bound + 64 * 56 * 56


def _scons(p, *args, timeout=900):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    if GVSOC:
        env["GVSOC"] = GVSOC
    return subprocess.run([SCONS, "-Q", *args], cwd=p.path, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)


def _fused_layers(rep):
    return {l["name"]: l for l in rep["layers"] if any(f.endswith(".add") for f in l.get("fused", []))}


@pytest.mark.slow
def test_ic_resnet8_with_fused_adds_is_bit_exact_on_emul(project):
    y = project.read("targets.yaml")
    project.write("targets.yaml", y.replace("  gap9:\n    kind: gap9\n",
                                            "  gap9:\n    kind: gap9\n    kernels: {fuse_residual: true}\n", 1))
    proc = _scons(project, "target=gap9", "model=ic_resnet8", "platform=emul")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "Test PASSED [gap9] ic_resnet8: all 12 layers match" in proc.stdout
    rep = json.loads(project.read("build/gap9/ic_resnet8/emul/report.json"))
    assert not [l for l in rep["layers"] if l["op"] == "add"]
    assert sorted(_fused_layers(rep)) == ["stack0.conv2", "stack1.shortcut", "stack2.shortcut"]
    # the fused layer's C reads the residual tile and runs the add's kernel on the output tile
    src = project.read("build/gap9/ic_resnet8/src/layers/stack1_shortcut.c")
    assert "load_residual(io, &qres" in src and "pi_cl_team_fork(NN_NUM_CORES, add_worker, &w);" in src
    # ic_resnet8's adds all have add_short.py's 32-bit rule: the fused epilogue runs it too
    assert "nn_xp_add_short_s8(" in src and "nn_xp_add_s8(" not in src
    # kernels.fuse_residual false (the default): the adds are layers again, as bit-exact
    project.write("targets.yaml", y)
    proc = _scons(project, "target=gap9", "model=ic_resnet8", "platform=emul")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "Test PASSED [gap9] ic_resnet8: all 15 layers match" in proc.stdout
    rep = json.loads(project.read("build/gap9/ic_resnet8/emul/report.json"))
    assert len([l for l in rep["layers"] if l["op"] == "add"]) == 3 and not _fused_layers(rep)


@pytest.mark.slow
@pytest.mark.skipif(GVSOC is None or not HAVE_CC,
                    reason="GVSoC (GVSOC unset, no gvsoc on PATH) or riscv64-unknown-elf-gcc + picolibc not "
                           "installed (bash ../shared/gvsoc/install.sh DIR; apt-get install gcc-riscv64-unknown-elf "
                           "picolibc-riscv64-unknown-elf)")
def test_ic_resnet8_with_fused_adds_is_bit_exact_on_pulp_open(project):
    y = project.read("targets.yaml")
    project.write("targets.yaml", y.replace("  pulp-open:\n    kind: pulp-open\n",
                                            "  pulp-open:\n    kind: pulp-open\n    kernels: {fuse_residual: true}\n", 1))
    proc = _scons(project, "target=pulp-open", "model=ic_resnet8")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "Test PASSED [pulp-open] ic_resnet8: all 12 layers match" in proc.stdout
    rep = json.loads(project.read("build/pulp-open/ic_resnet8/gvsoc-open/report.json"))
    assert len(_fused_layers(rep)) == 3 and all(l["cycles"] > 0 for l in rep["layers"] if l["op"] == "conv2d")
