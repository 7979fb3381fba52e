"""The deterministic int8 .tflite writer (nnscons.frontends.tflite_writer), checked against
LiteRT's reference kernels (tests/litert_oracle.py), and the four tfl_* zoo networks."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for p in (HERE, os.path.join(REPO, "site_scons"), REPO):
    if p not in sys.path:
        sys.path.insert(0, p)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

tflite = pytest.importorskip("tflite")      # pinned in requirements.txt; a user without it skips
pytest.importorskip("flatbuffers")

from litert_oracle import HAVE_LITERT, SKIP_REASON, run_litert  # noqa: E402
from models.zoo import tfl_nets  # noqa: E402
from nnscons.frontends.tflite_writer import (TfliteWriter, bias_int32, quantize_per_channel,  # noqa: E402
                                             quantize_per_tensor)

needs_litert = pytest.mark.skipif(not HAVE_LITERT, reason=SKIP_REASON)


def _rand_in(rng, shape, dtype="int8"):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape, dtype=dtype)


def _i32(b, name, values):
    return b.const(name, np.asarray(values, dtype=np.int32))


def _conv_weights(b, rng, name, shape, axis, in_scale):
    """Per-channel int8 weights (random, He-style) and their int32 bias."""
    fan_in = int(np.prod(shape)) // shape[axis]
    wq, ws = quantize_per_channel(rng.normal(0, np.sqrt(2 / fan_in), size=shape), axis)
    w = b.const(f"{name}/w", wq, scale=ws, zero_point=0, quantized_dimension=axis)
    bias = b.const(f"{name}/b", bias_int32(rng.normal(0, 0.1, size=shape[axis]), in_scale, ws),
                   scale=in_scale * ws, zero_point=0)
    return w, bias


# ---- one-op models: name -> f(rng) -> (writer, [inputs]) ------------------------------------
def _unary(opname, out_scale, out_zp, options=None, shape=(1, 4, 4, 8), in_scale=0.04, in_zp=3):
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", shape, in_scale, in_zp)
        b.output(b.op(opname, [x], "y", shape, out_scale, out_zp, options=options))
        return b, [_rand_in(rng, shape)]
    return build


def _conv2d(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 9, 9, 3), 0.05, -3)
    w, bias = _conv_weights(b, rng, "conv", (8, 3, 3, 3), 0, 0.05)
    b.output(b.op("CONV_2D", [x, w, bias], "y", (1, 5, 5, 8), 0.1, -20,
                  options=dict(padding="SAME", stride_w=2, stride_h=2, fused_activation_function="RELU")))
    return b, [_rand_in(rng, (1, 9, 9, 3))]


def _conv2d_dilated(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 9, 9, 3), 0.05, -3)
    w, bias = _conv_weights(b, rng, "conv", (4, 3, 3, 3), 0, 0.05)
    b.output(b.op("CONV_2D", [x, w, bias], "y", (1, 5, 5, 4), 0.1, 0,
                  options=dict(padding="VALID", dilation_w_factor=2, dilation_h_factor=2)))
    return b, [_rand_in(rng, (1, 9, 9, 3))]


def _depthwise(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 8, 8, 4), 0.05, 2)
    w, bias = _conv_weights(b, rng, "dw", (1, 3, 3, 8), 3, 0.05)
    b.output(b.op("DEPTHWISE_CONV_2D", [x, w, bias], "y", (1, 8, 8, 8), 0.05, -128,
                  options=dict(padding="SAME", depth_multiplier=2, fused_activation_function="RELU6")))
    return b, [_rand_in(rng, (1, 8, 8, 4))]


def _fully_connected(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 16), 0.05, -1)
    w, bias = _conv_weights(b, rng, "fc", (10, 16), 0, 0.05)
    b.output(b.op("FULLY_CONNECTED", [x, w, bias], "y", (1, 10), 0.1, -128,
                  options=dict(fused_activation_function="RELU")))
    return b, [_rand_in(rng, (1, 16))]


def _fully_connected_keepdims(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 3, 16), 0.05, -1)
    w, bias = _conv_weights(b, rng, "fc", (10, 16), 0, 0.05)
    b.output(b.op("FULLY_CONNECTED", [x, w, bias], "y", (1, 3, 10), 0.1, 4,
                  options=dict(keep_num_dims=True)))
    return b, [_rand_in(rng, (1, 3, 16))]


def _transpose_conv(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 4, 4, 6), 0.05, 1)
    oshape = _i32(b, "oshape", [1, 8, 8, 4])
    w, bias = _conv_weights(b, rng, "tconv", (4, 3, 3, 6), 0, 0.05)
    b.output(b.op("TRANSPOSE_CONV", [oshape, w, x, bias], "y", (1, 8, 8, 4), 0.1, 0,
                  options=dict(padding="SAME", stride_w=2, stride_h=2)))
    return b, [_rand_in(rng, (1, 4, 4, 6))]


def _binary(opname, act="NONE", const_rhs=False):
    def build(rng):
        b = TfliteWriter()
        shape = (1, 4, 4, 8)
        x = b.input("x", shape, 0.04, 3)
        if const_rhs:
            y = b.const("c", _rand_in(rng, (1, 1, 1, 8)), scale=0.02, zero_point=-5)
        else:
            y = b.input("y", shape, 0.07, -10)
        b.output(b.op(opname, [x, y], "z", shape, 0.1 if opname != "MUL" else 0.3, -2,
                      options=dict(fused_activation_function=act)))
        ins = [_rand_in(rng, shape)] + ([] if const_rhs else [_rand_in(rng, shape)])
        return b, ins
    return build


def _pool(opname, padding, k, s, out_hw):
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", (1, 9, 9, 4), 0.05, -7)
        b.output(b.op(opname, [x], "y", (1, out_hw, out_hw, 4), 0.05, -7,
                      options=dict(padding=padding, filter_width=k, filter_height=k,
                                   stride_w=s, stride_h=s)))
        return b, [_rand_in(rng, (1, 9, 9, 4))]
    return build


def _mean(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 6, 6, 8), 0.05, -7)
    axes = _i32(b, "axes", [1, 2])
    b.output(b.op("MEAN", [x, axes], "y", (1, 1, 1, 8), 0.02, 1, options=dict(keep_dims=True)))
    return b, [_rand_in(rng, (1, 6, 6, 8))]


def _reshape(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 2, 2, 8), 0.05, -7)
    shape = _i32(b, "shape", [1, 32])
    b.output(b.op("RESHAPE", [x, shape], "y", (1, 32), 0.05, -7, options=dict(new_shape=[1, 32])))
    return b, [_rand_in(rng, (1, 2, 2, 8))]


def _reshape_option_only(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 2, 2, 8), 0.05, -7)
    b.output(b.op("RESHAPE", [x], "y", (1, 4, 8), 0.05, -7, options=dict(new_shape=[1, 4, 8])))
    return b, [_rand_in(rng, (1, 2, 2, 8))]


def _squeeze(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 1, 1, 16), 0.05, -7)
    b.output(b.op("SQUEEZE", [x], "y", (1, 16), 0.05, -7, options=dict(squeeze_dims=[1, 2])))
    return b, [_rand_in(rng, (1, 1, 1, 16))]


def _expand_dims(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 16), 0.05, -7)
    axis = _i32(b, "axis", [1])
    b.output(b.op("EXPAND_DIMS", [x, axis], "y", (1, 1, 16), 0.05, -7))
    return b, [_rand_in(rng, (1, 16))]


def _concat(rng):
    # LiteRT's int8 CONCATENATION requires every input's (scale, zero point) = the output's
    b = TfliteWriter()
    x = b.input("x", (1, 4, 4, 3), 0.05, -7)
    y = b.input("y", (1, 4, 4, 5), 0.05, -7)
    b.output(b.op("CONCATENATION", [x, y], "z", (1, 4, 4, 8), 0.05, -7, options=dict(axis=3)))
    return b, [_rand_in(rng, (1, 4, 4, 3)), _rand_in(rng, (1, 4, 4, 5))]


def _pad(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 4, 4, 3), 0.05, -7)
    pads = _i32(b, "pads", [[0, 0], [1, 2], [2, 1], [0, 0]])
    b.output(b.op("PAD", [x, pads], "y", (1, 7, 7, 3), 0.05, -7))
    return b, [_rand_in(rng, (1, 4, 4, 3))]


def _padv2(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 4, 4, 3), 0.05, -7)
    pads = _i32(b, "pads", [[0, 0], [1, 1], [1, 1], [0, 0]])
    cval = b.const("cval", np.array([-128], dtype=np.int8), scale=0.05, zero_point=-7)
    b.output(b.op("PADV2", [x, pads, cval], "y", (1, 6, 6, 3), 0.05, -7))
    return b, [_rand_in(rng, (1, 4, 4, 3))]


def _strided_slice(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 8, 8, 6), 0.05, -7)
    begin, end = _i32(b, "begin", [0, 1, 0, 2]), _i32(b, "end", [1, 7, 8, 6])
    strides = _i32(b, "strides", [1, 2, 3, 1])
    b.output(b.op("STRIDED_SLICE", [x, begin, end, strides], "y", (1, 3, 3, 4), 0.05, -7,
                  options=dict(begin_mask=0b0100, end_mask=0b0100)))
    return b, [_rand_in(rng, (1, 8, 8, 6))]


def _slice(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 8, 8, 6), 0.05, -7)
    begin, size = _i32(b, "begin", [0, 2, 1, 0]), _i32(b, "size", [1, 4, -1, 3])
    b.output(b.op("SLICE", [x, begin, size], "y", (1, 4, 7, 3), 0.05, -7))
    return b, [_rand_in(rng, (1, 8, 8, 6))]


def _split(rng):
    b = TfliteWriter()
    axis = b.const("axis", np.array(3, dtype=np.int32))
    x = b.input("x", (1, 4, 4, 6), 0.05, -7)
    outs = b.op("SPLIT", [axis, x], ["y0", "y1", "y2"], [(1, 4, 4, 2)] * 3, 0.05, -7,
                options=dict(num_splits=3))
    b.output(outs)
    return b, [_rand_in(rng, (1, 4, 4, 6))]


def _transpose(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 4, 5, 6), 0.05, -7)
    perm = _i32(b, "perm", [0, 3, 1, 2])
    b.output(b.op("TRANSPOSE", [x, perm], "y", (1, 6, 4, 5), 0.05, -7))
    return b, [_rand_in(rng, (1, 4, 5, 6))]


def _resize(opname, **options):
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", (1, 4, 4, 3), 0.05, -7)
        size = _i32(b, "size", [8, 8])
        b.output(b.op(opname, [x, size], "y", (1, 8, 8, 3), 0.05, -7, options=options))
        return b, [_rand_in(rng, (1, 4, 4, 3))]
    return build


def _prelu(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 4, 4, 8), 0.05, -7)
    alpha = b.const("alpha", rng.integers(0, 100, size=(1, 1, 8), dtype=np.int8), scale=0.005,
                    zero_point=0)
    b.output(b.op("PRELU", [x, alpha], "y", (1, 4, 4, 8), 0.04, 20))
    return b, [_rand_in(rng, (1, 4, 4, 8))]


def _quantize(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 4, 4, 3), dtype="float32")
    b.output(b.op("QUANTIZE", [x], "y", (1, 4, 4, 3), 0.02, 5))
    return b, [rng.normal(size=(1, 4, 4, 3)).astype(np.float32)]


def _requantize(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 4, 4, 3), 0.02, 5)
    b.output(b.op("QUANTIZE", [x], "y", (1, 4, 4, 3), 0.05, -3))
    return b, [_rand_in(rng, (1, 4, 4, 3))]


def _dequantize(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 4, 4, 3), 0.02, 5)
    b.output(b.op("DEQUANTIZE", [x], "y", (1, 4, 4, 3)))
    return b, [_rand_in(rng, (1, 4, 4, 3))]


def _uint8_add(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 8), 0.04, 128, dtype="uint8")
    y = b.input("y", (1, 8), 0.03, 100, dtype="uint8")
    b.output(b.op("ADD", [x, y], "z", (1, 8), 0.08, 120))
    return b, [_rand_in(rng, (1, 8), "uint8"), _rand_in(rng, (1, 8), "uint8")]


OP_CASES = {
    "CONV_2D": _conv2d,
    "CONV_2D/dilated": _conv2d_dilated,
    "DEPTHWISE_CONV_2D": _depthwise,
    "FULLY_CONNECTED": _fully_connected,
    "FULLY_CONNECTED/keep_num_dims": _fully_connected_keepdims,
    "TRANSPOSE_CONV": _transpose_conv,
    "ADD": _binary("ADD", "RELU"),
    "ADD/broadcast": _binary("ADD", const_rhs=True),
    "ADD/uint8": _uint8_add,
    "SUB": _binary("SUB"),
    "MUL": _binary("MUL", "RELU6"),
    "MUL/broadcast": _binary("MUL", const_rhs=True),
    "AVERAGE_POOL_2D": _pool("AVERAGE_POOL_2D", "VALID", 3, 2, 4),
    "MAX_POOL_2D": _pool("MAX_POOL_2D", "SAME", 2, 2, 5),
    "MEAN": _mean,
    "RESHAPE": _reshape,
    "RESHAPE/options": _reshape_option_only,
    "SQUEEZE": _squeeze,
    "EXPAND_DIMS": _expand_dims,
    "CONCATENATION": _concat,
    "PAD": _pad,
    "PADV2": _padv2,
    "STRIDED_SLICE": _strided_slice,
    "SLICE": _slice,
    "SPLIT": _split,
    "TRANSPOSE": _transpose,
    "RESIZE_NEAREST_NEIGHBOR": _resize("RESIZE_NEAREST_NEIGHBOR"),
    "RESIZE_NEAREST_NEIGHBOR/half_pixel": _resize("RESIZE_NEAREST_NEIGHBOR", half_pixel_centers=True),
    "RESIZE_BILINEAR": _resize("RESIZE_BILINEAR", align_corners=True),
    "RESIZE_BILINEAR/half_pixel": _resize("RESIZE_BILINEAR", half_pixel_centers=True),
    "SOFTMAX": _unary("SOFTMAX", 1 / 256, -128, dict(beta=1.0), shape=(1, 10), in_scale=0.1),
    "LOGISTIC": _unary("LOGISTIC", 1 / 256, -128),
    "TANH": _unary("TANH", 1 / 128, 0),
    "HARD_SWISH": _unary("HARD_SWISH", 0.03, -100),
    "RELU": _unary("RELU", 0.02, -128),
    "RELU6": _unary("RELU6", 6 / 255, -128),
    "RELU_N1_TO_1": _unary("RELU_N1_TO_1", 2 / 255, 0),
    "LEAKY_RELU": _unary("LEAKY_RELU", 0.03, 10, dict(alpha=0.1)),
    "PRELU": _prelu,
    "QUANTIZE": _quantize,
    "QUANTIZE/requantize": _requantize,
    "DEQUANTIZE": _dequantize,
}


# ---- tests -------------------------------------------------------------------------------------
def _model(data):
    return tflite.Model.GetRootAsModel(data, 0)


def _dequant(arr, t):
    return (arr.astype(np.float64) - t.zero_point[0]) * t.scale[0]


@needs_litert
@pytest.mark.parametrize("case", sorted(OP_CASES))
def test_one_op_model_runs_in_litert(case):
    b, inputs = OP_CASES[case](np.random.default_rng(0))
    data = b.finish(description=case)
    outputs, _ = run_litert(data, inputs)
    assert len(outputs) == len(b.outputs)
    for out, index in zip(outputs, b.outputs):
        t = b.tensors[index]
        assert out.shape == t.shape and out.dtype == np.dtype(t.dtype), (out.shape, t)
    assert any(len(np.unique(o)) > 1 for o in outputs), "constant output"


def _float_check(b, inputs, ref, relu=False):
    """LiteRT's int8 result vs the float op on the dequantized input and weights."""
    (out,), _ = run_litert(b.finish(), inputs)
    t_in, t_out = b.tensors[b.inputs[0]], b.tensors[b.outputs[0]]
    x = _dequant(inputs[0], t_in)
    w, bias = (t for t in b.tensors if t.is_const and t.dtype in ("int8", "int32"))
    wf = w.data.astype(np.float64) * np.asarray(w.scale).reshape(
        [-1 if i == w.quantized_dimension else 1 for i in range(w.data.ndim)])
    bf = bias.data * np.asarray(bias.scale)
    expect = ref(x, wf) + bf
    expect = np.clip(np.maximum(expect, 0.0) if relu else expect, *_dequant(np.array([-128, 127]), t_out))
    got = _dequant(out, t_out)
    assert np.abs(got - expect).max() <= 1.01 * t_out.scale[0], np.abs(got - expect).max()


