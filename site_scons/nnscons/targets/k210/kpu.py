"""The Kendryte K210 KPU: layer arguments (12 64-bit words), AI-RAM layout and a NumPy model
of its arithmetic -- the K210 reference that makes this target's goldens.

Field layout of the 12 words: the Kendryte standalone SDK's kpu.h (kpu_layer_argument_t,
kpu_batchnorm_argument_t, kpu_activate_table_t). Arithmetic: nncase 1.x's K210 kernels.
Where those sources leave a detail open, the choice is made here, documented in README
("Target k210") and implemented identically in kernels/k210/kpu_emul.c:

  conv      acc = sum(x*w) + ((arg_x*sum(x)) >> shr_x) + ((arg_w*sum(w)) >> shr_w) + arg_add
            (x, w uint8; out-of-image taps read pad_value; arg_x, arg_w signed 24-bit,
            arg_add signed 40-bit and added once per output -- the planner puts the whole
            k*k*IC*x_zp*w_zp in it, k*k*x_zp*w_zp for depthwise; >> is arithmetic, flooring)
  batchnorm v = ((acc * norm_mul) >> norm_shift) + norm_add   per output channel
            (norm_mul unsigned 24-bit, norm_shift 4-bit, norm_add signed 32-bit, >> floors)
  activate  segment i = the LAST of the 16 whose x_start < v (strictly; segment 0 when none),
            y = carry_shift((v - x_start[i]) * y_mul[i], shift[i]) + bias[i], clamped to 0..255
            (x_start signed 36-bit, y_mul unsigned 16-bit, bias uint8; carry_shift rounds half
            up, towards +inf, as nncase's carry_shift; shifts above 63 act as 63)
  pool      on the activated uint8 map, output size in // stride; max: out-of-image taps
            read 0; mean: out-of-image taps clamp to the border pixel (nncase), the sum is
            divided by k*k with truncation (floor; all values >= 0); pick types read one tap
            of each block (left-top (0,0), right-top (0,1)).
All intermediate arithmetic is 64-bit two's complement (wrapping), as in the C emulator.
"""
from __future__ import annotations


import numpy as np

LINE = 64                      # AI-RAM line, bytes
AI_RAM_BYTES = 2 * 1024 * 1024
NUM_WORDS = 12
ACT_SEGMENTS = 16
ACT_TABLE_BYTES = (ACT_SEGMENTS + 2) * 8

# pool types (kpu_pool_type)
POOL_BYPASS, POOL_MAX_2_S2, POOL_MEAN_2_S2, POOL_MAX_4_S4, POOL_MEAN_4_S4 = 0, 1, 2, 3, 4
POOL_LEFT_TOP_2_S2, POOL_RIGHT_TOP_2_S2, POOL_LEFT_TOP_4_S4, POOL_MEAN_2_S1, POOL_MAX_2_S1 = 5, 6, 7, 8, 9
POOL_NAMES = ["bypass", "max_2_s2", "mean_2_s2", "max_4_s4", "mean_4_s4", "left_top_2_s2",
              "right_top_2_s2", "left_top_4_s4", "mean_2_s1", "max_2_s1"]
# (filter, stride, kind, pick offset (row, col))
POOLS = {
    0: (1, 1, "pick", (0, 0)), 1: (2, 2, "max", None), 2: (2, 2, "mean", None),
    3: (4, 4, "max", None), 4: (4, 4, "mean", None), 5: (2, 2, "pick", (0, 0)),
    6: (2, 2, "pick", (0, 1)), 7: (4, 4, "pick", (0, 0)), 8: (2, 1, "mean", None),
    9: (2, 1, "max", None),
}

