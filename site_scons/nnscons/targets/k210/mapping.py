"""Which layers run on the KPU, and their KPU parameters.

A conv2d goes to the KPU when every constraint holds (else it runs on the CPU and the
report says why): 1x1 or 3x3 kernel, dilation 1, groups 1 or depthwise (groups = C = O),
channels <= 1024 in and out, input 4 <= H <= 256 and 4 <= W <= 512, and either stride 1
with the KPU's own padding (k // 2 on every side) or stride 2 realised by the KPU's pick
pools: the KPU computes the stride-1 map and keeps one pixel of each 2x2 block. A stride-2
conv with pads (top, left) samples the stride-1 map at (k//2 - top, k//2 - left) of each
block: (0, 0) is left_top_2_s2 (PyTorch's symmetric padding), (0, 1) right_top_2_s2; TF
SAME padding of an even input (top = left = 0 for a 3x3) samples (1, 1), which no pool type
picks, so such a layer runs on the CPU instead of giving a shifted output.

A MaxPool/AveragePool with a 2x2 or 4x4 window, stride equal to the window and no padding runs
on the KPU too, as a depthwise 1x1 conv of weight 1 (acc = x - x_zp, requantized by the batch
norm and clamped by the activation) followed by the max_2_s2/mean_2_s2/max_4_s4/mean_4_s4
pool. Max commutes with the monotonic requantization, so a max pool is the generic one bit for
bit up to the requantization's tie rounding; the KPU's mean divides the activated uint8 values
by k*k with truncation (its own arithmetic, documented in kpu.py).

A fully connected layer (Linear, at most 1024 features in and out) runs on the KPU as a 1x1
conv on a 4x4 map (the KPU's smallest): the input vector is pixel (0, 0) of each channel, the
output is pixel (0, 0) of the result (a 1x1 conv reads no other pixel, so the rest of the map
does not matter).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import kpu

MAX_CHANNELS = 1024
H_RANGE = (4, 256)
W_RANGE = (4, 512)
FC_HW = 4                  # the fully connected layer's map: the KPU's smallest, 4x4
MODEL_VERSION = 1          # bump when the NumPy model's arithmetic changes (golden keys)


@dataclass
class KpuLayer:
    """Everything the KPU needs for one layer, addresses aside."""
    name: str
    k: int
    depthwise: bool
    pool_type: int
    in_chw: tuple
    out_chw: tuple          # after the pool
    weights: np.ndarray     # uint8 (O, C|1, k, k)
    fields: dict            # every kpu.h field but the addresses
    bn: tuple               # (mul, shift, add) int64 arrays
    act: list               # 16 (x_start, y_mul, shift, bias)
    frac: int               # fraction bits of the batch-norm output
    fc: bool = False        # a Linear as a 1x1 conv on pixel (0, 0) of a 4x4 map

    @property
    def act_arrays(self):
        return tuple(np.array([s[i] for s in self.act], dtype=np.int64) for i in range(4))

    def run(self, x_i8: np.ndarray) -> np.ndarray:
        """The K210 reference of this layer on an int8 (1, C, H, W) tensor -> int8 output."""
        if self.fc:
            x = np.full(self.in_chw, self.fields["pad_value"], dtype=np.uint8)
            x[:, 0, 0] = (x_i8.reshape(-1).astype(np.int16) + 128).astype(np.uint8)
        else:
            x = (x_i8[0].astype(np.int16) + 128).astype(np.uint8)
        y = kpu.layer(x, self.weights, self.fields, self.bn, self.act_arrays)
        if self.fc:
            return (y[:, 0, 0].astype(np.int16) - 128).astype(np.int8)[None]
        return (y.astype(np.int16) - 128).astype(np.int8)[None]

    # ---- the .bin the KPU reads from SRAM: weights, batch norm, activation table

    @property
    def weight_bytes(self) -> int:
        return int(self.weights.size)

    @property
    def bn_offset(self) -> int:
        return -(-self.weight_bytes // 128) * 128

    @property
    def act_offset(self) -> int:
        return -(-(self.bn_offset + 8 * self.out_chw[0]) // 256) * 256

    @property
    def param_bytes(self) -> int:
        return self.act_offset + kpu.ACT_TABLE_BYTES

    def pack(self) -> bytes:
        blob = bytearray(self.param_bytes)
        blob[:self.weight_bytes] = np.ascontiguousarray(self.weights).tobytes()
        bn = kpu.bn_bytes(*self.bn)
        blob[self.bn_offset:self.bn_offset + len(bn)] = bn
        blob[self.act_offset:] = kpu.act_bytes(self.act)
        return bytes(blob)

    def words(self, src_line: int, dst_line: int, base: int) -> list:
        """The 12 words with the AI-RAM lines and the SRAM address of the .bin."""
        return kpu.pack_words(dict(self.fields, image_src_addr=src_line, image_dst_addr=dst_line,
                                   para_start_addr=base, bwsx_base_addr=base + self.bn_offset,
                                   active_addr=base + self.act_offset))

    def cycles(self) -> int:
        """Rough cycle model: per output channel and input row, one pass of ceil(W/64) 64-pixel
        groups per input channel (all k*k taps at once); depthwise reads one channel."""
        c, h, w = self.in_chw
        return self.out_chw[0] * h * (-(-w // 64)) * (1 if self.depthwise else c)


_POOL_TYPES = {("maxpool", 2): kpu.POOL_MAX_2_S2, ("avgpool", 2): kpu.POOL_MEAN_2_S2,
               ("maxpool", 4): kpu.POOL_MAX_4_S4, ("avgpool", 4): kpu.POOL_MEAN_4_S4}


def _pool_constraint(layer, graph):
    a = layer.attrs
    _, c, h, w = graph.tensor(layer.inputs[0]).shape
    _, _, oh, ow = graph.tensor(layer.output).shape
    kh, kw = a["kernel"]
    if kh != kw or tuple(a.get("stride", (1, 1))) != (kh, kw) or (layer.op, kh) not in _POOL_TYPES:
        return None, f"{layer.op} {kh}x{kw} stride {list(a.get('stride', (1, 1)))}: the KPU pools 2x2/2 and 4x4/4"
    if any(a.get("pads", (0, 0, 0, 0))) or (oh, ow) != (h // kh, w // kw):
        return None, f"{layer.op} with padding or ceil mode: the KPU pools without"
    if c > MAX_CHANNELS:
        return None, f"{c} channels > {MAX_CHANNELS}"
    if not (H_RANGE[0] <= h <= H_RANGE[1]) or not (W_RANGE[0] <= w <= W_RANGE[1]):
        return None, f"input {h}x{w} outside the KPU's 4<=H<=256, 4<=W<=512"
    return _POOL_TYPES[(layer.op, kh)], None


def _linear_constraint(layer, graph):
    o, i = layer.weight.shape
    if max(o, i) > MAX_CHANNELS:
        return None, f"linear {i}->{o}: more than {MAX_CHANNELS} features"
    return kpu.POOL_BYPASS, None


def constraint(layer, graph):
    """(pool type, None) when the layer maps on the KPU, else (None, reason)."""
    entry = KPU_OPS.get(layer.op)
    if entry is None:
        return None, f"{layer.op}: not a KPU op"
    return entry.constraint(layer, graph)


def _conv_constraint(layer, graph):
    a = layer.attrs
    _, c, h, w = graph.tensor(layer.inputs[0]).shape
    _, o, oh, ow = graph.tensor(layer.output).shape
    kh, kw = a["kernel"]
    if (kh, kw) not in ((1, 1), (3, 3)):
        return None, f"kernel {kh}x{kw}: the KPU does 1x1 and 3x3 only"
    if tuple(a.get("dilation", (1, 1))) != (1, 1):
        return None, "dilated convolution"
    g = a.get("groups", 1)
    if g != 1 and not (g == c == o):
        return None, f"grouped convolution (groups {g}); the KPU does groups 1 or depthwise"
    if c > MAX_CHANNELS or o > MAX_CHANNELS:
        return None, f"{max(c, o)} channels > {MAX_CHANNELS}"
    if not (H_RANGE[0] <= h <= H_RANGE[1]) or not (W_RANGE[0] <= w <= W_RANGE[1]):
        return None, f"input {h}x{w} outside the KPU's 4<=H<=256, 4<=W<=512"
    k = kh
    pt, pl, pb, pr = a["pads"]
    stride = tuple(a["stride"])
    if stride == (1, 1):
        if (pt, pl, pb, pr) != (k // 2,) * 4:
            return None, f"pads {list(a['pads'])}: the KPU pads {k // 2} on every side of a {k}x{k}"
        return kpu.POOL_BYPASS, None
    if stride == (2, 2):
        if (oh, ow) != (h // 2, w // 2):
            return None, (f"stride 2 output {oh}x{ow} != the KPU's {h // 2}x{w // 2} (input {h}x{w}, "
                          f"pads {list(a['pads'])})")
        dy, dx = k // 2 - pt, k // 2 - pl
        pick = {(0, 0): kpu.POOL_LEFT_TOP_2_S2, (0, 1): kpu.POOL_RIGHT_TOP_2_S2}.get((dy, dx))
        if pick is None:
            return None, (f"stride 2 with pads {list(a['pads'])} samples pixel ({dy},{dx}) of each 2x2 block "
                          f"(TF SAME-style padding); the KPU picks (0,0) or (0,1) only")
        return pick, None
    return None, f"stride {list(stride)}: the KPU does stride 1, and stride 2 through its pools"


def _fc_operands(layer, in_t, out_t, c, o):
    w_zp = 128
    weights = (layer.weight.astype(np.int16) + w_zp).astype(np.uint8).reshape(o, c, 1, 1)
    m = in_t.q.scale * np.asarray(layer.weight_scale, dtype=np.float64) / out_t.q.scale
    bias = layer.bias if layer.bias is not None else np.zeros(o, dtype=np.int64)
    return 1, False, w_zp, weights, m, bias


def _conv_operands(layer, in_t, out_t, c, o):
    k = layer.attrs["kernel"][0]
    depthwise = layer.attrs.get("groups", 1) != 1
    w_zp = 128
    weights = (layer.weight.astype(np.int16) + w_zp).astype(np.uint8)
    m = in_t.q.scale * np.asarray(layer.weight_scale, dtype=np.float64) / out_t.q.scale
    bias = layer.bias if layer.bias is not None else np.zeros(o, dtype=np.int64)
    return k, depthwise, w_zp, weights, m, bias


def _pool_operands(layer, in_t, out_t, c, o):
    """A pool: depthwise 1x1 of weight 1, then the KPU's pool."""
    weights = np.ones((c, 1, 1, 1), dtype=np.uint8)
    m = np.full(c, in_t.q.scale / out_t.q.scale)
    return 1, True, 0, weights, m, np.zeros(c, dtype=np.int64)