@needs_litert
def test_conv_layouts_match_float_reference():
    b, ins = _conv2d(np.random.default_rng(1))      # OHWI, qdim 0, SAME stride 2, fused RELU
    _float_check(b, ins, lambda x, w: tfl_nets.conv2d_f(x, w, 2, "SAME"), relu=True)
    b, ins = _conv2d_dilated(np.random.default_rng(1))
    dilate = [0, 3, 1, 4, 2]                        # 3x3 taps at rows/cols 0, 2, 4 of a 5x5
    _float_check(b, ins, lambda x, w: tfl_nets.conv2d_f(
        x, np.pad(w, ((0, 0), (0, 2), (0, 2), (0, 0)))[:, dilate][:, :, dilate], 1, "VALID"))
    b, ins = _fully_connected(np.random.default_rng(1))
    _float_check(b, ins, lambda x, w: x @ w.T, relu=True)

    # depthwise with multiplier 1 (qdim 3): 1HWC weights
    rng = np.random.default_rng(2)
    b = TfliteWriter()
    x = b.input("x", (1, 7, 7, 5), 0.05, 2)
    w, bias = _conv_weights(b, rng, "dw", (1, 3, 3, 5), 3, 0.05)
    b.output(b.op("DEPTHWISE_CONV_2D", [x, w, bias], "y", (1, 4, 4, 5), 0.05, -3,
                  options=dict(padding="SAME", stride_w=2, stride_h=2)))
    _float_check(b, [_rand_in(rng, (1, 7, 7, 5))], lambda x, w: tfl_nets.depthwise_f(x, w, 2, "SAME"))


