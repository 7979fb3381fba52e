"""Passes on the pre-IR graph: BN folding, activation fusion, shapes, quantization rules."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "site_scons"))

from nnscons.errors import ModelError  # noqa: E402
from nnscons.ir import QParams  # noqa: E402
from nnscons.passes import Op, OpGraph, fold_batchnorm, fuse_activations, infer_shapes  # noqa: E402
from nnscons.passes.lower import unique_names  # noqa: E402
from nnscons.opkit.opgraph import clamp_bounds  # noqa: E402
from nnscons.passes.quantize import minmax_qparams, symmetric_per_channel  # noqa: E402


def conv2d_float(x, w, b, pad):
    """Plain NCHW float conv, stride 1 (for checking BN folding)."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    o, _, kh, kw = w.shape
    h, wd = x.shape[2] - kh + 1, x.shape[3] - kw + 1
    out = np.zeros((1, o, h, wd))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("oc,nchw->nohw", w[:, :, i, j], x[:, :, i:i + h, j:j + wd])
    return out + b.reshape(1, -1, 1, 1)


def conv_op(name, src, out, w, b=None):
    return Op(name, "conv2d", [src], out, "Conv", weight=w, bias=b,
              attrs={"kernel": w.shape[2:], "stride": (1, 1), "dilation": (1, 1),
                     "pads": (1, 1, 1, 1), "groups": 1})


def test_bn_folding_is_numerically_exact():
    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)
    bn = {"scale": rng.uniform(0.5, 1.5, 4), "bias": rng.standard_normal(4),
          "mean": rng.standard_normal(4), "var": rng.uniform(0.5, 2, 4), "eps": 1e-5}
    g = OpGraph("m.onnx", "x", "y", (1, 3, 6, 6),
                [conv_op("conv", "x", "c", w.copy(), b.copy()),
                 Op("bn", "bn", ["c"], "y", "BatchNormalization", attrs=bn)])
    fold_batchnorm(g)
    (conv,) = g.ops
    assert conv.output == "y" and conv.fused == ["bn"] and conv.weight_q is None
    x = rng.standard_normal((1, 3, 6, 6))
    ref = conv2d_float(x, w, b, 1)
    k = (bn["scale"] / np.sqrt(bn["var"] + bn["eps"])).reshape(1, -1, 1, 1)
    ref = (ref - bn["mean"].reshape(1, -1, 1, 1)) * k + bn["bias"].reshape(1, -1, 1, 1)
    np.testing.assert_allclose(conv2d_float(x, conv.real_weight(), conv.bias, 1), ref, atol=1e-5)
    # lowering quantizes the products weight * factor without holding them all at once
    folded = conv.weight * conv.weight_factor.reshape(-1, 1, 1, 1)
    for got, want in zip(symmetric_per_channel(conv.weight, conv.weight_factor),
                         symmetric_per_channel(folded)):
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_bn_needs_a_private_conv_output():
    w = np.ones((2, 3, 3, 3))
    bn = {"scale": np.ones(2), "bias": np.zeros(2), "mean": np.zeros(2), "var": np.ones(2),
          "eps": 1e-5}
    g = OpGraph("m.onnx", "x", "y", (1, 3, 6, 6),
                [conv_op("conv", "x", "c", w), Op("bn", "bn", ["c"], "b", "BatchNormalization", attrs=bn),
                 Op("add", "add", ["c", "b"], "y", "Add")])
    fold_batchnorm(g)   # not folded: a per-channel table of its own
    assert [op.kind for op in g.ops] == ["conv2d", "lut", "add"] and g.ops[0].output == "c"