# (word, name, low bit, width) -- kpu.h's kpu_layer_argument_t, in word order
FIELDS = [
    (0, "int_en", 0, 1), (0, "ram_flag", 1, 1), (0, "full_add", 2, 1), (0, "depth_wise_layer", 3, 1),
    (1, "image_src_addr", 0, 15), (1, "image_dst_addr", 32, 15),
    (2, "i_ch_num", 0, 10), (2, "o_ch_num", 32, 10), (2, "o_ch_num_coef", 48, 10),
    (3, "i_row_wid", 0, 10), (3, "i_col_high", 10, 9), (3, "o_row_wid", 32, 10), (3, "o_col_high", 42, 9),
    (4, "kernel_type", 0, 3), (4, "pad_type", 3, 1), (4, "pool_type", 4, 4), (4, "first_stride", 8, 1),
    (4, "bypass_conv", 9, 1), (4, "load_para", 10, 1), (4, "dma_burst_size", 16, 8),
    (4, "pad_value", 24, 8), (4, "bwsx_base_addr", 32, 32),
    (5, "load_coor", 0, 1), (5, "load_time", 1, 6), (5, "para_size", 15, 17), (5, "para_start_addr", 32, 32),
    (6, "coef_column_offset", 0, 4), (6, "coef_row_offset", 4, 12),
    (7, "channel_switch_addr", 0, 15), (7, "row_switch_addr", 16, 4), (7, "coef_size", 20, 8),
    (7, "coef_group", 28, 3), (7, "load_act", 31, 1), (7, "active_addr", 32, 32),
    (8, "wb_channel_switch_addr", 0, 15), (8, "wb_row_switch_addr", 16, 4), (8, "wb_group", 20, 3),
    (9, "shr_w", 0, 4), (9, "shr_x", 4, 4), (9, "arg_w", 8, 24), (9, "arg_x", 32, 24),
    (10, "arg_add", 0, 40),
    (11, "send_data_out", 0, 1), (11, "channel_byte_num", 16, 16), (11, "dma_total_byte", 32, 32),
]
WORD_NAMES = ["interrupt_enabe", "image_addr", "image_channel_num", "image_size", "kernel_pool_type_cfg",
              "kernel_load_cfg", "kernel_offset", "kernel_calc_type_cfg", "write_back_cfg", "conv_value",
              "conv_value2", "dma_parameter"]
_FIELD = {name: (w, lo, width) for w, name, lo, width in FIELDS}
SIGNED = {"arg_w", "arg_x", "arg_add"}


LOAD_LIMIT = 30 * 1024         # bytes of weights per parameter load (nncase 1.x: size_limit = 30 KiB)
MAX_LOADS = 64                 # load_time is 6 bits: at most 64 loads per layer