@needs_litert
def test_data_movement_ops_match_numpy():
    rng = np.random.default_rng(3)
    for case, ref in {
        "TRANSPOSE": lambda x: x.transpose(0, 3, 1, 2),
        "RESHAPE": lambda x: x.reshape(1, 32),
        "SQUEEZE": lambda x: x.reshape(1, 16),
        "SLICE": lambda x: x[:, 2:6, 1:, 0:3],
        "STRIDED_SLICE": lambda x: x[:, 1:7:2, 0:8:3, 2:6],
        "PAD": lambda x: np.pad(x, ((0, 0), (1, 2), (2, 1), (0, 0)), constant_values=-7),
    }.items():
        b, ins = OP_CASES[case](rng)
        (out,), _ = run_litert(b.finish(), ins)
        np.testing.assert_array_equal(out, ref(ins[0]), err_msg=case)
    b, ins = _split(rng)
    outs, _ = run_litert(b.finish(), ins)
    for got, want in zip(outs, np.split(ins[0], 3, axis=3)):
        np.testing.assert_array_equal(got, want)
    b, ins = _concat(rng)
    (out,), _ = run_litert(b.finish(), ins)
    np.testing.assert_array_equal(out, np.concatenate(ins, axis=3))
    b, ins = _dequantize(rng)
    (out,), _ = run_litert(b.finish(), ins)
    np.testing.assert_allclose(out, (ins[0].astype(np.float32) - 5) * np.float32(0.02), rtol=1e-6)
    b, ins = _quantize(rng)
    (out,), _ = run_litert(b.finish(), ins)
    assert np.abs(out.astype(int) - quantize_per_tensor(ins[0], 0.02, 5).astype(int)).max() <= 1


