"""conv2dk14: the patch embedding of an image tokenizer (as Gemma 3's), default input 1x4x896x896.

One Conv 4->1152, kernel 14x14, stride 14, no padding, over an RGBA image, written as a QDQ
model: the input is quantized to uint8 with scale 1/255 and zero point 0 (RGBA pixels in
[0, 1]), weights int8 per output channel, bias int32, output int8. The output scale covers
+-4 standard deviations of every channel for uniform pixels.
"""
from __future__ import annotations

import numpy as np

from ._graph import IR_VERSION, OPSET, PRODUCER, PRODUCER_VERSION

DEFAULT_INPUT_SHAPE = (1, 4, 896, 896)
KERNEL = 14
OUT_CHANNELS = 1152


def check_input_shape(shape) -> None:
    shape = tuple(shape)
    if (len(shape) != 4 or shape[0] != 1 or shape[1] != 4 or min(shape[2:]) < KERNEL
            or shape[2] % KERNEL or shape[3] % KERNEL):
        raise ValueError(f"input_shape {list(shape)} not supported; expected (1, 4, H, W) with "
                         f"H and W multiples of {KERNEL}")


def build(seed: int, input_shape=DEFAULT_INPUT_SHAPE):
    from onnx import TensorProto, helper, numpy_helper
    check_input_shape(input_shape)
    rng = np.random.default_rng(seed)
    o, k = OUT_CHANNELS, 4 * KERNEL * KERNEL
    w = rng.standard_normal((o, 4, KERNEL, KERNEL)).astype(np.float64) * np.sqrt(2.0 / k)
    s_w = np.abs(w).reshape(o, -1).max(axis=1) / 127.0
    w_q = np.clip(np.round(w / s_w[:, None, None, None]), -127, 127).astype(np.int8)
    s_in = np.float32(1.0 / 255.0)
    b = rng.standard_normal(o) * 0.05
    b_q = np.round(b / (float(s_in) * s_w)).astype(np.int32)
    wr = w_q.reshape(o, -1).astype(np.float64) * s_w[:, None]
    mean = 0.5 * wr.sum(axis=1) + b_q * float(s_in) * s_w
    spread = np.sqrt((wr ** 2).sum(axis=1) / 12.0)
    lo, hi = float((mean - 4 * spread).min()), float((mean + 4 * spread).max())
    s_out = np.float32((hi - lo) / 255.0)
    zp_out = np.int8(np.clip(np.round(-128 - lo / float(s_out)), -128, 127))

    def init(name, array):
        return numpy_helper.from_array(np.ascontiguousarray(array), name)
    inits = [init("in_scale", np.array(s_in, np.float32)), init("in_zp", np.array(0, np.uint8)),
             init("w_q", w_q), init("w_scale", s_w.astype(np.float32)),
             init("w_zp", np.zeros(o, np.int8)), init("b_q", b_q),
             init("b_scale", (float(s_in) * s_w).astype(np.float32)), init("b_zp", np.zeros(o, np.int32)),
             init("out_scale", np.array(s_out, np.float32)), init("out_zp", np.array(zp_out, np.int8))]
    nodes = [
        helper.make_node("QuantizeLinear", ["input", "in_scale", "in_zp"], ["input_q"], "input_q"),
        helper.make_node("DequantizeLinear", ["input_q", "in_scale", "in_zp"], ["input_dq"], "input_dq"),
        helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["w"], "w_dq", axis=0),
        helper.make_node("DequantizeLinear", ["b_q", "b_scale", "b_zp"], ["b"], "b_dq", axis=0),
        helper.make_node("Conv", ["input_dq", "w", "b"], ["patches"], "patch_embed",
                         kernel_shape=[KERNEL, KERNEL], strides=[KERNEL, KERNEL], pads=[0, 0, 0, 0],
                         dilations=[1, 1], group=1),
        helper.make_node("QuantizeLinear", ["patches", "out_scale", "out_zp"], ["patches_q"], "patches_q"),
        helper.make_node("DequantizeLinear", ["patches_q", "out_scale", "out_zp"], ["output"], "output_dq"),
    ]
    _, _, h, wd = input_shape
    graph = helper.make_graph(
        nodes, "conv2dk14",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(input_shape))],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, o, h // KERNEL, wd // KERNEL])],
        initializer=inits)
    return helper.make_model(graph, producer_name=PRODUCER, producer_version=PRODUCER_VERSION,
                             ir_version=IR_VERSION, opset_imports=[helper.make_opsetid("", OPSET)])