def weight_loads(o: int, channel_bytes: int, depthwise: bool) -> tuple:
    """(output channels per load, loads) as nncase 1.x's k210_module_builder::emit(kpu_conv2d)
    splits a layer's weights: a depthwise layer in one load; otherwise as many whole output
    channels as fit LOAD_LIMIT bytes per load."""
    if depthwise:
        return o, 1
    per_load = min(o, LOAD_LIMIT // channel_bytes)
    return per_load, -(-o // per_load)


def check_loads(f: dict) -> None:
    """The parameter-load fields of unpacked words follow weight_loads (what the hardware
    reads per load); a load over LOAD_LIMIT would misbehave on the KPU."""
    oc, k = f["o_ch_num"] + 1, 3 if f["kernel_type"] == 1 else 1
    dw = bool(f["depth_wise_layer"])
    channel_bytes = (1 if dw else f["i_ch_num"] + 1) * k * k
    per_load, loads = f["o_ch_num_coef"] + 1, f["load_time"] + 1
    if not dw and f["para_size"] > LOAD_LIMIT:
        raise KpuError(f"para_size {f['para_size']} B: one weight load over {LOAD_LIMIT} B")
    if f["para_size"] != per_load * channel_bytes or loads != -(-oc // per_load):
        raise KpuError(f"weight loads: o_ch_num_coef {per_load - 1}, load_time {loads - 1}, para_size "
                       f"{f['para_size']} disagree with {oc} output channels of {channel_bytes} B")


class KpuError(ValueError):
    """A value that does not fit its field, or a shape the KPU cannot take."""


def pack_words(fields: dict) -> list:
    """12 words from {field name: value}; unknown names and values that do not fit raise."""
    words = [0] * NUM_WORDS
    for name, value in fields.items():
        if name not in _FIELD:
            raise KpuError(f"unknown KPU field {name!r}")
        w, lo, width = _FIELD[name]
        value = int(value)
        if name in SIGNED:
            if not -(1 << (width - 1)) <= value < (1 << (width - 1)):
                raise KpuError(f"{name} = {value} does not fit {width} signed bits")
            value &= (1 << width) - 1
        elif not 0 <= value < (1 << width):
            raise KpuError(f"{name} = {value} does not fit {width} bits")
        words[w] |= value << lo
    return words


def unpack_words(words) -> dict:
    out = {}
    for w, name, lo, width in FIELDS:
        v = (int(words[w]) >> lo) & ((1 << width) - 1)
        if name in SIGNED and v >> (width - 1):
            v -= 1 << width
        out[name] = v
    return out


# ---- AI-RAM layout ------------------------------------------------------------------------

def row_layout(width: int) -> tuple:
    """(channels per line group, lines per row, bytes between channels of a group)."""
    if width <= 16:
        return 4, 1, 16
    if width <= 32:
        return 2, 1, 32
    return 1, -(-width // LINE), LINE


def tensor_lines(c: int, h: int, w: int) -> int:
    groups, row_len, _ = row_layout(w)
    g = min(groups, c)
    return row_len * h * (-(-c // g))


def tensor_bytes(c: int, h: int, w: int) -> int:
    return tensor_lines(c, h, w) * LINE


def layout_fields(w: int, h: int) -> dict:
    """The kernel_calc_type_cfg / write_back_cfg layout values of a (., h, w) map."""
    groups, row_len, _ = row_layout(w)
    return {"channel_switch": row_len * h, "row_switch": row_len, "group": groups}


def _offsets(c, h, w, channel_switch, row_switch, group):
    pitch = LINE // group
    ch = np.arange(c)
    base = (ch // group) * channel_switch * LINE + (ch % group) * pitch
    return (base[:, None, None] + (np.arange(h) * row_switch * LINE)[None, :, None]
            + np.arange(w)[None, None, :])


def upload(ai_ram: np.ndarray, line: int, x_u8: np.ndarray, channel_switch=None, row_switch=None,
           group=None) -> None:
    """Write a (C, H, W) uint8 map into AI RAM at `line` in the KPU layout."""
    c, h, w = x_u8.shape
    lf = layout_fields(w, h)
    off = _offsets(c, h, w, channel_switch or lf["channel_switch"], row_switch or lf["row_switch"],
                   group or lf["group"])
    ai_ram[line * LINE + off] = x_u8


def download(ai_ram: np.ndarray, line: int, c: int, h: int, w: int, channel_switch=None, row_switch=None,
             group=None) -> np.ndarray:
    lf = layout_fields(w, h)
    off = _offsets(c, h, w, channel_switch or lf["channel_switch"], row_switch or lf["row_switch"],
                   group or lf["group"])
    return ai_ram[line * LINE + off]


# ---- tables -------------------------------------------------------------------------------

def bn_bytes(mul, shift, add) -> bytes:
    """kpu_batchnorm_argument_t per output channel (norm_mul 24, norm_add 32, norm_shift 4)."""
    out = bytearray()
    for m, s, a in zip(mul, shift, add):
        m, s, a = int(m), int(s), int(a)
        if not (0 <= m < (1 << 24) and 0 <= s < 16 and -(1 << 31) <= a < (1 << 31)):
            raise KpuError(f"batchnorm mul {m} shift {s} add {a} out of range")
        reg = m | ((a & 0xFFFFFFFF) << 24) | (s << 56)
        out += reg.to_bytes(8, "little")
    return bytes(out)


def parse_bn(data: bytes, n: int):
    regs = np.frombuffer(data[:8 * n], dtype="<u8").astype(object)
    mul = np.array([int(r) & 0xFFFFFF for r in regs], dtype=np.int64)
    add = np.array([((int(r) >> 24) & 0xFFFFFFFF) for r in regs], dtype=np.int64)
    add = np.where(add >= (1 << 31), add - (1 << 32), add)
    shift = np.array([(int(r) >> 56) & 0xF for r in regs], dtype=np.int64)
    return mul, shift, add


def act_bytes(segments) -> bytes:
    """kpu_activate_table_t from 16 (x_start, y_mul, shift, bias) tuples."""
    if len(segments) != ACT_SEGMENTS:
        raise KpuError(f"an activation table has {ACT_SEGMENTS} segments, got {len(segments)}")
    out = bytearray()
    for xs, mul, sh, _ in segments:
        if not (-(1 << 35) <= xs < (1 << 35) and 0 <= mul < (1 << 16) and 0 <= sh < 256):
            raise KpuError(f"activation segment x_start {xs} y_mul {mul} shift {sh} out of range")
        reg = sh | (mul << 8) | ((xs & ((1 << 36) - 1)) << 24)
        out += reg.to_bytes(8, "little")
    for _, _, _, bias in segments:
        if not 0 <= bias < 256:
            raise KpuError(f"activation bias {bias} out of range")
        out.append(bias)
    return bytes(out)


def parse_act(data: bytes):
    regs = [int.from_bytes(data[8 * i:8 * i + 8], "little") for i in range(ACT_SEGMENTS)]
    xs = [(r >> 24) & ((1 << 36) - 1) for r in regs]
    xs = np.array([x - (1 << 36) if x >> 35 else x for x in xs], dtype=np.int64)
    mul = np.array([(r >> 8) & 0xFFFF for r in regs], dtype=np.int64)
    sh = np.array([r & 0xFF for r in regs], dtype=np.int64)
    bias = np.frombuffer(data[8 * ACT_SEGMENTS:8 * ACT_SEGMENTS + ACT_SEGMENTS], dtype=np.uint8).astype(np.int64)
    return xs, mul, sh, bias


# ---- arithmetic ---------------------------------------------------------------------------

def _wrap(a):
    return np.asarray(a).astype(np.int64)


def carry_shift(v, s):
    """v / 2**s rounded half up (towards +inf); s = 0 leaves v; s is capped at 63."""
    v = _wrap(v)
    s = np.minimum(np.asarray(s, dtype=np.int64), 63)
    with np.errstate(over="ignore"):
        shifted = (v >> np.maximum(s - 1, 0)) + 1
        return np.where(s > 0, shifted >> 1, v)


def conv_acc(x: np.ndarray, w: np.ndarray, k: int, depthwise: bool, pad_value: int,
             arg_x: int, shr_x: int, arg_w: int, shr_w: int, arg_add: int) -> np.ndarray:
    """The KPU's stride-1 'same' conv accumulator, (O, H, W) int64.
    x: (C, H, W) uint8; w: (O, C or 1, k, k) uint8."""
    c, h, wd = x.shape
    o = w.shape[0]
    pad = k // 2
    xp = np.full((c, h + 2 * pad, wd + 2 * pad), pad_value, dtype=np.int64)
    xp[:, pad:pad + h, pad:pad + wd] = x
    # taps (C, k*k, H, W)
    taps = np.stack([xp[:, i:i + h, j:j + wd] for i in range(k) for j in range(k)], axis=1)
    wf = w.reshape(o, -1, k * k).astype(np.int64)
    if depthwise:
        value = np.einsum("ckhw,ck->chw", taps, wf[:, 0, :], optimize=True)
        sum_x = taps.sum(axis=1)
        sum_w = wf[:, 0, :].sum(axis=1)[:, None, None]
    else:
        cols = taps.reshape(c * k * k, h * wd).astype(np.float64)
        value = (wf.reshape(o, c * k * k).astype(np.float64) @ cols).astype(np.int64).reshape(o, h, wd)
        sum_x = np.broadcast_to(taps.sum(axis=(0, 1)), (o, h, wd))
        sum_w = wf.sum(axis=(1, 2))[:, None, None]
    with np.errstate(over="ignore"):
        return (value + ((np.int64(arg_x) * sum_x) >> shr_x) + ((np.int64(arg_w) * sum_w) >> shr_w)
                + np.int64(arg_add))


def batchnorm(acc: np.ndarray, mul, shift, add) -> np.ndarray:
    m = np.asarray(mul, dtype=np.int64)[:, None, None]
    s = np.asarray(shift, dtype=np.int64)[:, None, None]
    a = np.asarray(add, dtype=np.int64)[:, None, None]
    with np.errstate(over="ignore"):
        return ((acc * m) >> s) + a


def activate(v: np.ndarray, xs, mul, sh, bias) -> np.ndarray:
    xs, mul, sh, bias = (np.asarray(t, dtype=np.int64) for t in (xs, mul, sh, bias))
    idx = np.zeros(v.shape, dtype=np.int64)
    for i in range(1, ACT_SEGMENTS):
        idx = np.where(v > xs[i], i, idx)
    with np.errstate(over="ignore"):
        y = carry_shift((v - xs[idx]) * mul[idx], sh[idx]) + bias[idx]
    return np.clip(y, 0, 255).astype(np.uint8)


def pool_out_size(n: int, pool_type: int) -> int:
    return n // POOLS[pool_type][1]


def pool(y: np.ndarray, pool_type: int) -> np.ndarray:
    """(C, H, W) uint8 -> pooled uint8."""
    k, s, kind, off = POOLS[pool_type]
    c, h, w = y.shape
    oh, ow = h // s, w // s
    if kind == "pick":
        return y[:, off[0]:off[0] + oh * s:s, off[1]:off[1] + ow * s:s][:, :oh, :ow].copy()
    rows = (np.arange(oh) * s)[:, None] + np.arange(k)[None, :]          # (oh, k)
    cols = (np.arange(ow) * s)[:, None] + np.arange(k)[None, :]          # (ow, k)
    yi = y.astype(np.int64)
    if kind == "max":
        pad = np.zeros((c, h + k, w + k), dtype=np.int64)
        pad[:, :h, :w] = yi
        win = pad[:, rows[:, :, None, None], cols[None, None, :, :]]      # (c, oh, k, ow, k)
        return win.max(axis=(2, 4)).astype(np.uint8)
    r = np.clip(rows, 0, h - 1)
    cc = np.clip(cols, 0, w - 1)
    win = yi[:, r[:, :, None, None], cc[None, None, :, :]]
    return (win.sum(axis=(2, 4)) // (k * k)).astype(np.uint8)


def layer(x: np.ndarray, w: np.ndarray, f: dict, bn, act) -> np.ndarray:
    """One KPU layer on tensors: x (C,H,W) uint8, w uint8 (O, C|1, k, k), f the decoded
    fields, bn (mul, shift, add), act (x_start, y_mul, shift, bias) -> pooled uint8 map."""
    k = 3 if f["kernel_type"] == 1 else 1
    acc = conv_acc(x, w, k, bool(f["depth_wise_layer"]), f["pad_value"], f["arg_x"], f["shr_x"],
                   f["arg_w"], f["shr_w"], f["arg_add"])
    v = batchnorm(acc, *bn)
    return pool(activate(v, *act), f["pool_type"])


def run_words(words, ai_ram: np.ndarray, memory) -> None:
    """Execute one layer exactly as the C emulator does: decode the 12 words, read the input,
    weights, batch-norm and activation tables (memory(address, size) -> bytes), write the
    output map into ai_ram (np.uint8 array of the AI RAM)."""
    f = unpack_words(words)
    check_loads(f)
    ic, oc = f["i_ch_num"] + 1, f["o_ch_num"] + 1
    iw, ih = f["i_row_wid"] + 1, f["i_col_high"] + 1
    ow, oh = f["o_row_wid"] + 1, f["o_col_high"] + 1
    k = 3 if f["kernel_type"] == 1 else 1
    dw = bool(f["depth_wise_layer"])
    x = download(ai_ram, f["image_src_addr"], ic, ih, iw, f["channel_switch_addr"], f["row_switch_addr"],
                 f["coef_group"])
    wcount = oc * (1 if dw else ic) * k * k
    w = np.frombuffer(memory(f["para_start_addr"], wcount), dtype=np.uint8).reshape(oc, 1 if dw else ic, k, k)
    bn = parse_bn(memory(f["bwsx_base_addr"], 8 * oc), oc)
    act = parse_act(memory(f["active_addr"], ACT_TABLE_BYTES))
    y = layer(x, w, f, bn, act)
    if y.shape != (oc, oh, ow):
        raise KpuError(f"output {y.shape} disagrees with o_row_wid/o_col_high {(oc, oh, ow)}")
    upload(ai_ram, f["image_dst_addr"], y, f["wb_channel_switch_addr"], f["wb_row_switch_addr"], f["wb_group"])


# ---- from a requantizing int8 conv to KPU parameters --------------------------------------

NORM_MUL_BITS = 22           # norm_mul < 2**22, as nncase's get_fixed_mul (the field holds 24 bits)
NORM_SHIFT_MAX = 15
FRAC_MAX = 24                # fraction bits of the batch-norm output (x_start keeps 36 bits)
X_START_MIN = -(1 << 35)


def bn_params(m: np.ndarray, bias: np.ndarray, out_zp_u8: int):
    """Per-channel (norm_mul, norm_shift, norm_add) and the fraction bits F so that
    v = ((acc * norm_mul) >> norm_shift) + norm_add ~= ((acc + bias) * m + out_zp_u8) * 2**F.
    F and the shift are chosen once per layer: the largest F <= FRAC_MAX with every
    norm_mul = round(m * 2**(F + shift)) below 2**22."""
    m = np.asarray(m, dtype=np.float64)
    mmax = float(m.max())
    best = None
    for frac in range(FRAC_MAX, -1, -1):
        for ns in range(NORM_SHIFT_MAX, -1, -1):
            if mmax * 2.0 ** (frac + ns) < (1 << NORM_MUL_BITS) - 1:
                best = (frac, ns)
                break
        if best:
            break
    if best is None:
        raise KpuError(f"requantization multiplier {mmax:g} is too large for the KPU batch norm")
    frac, ns = best
    mul = np.rint(m * 2.0 ** (frac + ns)).astype(np.int64)
    add = np.rint((np.asarray(bias, dtype=np.float64) * m + out_zp_u8) * 2.0 ** frac).astype(np.int64)
    if np.any(np.abs(add) >= (1 << 31)):
        frac_ok = frac
        while frac_ok > 0 and np.any(np.abs(add) >= (1 << 31)):
            frac_ok -= 1
            mul = np.rint(m * 2.0 ** (frac_ok + ns)).astype(np.int64)
            add = np.rint((np.asarray(bias, dtype=np.float64) * m + out_zp_u8) * 2.0 ** frac_ok).astype(np.int64)
        frac = frac_ok
        if np.any(np.abs(add) >= (1 << 31)):
            raise KpuError("bias too large for the KPU batch norm's 32-bit norm_add")
    return mul, np.full(m.shape, ns, dtype=np.int64), add, frac


def clamp_table(lo: int, hi: int, frac: int) -> list:
    """16 segments computing clamp(round_half_up(v / 2**frac), lo, hi) exactly:
    a constant lo up to lo*2**F, the identity (y_mul 1, shift F) above it, a constant hi
    above hi*2**F. Both breakpoints are multiples of 2**F, so `>` or `>=` at a segment start
    gives the same table result."""
    one = 1 << frac
    segs = [(X_START_MIN, 0, 0, lo), (lo * one, 1, frac, lo), (hi * one, 0, 0, hi)]
    return segs + [segs[-1]] * (ACT_SEGMENTS - len(segs))