@needs_litert
@pytest.mark.parametrize("name", sorted(tfl_nets.NETS))
def test_zoo_net_runs_in_litert_and_tracks_float(name):
    net = tfl_nets.NETS[name]
    data = net.build(0)
    x_q, x_f, y_f = net.sample(0)
    assert x_q.shape == net.input_shape and x_q.dtype == np.int8
    outputs, tensors = run_litert(data, [x_q], all_tensors=True)
    (out,) = outputs
    sg = _model(data).Subgraphs(0)
    q = sg.Tensors(sg.Outputs(0)).Quantization()
    y = (out.astype(np.float64) - q.ZeroPoint(0)) * q.Scale(0)
    assert len(np.unique(out)) > 1 and not np.all((out == -128) | (out == 127)), out
    if name == "tfl_autoencoder":
        assert out.shape == (1, 640)
        assert np.corrcoef(y.ravel(), y_f.ravel())[0, 1] > 0.95
    else:
        assert (q.Scale(0), q.ZeroPoint(0)) == (1 / 256, -128)
        assert abs(y.sum() - 1.0) < 0.1 and np.abs(y - y_f).max() < 0.1, (y, y_f)
    # every activation uses its int8 range (nothing collapsed to one value)
    for i in range(sg.TensorsLength()):
        t = sg.Tensors(i)
        if t.Buffer() == 0 and t.Type() == tflite.TensorType.INT8:
            assert len(np.unique(tensors[t.Name().decode()])) > 1, t.Name()