@dataclass(frozen=True)
class KpuOp:
    """The KPU's op-table entry: whether the op maps (and with which pool type) and its
    operands as a KPU layer: (kernel, depthwise, weight zero point, u8 weights, float
    multipliers, bias) from (layer, input, output, in channels, out channels)."""
    constraint: object
    operands: object
    fc: bool = False        # a fully connected layer: FC_HW x FC_HW pixels of its features


KPU_OPS = {
    "conv2d": KpuOp(_conv_constraint, _conv_operands),
    "linear": KpuOp(_linear_constraint, _fc_operands, fc=True),
    "maxpool": KpuOp(_pool_constraint, _pool_operands),
    "avgpool": KpuOp(_pool_constraint, _pool_operands),
}


def build(layer, graph, pool_type: int) -> KpuLayer:
    """KPU parameters of a conv2d that constraint() accepted.

    int8 -> uint8 is exact: x_u8 = x + 128 (zero point + 128); weights w + 128 with w_zp 128.
    Then sum((x_u8 - x_zp) * (w_u8 - 128)) = sum(x*w) - 128*sum(x) - x_zp*sum(w) + n*x_zp*128,
    i.e. arg_x = -128, arg_w = -x_zp, arg_add = n*x_zp*128, shifts 0: the accumulator equals the
    generic reference's exactly. The requantization (per-channel m, bias, output zero point)
    goes into the batch norm, the clamp into the activation table."""
    in_t, out_t = graph.tensor(layer.inputs[0]), graph.tensor(layer.output)
    entry = KPU_OPS[layer.op]
    fc = entry.fc
    if fc:
        o, c = layer.weight.shape
        h = w = oh = ow = FC_HW
    else:
        _, c, h, w = in_t.shape
        _, o, oh, ow = out_t.shape
    x_zp = int(in_t.q.zero_point) + 128
    k, depthwise, w_zp, weights, m, bias = entry.operands(layer, in_t, out_t, c, o)
    g_ic = 1 if depthwise else c
    mul, shift, add, frac = kpu.bn_params(m, bias, int(out_t.q.zero_point) + 128)
    act = kpu.clamp_table(layer.act_min + 128, layer.act_max + 128, frac)
    kb = g_ic * k * k                       # weight bytes per output channel
    per_load, loads = kpu.weight_loads(o, kb, depthwise)
    if loads > kpu.MAX_LOADS:
        raise kpu.KpuError(f"{o} output channels of {kb} weight bytes need {loads} parameter loads of at most "
                           f"{kpu.LOAD_LIMIT // 1024} KiB, more than the KPU's {kpu.MAX_LOADS}")
    lin, lout = kpu.layout_fields(w, h), kpu.layout_fields(ow, oh)
    fields = {
        "int_en": 1, "depth_wise_layer": int(depthwise),
        "i_ch_num": c - 1, "o_ch_num": o - 1, "o_ch_num_coef": per_load - 1,
        "i_row_wid": w - 1, "i_col_high": h - 1, "o_row_wid": ow - 1, "o_col_high": oh - 1,
        "kernel_type": 1 if k == 3 else 0, "pad_type": 0, "pool_type": pool_type,
        # first_stride: nncase never sets it (its layers are < 256 rows); vendor demos set it
        # for inputs 256 rows or taller
        "first_stride": int(h >= 256),
        "load_para": 1, "dma_burst_size": 15, "pad_value": x_zp,
        "load_coor": 1, "load_time": loads - 1, "para_size": per_load * kb,
        "channel_switch_addr": lin["channel_switch"], "row_switch_addr": lin["row_switch"],
        "coef_group": lin["group"], "load_act": 1,
        "wb_channel_switch_addr": lout["channel_switch"], "wb_row_switch_addr": lout["row_switch"],
        "wb_group": lout["group"],
        "shr_w": 0, "shr_x": 0, "arg_w": -x_zp, "arg_x": -w_zp, "arg_add": kb * x_zp * w_zp,
        "send_data_out": 0, "channel_byte_num": oh * ow - 1, "dma_total_byte": oh * ow * o - 1,
    }
    kl = KpuLayer(name=layer.name, k=k, depthwise=depthwise, pool_type=pool_type, in_chw=(c, h, w),
                  out_chw=(o, oh, ow), weights=weights, fields=fields, bn=(mul, shift, add), act=act,
                  frac=frac, fc=fc)
    kpu.pack_words(dict(fields, image_src_addr=0, image_dst_addr=0))   # every field fits
    return kl

