"""The C KPU emulator (kernels/k210/kpu_emul.c) against the NumPy model (targets/k210/kpu.py):
randomized single layers through the same 12 words, AI-RAM bytes and parameter tables,
covering every pool type, depthwise, 1x1 and 3x3, the four channel-packing widths and
activation tables with extreme segments."""
import math
import os
import subprocess

import numpy as np
import pytest

from conftest import ROOT
from nnscons.targets.k210 import kpu

BASE = 0x80000000


pytestmark = pytest.mark.xdist_group("k210-emulator")   # the module's fixture (compiled or built once) on one worker


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    out = tmp_path_factory.mktemp("kpu") / "emul_layer"
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror",
                    "-I", os.path.join(ROOT, "kernels", "k210"),
                    os.path.join(ROOT, "tests", "k210", "emul_layer.c"),
                    os.path.join(ROOT, "kernels", "k210", "kpu_emul.c"), "-o", str(out)], check=True)
    return str(out)


def random_layer(rng, c, o, h, w, k, depthwise, pool_type, extreme=False, ram=None):
    """(fields, params bytes, in CHW, out CHW) of a random layer. extreme: random conv and
    batch-norm arguments over their whole fields, and an activation table whose segments
    start at values the layer really produces (some exactly, to test the strict `>`), with
    random slopes and shifts, plus segments at both ends of the 36-bit range; needs the AI
    RAM (input at line 0) to see those values."""
    g_ic = 1 if depthwise else c
    weights = rng.integers(0, 256, (o, g_ic, k, k), dtype=np.uint8)
    n = g_ic * k * k
    if extreme:
        mul = rng.integers(0, 1 << 24, o)
        shift = rng.integers(0, 16, o)
        add = rng.integers(-(1 << 31), 1 << 31, o)
        arg_x, arg_w = (int(v) for v in rng.integers(-(1 << 12), 1 << 12, 2))
        shr_x, shr_w = (int(v) for v in rng.integers(0, 16, 2))
        arg_add = int(rng.integers(-(1 << 39), 1 << 39))
        x = kpu.download(ram, 0, c, h, w)
        acc = kpu.conv_acc(x, weights, k, depthwise, 0, arg_x, shr_x, arg_w, shr_w, arg_add)
        v = np.sort(kpu.batchnorm(acc, mul, shift, add).reshape(-1))
        starts = [int(v[i]) for i in rng.integers(0, v.size, 12)] + [int(v[0]) - 1, int(v[-1])]
        starts = [-(1 << 35)] + sorted(max(-(1 << 35), min((1 << 35) - 1, s)) for s in starts) + [(1 << 35) - 1]
        spread = max(1, int(v[-1]) - int(v[0]))
        segs = []
        for s in starts:
            ymul = int(rng.integers(0, 1 << 16))
            sh = int(np.clip(math.log2(float(spread) * max(ymul, 1)) - 7 + rng.integers(-3, 4), 0, 80))
            segs.append((s, ymul, sh, int(rng.integers(0, 256))))
    else:
        x_zp, w_zp = (int(v) for v in rng.integers(96, 160, 2))     # near the data mean, as calibrated
        arg_x, arg_w, shr_x, shr_w, arg_add = -w_zp, -x_zp, 0, 0, n * x_zp * w_zp
        m = rng.uniform(1e-4, 5e-3, o) * min(1.0, 36 / n)      # outputs spread over 0..255
        mul, shift, add, frac = kpu.bn_params(m, rng.integers(-5000, 5000, o), int(rng.integers(100, 156)))
        lo, hi = int(rng.integers(0, 60)), int(rng.integers(190, 256))
        segs = kpu.clamp_table(lo, hi, frac)
    bn_off = -(-weights.size // 128) * 128
    act_off = -(-(bn_off + 8 * o) // 256) * 256
    blob = bytearray(act_off + kpu.ACT_TABLE_BYTES)
    blob[:weights.size] = weights.tobytes()
    blob[bn_off:bn_off + 8 * o] = kpu.bn_bytes(mul, shift, add)
    blob[act_off:] = kpu.act_bytes(segs)
    oh, ow = kpu.pool_out_size(h, pool_type), kpu.pool_out_size(w, pool_type)
    lin, lout = kpu.layout_fields(w, h), kpu.layout_fields(ow, oh)
    channel_bytes = (1 if depthwise else c) * k * k
    per_load, loads = kpu.weight_loads(o, channel_bytes, depthwise)
    fields = {
        "int_en": 1, "depth_wise_layer": int(depthwise), "i_ch_num": c - 1, "o_ch_num": o - 1,
        "o_ch_num_coef": per_load - 1, "load_time": loads - 1, "para_size": per_load * channel_bytes,
        "i_row_wid": w - 1, "i_col_high": h - 1, "o_row_wid": ow - 1,
        "o_col_high": oh - 1, "kernel_type": 1 if k == 3 else 0, "pad_type": 0, "pool_type": pool_type,
        "load_para": 1, "dma_burst_size": 15, "pad_value": 0 if extreme else int(rng.integers(0, 256)),
        "bwsx_base_addr": BASE + bn_off, "load_coor": 1, "para_start_addr": BASE,
        "channel_switch_addr": lin["channel_switch"], "row_switch_addr": lin["row_switch"],
        "coef_group": lin["group"], "load_act": 1, "active_addr": BASE + act_off,
        "wb_channel_switch_addr": lout["channel_switch"], "wb_row_switch_addr": lout["row_switch"],
        "wb_group": lout["group"], "shr_w": shr_w, "shr_x": shr_x, "arg_w": arg_w, "arg_x": arg_x,
        "arg_add": arg_add, "channel_byte_num": oh * ow - 1, "dma_total_byte": oh * ow * o - 1,
    }
    return fields, bytes(blob), (c, h, w), (o, oh, ow)


def run_both(emulator, tmp_path, ram, layers):
    """layers: [(fields without image addresses, params, in_chw, out_chw)] run in order, each
    reading line 0 and writing at the top of `ram` (random bytes: input and garbage around the
    maps); returns (numpy ai_ram, C ai_ram)."""
    ram = ram.copy()
    words = []
    params = layers[0][1]
    for fields, blob, in_chw, out_chw in layers:
        assert blob == params
        dst = kpu.AI_RAM_BYTES // kpu.LINE - kpu.tensor_lines(*out_chw)
        words.append(kpu.pack_words(dict(fields, image_src_addr=0, image_dst_addr=dst)))
    before = ram.copy()

    def memory(addr, size):
        off = addr - BASE
        assert 0 <= off and off + size <= len(params)
        return params[off:off + size]

    for wd in words:
        kpu.run_words(wd, ram, memory)
    (tmp_path / "words.bin").write_bytes(b"".join(int(v).to_bytes(8, "little") for wd in words for v in wd))
    (tmp_path / "params.bin").write_bytes(params)
    (tmp_path / "in.bin").write_bytes(before.tobytes())
    subprocess.run([emulator, str(tmp_path / "words.bin"), str(tmp_path / "params.bin"),
                    str(tmp_path / "in.bin"), str(tmp_path / "out.bin")], check=True)
    return ram, np.fromfile(tmp_path / "out.bin", dtype=np.uint8)


CASES = [  # c, o, h, w, k, depthwise, pool type
    (3, 8, 8, 12, 3, False, kpu.POOL_BYPASS),          # W <= 16: 4 channels per line
    (5, 6, 9, 20, 1, False, kpu.POOL_MAX_2_S2),        # W <= 32: 2 channels per line
    (6, 6, 8, 40, 3, True, kpu.POOL_MEAN_2_S2),        # W <= 64: one line per row
    (4, 7, 8, 70, 3, False, kpu.POOL_MAX_4_S4),        # W > 64: two lines per row
    (2, 3, 12, 16, 1, False, kpu.POOL_MEAN_4_S4),
    (8, 8, 10, 30, 3, True, kpu.POOL_LEFT_TOP_2_S2),
    (3, 4, 6, 18, 3, False, kpu.POOL_RIGHT_TOP_2_S2),
    (4, 5, 9, 13, 1, False, kpu.POOL_LEFT_TOP_4_S4),
    (5, 5, 7, 33, 3, True, kpu.POOL_MEAN_2_S1),
    (3, 9, 5, 130, 3, False, kpu.POOL_MAX_2_S1),
    (1024, 12, 4, 4, 1, False, kpu.POOL_BYPASS),       # 1024 channels: a fully connected layer's shape
    (20, 1024, 4, 6, 1, False, kpu.POOL_MAX_2_S2),     # 1024 output channels
]


@pytest.mark.parametrize("extreme", [False, True], ids=["requant", "extreme"])
@pytest.mark.parametrize("case", CASES, ids=[f"{kpu.POOL_NAMES[c[-1]]}-w{c[3]}-k{c[4]}{'-dw' if c[5] else ''}"
                                             for c in CASES])
def test_emulator_matches_numpy_model(emulator, tmp_path, case, extreme):
    rng = np.random.default_rng(abs(hash((case, extreme))) % (1 << 32))
    ram = rng.integers(0, 256, kpu.AI_RAM_BYTES, dtype=np.uint8)
    layer = random_layer(rng, *case, extreme=extreme, ram=ram)
    got_np, got_c = run_both(emulator, tmp_path, ram, [layer])
    assert np.array_equal(got_np, got_c), np.flatnonzero(got_np != got_c)[:10]
    out = layer[3]
    dst = kpu.AI_RAM_BYTES // kpu.LINE - kpu.tensor_lines(*out)
    assert len(np.unique(kpu.download(got_np, dst, *out))) > 1     # not a constant map


def test_numpy_model_reads_what_upload_wrote():
    rng = np.random.default_rng(3)
    ram = np.zeros(kpu.AI_RAM_BYTES, dtype=np.uint8)
    for w in (5, 16, 17, 32, 33, 64, 65, 200):
        x = rng.integers(0, 256, (7, 5, w), dtype=np.uint8)
        kpu.upload(ram, 10, x)
        assert np.array_equal(kpu.download(ram, 10, 7, 5, w), x)
        groups = 4 if w <= 16 else 2 if w <= 32 else 1
        assert kpu.tensor_bytes(7, 5, w) == -(-w // 64) * 5 * -(-7 // groups) * 64


def test_words_round_trip_and_field_positions():
    fields = {"image_src_addr": 0x1234, "image_dst_addr": 0x7FFF, "arg_x": -5, "arg_w": (1 << 23) - 1,
              "arg_add": -(1 << 39), "bwsx_base_addr": 0x80001000, "para_size": 0x1FFFF, "pool_type": 9}
    words = kpu.pack_words(fields)
    assert words[1] == 0x1234 | (0x7FFF << 32)           # image_dst_addr at bit 32 (kpu.h)
    assert words[5] == 0x1FFFF << 15
    back = kpu.unpack_words(words)
    assert all(back[k] == v for k, v in fields.items())
    with pytest.raises(kpu.KpuError):
        kpu.pack_words({"i_ch_num": 1024})


def test_clamp_table_is_exact_requantization():
    """The fitted table computes clamp(round_half_up(v / 2**F), lo, hi) for every v, whatever
    the segment rule at a breakpoint."""
    for lo, hi, frac in ((0, 255, 0), (3, 200, 5), (128, 134, 12), (17, 17, 3)):
        table = kpu.clamp_table(lo, hi, frac)
        xs, mul, sh, bias = (np.array([s[i] for s in table]) for i in range(4))
        v = np.arange(-300 << frac, 300 << frac, max(1, (1 << frac) // 7), dtype=np.int64)
        v = np.concatenate([v, np.arange(lo << frac, (lo << frac) + 3), [1 << 34, -(1 << 34)]])
        want = np.clip(np.floor(v / 2.0 ** frac + 0.5), lo, hi)
        assert np.array_equal(kpu.activate(v, xs, mul, sh, bias), want.astype(np.uint8))


def test_chained_layers_through_ai_ram(emulator, tmp_path):
    """Two layers with one parameter blob: the second reads the first's output in place."""
    rng = np.random.default_rng(11)
    fields, blob, in_chw, out_chw = random_layer(rng, 4, 4, 8, 24, 3, True, kpu.POOL_BYPASS)
    ram = rng.integers(0, 256, kpu.AI_RAM_BYTES, dtype=np.uint8)
    got_np, got_c = run_both(emulator, tmp_path, ram, [(fields, blob, in_chw, out_chw)] * 2)
    assert np.array_equal(got_np, got_c)


def test_documented_choices_where_the_sources_are_silent():
    # ties of the activation's shift round half up (towards +inf), as nncase's carry_shift
    assert list(kpu.carry_shift(np.array([3, 5, -3, -5, 4, 7]), 1)) == [2, 3, -1, -2, 2, 4]
    assert list(kpu.carry_shift(np.array([6, -6, 2]), 2)) == [2, -1, 1]
    # segment choice: the last segment whose x_start is strictly below v
    xs = np.array([-(1 << 35), 10] + [1 << 34] * 14)
    mul, sh, bias = np.zeros(16, int), np.zeros(16, int), np.array([1, 2] + [3] * 14)
    assert list(kpu.activate(np.array([9, 10, 11]), xs, mul, sh, bias)) == [1, 1, 2]
    # mean pools truncate; out-of-image taps of mean_2_s1 repeat the border pixel, of max_2_s1 read 0
    y = np.array([[[1, 2], [2, 2]]], dtype=np.uint8)
    assert kpu.pool(y, kpu.POOL_MEAN_2_S2).tolist() == [[[1]]]                 # 7 / 4
    assert kpu.pool(y, kpu.POOL_MEAN_2_S1).tolist() == [[[1, 2], [2, 2]]]      # 7/4, 8/4, 8/4, 8/4
    assert kpu.pool(y, kpu.POOL_MAX_2_S1).tolist() == [[[2, 2], [2, 2]]]
    assert kpu.pool(np.arange(16, dtype=np.uint8).reshape(1, 4, 4), kpu.POOL_RIGHT_TOP_2_S2).tolist() == \
        [[[1, 3], [9, 11]]]


def test_emulator_rejects_overlapping_maps(emulator, tmp_path):
    rng = np.random.default_rng(2)
    fields, blob, in_chw, out_chw = random_layer(rng, 4, 4, 8, 24, 3, False, kpu.POOL_BYPASS)
    words = kpu.pack_words(dict(fields, image_src_addr=0, image_dst_addr=3))     # input takes lines 0..7
    (tmp_path / "w.bin").write_bytes(b"".join(int(v).to_bytes(8, "little") for v in words))
    (tmp_path / "p.bin").write_bytes(blob)
    (tmp_path / "r.bin").write_bytes(bytes(kpu.AI_RAM_BYTES))
    r = subprocess.run([emulator, str(tmp_path / "w.bin"), str(tmp_path / "p.bin"), str(tmp_path / "r.bin"),
                        str(tmp_path / "o.bin")], stdout=subprocess.PIPE, text=True)
    assert r.returncode == 3 and "KPU-EMUL ERROR: input and output maps overlap" in r.stdout


def _run_emulator(emulator, tmp_path, words, blob):
    (tmp_path / "w.bin").write_bytes(b"".join(int(v).to_bytes(8, "little") for v in words))
    (tmp_path / "p.bin").write_bytes(blob)
    (tmp_path / "r.bin").write_bytes(bytes(kpu.AI_RAM_BYTES))
    return subprocess.run([emulator, str(tmp_path / "w.bin"), str(tmp_path / "p.bin"), str(tmp_path / "r.bin"),
                           str(tmp_path / "o.bin")], stdout=subprocess.PIPE, text=True)


def test_emulator_and_model_reject_a_weight_load_over_30_kib(emulator, tmp_path):
    """One load of 64 channels x 1024 B = 64 KiB: the KPU's weight buffer would overflow (nncase
    1.x splits at 30 KiB); the emulator fails the run, the NumPy model raises."""
    rng = np.random.default_rng(3)
    fields, blob, _, out_chw = random_layer(rng, 1024, 64, 4, 4, 1, False, kpu.POOL_BYPASS)
    assert fields["o_ch_num_coef"] == 29 and fields["load_time"] == 2      # 30 + 30 + 4 channels
    bad = dict(fields, o_ch_num_coef=63, load_time=0, para_size=64 * 1024)
    dst = kpu.AI_RAM_BYTES // kpu.LINE - kpu.tensor_lines(*out_chw)
    words = kpu.pack_words(dict(bad, image_src_addr=0, image_dst_addr=dst))
    r = _run_emulator(emulator, tmp_path, words, blob)
    assert r.returncode == 3 and "KPU-EMUL ERROR: one weight load over 30 KiB" in r.stdout, r.stdout
    with pytest.raises(kpu.KpuError, match="over 30720 B"):
        kpu.run_words(words, np.zeros(kpu.AI_RAM_BYTES, np.uint8), lambda a, n: blob[a - BASE:a - BASE + n])
    # a per-load count that disagrees with para_size is an error too (the hardware reads both)
    words = kpu.pack_words(dict(fields, o_ch_num_coef=63, image_src_addr=0, image_dst_addr=dst))
    r = _run_emulator(emulator, tmp_path, words, blob)
    assert r.returncode == 3 and "para_size is not o_ch_num_coef + 1" in r.stdout, r.stdout