def _op_names(data):
    m = _model(data)
    sg = m.Subgraphs(0)
    return [tflite.opcode2name(m.OperatorCodes(sg.Operators(i).OpcodeIndex()).BuiltinCode())
            for i in range(sg.OperatorsLength())]


def test_zoo_topologies():
    from collections import Counter
    ops = _op_names(tfl_nets.build("tfl_dscnn", 0))
    assert ops == ["CONV_2D"] + ["DEPTHWISE_CONV_2D", "CONV_2D"] * 4 + [
        "AVERAGE_POOL_2D", "RESHAPE", "FULLY_CONNECTED", "SOFTMAX"]
    assert Counter(_op_names(tfl_nets.build("tfl_resnet8", 0))) == Counter(
        CONV_2D=9, ADD=3, AVERAGE_POOL_2D=1, RESHAPE=1, FULLY_CONNECTED=1, SOFTMAX=1)
    assert Counter(_op_names(tfl_nets.build("tfl_mobilenetv1_025", 0))) == Counter(
        CONV_2D=14, DEPTHWISE_CONV_2D=13, AVERAGE_POOL_2D=1, RESHAPE=1, FULLY_CONNECTED=1, SOFTMAX=1)
    assert _op_names(tfl_nets.build("tfl_autoencoder", 0)) == ["FULLY_CONNECTED"] * 10

    sg = _model(tfl_nets.build("tfl_mobilenetv1_025", 0)).Subgraphs(0)
    shapes = {sg.Tensors(i).Name().decode(): tuple(sg.Tensors(i).ShapeAsNumpy()) for i in range(sg.TensorsLength())}
    assert shapes["input"] == (1, 96, 96, 3) and shapes["conv1"] == (1, 48, 48, 8)
    assert shapes["block13/pw"] == (1, 3, 3, 256) and shapes["softmax"] == (1, 2)
    sg = _model(tfl_nets.build("tfl_dscnn", 0)).Subgraphs(0)
    shapes = {sg.Tensors(i).Name().decode(): tuple(sg.Tensors(i).ShapeAsNumpy()) for i in range(sg.TensorsLength())}
    assert shapes["conv1"] == (1, 25, 5, 64) and shapes["avgpool"] == (1, 1, 1, 64)
    assert shapes["conv1/weights"] == (64, 10, 4, 1) and shapes["block0/dw/weights"] == (1, 3, 3, 64)