def test_fusion_single_consumer_only():
    w = np.ones((2, 3, 3, 3))
    relu = {"lo": 0.0, "hi": None}
    g = OpGraph("m.onnx", "x", "y", (1, 3, 6, 6), [
        conv_op("c1", "x", "a", w),
        Op("r1", "clamp", ["a"], "ra", "Relu", attrs=relu),          # fused
        Op("pool", "maxpool", ["ra"], "p", "MaxPool",
           attrs={"kernel": (2, 2), "stride": (2, 2), "pads": (0, 0, 0, 0), "ceil_mode": 0}),
        Op("r2", "clamp", ["p"], "rp", "Relu", attrs=relu),          # after maxpool: requant
        Op("add", "add", ["rp", "p"], "s", "Add"),
        Op("r3", "clamp", ["s"], "y", "Clip", attrs={"lo": 0.0, "hi": 6.0})])   # fused
    fuse_activations(g)
    assert [op.name for op in g.ops] == ["c1", "pool", "r2", "add"]
    assert g.ops[0].output == "ra" and g.ops[0].clamp == (0.0, None)
    assert g.ops[3].output == "y" and g.ops[3].clamp == (0.0, 6.0) and g.ops[3].fused == ["r3"]
    infer_shapes(g)
    assert g.shapes["y"] == (1, 2, 3, 3)


def test_clamp_bounds_in_int8_domain():
    q = QParams(0.05, -10)
    assert clamp_bounds(0.0, None, q) == (-10, 127)                # Relu: lo = zp
    assert clamp_bounds(0.0, 6.0, q) == (-10, 110)                 # ReLU6
    assert clamp_bounds(-100.0, 100.0, q) == (-128, 127)


def test_shapes_strides_dilation_ceil_mode():
    w = np.ones((8, 1, 3, 3))
    g = OpGraph("m.onnx", "x", "y", (1, 4, 11, 11), [
        Op("dw", "conv2d", ["x"], "a", "Conv", weight=w,
           attrs={"kernel": (3, 3), "stride": (2, 2), "dilation": (2, 2), "pads": (1, 1, 1, 1),
                  "groups": 4}),
        Op("mp", "maxpool", ["a"], "y", "MaxPool",
           attrs={"kernel": (2, 2), "stride": (2, 2), "pads": (0, 0, 0, 0), "ceil_mode": 1})])
    infer_shapes(g)
    assert g.shapes["a"] == (1, 8, 5, 5) and g.shapes["y"] == (1, 8, 3, 3)
    g.ops[0].attrs["groups"] = 2
    with pytest.raises(ModelError, match=r"'dw' \(Conv\): weight .* group=2"):
        infer_shapes(g)


def test_quantization_rules():
    q = minmax_qparams(0.5, 2.0)                   # range widened to include 0
    assert q.scale == pytest.approx(2.0 / 255) and q.zero_point == -128
    assert minmax_qparams(0.0, 0.0).scale > 0      # constant tensor: guarded
    w = np.zeros((2, 3))
    w[0] = [0.5, -1.0, 0.25]
    qw, s = symmetric_per_channel(w)
    assert s[1] == 1.0 and (qw[1] == 0).all()      # all-zero channel guarded
    assert list(qw[0]) == [64, -127, 32] and s[0] == pytest.approx(1 / 127)


@pytest.mark.parametrize("shape", [(300, 64, 3, 3), (7, 5), (1000, 1)])
def test_weights_quantized_in_blocks_as_a_whole(shape):
    """symmetric_per_channel works a block of channels at a time (and applies a folded BN's
    factor there): the result is the whole-array formula's, bit for bit, float32 weights
    included (ties, negative and zero factors, an all-zero channel)."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal(shape).astype(np.float32)
    w[1] = 0
    w.reshape(shape[0], -1)[2, 0] = 127 * 0.5 / 127     # a tie after division
    k = rng.uniform(-2, 2, shape[0])
    k[4] = 0.0

    def whole(real):
        amax = np.abs(real.reshape(real.shape[0], -1)).max(axis=1).astype(np.float64)
        scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32).astype(np.float64)
        q = np.clip(np.round(real / scale.reshape((-1,) + (1,) * (real.ndim - 1))), -127, 127)
        return q.astype(np.int8), scale
    for got, want in ((symmetric_per_channel(w), whole(w)),
                      (symmetric_per_channel(w, k), whole(w * k.reshape((-1,) + (1,) * (w.ndim - 1))))):
        assert got[0].dtype == np.int8 and got[0].shape == w.shape
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_unique_names():
    assert unique_names(["a", "b", "a", "a_1", "a"]) == ["a", "b", "a_2", "a_1", "a_3"]
