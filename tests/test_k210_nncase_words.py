"""The 12 KPU words nnscons emits equal the words nncase 1.x's rules give for the same layer.

nncase_words() below restates, independently of mapping.py, what nncase 1.x's
k210_module_builder::emit(kpu_conv2d) and its K210 runtime write into kpu_layer_argument_t
(release 1.x, modules/k210/src/codegen/ops/kpu_conv2d.cpp and runtime/ops/kpu_conv2d.cpp):
  - a depthwise layer loads all its weights at once; otherwise one load holds
    min(O, floor(30 * 1024 / (k*k*IC))) output channels (size_limit = 30 KiB), load_time =
    ceil(O / that) - 1, o_ch_num_coef = that - 1, para_size = that * k*k*IC;
  - pad_type 0, load_para 1, dma_burst_size 15, load_coor 1, load_act 1, kernel_type 1 for 3x3;
  - channel_switch_addr = row_len * H, row_switch_addr = row_len, coef_group = the row layout's
    channels per line (64-byte lines: 4 when W <= 16, 2 when W <= 32, else 1 and ceil(W/64)
    lines per row), the same for the write-back with the output map;
  - channel_byte_num = OW*OH - 1, dma_total_byte = OW*OH*O - 1;
  - at run time int_en = 1 and send_data_out = 0 (the output stays in the AI RAM), and the three
    parameter addresses are pointer - IOMEM (0x40000000).
The quantization arguments (arg_x/arg_w/arg_add/shifts) and pad_value are this project's
(README, "Numerics"), passed through; first_stride, which nncase leaves 0, is 1 for inputs of
256 rows or more as in the vendor demos (nncase's own layers are smaller)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from nnscons.ir import Graph, Layer, QParams, Tensor
from nnscons.targets.k210 import kpu, mapping

IOMEM = 0x40000000


def row_layout(w):
    if w <= 16:
        return 4, 1
    if w <= 32:
        return 2, 1
    return 1, math.ceil(w / 64)


def nncase_words(c, h, w, o, oh, ow, k, depthwise, pool_type, quant, src, dst, params_ptr, bn_off, act_off):
    if depthwise:
        per_load, loads, size = o, 1, o * k * k
    else:
        one = k * k * c
        per_load = min(o, math.floor(30 * 1024 / one))
        loads, size = math.ceil(o / per_load), one * per_load
    gi, rli = row_layout(w)
    go, rlo = row_layout(ow)
    f = dict(int_en=1, depth_wise_layer=int(depthwise), image_src_addr=src, image_dst_addr=dst,
             i_ch_num=c - 1, o_ch_num=o - 1, o_ch_num_coef=per_load - 1,
             i_row_wid=w - 1, i_col_high=h - 1, o_row_wid=ow - 1, o_col_high=oh - 1,
             kernel_type=1 if k == 3 else 0, pad_type=0, pool_type=pool_type, first_stride=int(h >= 256),
             load_para=1, dma_burst_size=15, bwsx_base_addr=params_ptr - IOMEM + bn_off,
             load_coor=1, load_time=loads - 1, para_size=size, para_start_addr=params_ptr - IOMEM,
             channel_switch_addr=rli * h, row_switch_addr=rli, coef_group=gi, load_act=1,
             active_addr=params_ptr - IOMEM + act_off,
             wb_channel_switch_addr=rlo * oh, wb_row_switch_addr=rlo, wb_group=go,
             send_data_out=0, channel_byte_num=ow * oh - 1, dma_total_byte=ow * oh * o - 1, **quant)
    return kpu.pack_words(f)


def conv_layer(c, h, w, o, k, depthwise, stride=1, rng=None):
    rng = rng or np.random.default_rng(c * 7 + o)
    groups = c if depthwise else 1
    pads = [k // 2] * 4                 # symmetric (PyTorch): stride 2 picks the left-top pixel
    oh, ow = (h, w) if stride == 1 else (h // 2, w // 2)
    q = lambda s, z: QParams(scale=s, zero_point=z)  # noqa: E731
    g = Graph(name="t", input="x", output="y",
              tensors={"x": Tensor("x", (1, c, h, w), q(0.02, 3)), "y": Tensor("y", (1, o, oh, ow), q(0.05, -7))},
              layers=[])
    wshape = (o, 1 if depthwise else c, k, k)
    layer = Layer(name="conv", op="conv2d", inputs=["x"], output="y",
                  attrs={"kernel": [k, k], "stride": [stride, stride], "pads": pads, "groups": groups,
                         "dilation": [1, 1]},
                  weight=rng.integers(-127, 128, wshape).astype(np.int8), weight_scale=np.full(o, 0.003),
                  bias=rng.integers(-500, 500, o).astype(np.int32), act_min=-128, act_max=127)
    g.layers.append(layer)
    return layer, g


LAYERS = [  # c, h, w, o, k, depthwise, stride -- MobileNet-v1 0.75 at 224 and the split limits
    (3, 224, 224, 24, 3, False, 2),        # conv0: input 224 rows
    (24, 112, 112, 24, 3, True, 1),        # block1 depthwise
    (24, 112, 112, 48, 1, False, 1),       # block1 pointwise
    (384, 14, 14, 384, 1, False, 1),       # block7 pointwise: 384 B/channel, 80 per load, 5 loads
    (576, 7, 7, 768, 1, False, 1),         # block13 pointwise (issue 26): 53 channels per load, 15 loads
    (768, 7, 7, 768, 1, False, 1),         # 40 channels of 768 B = 30,720 B per load
    (256, 28, 28, 256, 3, False, 1),       # 2,304 B/channel: 13 per load, 20 loads
    (16, 14, 30, 8, 3, False, 1),          # W <= 32: 2 channels per line
    (8, 256, 64, 8, 3, True, 1),           # 256 rows: first_stride 1
]


@pytest.mark.parametrize("shape", LAYERS, ids=[f"{c}x{h}x{w}-o{o}-k{k}{'-dw' if d else ''}-s{s}"
                                               for c, h, w, o, k, d, s in LAYERS])
def test_words_equal_nncase_rules(shape):
    c, h, w, o, k, depthwise, stride = shape
    layer, graph = conv_layer(c, h, w, o, k, depthwise, stride)
    pool, why = mapping.constraint(layer, graph)
    assert pool is not None, why
    kl = mapping.build(layer, graph, pool)
    ptr = 0x80123400                                  # where the image put the layer's parameters
    src, dst = 0, kpu.AI_RAM_BYTES // kpu.LINE - kpu.tensor_lines(*kl.out_chw)
    ours = kl.words(src, dst, ptr - IOMEM)            # kpu_board.c's kpu_hal_map: pointer - IOMEM
    f = kl.fields
    quant = {n: f[n] for n in ("shr_w", "shr_x", "arg_w", "arg_x", "arg_add", "pad_value")}
    want = nncase_words(c, h, w, o, kl.out_chw[1], kl.out_chw[2], k, depthwise, pool, quant, src, dst, ptr,
                        kl.bn_offset, kl.act_offset)
    diff = {n: (a, b) for n, a in kpu.unpack_words(ours).items() if a != (b := kpu.unpack_words(want)[n])}
    assert ours == want, diff
    if not depthwise:
        assert f["para_size"] <= 30 * 1024


def test_block13_pointwise_is_split_as_nncase_splits_it():
    layer, graph = conv_layer(768, 7, 7, 768, 1, False)
    f = mapping.build(layer, graph, kpu.POOL_BYPASS).fields
    assert (f["o_ch_num_coef"] + 1, f["load_time"] + 1, f["para_size"]) == (40, 20, 30_720)


def test_a_layer_needing_more_than_64_loads_runs_on_the_cpu():
    layer, graph = conv_layer(1024, 8, 8, 1024, 3, False)     # 3 channels of 9,216 B per load: 342 loads
    with pytest.raises(kpu.KpuError, match="342 parameter loads"):
        mapping.build(layer, graph, kpu.POOL_BYPASS)