def test_writer_is_deterministic(tmp_path):
    for case, f in OP_CASES.items():
        a = f(np.random.default_rng(5))[0].finish(description=case)
        assert a == f(np.random.default_rng(5))[0].finish(description=case), case
    for name in tfl_nets.NETS:
        assert tfl_nets.build(name, 7) == tfl_nets.NETS[name](7)
        assert tfl_nets.build(name, 7) != tfl_nets.build(name, 8)
    path = tmp_path / "m" / "dscnn.tflite"
    assert tfl_nets.write("tfl_dscnn", 0, path) is True
    stat = path.stat()
    assert tfl_nets.write("tfl_dscnn", 0, path) is False and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert path.read_bytes() == tfl_nets.build("tfl_dscnn", 0)
    assert tfl_nets.write("tfl_dscnn", 1, path) is True


def test_reader_reads_back_codes_and_quantization():
    b, _ = _depthwise(np.random.default_rng(0))
    b2, _ = _split(np.random.default_rng(0))
    data = b.finish(description="dw")
    m = _model(data)
    assert m.Version() == 3 and m.Description() == b"dw" and m.SubgraphsLength() == 1
    assert m.Buffers(0).DataLength() == 0
    code = m.OperatorCodes(0)
    assert code.BuiltinCode() == tflite.BuiltinOperator.DEPTHWISE_CONV_2D
    assert code.DeprecatedBuiltinCode() == tflite.BuiltinOperator.DEPTHWISE_CONV_2D and code.Version() == 3
    sg = m.Subgraphs(0)
    op = sg.Operators(0)
    assert list(op.InputsAsNumpy()) == [0, 1, 2] and list(op.OutputsAsNumpy()) == [3]
    assert op.BuiltinOptionsType() == tflite.BuiltinOptions.DepthwiseConv2DOptions
    opt = tflite.DepthwiseConv2DOptions()
    opt.Init(op.BuiltinOptions().Bytes, op.BuiltinOptions().Pos)
    assert (opt.DepthMultiplier(), opt.StrideW(), opt.Padding()) == (2, 1, tflite.Padding.SAME)
    assert opt.FusedActivationFunction() == tflite.ActivationFunctionType.RELU6
    x, w, bias, y = (sg.Tensors(i) for i in range(4))
    assert x.Type() == tflite.TensorType.INT8 and x.Buffer() == 0
    assert np.isclose(x.Quantization().Scale(0), 0.05) and x.Quantization().ZeroPoint(0) == 2
    wq = w.Quantization()
    assert wq.QuantizedDimension() == 3 and wq.ScaleLength() == 8 and wq.ZeroPointLength() == 8
    np.testing.assert_allclose(wq.ScaleAsNumpy(), b.tensors[1].scale, rtol=1e-7)
    raw = m.Buffers(w.Buffer()).DataAsNumpy().tobytes()
    assert raw == b.tensors[1].data.tobytes() and w.Type() == tflite.TensorType.INT8
    assert bias.Type() == tflite.TensorType.INT32 and bias.Quantization().ScaleLength() == 8
    np.testing.assert_allclose(bias.Quantization().ScaleAsNumpy(), 0.05 * wq.ScaleAsNumpy(), rtol=1e-6)
    assert (y.Quantization().ZeroPoint(0), tuple(y.ShapeAsNumpy())) == (-128, (1, 8, 8, 8))

    m2 = _model(b2.finish())
    sg2 = m2.Subgraphs(0)
    assert sg2.OutputsLength() == 3 and sg2.Operators(0).OutputsLength() == 3
    assert m2.OperatorCodes(0).BuiltinCode() == tflite.BuiltinOperator.SPLIT
    # codes >= 127 go to builtin_code, deprecated_builtin_code saturates at 127
    b3 = TfliteWriter()
    x = b3.input("x", (1, 4), dtype="float32")
    b3.output(b3.op("GELU", [x], "y", (1, 4)))
    code = _model(b3.finish()).OperatorCodes(0)
    assert (code.BuiltinCode(), code.DeprecatedBuiltinCode()) == (tflite.BuiltinOperator.GELU, 127)
    # buffers are 16-byte aligned in the file
    data = tfl_nets.build("tfl_resnet8", 0)
    m = _model(data)
    for i in range(1, m.BuffersLength()):
        if m.Buffers(i).DataLength():
            off = m.Buffers(i)._tab.Vector(m.Buffers(i)._tab.Offset(4))
            assert off % 16 == 0


