"""Dense convs without padding take their input zero point in the bias (targets/gap9/ops.py
folds_zp / folded_bias): the cluster kernels then run them with zero point 0, on the direct
Xpulp path whatever the zero point. Bit-exact on the emulation and on pulp-open's GVSoC."""
from __future__ import annotations

import os
import re
from types import SimpleNamespace

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import modelgen
from conftest import adhoc

from nnscons.targets.gap9 import ops
from nnscons.targets.pulp_open import gvsoc_open


def _layer(zp, pads=(0, 0, 0, 0), bias=True, groups=1, k=1, in_c=8, big=False):
    rng = np.random.default_rng(1)
    w = rng.integers(-127, 128, (4, in_c // groups, k, k)).astype(np.int8)
    b = (rng.integers(-1000, 1000, 4) + (2 ** 31 - 2 ** 14 if big else 0)).astype(np.int64).clip(
        -2 ** 31, 2 ** 31 - 1).astype(np.int32) if bias else None
    layer = SimpleNamespace(op="conv2d", name="c", weight=w, bias=b, inputs=["x"], output="y",
                            attrs={"kernel": (k, k), "stride": (1, 1), "pads": list(pads), "groups": groups,
                                   "dilation": (1, 1)})
    t = {"x": SimpleNamespace(shape=(1, in_c, 6, 6), q=SimpleNamespace(zero_point=zp)),
         "y": SimpleNamespace(shape=(1, 4, 6, 6), q=SimpleNamespace(zero_point=3))}
    return layer, SimpleNamespace(tensor=lambda name: t[name])


def test_which_convs_fold_their_zero_point():
    assert ops.folds_zp(*_layer(-37)) and ops.folds_zp(*_layer(-128)) and ops.folds_zp(*_layer(90, k=3))
    assert not ops.folds_zp(*_layer(0))                         # nothing to fold
    assert not ops.folds_zp(*_layer(-37, pads=(1, 1, 1, 1), k=3))  # padding reads the zero point
    assert not ops.folds_zp(*_layer(-37, bias=False))           # no section to hold it
    assert not ops.folds_zp(*_layer(-37, groups=8))             # depthwise: its own kernel
    assert not ops.folds_zp(*_layer(-37, big=True))             # the folded bias could leave int32
    layer, graph = _layer(-37)
    assert ops.kernel_zp(layer, graph) == 0 and ops.xp_conv_path(layer, graph) == "direct"
    assert ops.xp_conv_path(*_layer(-37, pads=(1, 1, 1, 1), k=3)) == "im2col"


def test_folded_bias_is_the_centred_sum():
    layer, graph = _layer(-37, k=3)
    x = np.random.default_rng(2).integers(-128, 128, layer.weight.shape[1:]).astype(np.int64)
    w = layer.weight.astype(np.int64)
    centred = layer.bias + ((x + 37) * w).sum(axis=(1, 2, 3))
    assert np.array_equal(ops.folded_bias(layer, graph) + (x * w).sum(axis=(1, 2, 3)), centred)


def _model(path):
    """1x1 and unpadded 3x3 convs whose inputs are other convs' outputs without an activation
    (zero points other than 0 and -128), one without a bias, a padded 1x1 (not folded)."""
    rng = np.random.default_rng(5)
    specs = [  # (name, out_c, k, stride, pads, bias, relu)
        ("pw1", 12, 1, 1, [0, 0, 0, 0], True, False),
        ("pw2s2", 20, 1, 2, [0, 0, 0, 0], True, False),
        ("valid3x3", 16, 3, 1, [0, 0, 0, 0], True, False),
        ("pw_nobias", 8, 1, 1, [0, 0, 0, 0], False, False),
        ("pw_padded", 8, 1, 1, [1, 1, 1, 1], True, True),
        ("pw_relu_in", 12, 1, 1, [0, 0, 0, 0], True, False),
    ]
    nodes, inits, c, x = [], [], 8, "x"
    for name, oc, k, s, pads, bias, relu in specs:
        wt = (rng.standard_normal((oc, c, k, k)) * 0.4).astype(np.float32)
        inits.append(numpy_helper.from_array(wt, name + "_w"))
        ins = [x, name + "_w"]
        if bias:
            inits.append(numpy_helper.from_array((rng.standard_normal(oc) + 0.5).astype(np.float32), name + "_b"))
            ins.append(name + "_b")
        nodes.append(helper.make_node("Conv", ins, [name], name, pads=pads, strides=[s, s]))
        x, c = name, oc
        if relu:
            nodes.append(helper.make_node("Relu", [name], [name + "_r"], name + "_relu"))
            x = name + "_r"
    graph = helper.make_graph(nodes, "zpfold",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 14, 18])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["n", c, "h", "w"])], inits)
    return modelgen._save(graph, path)


def _folded(project, target, platform) -> dict:
    """{layer: the zero point folded} from the generated sources' comments."""
    src = os.path.join(project.file(adhoc(project, target, "zpfold")), "src")
    found = {}
    for root, _, files in os.walk(src):
        for f in files:
            m = re.search(r"input zero point (-?\d+) folded", open(os.path.join(root, f)).read())
            if m:
                found[os.path.splitext(f)[0]] = int(m.group(1))
    return found


def _check(project, target, platform):
    path = _model(project.file("m/zpfold.onnx"))
    proc = project.scons(f"target={target}", f"model={path}", f"platform={platform}", "-j2")
    assert f"Test PASSED [{target}] zpfold" in proc.stdout, proc.stdout[-3000:]
    folded = _folded(project, target, platform)
    # every unpadded conv (the importer gives pw_nobias a zero bias); pw_padded keeps its own
    assert sorted(folded) == ["pw1", "pw2s2", "pw_nobias", "pw_relu_in", "valid3x3"], folded
    assert any(zp not in (0, -128) for zp in folded.values()), folded


@pytest.mark.slow
def test_folded_zero_points_are_bit_exact_on_emul(project):
    _check(project, "gap9", "emul")


GVSOC = gvsoc_open.find_gvsoc()


@pytest.mark.slow
@pytest.mark.skipif(GVSOC is None, reason="GVSoC not found (GVSOC unset, no gvsoc on PATH): "
                    "bash ../shared/gvsoc/install.sh DIR, then GVSOC=DIR/gvsoc")
def test_folded_zero_points_are_bit_exact_on_pulp_open(project, monkeypatch):
    monkeypatch.setenv("GVSOC", GVSOC)
    _check(project, "pulp-open", "gvsoc-open")