def test_versions_and_variants():
    def version(case):
        b, _ = OP_CASES[case](np.random.default_rng(0))
        return [(op.opname, op.version) for op in b.operators]
    assert version("QUANTIZE") == [("QUANTIZE", 1)] and version("QUANTIZE/requantize") == [("QUANTIZE", 2)]
    assert version("RESIZE_BILINEAR/half_pixel") == [("RESIZE_BILINEAR", 3)]
    assert version("TRANSPOSE_CONV") == [("TRANSPOSE_CONV", 3)]
    assert version("FULLY_CONNECTED/keep_num_dims") == [("FULLY_CONNECTED", 5)]
    assert version("CONV_2D") == [("CONV_2D", 3)]


def test_writer_rejects_mistakes():
    b = TfliteWriter()
    b.input("x", (1, 4), 0.1, 0)
    with pytest.raises(ValueError, match="duplicate"):
        b.input("x", (1, 4), 0.1, 0)
    with pytest.raises(ValueError, match="scales"):
        b.tensor("w", (3, 4), "int8", scale=[0.1, 0.2], data=np.zeros((3, 4), np.int8))
    with pytest.raises(ValueError, match="out of range"):
        b.const("c", np.array([300]), dtype="int8")
    with pytest.raises(ValueError, match="unknown builtin"):
        b.op("NOT_AN_OP", [], "y", (1,))
    with pytest.raises(ValueError, match="no field"):
        b.op("CONV_2D", [], "y2", (1,), 0.1, 0, options=dict(bogus=1))
    assert [t.name for t in b.tensors] == ["x"]      # nothing half-made


def test_oracle_imports_without_litert():
    import subprocess
    code = ("import sys; sys.modules['ai_edge_litert'] = None; sys.modules['ai_edge_litert.interpreter'] = None\n"
            "import importlib.util as u\n"
            f"s = u.spec_from_file_location('o', {os.path.join(HERE, 'litert_oracle.py')!r})\n"
            "m = u.module_from_spec(s); s.loader.exec_module(m)\n"
            "assert m.HAVE_LITERT is False and 'not available' in m.SKIP_REASON\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
