"""GAP9 HWC tile kernels (kernels/common/nn_hwc_*.c, kernels/gap9/nn_xp_*.c) against the CHW kernels and the reference.

tests/gap9_kernels/harness.c runs a whole batch of kernel calls in one process (see its
header for the record format), so a broad seeded sweep costs a few subprocess calls.
Every call gets exact-size buffers and a pre-filled output, so the sanitizer build
catches out-of-bounds reads and the checks catch writes outside a call's pixel range.

For each random configuration the HWC kernel on the transposed input/weights must equal
the CHW kernel's output transposed, bit for bit, for the full pixel range and for a
split into 8 core ranges (some empty), each of which may write only its own pixels.
"""
from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
for _p in (_ROOT / "site_scons", Path(__file__).resolve().parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from nnscons import numerics  # noqa: E402
from nnscons import ops  # noqa: E402
from nnscons.targets.gap9.add_short import short_rule  # noqa: E402
from nnscons.targets.gap9.conv_paths import xp_split, xp_split_for, xp_split_ordered  # noqa: E402
from nnscons.reference import run_layer  # noqa: E402
from test_reference import conv_graph, pool_graph, rand_int8, single_layer_graph  # noqa: E402
from test_kernels import POOL_CASES  # noqa: E402

COMMON = _ROOT / "kernels" / "common"
GAP9 = _ROOT / "kernels" / "gap9"
HWC_SOURCES = [(COMMON if n.startswith("nn_hwc_") else GAP9) / n
               for n in ("nn_hwc_conv2d.c", "nn_xp_conv2d.c", "nn_xp_dwconv.c", "nn_xp_linear.c",
                         "nn_hwc_pool.c", "nn_xp_pool.c", "nn_xp_add.c", "nn_xp_lut.c", "nn_hwc_eltwise.c")]
HARNESS = Path(__file__).resolve().parent / "gap9_kernels" / "harness.c"
CFLAGS = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"]
CORES = 8

(CONV_CHW, CONV_HWC, MAXPOOL_CHW, AVGPOOL_CHW, MAXPOOL_HWC, AVGPOOL_HWC,
 GAP_CHW, GAP_HWC, REQUANT_CHW, REQUANT_HWC, XP_CONV_HWC, XP_CONV_FAST, LINEAR, XP_LINEAR,
 XP_CONV_IM2COL, XP_MAXPOOL, ADD, XP_ADD, XP_CONV_CHANS, XP_CONV_CORES, XP_CONV_SPLIT, XP_DWCONV, XP_GAP,
 LUT, XP_LUT, XP_AVGPOOL, XP_REQUANT, XP_ADD_SHORT) = range(1, 29)


# ---------------------------------------------------------------- the harness

class Batch:
    """Kernel calls queued for one harness run; add() returns the call's index."""

    def __init__(self):
        self.records, self.sizes = [], []

    def add(self, op, cfg, arrays, out_bytes, fill=0):
        words = [op, out_bytes, fill, len(cfg), *[int(v) for v in cfg], len(arrays)]
        parts = [np.asarray(words, np.int32).tobytes()]
        for a in arrays:
            raw = b"" if a is None else np.ascontiguousarray(a).tobytes()
            parts += [np.int32(len(raw)).tobytes(), raw]
        self.records.append(b"".join(parts))
        self.sizes.append(out_bytes)
        return len(self.sizes) - 1

    def run(self, exe, workdir):
        calls, out = workdir / "calls.bin", workdir / "out.bin"
        calls.write_bytes(b"".join(self.records))
        res = subprocess.run([str(exe), str(calls), str(out)], capture_output=True, text=True,
                             timeout=120, env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
        assert res.returncode == 0, res.stderr[-3000:]
        data = np.fromfile(out, dtype=np.int8)
        assert data.size == sum(self.sizes)
        return np.split(data, np.cumsum(self.sizes)[:-1])


def _build(workdir: Path, extra=()):
    exe = workdir / "harness"
    cmd = (["gcc", *CFLAGS, *extra, f"-I{COMMON}", f"-I{GAP9}", str(HARNESS)]
           + sorted({str(p) for p in COMMON.glob("*.c")} | {str(p) for p in HWC_SOURCES}) + ["-o", str(exe), "-lm"])
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return exe


pytestmark = pytest.mark.xdist_group("gap9-harnesses")   # the module's fixture (compiled or built once) on one worker


@pytest.fixture(scope="module")
def harnesses(tmp_path_factory):
    """{'plain': exe, 'builtin': exe, 'sanitized': exe or None when the sanitizer runtime is
    missing}."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc not found")
    exes = {"plain": _build(tmp_path_factory.mktemp("plain")),
            # nn_xpulp.h's GAP SDK builtin variant over host stand-ins for the builtins
            "builtin": _build(tmp_path_factory.mktemp("builtin"),
                              ["-std=gnu99", "-Wno-pedantic", "-DNN_XPULP_BUILTIN", "-include",
                               str(Path(__file__).resolve().parent / "gap9_kernels" / "gap_builtins_host.h")])}
    try:
        exe = _build(tmp_path_factory.mktemp("sanitized"), SANITIZE)
        b = Batch()
        b.add(REQUANT_CHW, [1, 0, 1 << 30, 30, 0, -128, 127], [np.zeros(1, np.int8)], 1)
        b.run(exe, exe.parent)
        exes["sanitized"] = exe
    except AssertionError:
        exes["sanitized"] = None
    return exes


def _exe(harnesses, build):
    if harnesses[build] is None:
        pytest.skip("sanitizer runtime unavailable")
    return harnesses[build]


# ---------------------------------------------------------------- core splits and checks

def core_ranges(rng, n):
    """8 [begin, end) ranges covering [0, n): an even split as the cores use, or random cuts
    (duplicate cuts give empty ranges; n < 8 always has some)."""
    if rng.random() < 0.5:
        chunk = -(-n // CORES)
        return [(min(n, i * chunk), min(n, (i + 1) * chunk)) for i in range(CORES)]
    cuts = sorted(int(v) for v in rng.integers(0, n + 1, CORES - 1))
    return list(zip([0] + cuts, cuts + [n]))


class Checks:
    """Expected HWC results and the harness calls that must reproduce them."""

    def __init__(self):
        self.batch = Batch()
        self.items_ = []    # (label, kind, payload)

    def full_and_split(self, label, rng, op, cfg_of, arrays, expected, n_units, unit):
        """One call for [0, n_units) and one per core range, each into a buffer pre-filled
        with a sentinel; `unit` output bytes per pixel (or per channel)."""
        size = expected.size
        full = self.batch.add(op, cfg_of(0, n_units), arrays, size, fill=int(rng.integers(-128, 128)))
        self.items_.append((label, "full", (full, expected)))
        for b, e in core_ranges(rng, n_units):
            fill = int(rng.integers(-128, 128))
            idx = self.batch.add(op, cfg_of(b, e), arrays, size, fill=fill)
            self.items_.append((f"{label} range [{b},{e})", "range",
                               (idx, expected, b * unit, e * unit, fill)))

    def channels(self, label, rng, op, cfg, arrays, expected, n_chans, c_begin, c_end):
        """One call that writes channels [c_begin, c_end) of every pixel, nothing else."""
        fill = int(rng.integers(-128, 128))
        idx = self.batch.add(op, cfg, arrays, expected.size, fill=fill)
        self.items_.append((label, "chans", (idx, expected, n_chans, c_begin, c_end, fill)))

    def items(self, label, rng, op, cfg, arrays, expected, b, e):
        """One depthwise call for work items [b, e) (item = c * out_h + y) of an HWC output
        [oh][ow][oc]: it writes exactly those rows of those channels."""
        fill = int(rng.integers(-128, 128))
        idx = self.batch.add(op, cfg + [b, e], arrays, expected.size, fill=fill)
        self.items_.append((label, "items", (idx, expected, b, e, fill)))

    def exact(self, label, op, cfg, arrays, expected, fill=0):
        idx = self.batch.add(op, cfg, arrays, expected.size, fill=fill)
        self.items_.append((label, "full", (idx, expected)))

    def verify(self, exe, workdir):
        outs = self.batch.run(exe, workdir)
        for label, kind, payload in self.items_:
            if kind == "full":
                idx, expected = payload
                np.testing.assert_array_equal(outs[idx], expected.reshape(-1), err_msg=label)
            elif kind == "items":
                idx, expected, b, e, fill = payload
                oh, ow, oc = expected.shape
                item = np.arange(oc)[None, :] * oh + np.arange(oh)[:, None]       # [y][c]
                mine = np.broadcast_to(((item >= b) & (item < e))[:, None, :], expected.shape)
                want = np.where(mine, expected, np.int8(fill)).astype(np.int8)
                np.testing.assert_array_equal(outs[idx].reshape(expected.shape), want, err_msg=label)
            elif kind == "chans":
                idx, expected, n, b, e, fill = payload
                got, want = outs[idx].reshape(-1, n), expected.reshape(-1, n)
                np.testing.assert_array_equal(got[:, b:e], want[:, b:e], err_msg=label)
                outside = np.concatenate([got[:, :b], got[:, e:]], axis=1)
                assert (outside == fill).all(), f"{label}: wrote outside its channels"
            else:
                idx, expected, b, e, fill = payload
                got, want = outs[idx], expected.reshape(-1)
                np.testing.assert_array_equal(got[b:e], want[b:e], err_msg=label)
                outside = np.concatenate([got[:b], got[e:]])
                assert (outside == fill).all(), f"{label}: wrote outside its range"


def chw_results(exe, workdir, calls):
    """Run a list of (op, cfg, arrays, out_bytes) CHW calls; their outputs."""
    b = Batch()
    for c in calls:
        b.add(*c)
    return b.run(exe, workdir)


# ---------------------------------------------------------------- random configurations

def _requant_table(rng, n, acc_std):
    """mult/shift giving outputs of a few tens for |acc| ~ acc_std, some mult 0."""
    mult = rng.integers(1 << 29, 1 << 31, n)
    mult[rng.random(n) < 0.05] = 0
    base = 30 + math.log2(max(acc_std, 1.0) / 40.0)
    shift = np.clip(np.round(base + rng.uniform(-1.5, 1.5, n)), 1, 62)
    return mult.astype(np.int32), shift.astype(np.int32)


def _clamp(rng):
    if rng.random() < 0.4:
        return -128, 127
    lo = int(rng.integers(-128, 10))
    return lo, int(rng.integers(max(lo, 30), 128))


def _zp(rng):
    return int(rng.choice([-128, 127])) if rng.random() < 0.15 else int(rng.integers(-128, 128))


def _out_zp(rng):
    return int(rng.choice([-128, 127])) if rng.random() < 0.05 else int(rng.integers(-30, 30))


def _tile_geometry(rng, k, stride, dil, pool=False):
    """(in, out, pad) along one axis as tiles produce them: leading pad from negative (an
    extra halo row kept in the tile) to k_eff - 1 (the image border), and windows that
    run past the far edge (ceil mode, or a tile's trailing padding), sometimes entirely."""
    k_eff = (k - 1) * dil + 1
    n_in = int(rng.integers(1, 14))
    pad = int(rng.integers(-2, k_eff))
    pad_far = int(rng.integers(0, k_eff))
    span = n_in + pad + pad_far - k_eff
    n_out = max(1, (span + (stride - 1 if rng.random() < 0.5 else 0)) // stride + 1)
    if pool and rng.random() < 0.15:
        n_out += 1                   # a last window past the tile: no in-tile pixel
    return n_in, n_out, pad


KERNELS = [(1, 1), (3, 3), (7, 7), (3, 3), (1, 3), (3, 1), (2, 2), (5, 5), (3, 2)]


def random_conv(rng):
    kind = rng.choice(["dense", "dense", "pointwise", "depthwise", "depthwise", "grouped", "multiplier"])
    k = (1, 1) if kind == "pointwise" else KERNELS[int(rng.integers(len(KERNELS)))]
    if kind in ("dense", "pointwise"):
        groups, cin_g, cout_g = 1, int(rng.integers(1, 25)), int(rng.integers(1, 20))
    elif kind == "depthwise":
        groups, cin_g, cout_g = int(rng.integers(1, 40)), 1, 1
    elif kind == "multiplier":
        groups, cin_g, cout_g = int(rng.integers(1, 7)), 1, int(rng.integers(2, 4))
    else:
        groups, cin_g, cout_g = int(rng.integers(2, 5)), int(rng.integers(1, 6)), int(rng.integers(1, 7))
    stride = tuple(int(v) for v in rng.integers(1, 4, 2))
    dil = tuple(int(v) for v in rng.choice([1, 1, 2, 3], 2))
    (in_h, out_h, pad_top), (in_w, out_w, pad_left) = (
        _tile_geometry(rng, k[i], stride[i], dil[i]) for i in range(2))
    in_c, out_c = groups * cin_g, groups * cout_g
    in_zp, out_zp = _zp(rng), _out_zp(rng)
    act_min, act_max = _clamp(rng)
    terms = cin_g * k[0] * k[1]
    mult, shift = _requant_table(rng, out_c, 70 * 70 * math.sqrt(terms))
    bias = None if rng.random() < 0.2 else rng.integers(-20000, 20000, out_c).astype(np.int32)
    if bias is not None and rng.random() < 0.1:
        bias[0], bias[-1] = 2**31 - 1, -2**31
    geo = dict(in_c=in_c, in_h=in_h, in_w=in_w, out_c=out_c, out_h=out_h, out_w=out_w, k_h=k[0],
               k_w=k[1], stride_h=stride[0], stride_w=stride[1], dil_h=dil[0], dil_w=dil[1],
               pad_top=pad_top, pad_left=pad_left, groups=groups, in_zp=in_zp, out_zp=out_zp,
               act_min=act_min, act_max=act_max)
    x = rand_int8(rng, (in_c, in_h, in_w))
    w = rand_int8(rng, (out_c, cin_g) + k)
    return geo, x, w, bias, mult, shift


CONV_CHW_FIELDS = ("in_c in_h in_w out_c out_h out_w k_h k_w stride_h stride_w dil_h dil_w "
                   "pad_top pad_left groups in_zp out_zp act_min act_max").split()
CONV_HWC_FIELDS = ("in_h in_w in_c out_h out_w out_c k_h k_w stride_h stride_w dil_h dil_w "
                   "pad_top pad_left groups in_zp out_zp act_min act_max").split()
POOL_CHW_FIELDS = ("c in_h in_w out_h out_w k_h k_w stride_h stride_w dil_h dil_w pad_top pad_left "
                   "count_include_pad in_zp out_zp act_min act_max").split()
POOL_HWC_FIELDS = ("in_h in_w c out_h out_w k_h k_w stride_h stride_w dil_h dil_w pad_top pad_left "
                   "count_include_pad in_zp out_zp act_min act_max").split()


def conv_chw_call(geo, x, w, bias, mult, shift):
    return (CONV_CHW, [geo[f] for f in CONV_CHW_FIELDS], [x, w, bias, mult, shift],
            geo["out_c"] * geo["out_h"] * geo["out_w"])


def add_conv_hwc(checks, rng, label, geo, x, w, bias, mult, shift, expected_hwc):
    """Full + 8-range HWC calls on the transposed operands, for the plain HWC kernel and the
    Xpulp ones (nn_xp_conv2d.c, its plain-C build: direct, and im2col for the dense convs the
    direct path does not take); expected_hwc is [oh][ow][oc]."""
    cfg = [geo[f] for f in CONV_HWC_FIELDS]
    arrays = [x.transpose(1, 2, 0), w.transpose(0, 2, 3, 1), bias, mult, shift]
    direct = geo["in_c"] % 4 == 0 and geo["dil_w"] == 1 and geo["in_zp"] in (0, -128)
    ops = [(CONV_HWC, "hwc"), (XP_CONV_HWC, "xpulp")]
    if geo["groups"] == 1 and not direct:
        ops.append((XP_CONV_IM2COL, "xpulp im2col"))
    for op, name in ops:
        args = arrays if op != XP_CONV_IM2COL else [arrays[0], pad_rows(arrays[1])] + arrays[2:]
        checks.full_and_split(f"{label} [{name}]", rng, op, lambda b, e: cfg + [b, e], args, expected_hwc,
                              geo["out_h"] * geo["out_w"], geo["out_c"])
    if geo["groups"] == 1:      # a whole tile shared by 1..9 cores (2-D split), input pre-flipped or not
        args = arrays if direct else [arrays[0], pad_rows(arrays[1])] + arrays[2:]
        cores, flip = int(rng.integers(1, 10)), int(rng.integers(0, 2))
        checks.exact(f"{label} [xpulp {cores} cores, flip {flip}]", XP_CONV_CORES, cfg + [cores, flip], args,
                     expected_hwc, fill=int(rng.integers(-128, 128)))
    if geo["groups"] == geo["in_c"] == geo["out_c"] and geo["dil_w"] == 1:     # depthwise (nn_xp_dwconv.c)
        n = geo["out_c"] * geo["out_h"]
        for b, e in core_ranges(rng, n) + [(0, n)]:
            checks.items(f"{label} [xpulp dw items {b}..{e}]", rng, XP_DWCONV, cfg, arrays,
                         expected_hwc.reshape(geo["out_h"], geo["out_w"], geo["out_c"]), b, e)
    if geo["groups"] == 1:      # the cores' channel blocks of a tile with few pixels
        args = arrays if direct else [arrays[0], pad_rows(arrays[1])] + arrays[2:]
        oc, blocks = geo["out_c"], -(-geo["out_c"] // 4)
        for cb, ce in core_ranges(rng, blocks) + [(0, blocks)]:
            cb, ce = 4 * cb, min(4 * ce, oc)
            checks.channels(f"{label} [xpulp channels {cb}..{ce}]", rng, XP_CONV_CHANS, cfg + [cb, ce], args,
                            expected_hwc, oc, cb, ce)


def pad_rows(w_ohwi):
    """OHWI weights with each output channel's row zero-padded to whole words (the im2col
    kernel's layout, base.pack_hwc's padded rows)."""
    rows = np.ascontiguousarray(w_ohwi).reshape(w_ohwi.shape[0], -1)
    out = np.zeros((rows.shape[0], -(-rows.shape[1] // 4) * 4), np.int8)
    out[:, :rows.shape[1]] = rows
    return out


def random_pool(rng):
    op = "maxpool" if rng.random() < 0.45 else "avgpool"
    k = tuple(int(v) for v in rng.choice([1, 2, 3, 3, 4, 5, 7], 2))
    stride = tuple(int(v) for v in rng.integers(1, 4, 2))
    dil = tuple(int(v) for v in rng.choice([1, 1, 1, 2, 3], 2))     # dilated: the general kernels
    (in_h, out_h, pad_top), (in_w, out_w, pad_left) = (
        _tile_geometry(rng, k[i], stride[i], dil[i], pool=True) for i in range(2))
    c = int(rng.integers(65, 150)) if rng.random() < 0.15 else int(rng.integers(1, 40))
    act_min, act_max = _clamp(rng)
    geo = dict(c=c, in_h=in_h, in_w=in_w, out_h=out_h, out_w=out_w, k_h=k[0], k_w=k[1],
               stride_h=stride[0], stride_w=stride[1], dil_h=dil[0], dil_w=dil[1], pad_top=pad_top,
               pad_left=pad_left,
               count_include_pad=int(rng.random() < 0.5), in_zp=_zp(rng), out_zp=_out_zp(rng),
               act_min=act_min, act_max=act_max)
    if op == "maxpool":
        mult, shift = _requant_table(rng, 1, 200)
    else:
        # One entry per count, each scaled ~1/count; entry 0 has mult 0 as in numerics.
        n = k[0] * k[1] + 1
        mult, shift = _requant_table(rng, n, 120)
        shift = np.clip(shift + np.round(np.log2(np.arange(n) + 1)), 1, 62).astype(np.int32)
        mult[0] = 0
    return op, geo, rand_int8(rng, (c, in_h, in_w)), mult, shift


def pool_chw_call(op, geo, x, mult, shift):
    return (MAXPOOL_CHW if op == "maxpool" else AVGPOOL_CHW, [geo[f] for f in POOL_CHW_FIELDS],
            [x, mult, shift], geo["c"] * geo["out_h"] * geo["out_w"])


def add_pool_hwc(checks, rng, label, op, geo, x, mult, shift, expected_hwc):
    """Full + 8-range HWC calls, also through the Xpulp kernels (nn_xp_pool.c)."""
    cfg = [geo[f] for f in POOL_HWC_FIELDS]
    ops = ([(MAXPOOL_HWC, "hwc"), (XP_MAXPOOL, "xpulp")] if op == "maxpool"
           else [(AVGPOOL_HWC, "hwc"), (XP_AVGPOOL, "xpulp")])
    for code, name in ops:
        checks.full_and_split(f"{label} [{name}]", rng, code, lambda b, e: cfg + [b, e],
                              [x.transpose(1, 2, 0), mult, shift], expected_hwc, geo["out_h"] * geo["out_w"],
                              geo["c"])


def _to_hwc(out_chw, c, h, w):
    return out_chw.reshape(c, h, w).transpose(1, 2, 0)


# ---------------------------------------------------------------- sweeps against the CHW kernels

BUILDS = ["plain", "sanitized"]
XP_BUILDS = BUILDS + ["builtin"]        # the Xpulp kernels' tests run on the builtin variant too
N_CONV, N_POOL, N_SMALL = 400, 300, 60


@pytest.mark.parametrize("build", XP_BUILDS)
def test_conv_hwc_equals_chw_sweep(harnesses, tmp_path, build):
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(2024)
    cases = [random_conv(rng) for _ in range(N_CONV)]
    kinds = {("dw" if g["groups"] == g["in_c"] == g["out_c"] and g["groups"] > 1 else
              "dense" if g["groups"] == 1 else "grouped") for g, *_ in cases}
    assert kinds == {"dw", "dense", "grouped"}
    chw = chw_results(exe, tmp_path, [conv_chw_call(*c) for c in cases])
    checks = Checks()
    for i, (case, ref) in enumerate(zip(cases, chw)):
        geo = case[0]
        add_conv_hwc(checks, rng, f"conv case {i}: {geo}", *case,
                     _to_hwc(ref, geo["out_c"], geo["out_h"], geo["out_w"]))
    checks.verify(exe, tmp_path)


def random_xp_conv(rng):
    """A conv the Xpulp kernel takes its SIMD path on: groups 1, in_c % 4 == 0, dil_w 1,
    in_zp 0 or -128; random tile geometry, strides, kernels and requantization."""
    while True:
        geo, x, w, bias, mult, shift = random_conv(rng)
        if geo["groups"] == 1:
            break
    in_c = 4 * int(rng.integers(1, 20))
    in_zp = int(rng.choice([0, -128]))
    geo.update(in_c=in_c, dil_w=1, in_zp=in_zp)
    (in_w, out_w, pad_left) = _tile_geometry(rng, geo["k_w"], geo["stride_w"], 1)
    geo.update(in_w=in_w, out_w=out_w, pad_left=pad_left)
    x = rand_int8(rng, (in_c, geo["in_h"], in_w))
    if rng.random() < 0.2:      # saturated inputs: x - zp at its extremes
        x[:] = 127 if in_zp == -128 else int(rng.choice([-128, 127]))
    w = rand_int8(rng, (geo["out_c"], in_c, geo["k_h"], geo["k_w"]))
    mult, shift = _requant_table(rng, geo["out_c"], 70 * 70 * math.sqrt(in_c * geo["k_h"] * geo["k_w"]))
    return geo, x, w, bias, mult, shift


@pytest.mark.parametrize("build", XP_BUILDS)
def test_xpulp_conv_fast_path_sweep(harnesses, tmp_path, build):
    """nn_xp_conv2d_s8's SIMD path (plain-C semantics of nn_xpulp.h) against the CHW kernel:
    every case must take that path, pairs and single pixels, all channel remainders."""
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(909)
    cases = [random_xp_conv(rng) for _ in range(N_CONV // 2)]
    assert {g["out_c"] % 4 for g, *_ in cases} == {0, 1, 2, 3}
    assert {g["in_zp"] for g, *_ in cases} == {0, -128}
    b = Batch()
    for geo, *_ in cases:
        b.add(XP_CONV_FAST, [geo[f] for f in CONV_HWC_FIELDS] + [0, 0], [], 1)
    assert all(int(v[0]) == 1 for v in b.run(exe, tmp_path))
    chw = chw_results(exe, tmp_path, [conv_chw_call(*c) for c in cases])
    checks = Checks()
    for i, (case, ref) in enumerate(zip(cases, chw)):
        geo = case[0]
        add_conv_hwc(checks, rng, f"xpulp conv case {i}: {geo}", *case,
                     _to_hwc(ref, geo["out_c"], geo["out_h"], geo["out_w"]))
    checks.verify(exe, tmp_path)


def random_pointwise(rng):
    """A 1x1 conv the pointwise path takes (input zero point 0, as after ops.folded_bias): tile
    offsets, strides, odd pixel counts, channel remainders; multipliers with many trailing
    zeros and extreme biases (the exact rule or the direct path), clamps."""
    geo, *_ = random_xp_conv(rng)
    in_c, out_c = 4 * int(rng.integers(1, 40)), int(rng.integers(1, 70))
    sh, sw = (int(v) for v in rng.integers(1, 4, 2))
    oh, ow = int(rng.integers(1, 9)), int(rng.integers(1, 12))
    pt, pl = -int(rng.integers(0, 3)), -int(rng.integers(0, 3))
    ih, iw = (oh - 1) * sh - pt + 1 + int(rng.integers(0, 3)), (ow - 1) * sw - pl + 1 + int(rng.integers(0, 3))
    geo.update(in_c=in_c, in_h=ih, in_w=iw, out_c=out_c, out_h=oh, out_w=ow, k_h=1, k_w=1, stride_h=sh,
               stride_w=sw, dil_h=1, dil_w=1, pad_top=pt, pad_left=pl, groups=1, in_zp=0)
    x = rand_int8(rng, (in_c, ih, iw))
    if rng.random() < 0.15:
        x[:] = int(rng.choice([-128, 127]))
    w = rand_int8(rng, (out_c, in_c, 1, 1))
    mult, shift = _requant_table(rng, out_c, 70 * 70 * math.sqrt(in_c))
    if rng.random() < 0.2:      # exact ties possible: not the short rule
        mult &= np.int32(-(1 << int(rng.integers(12, 30))))
    bias = None if rng.random() < 0.15 else rng.integers(-20000, 20000, out_c).astype(np.int32)
    if bias is not None and rng.random() < 0.1:
        bias[0], bias[-1] = 2**31 - 1, -2**31
    if rng.random() < 0.1:
        shift[:] = int(rng.choice([31, 32, 56, 62]))
    return geo, x, w, bias, mult, shift


@pytest.mark.parametrize("build", XP_BUILDS)
def test_xpulp_pointwise_sweep(harnesses, tmp_path, build):
    """nn_xp_conv2d_core_s8's pointwise path (1x1, zero point 0, every output pixel inside the
    tile) against the CHW kernel, on 1..9 cores, with the other entry points."""
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(1717)
    cases = [random_pointwise(rng) for _ in range(N_CONV // 2)]
    chw = chw_results(exe, tmp_path, [conv_chw_call(*c) for c in cases])
    checks = Checks()
    for i, (case, ref) in enumerate(zip(cases, chw)):
        geo = case[0]
        add_conv_hwc(checks, rng, f"pointwise case {i}: {geo}", *case,
                     _to_hwc(ref, geo["out_c"], geo["out_h"], geo["out_w"]))
    checks.verify(exe, tmp_path)


def test_xpulp_conv_core_split_partitions_the_tile(harnesses, tmp_path):
    """nn_xp_conv2d_split: the cores' pixel x channel rectangles, with the last pixel's
    channel ranges when the grid leaves it out (odd pixel counts only), cover a tile exactly
    once, the rectangles' channel ranges in whole blocks of 4, and the busiest core costs no
    more (by the split's own estimates) than with a pixel split alone."""
    rng = np.random.default_rng(77)
    shapes = [(int(rng.integers(1, 80)), int(rng.integers(1, 70)), int(rng.integers(1, 10)),
               int(rng.integers(1, 600))) for _ in range(300)]
    # the last two: 3 x 3 pixel tiles of 8 channels (layer4.0.conv1's; _insn_tail_case's)
    shapes += [(16, 4, 8, 1152), (14, 8, 8, 1152), (49, 512, 8, 16), (1, 1, 8, 1), (7, 3, 8, 9), (9, 8, 8, 576),
               (9, 8, 8, 36)]
    b = Batch()
    for n_pix, out_c, cores, words in shapes:
        b.add(XP_CONV_SPLIT, [n_pix, out_c, cores, words], [], 24 * cores)
    tails = 0
    for (n_pix, out_c, cores, words), raw in zip(shapes, b.run(harnesses["plain"], tmp_path)):
        r = raw.view(np.int32).reshape(cores, 6)
        hits = np.zeros((n_pix, out_c), int)
        for pb, pe, cb, ce, tb, te in r:
            assert 0 <= pb <= pe <= n_pix and 0 <= cb <= ce <= out_c and (cb % 4 == 0 or cb == ce)
            assert 0 <= tb <= te <= out_c and (tb == te or (n_pix % 2 and n_pix >= 3))
            hits[pb:pe, cb:ce] += 1
            hits[n_pix - 1, tb:te] += 1
        assert (hits == 1).all(), (n_pix, out_c, cores, words, r)
        tail = bool((r[:, 5] > r[:, 4]).any())
        tails += tail
        assert tail or (n_pix, out_c, cores) != (9, 8, 8), (words, r)

        def cost(px, blocks):       # grid(): pixels at the pair rate
            return px * (blocks * (7 * words + 100) + 250) if px and blocks else 0

        def paired(px, blocks):     # busiest(): a lone pixel at the 4 x 1 loop's rate
            return blocks * (px // 2 * (14 * words + 200) + px % 2 * (10 * words + 100)) + 250 * px

        def lone(t):                # channels of the last pixel
            return t // 4 * (10 * words + 100) + t % 4 * (4 * words + 25) + 250 if t else 0
        if tail:
            mine = max(paired(pe - pb, -(-(ce - cb) // 4)) + lone(te - tb) for pb, pe, cb, ce, tb, te in r)
            assert mine < paired(-(-n_pix // cores), -(-out_c // 4)), (n_pix, out_c, cores, r)
        else:
            busiest = max(cost(pe - pb, -(-(ce - cb) // 4)) for pb, pe, cb, ce, _, _ in r)
            assert busiest <= cost(-(-n_pix // cores), -(-out_c // 4)), (n_pix, out_c, cores, r)
    assert 0 < tails < len(shapes)


def test_xpulp_conv_split_table_is_the_kernels_split(harnesses, tmp_path):
    """conv_paths.xp_split (the generated layers' build-time table of the cores' shares) answers
    what nn_xp_conv2d_split computes, for every core: the same search in Python."""
    rng = np.random.default_rng(78)
    shapes = [(int(rng.integers(1, 80)), int(rng.integers(1, 70)), int(rng.integers(1, 10)),
               int(rng.integers(1, 1200))) for _ in range(300)]
    shapes += [(16, 8, 8, 576), (12, 8, 8, 576), (9, 8, 8, 576), (16, 8, 8, 288), (9, 8, 8, 1152)]
    b = Batch()
    for n_pix, out_c, cores, words in shapes:
        b.add(XP_CONV_SPLIT, [n_pix, out_c, cores, words], [], 24 * cores)
    for (n_pix, out_c, cores, words), raw in zip(shapes, b.run(harnesses["plain"], tmp_path)):
        want = [tuple(int(v) for v in r) for r in raw.view(np.int32).reshape(cores, 6)]
        assert xp_split(n_pix, out_c, words, cores) == want, (n_pix, out_c, cores, words)


def test_xpulp_conv_split_for_a_tile_partitions_it():
    """conv_paths.xp_split_for (the split a generated layer's table holds for a kind of tile,
    chosen by which pixels pair): every (pixel, channel) of the tile on exactly one core."""
    rng = np.random.default_rng(79)
    for _ in range(200):
        rows, cols, s, k = int(rng.integers(1, 7)), int(rng.integers(1, 7)), int(rng.integers(1, 3)), 3
        pt, pl = int(rng.integers(0, 2)), int(rng.integers(0, 2))
        geo = (rows, cols, (rows - 1) * s + k - pt, (cols - 1) * s + k - pl, pt, pl)
        out_c, cores, in_c = int(rng.integers(1, 40)), int(rng.integers(1, 10)), 4 * int(rng.integers(1, 20))
        hits = np.zeros((rows * cols, out_c), int)
        for pb, pe, cb, ce, tb, te in xp_split_for(geo, out_c, k, k, s, s, 1, in_c, cores):
            hits[pb:pe, cb:ce] += 1
            hits[rows * cols - 1, tb:te] += 1
        assert (hits == 1).all(), (geo, out_c, cores)


def test_xpulp_conv_ordered_split_partitions_the_tile_and_pairs_its_pixels():
    """conv_paths.xp_split_ordered: the order is the tile's pixels once each (y << 8 | x), and
    its split's ranges over that order put every (pixel, channel) on exactly one core; on
    layer4.0.conv1's 4 x 7 tiles of 4 channels (a padded row and column) the ranges hold the
    pairs whole, where the natural order's ranges of 4 left pixels alone."""
    rng = np.random.default_rng(80)
    for _ in range(200):
        rows, cols, s, k = int(rng.integers(1, 9)), int(rng.integers(1, 9)), int(rng.integers(1, 3)), 3
        pt, pl = int(rng.integers(0, 2)), int(rng.integers(0, 2))
        geo = (rows, cols, (rows - 1) * s + k - pt, (cols - 1) * s + k - pl, pt, pl)
        out_c, cores, in_c = int(rng.integers(1, 40)), int(rng.integers(1, 10)), 4 * int(rng.integers(1, 20))
        split, order = xp_split_ordered(geo, out_c, k, k, s, s, 1, in_c, cores)
        order = order or [y << 8 | x for y in range(rows) for x in range(cols)]
        assert sorted(order) == [y << 8 | x for y in range(rows) for x in range(cols)], geo
        hits = np.zeros((rows * cols, out_c), int)
        for pb, pe, cb, ce, tb, te in split:
            for i in range(pb, pe):
                hits[(order[i] >> 8) * cols + (order[i] & 255), cb:ce] += 1
            hits[(order[-1] >> 8) * cols + (order[-1] & 255), tb:te] += 1
        assert (hits == 1).all(), (geo, out_c, cores)
    split, order = xp_split_ordered((4, 7, 8, 14, 1, 1), 4, 3, 3, 2, 2, 1, 256, 8)
    assert order is not None and max(pe - pb for pb, pe, *_ in split) == 4
    for pb, pe, *_ in split:        # the interior pixels of each core's range come in pairs
        inner = [q for q in order[pb:pe] if q >> 8 and q & 255]
        assert len(inner) % 2 == 0, (split, order)


def random_dw_conv(rng):
    """A depthwise conv nn_xp_dwconv_s8 takes: groups == in_c == out_c (1..80), dil_w 1, any
    kernel (up to 7x7), stride, row dilation, zero point and tile geometry."""
    while True:
        geo, *_ = random_conv(rng)
        k = KERNELS[int(rng.integers(len(KERNELS)))]
        c = int(rng.integers(1, 81))
        geo.update(k_h=k[0], k_w=k[1], in_c=c, out_c=c, groups=c, dil_w=1)
        (in_h, out_h, pad_top), (in_w, out_w, pad_left) = (
            _tile_geometry(rng, k[i], geo["stride_h" if i == 0 else "stride_w"], geo["dil_h"] if i == 0 else 1)
            for i in range(2))
        geo.update(in_h=in_h, out_h=out_h, pad_top=pad_top, in_w=in_w, out_w=out_w, pad_left=pad_left)
        if c * out_h * out_w <= 6000:
            break
    x = rand_int8(rng, (c, geo["in_h"], geo["in_w"]))
    if rng.random() < 0.15:     # saturated inputs: x - zp at its extremes
        x[:] = int(rng.choice([-128, 127]))
        geo["in_zp"] = -128 if x[0, 0, 0] == 127 else 127
    w = rand_int8(rng, (c, 1) + k)
    mult, shift = _requant_table(rng, c, 70 * 70 * math.sqrt(k[0] * k[1]))
    if rng.random() < 0.2:      # many trailing zeros: exact ties possible, no short rounding rule
        mult &= np.int32(-(1 << int(rng.integers(12, 24))))
    bias = None if rng.random() < 0.2 else rng.integers(-20000, 20000, c).astype(np.int32)
    if bias is not None and rng.random() < 0.1:
        bias[0], bias[-1] = 2**31 - 1, -2**31
    return geo, x, w, bias, mult, shift


@pytest.mark.parametrize("build", XP_BUILDS)
def test_xpulp_dwconv_sweep(harnesses, tmp_path, build):
    """nn_xp_dwconv_s8 against the CHW kernel: every kernel shape, strides, row dilation,
    leading pads from negative to k - 1, windows past the tile, any zero point, and work
    item ranges that cut channels anywhere (each call writes only its rows)."""
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(616)
    cases = [random_dw_conv(rng) for _ in range(N_CONV // 2)]
    assert {(g["k_h"], g["k_w"]) for g, *_ in cases} >= {(3, 3), (5, 5), (7, 7), (1, 1)}
    assert {g["stride_w"] for g, *_ in cases} == {1, 2, 3} and {g["dil_h"] for g, *_ in cases} >= {1, 2}
    chw = chw_results(exe, tmp_path, [conv_chw_call(*c) for c in cases])
    checks = Checks()
    for i, (case, ref) in enumerate(zip(cases, chw)):
        geo = case[0]
        add_conv_hwc(checks, rng, f"xpulp dw case {i}: {geo}", *case,
                     _to_hwc(ref, geo["out_c"], geo["out_h"], geo["out_w"]))
    checks.verify(exe, tmp_path)


@pytest.mark.parametrize("build", XP_BUILDS)
def test_xpulp_linear_equals_common_kernel(harnesses, tmp_path, build):
    """nn_xp_linear_s8 against nn_linear_s8 (kernels/common, checked against the reference
    elsewhere): SIMD path (in_features % 4 == 0, in_zp 0 or -128) and fallback, random and
    saturated data, every out_features % 4."""
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(31)
    cases = []
    for i in range(120):
        fast = i % 3 != 0
        in_f = 4 * int(rng.integers(1, 200)) if fast else int(rng.integers(1, 300))
        out_f = int(rng.integers(1, 24))
        in_zp = int(rng.choice([0, -128])) if fast else _zp(rng)
        act_min, act_max = _clamp(rng)
        x = rand_int8(rng, in_f)
        w = rand_int8(rng, (out_f, in_f))
        if rng.random() < 0.15:
            x[:], w[:] = (127 if in_zp == -128 else -128), -128
        mult, shift = _requant_table(rng, out_f, 70 * 70 * math.sqrt(in_f))
        bias = None if rng.random() < 0.2 else rng.integers(-20000, 20000, out_f).astype(np.int32)
        cfg = [in_f, out_f, in_zp, _out_zp(rng), act_min, act_max]
        cases.append((in_f % 4 == 0 and in_zp in (0, -128), cfg, [x, w, bias, mult, shift]))
    assert {c[0] for c in cases} == {True, False}
    assert {c[1][1] % 4 for c in cases if c[0]} == {0, 1, 2, 3}
    b = Batch()
    for fast, cfg, arrays in cases:
        b.add(XP_LINEAR, cfg + [1], arrays, 1)
        b.add(LINEAR, cfg + [0], arrays, cfg[1], fill=55)
        b.add(XP_LINEAR, cfg + [0], arrays, cfg[1], fill=-55)
    outs = b.run(exe, tmp_path)
    distinct = set()
    for i, (fast, cfg, _) in enumerate(cases):
        took, want, got = outs[3 * i:3 * i + 3]
        assert int(took[0]) == int(fast), (i, cfg)
        np.testing.assert_array_equal(got, want, err_msg=f"linear case {i}: {cfg}")
        distinct.update(want.tolist())
    assert len(distinct) > 50              # the outputs are not all clamped


@pytest.mark.parametrize("build", XP_BUILDS)
def test_xpulp_add_equals_common_kernel(harnesses, tmp_path, build):
    """nn_xp_add_s8 against nn_add_s8: shifts below 9 (fallback), 9..16, 17..31 (the 32-bit
    rule) and from 32 on, multipliers and operands at their extremes, every clamp."""
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(77)
    b, cases = Batch(), []
    for i in range(200):
        n = int(rng.integers(1, 300))
        mult = rng.integers(0, 1 << 31, 2).astype(np.int32)
        if i % 10 == 0:
            mult[:] = (1 << 31) - 1
        shift = np.array([int(rng.integers(25, 40)) if i % 4 else int(rng.integers(1, 63))], np.int32)
        x, y = rand_int8(rng, n), rand_int8(rng, n)
        if i % 7 == 0:
            x[:], y[:] = 127, -128
        lo, hi = _clamp(rng)
        cfg = [n, _zp(rng), _zp(rng), _out_zp(rng), lo, hi]
        cases.append((cfg, shift[0]))
        b.add(ADD, cfg, [x, y, mult, shift], n, fill=3)
        b.add(XP_ADD, cfg, [x, y, mult, shift], n, fill=-3)
    outs = b.run(exe, tmp_path)
    # the fallback and the three fast rules
    assert {int(s >= 9) + int(s >= 17) + int(s >= 32) for _, s in cases} == {0, 1, 2, 3}
    distinct = set()
    for i, (cfg, _) in enumerate(cases):
        np.testing.assert_array_equal(outs[2 * i + 1], outs[2 * i], err_msg=f"add case {i}: {cfg}")
        distinct.update(outs[2 * i].tolist())
    assert len(distinct) > 100


@pytest.mark.parametrize("build", XP_BUILDS)
def test_xpulp_add_short_rule_equals_common_kernel(harnesses, tmp_path, build):
    """nn_xp_add_short_s8 with the rule add_short.py finds against nn_add_s8 on all 65536
    int8 pairs (one call each, so every length remainder of the 4-wide loop is reached too)."""
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(2027)
    v = np.arange(-128, 128, dtype=np.int8)
    x, y = np.repeat(v, 256), np.tile(v, 256)
    b, cases = Batch(), []
    while len(cases) < 12:
        mult = rng.integers(1 << 28, 1 << 31, 2).astype(np.int32)
        shift = np.array([int(rng.integers(29, 34))], np.int32)
        za, zb, zo = (int(z) for z in rng.integers(-128, 128, 3))
        lo, hi = (-128, 127) if len(cases) % 2 else (zo, 127)
        r = short_rule(int(mult[0]), int(mult[1]), int(shift[0]), za, zb, zo, lo, hi)
        if r is None:
            continue
        n = x.size - len(cases) % 4
        cases.append((za, zb, zo, r))
        b.add(ADD, [n, za, zb, zo, lo, hi], [x[:n], y[:n], mult, shift], n, fill=3)
        b.add(XP_ADD_SHORT, [n, *r, lo, hi], [x[:n], y[:n]], n, fill=-3)
    outs = b.run(exe, tmp_path)
    for i, case in enumerate(cases):
        np.testing.assert_array_equal(outs[2 * i + 1], outs[2 * i], err_msg=f"add short case {i}: {case}")


@pytest.mark.parametrize("build", XP_BUILDS)
def test_xpulp_lut_equals_common_kernel(harnesses, tmp_path, build):
    """nn_xp_lut_s8 against nn_lut_s8 (one table): every length remainder and byte offset
    (the cores' chunks start anywhere), every input byte."""
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(256)
    b, cases = Batch(), []
    for i in range(150):
        n, off_in, off_out = int(rng.integers(0, 300)), int(rng.integers(0, 4)), int(rng.integers(0, 4))
        x = rand_int8(rng, off_in + n)
        if i % 5 == 0:
            x[off_in:] = np.arange(n) % 256 - 128
        table = rand_int8(rng, 256)
        cases.append((n, off_in, off_out))
        b.add(LUT, [n, off_in, off_out], [x, table], off_out + n, fill=7)
        b.add(XP_LUT, [n, off_in, off_out], [x, table], off_out + n, fill=7)
    outs = b.run(exe, tmp_path)
    assert {n % 4 for n, *_ in cases} == {0, 1, 2, 3}
    for i, case in enumerate(cases):
        np.testing.assert_array_equal(outs[2 * i + 1], outs[2 * i], err_msg=f"lut case {i}: {case}")
        assert (outs[2 * i][:case[2]] == 7).all()


@pytest.mark.parametrize("build", BUILDS)
def test_pool_hwc_equals_chw_sweep(harnesses, tmp_path, build):
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(77)
    cases = [random_pool(rng) for _ in range(N_POOL)]
    assert {(op, g["count_include_pad"]) for op, g, *_ in cases} >= {
        ("maxpool", 0), ("avgpool", 0), ("avgpool", 1)}
    chw = chw_results(exe, tmp_path, [pool_chw_call(*c) for c in cases])
    checks = Checks()
    for i, (case, ref) in enumerate(zip(cases, chw)):
        op, geo = case[0], case[1]
        add_pool_hwc(checks, rng, f"{op} case {i}: {geo}", *case,
                     _to_hwc(ref, geo["c"], geo["out_h"], geo["out_w"]))
    checks.verify(exe, tmp_path)


@pytest.mark.parametrize("build", XP_BUILDS)
def test_xpulp_maxpool_sweep(harnesses, tmp_path, build):
    """nn_xp_maxpool_s8 on its SIMD path (c % 4 == 0) against the CHW kernel: calls small
    enough to requantize each output and large enough (>= 1024 outputs) for the table."""
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(808)
    cases = []
    while len(cases) < 80:
        op, geo, x, mult, shift = random_pool(rng)
        if op != "maxpool":
            continue
        c = 4 * int(rng.integers(1, 40))
        geo["c"] = c
        cases.append((op, geo, rand_int8(rng, (c, geo["in_h"], geo["in_w"])), mult, shift))
    assert any(g["c"] * g["out_h"] * g["out_w"] >= 1024 for _, g, *_ in cases)
    assert any(g["c"] * g["out_h"] * g["out_w"] < 1024 for _, g, *_ in cases)
    chw = chw_results(exe, tmp_path, [pool_chw_call(*c) for c in cases])
    checks = Checks()
    for i, (case, ref) in enumerate(zip(cases, chw)):
        geo = case[1]
        add_pool_hwc(checks, rng, f"xpulp maxpool case {i}: {geo}", *case,
                     _to_hwc(ref, geo["c"], geo["out_h"], geo["out_w"]))
    checks.verify(exe, tmp_path)


@pytest.mark.parametrize("build", XP_BUILDS)
def test_xpulp_avgpool_sweep(harnesses, tmp_path, build):
    """nn_xp_avgpool_s8 on its SIMD path (c % 4 == 0) against the CHW kernel: windows clipped
    by the tile, with and without the padding in the count, saturated inputs."""
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(707)
    cases = []
    while len(cases) < 80:
        op, geo, x, mult, shift = random_pool(rng)
        if op != "avgpool":
            continue
        c = 4 * int(rng.integers(1, 40))
        geo["c"] = c
        x = rand_int8(rng, (c, geo["in_h"], geo["in_w"]))
        if len(cases) % 8 == 0:
            x[:] = 127 if len(cases) % 16 else -128
            geo["in_zp"] = -128 if len(cases) % 16 else 127
        cases.append((op, geo, x, mult, shift))
    assert {g["count_include_pad"] for _, g, *_ in cases} == {0, 1}
    chw = chw_results(exe, tmp_path, [pool_chw_call(*c) for c in cases])
    checks = Checks()
    for i, (case, ref) in enumerate(zip(cases, chw)):
        geo = case[1]
        add_pool_hwc(checks, rng, f"xpulp avgpool case {i}: {geo}", *case,
                     _to_hwc(ref, geo["c"], geo["out_h"], geo["out_w"]))
    checks.verify(exe, tmp_path)


@pytest.mark.parametrize("build", XP_BUILDS)
def test_xpulp_global_avgpool_sweep(harnesses, tmp_path, build):
    """nn_xp_global_avgpool_s8 against the CHW kernel: channel words split among the cores
    in blocks of 4 as the layer does (and any split, which falls back), pixel counts across
    the 256-pixel runs of its 16-bit lanes, saturated inputs at both zero-point extremes."""
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(4321)
    cases = []
    for i in range(N_SMALL):
        hw, c = int(rng.choice([1, 7, 49, 255, 256, 257, 600, 1100])), 4 * int(rng.integers(1, 40))
        act_min, act_max = _clamp(rng)
        scal = [_zp(rng), _out_zp(rng), act_min, act_max]
        x = rand_int8(rng, (c, hw))
        if i % 6 == 0:
            x[:] = 127 if i % 12 else -128
            scal[0] = -128 if i % 12 else 127
        mult, shift = _requant_table(rng, 1, 70 * hw)
        cases.append((hw, c, scal, x, mult, shift))
    assert {hw for hw, *_ in cases} >= {255, 256, 257, 600}
    chw = chw_results(exe, tmp_path, [(GAP_CHW, [c, hw, *scal], [x, m, s], c) for hw, c, scal, x, m, s in cases])
    checks = Checks()
    for i, ((hw, c, scal, x, m, s), ref) in enumerate(zip(cases, chw)):
        arrays = [np.ascontiguousarray(x.T), m, s]
        blocks = c // 4
        for b, e in core_ranges(rng, blocks) + [(0, blocks)]:
            checks.channels(f"xpulp global_avgpool case {i} channels {4 * b}..{4 * e}", rng, XP_GAP,
                            [hw, c, *scal, 4 * b, 4 * e], arrays, ref, c, 4 * b, 4 * e)
        checks.full_and_split(f"xpulp global_avgpool case {i} (any split)", rng, XP_GAP,
                              lambda b, e, hw=hw, c=c, scal=scal: [hw, c, *scal, b, e], arrays, ref, c, 1)
    checks.verify(exe, tmp_path)


@pytest.mark.parametrize("build", XP_BUILDS)
def test_xpulp_requant_equals_hwc_kernel(harnesses, tmp_path, build):
    """nn_xp_requant_s8 against nn_hwc_requant_s8 (checked against the CHW kernel below):
    calls under and over the table's threshold, dense and strided (concat slices), every
    shift range and clamp, every input byte."""
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(1024)
    b, cases = Batch(), []
    for i in range(120):
        c = int(rng.integers(1, 64))
        n_pix = int(rng.integers(0, 600 // c + 2)) if i % 3 else int(rng.integers(256 // c + 1, 4096 // c + 2))
        dense = i % 2 == 0
        in_stride, out_stride = (c, c) if dense else (c + int(rng.integers(0, 5)), c + int(rng.integers(0, 30)))
        in_off, out_off = int(rng.integers(0, in_stride - c + 1)), int(rng.integers(0, out_stride - c + 1))
        mult = int(rng.integers(1 << 30, 1 << 31)) if i % 11 else (1 << 31) - 1
        shift = int(rng.integers(25, 40)) if i % 4 else int(rng.integers(1, 63))
        lo, hi = _clamp(rng)
        src = rand_int8(rng, in_off + max(0, (n_pix - 1) * in_stride + c))
        cfg = [n_pix, c, in_stride, _zp(rng), mult, shift, _out_zp(rng), lo, hi, out_stride, in_off, out_off]
        size = out_off + max(0, (n_pix - 1) * out_stride + c)
        cases.append((n_pix * c, cfg))
        fill = int(rng.integers(-128, 128))
        b.add(REQUANT_HWC, cfg, [src], size, fill=fill)
        b.add(XP_REQUANT, cfg, [src], size, fill=fill)
    outs = b.run(exe, tmp_path)
    assert {n >= 256 for n, _ in cases} == {True, False}
    distinct = set()
    for i, (n, cfg) in enumerate(cases):
        np.testing.assert_array_equal(outs[2 * i + 1], outs[2 * i], err_msg=f"requant case {i}: {cfg}")
        distinct.update(outs[2 * i].tolist())
    assert len(distinct) > 200


@pytest.mark.parametrize("build", BUILDS)
def test_global_avgpool_and_requant_hwc_equal_chw_sweep(harnesses, tmp_path, build):
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(5)
    gap_cases, rq_cases = [], []
    for _ in range(N_SMALL):
        hw, c = int(rng.integers(1, 120)), int(rng.integers(1, 150))
        act_min, act_max = _clamp(rng)
        scal = [_zp(rng), _out_zp(rng), act_min, act_max]
        mult, shift = _requant_table(rng, 1, 70 * hw)
        gap_cases.append((hw, c, scal, rand_int8(rng, (c, hw)), mult, shift))
        n_pix, c = int(rng.integers(0, 40)), int(rng.integers(1, 40))
        in_stride, out_stride = c + int(rng.integers(0, 5)), c + int(rng.integers(0, 30))
        in_off, out_off = int(rng.integers(0, in_stride - c + 1)), int(rng.integers(0, out_stride - c + 1))
        mult, shift = _requant_table(rng, 1, 70)
        act_min, act_max = _clamp(rng)
        rq_cases.append(dict(n_pix=n_pix, c=c, in_stride=in_stride, out_stride=out_stride, in_off=in_off,
                             out_off=out_off, in_zp=_zp(rng), mult=int(mult[0]), shift=int(shift[0]),
                             out_zp=_out_zp(rng), act_min=act_min, act_max=act_max,
                             src=rand_int8(rng, in_off + max(0, (n_pix - 1) * in_stride + c))))
    calls = [(GAP_CHW, [c, hw, *scal], [x, m, s], c) for hw, c, scal, x, m, s in gap_cases]
    for q in rq_cases:
        dense = np.stack([q["src"][q["in_off"] + p * q["in_stride"]:][:q["c"]] for p in range(q["n_pix"])]
                         ) if q["n_pix"] else np.zeros((0, q["c"]), np.int8)
        q["dense"] = dense
        calls.append((REQUANT_CHW, [dense.size, q["in_zp"], q["mult"], q["shift"], q["out_zp"],
                                    q["act_min"], q["act_max"]], [dense], dense.size))
    chw = chw_results(exe, tmp_path, calls)
    checks = Checks()
    for i, ((hw, c, scal, x, m, s), ref) in enumerate(zip(gap_cases, chw)):
        checks.full_and_split(f"global_avgpool case {i}", rng, GAP_HWC,
                              lambda b, e, hw=hw, c=c, scal=scal: [hw, c, *scal, b, e],
                              [np.ascontiguousarray(x.T), m, s], ref, c, 1)
    for i, (q, ref) in enumerate(zip(rq_cases, chw[len(gap_cases):])):
        # The destination is a wider strided buffer (a concat slice): only the slice changes.
        fill = int(rng.integers(-128, 128))
        size = q["out_off"] + max(0, (q["n_pix"] - 1) * q["out_stride"] + q["c"])
        expected = np.full(size, fill, np.int8)
        for p in range(q["n_pix"]):
            at = q["out_off"] + p * q["out_stride"]
            expected[at:at + q["c"]] = ref[p * q["c"]:(p + 1) * q["c"]]
        cfg = [q[k] for k in ("n_pix c in_stride in_zp mult shift out_zp act_min act_max out_stride "
                              "in_off out_off").split()]
        checks.exact(f"requant case {i}: { {k: v for k, v in q.items() if k not in ('src', 'dense')} }",
                     REQUANT_HWC, cfg, [q["src"]], expected, fill=fill)
    checks.verify(exe, tmp_path)


@pytest.mark.parametrize("build", XP_BUILDS)
def test_extreme_accumulators(harnesses, tmp_path, build):
    """Accumulators at the documented bounds: K = 4608 terms of 255 * -128, int32 bias
    extremes; avgpool windows of 7x7 at |x - zp| = 255."""
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(3)
    geo = dict(in_c=512, in_h=3, in_w=4, out_c=6, out_h=3, out_w=4, k_h=3, k_w=3, stride_h=1,
               stride_w=1, dil_h=1, dil_w=1, pad_top=1, pad_left=1, groups=1, in_zp=127, out_zp=0,
               act_min=-128, act_max=127)
    x = np.full((512, 3, 4), -128, np.int8)
    w = np.full((6, 512, 3, 3), -128, np.int8)
    w[1::2] = 127
    bias = np.array([2**31 - 1, -2**31, 0, 5, -2**31, 2**31 - 1], np.int32)
    mult = np.full(6, (1 << 31) - 1, np.int32)
    shift = np.array([31, 31, 33, 40, 62, 1], np.int32)
    pgeo = dict(c=70, in_h=7, in_w=7, out_h=3, out_w=3, k_h=7, k_w=7, stride_h=3, stride_w=3, dil_h=1, dil_w=1,
                pad_top=3, pad_left=3, count_include_pad=0, in_zp=-128, out_zp=0, act_min=-128,
                act_max=127)
    px = np.full((70, 7, 7), 127, np.int8)
    pmult, pshift = np.full(50, (1 << 31) - 1, np.int32), np.full(50, 36, np.int32)
    # the Xpulp kernel's SIMD path at its bounds: (x - zp) * w = 255 * -128 (zp -128) and
    # -128 * -128 (zp 0) over 4608 terms, 4 channels x 2 pixels and the leftover channels
    fast = []
    for zp, xv in ((-128, 127), (0, -128)):
        g2 = dict(geo, in_zp=zp, in_w=5, out_w=5)
        fast.append((g2, np.full((512, 3, 5), xv, np.int8), w, bias, mult, shift))
    chw = chw_results(exe, tmp_path, [conv_chw_call(*c) for c in fast] + [conv_chw_call(geo, x, w, bias, mult, shift),
                                      pool_chw_call("avgpool", pgeo, px, pmult, pshift),
                                      pool_chw_call("maxpool", pgeo, px, pmult, pshift)])
    fast_ref, chw = chw[:len(fast)], chw[len(fast):]
    assert len(set(chw[0].tolist())) > 2          # not everything clamps
    checks = Checks()
    for (g2, *ops), ref in zip(fast, fast_ref):
        assert len(set(ref.tolist())) > 2
        add_conv_hwc(checks, rng, f"extreme xpulp conv zp {g2['in_zp']}", g2, *ops, _to_hwc(ref, 6, 3, 5))
    add_conv_hwc(checks, rng, "extreme conv", geo, x, w, bias, mult, shift, _to_hwc(chw[0], 6, 3, 4))
    for op, ref in (("avgpool", chw[1]), ("maxpool", chw[2])):
        add_pool_hwc(checks, rng, f"extreme {op}", op, pgeo, px, pmult, pshift, _to_hwc(ref, 70, 3, 3))
    checks.verify(exe, tmp_path)


# ---------------------------------------------------------------- whole layers against the reference

def _tile_axis(total_in, r0, r1, stride, k, dil, pad):
    """Input rows [b0, b1) that output rows [r0, r1) need, clipped to the image, and the
    tile's leading pad (the image border inside the tile, or 0)."""
    first, last = r0 * stride - pad, (r1 - 1) * stride - pad + (k - 1) * dil
    b0, b1 = max(0, first), min(total_in, last + 1)
    return b0, b1, pad - r0 * stride + b0


def _splits(rng, n, parts):
    cuts = sorted(set(int(v) for v in rng.integers(1, n, parts - 1))) if n > 1 else []
    return list(zip([0] + cuts, cuts + [n]))


LAYER_CONVS = [
    dict(c=3, h=16, w=15, o=5, k=(7, 7), stride=(2, 2), pads=(3, 3, 3, 3), relu=True),
    dict(c=4, h=10, w=9, o=6, k=(3, 2), stride=(2, 3), pads=(2, 0, 1, 1), groups=2),
    dict(c=6, h=11, w=10, o=6, dil=(2, 3), pads=(2, 3, 2, 3), groups=6),
    dict(c=8, h=9, w=9, o=16, stride=(2, 2), groups=8, relu=True),
    dict(c=20, h=9, w=11, o=13, k=(1, 1), stride=(1, 1), pads=(0, 0, 0, 0)),
    dict(c=19, h=12, w=7, o=9, k=(3, 3), stride=(3, 1), pads=(1, 1, 1, 1), in_zp=-128),
]
LAYER_POOLS = POOL_CASES    # the pool layers the CHW kernels are tested on (test_kernels.py)


def _layer_tiles(checks, rng, label, layer, g, x, kind):
    """The whole layer as one tile, then as a random 2-D grid of tiles (each split into 8
    core ranges); every tile's expected output is its window of the reference output."""
    a = layer.attrs
    _, c, h, w = x.shape
    _, oc, oh, ow = g.tensor(layer.output).shape
    ref = run_layer(layer, g, [x])[0].transpose(1, 2, 0)        # HWC
    (kh, kw), (sh, sw) = a["kernel"], a["stride"]
    dh, dw = a.get("dilation", (1, 1))
    q_in, q_out = g.tensor(layer.inputs[0]).q.zero_point, g.tensor(layer.output).q.zero_point
    p = ops.requant_params(layer, g)
    grids = [([(0, oh)], [(0, ow)]), (_splits(rng, oh, 3), _splits(rng, ow, 3))]
    for rows_list, cols_list in grids:
        for rows in rows_list:
            for cols in cols_list:
                b0, b1, top = _tile_axis(h, *rows, sh, kh, dh, a["pads"][0])
                e0, e1, left = _tile_axis(w, *cols, sw, kw, dw, a["pads"][1])
                tile = x[0, :, b0:b1, e0:e1]
                toh, tow = rows[1] - rows[0], cols[1] - cols[0]
                want = ref[rows[0]:rows[1], cols[0]:cols[1]]
                where = f"{label} tile rows {rows} cols {cols}"
                if kind == "conv":
                    geo = dict(in_c=c, in_h=b1 - b0, in_w=e1 - e0, out_c=oc, out_h=toh, out_w=tow,
                               k_h=kh, k_w=kw, stride_h=sh, stride_w=sw, dil_h=dh, dil_w=dw,
                               pad_top=top, pad_left=left, groups=a["groups"], in_zp=q_in,
                               out_zp=q_out, act_min=layer.act_min, act_max=layer.act_max)
                    add_conv_hwc(checks, rng, where, geo, tile, layer.weight, layer.bias,
                                 p["mult"], p["shift"], want)
                else:
                    geo = dict(c=c, in_h=b1 - b0, in_w=e1 - e0, out_h=toh, out_w=tow, k_h=kh, k_w=kw,
                               stride_h=sh, stride_w=sw, dil_h=dh, dil_w=dw, pad_top=top,
                               pad_left=left, count_include_pad=a.get("count_include_pad", 0), in_zp=q_in,
                               out_zp=q_out, act_min=layer.act_min, act_max=layer.act_max)
                    add_pool_hwc(checks, rng, where, layer.op, geo, tile, p["mult"], p["shift"], want)


@pytest.mark.parametrize("build", XP_BUILDS)
def test_layers_match_reference(harnesses, tmp_path, build):
    exe = _exe(harnesses, build)
    rng = np.random.default_rng(11)
    checks = Checks()
    for i, kw in enumerate(LAYER_CONVS):
        g, layer = conv_graph(rng, **kw)
        if kw.get("relu"):
            layer.act_max = int(rng.integers(layer.act_min + 1, 128))
        _layer_tiles(checks, rng, f"conv layer {i}", layer, g, rand_int8(rng, g.tensor("x").shape), "conv")
    for i, (op, kw) in enumerate(LAYER_POOLS):
        g, layer = pool_graph(rng, op, 21, 11, 10, **kw)
        _layer_tiles(checks, rng, f"{op} layer {i}", layer, g, rand_int8(rng, g.tensor("x").shape), "pool")

    sc = lambda: float(rng.uniform(0.01, 0.1))           # noqa: E731
    zp = lambda: int(rng.integers(-128, 128))            # noqa: E731
    g, layer = single_layer_graph("global_avgpool", [("x", (1, 70, 5, 7), sc(), zp())],
                                  ("y", (1, 70, 1, 1), sc(), zp()))
    x = rand_int8(rng, (1, 70, 5, 7))
    p = ops.requant_params(layer, g)
    scal = [g.tensor("x").q.zero_point, g.tensor("y").q.zero_point, layer.act_min, layer.act_max]
    checks.full_and_split("global_avgpool layer", rng, GAP_HWC, lambda b, e: [35, 70, *scal, b, e],
                          [x[0].reshape(70, 35).T.copy(), p["mult"], p["shift"]],
                          run_layer(layer, g, [x]).reshape(-1), 70, 1)

    # Concat along channels in HWC: one strided requant per input into its channel slice.
    shapes = [(1, 3, 4, 5), (1, 6, 4, 5)]
    g, layer = single_layer_graph("concat", [("a", shapes[0], sc(), zp()), ("b", shapes[1], sc(), zp())],
                                  ("y", (1, 9, 4, 5), sc(), zp()), attrs=dict(axis=1))
    xs = [rand_int8(rng, s) for s in shapes]
    want = run_layer(layer, g, xs)[0].transpose(1, 2, 0).reshape(20, 9)
    p = ops.requant_params(layer, g)
    y_zp = g.tensor("y").q.zero_point
    for i, (xi, off) in enumerate(zip(xs, (0, 3))):
        ci = xi.shape[1]
        cfg = [20, ci, ci, g.tensor(layer.inputs[i]).q.zero_point, p["mult"][i], p["shift"][i], y_zp,
               layer.act_min, layer.act_max, 9, 0, off]
        expected = np.full((20, 9), 55, np.int8)
        expected[:, off:off + ci] = want[:, off:off + ci]
        # The buffer ends with the last byte this input writes.
        checks.exact(f"concat input {i}", REQUANT_HWC, cfg, [xi[0].transpose(1, 2, 0).copy()],
                     expected.reshape(-1)[:19 * 9 + off + ci], fill=55)
    checks.verify(exe, tmp_path)


# ---------------------------------------------------------------- the target's own compiler

RV_CC = "riscv64-unknown-elf-gcc"


def test_hwc_kernels_compile_warning_free_for_rv32(tmp_path):
    """The cluster cores are RV32: the kernels must build there with -Werror too (no libc
    needed: stdint.h / stddef.h are freestanding headers)."""
    if shutil.which(RV_CC) is None:
        pytest.skip(f"{RV_CC} not found")
    for src, defines in [(s, []) for s in HWC_SOURCES] + [(GAP9 / n, ["-DNN_XPULP_INSN"])
                                                          for n in ("nn_xp_conv2d.c", "nn_xp_dwconv.c",
                                                                    "nn_xp_linear.c", "nn_xp_pool.c", "nn_xp_add.c",
                                                                    "nn_xp_lut.c")]:
        res = subprocess.run([RV_CC, "-march=rv32imc", "-mabi=ilp32", "-ffreestanding", *CFLAGS, *defines,
                              f"-I{COMMON}", f"-I{GAP9}", "-c", str(src), "-o", str(tmp_path / "k.o")],
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr


# ---------------------------------------------------------------- the .insn build on GVSoC (pulp-open)

PULP_OPEN = Path(__file__).resolve().parent / "gap9_kernels" / "pulp_open"
RV_FLAGS = ["-march=rv32imc_zicsr", "-mabi=ilp32", "-O2", "-ffreestanding", "-fno-builtin", "-std=gnu99",
            "-Wall", "-Wextra", "-Werror", f"-I{COMMON}", f"-I{GAP9}"]
# the plain-C build of the Xpulp kernels, linked beside the .insn one under other names
PLAIN_NAMES = ["-Dnn_xp_conv2d_s8=nn_xp_conv2d_s8_plain", "-Dnn_xp_conv2d_fast=nn_xp_conv2d_fast_plain",
               "-Dnn_xp_conv2d_im2col_s8=nn_xp_conv2d_im2col_s8_plain",
               "-Dnn_xp_conv2d_im2col=nn_xp_conv2d_im2col_plain",
               "-Dnn_xp_conv2d_chans_s8=nn_xp_conv2d_chans_s8_plain",
               "-Dnn_xp_conv2d_core_s8=nn_xp_conv2d_core_s8_plain", "-Dnn_xp_conv2d_split=nn_xp_conv2d_split_plain",
               "-Dnn_xp_conv2d_core_split_s8=nn_xp_conv2d_core_split_s8_plain",
               "-Dnn_xp_conv2d_preflip=nn_xp_conv2d_preflip_plain",
               "-Dnn_xp_conv2d_pointwise=nn_xp_conv2d_pointwise_plain", "-Dnn_xp_conv2d_flip=nn_xp_conv2d_flip_plain",
               "-Dnn_xp_linear_s8=nn_xp_linear_s8_plain", "-Dnn_xp_linear_fast=nn_xp_linear_fast_plain",
               "-Dnn_xp_dwconv_s8=nn_xp_dwconv_s8_plain", "-Dnn_xp_dwconv_fast=nn_xp_dwconv_fast_plain",
               "-Dnn_xp_dwconv_scratch=nn_xp_dwconv_scratch_plain", "-Dnn_xp_lut_s8=nn_xp_lut_s8_plain",
               "-Dnn_xp_requant_s8=nn_xp_requant_s8_plain"]


def _gvsoc():
    """GVSoC's launcher (GVSOC or gvsoc on PATH) and the rv32 compiler, or skip saying which is missing."""
    if shutil.which(RV_CC) is None:
        pytest.skip(f"{RV_CC} not found (apt-get install gcc-riscv64-unknown-elf)")
    gv = os.environ.get("GVSOC") or shutil.which("gvsoc")
    if not gv or not os.access(gv, os.X_OK):
        pytest.skip("GVSoC not found: set GVSOC or put gvsoc on PATH (../shared/gvsoc/install.sh)")
    return gv


def _c_array(name, ctype, a):
    vals = ", ".join(str(int(v)) for v in np.asarray(a).reshape(-1))
    return f"static const {ctype} {name}[] __attribute__((aligned(4))) = {{ {vals} }};\n"


def _cases_header(cases):
    """cases.h for xp_check.c from [(kind, cfg, in, w, bias, mult, shift, n_out, out_bytes, macs)]."""
    text, rows, macs = [], [], []
    for i, (kind, cfg, x, w, bias, mult, shift, n_out, out_bytes, m) in enumerate(cases):
        text += [_c_array(f"in{i}", "int8_t", x), _c_array(f"w{i}", "int8_t", w),
                 _c_array(f"mult{i}", "int32_t", mult), _c_array(f"shift{i}", "int32_t", shift)]
        if bias is not None:
            text.append(_c_array(f"bias{i}", "int32_t", bias))
        cfg19 = list(cfg) + [0] * (19 - len(cfg))
        code = ["conv", "linear", "dw", "lut"].index(kind)
        rows.append(f"  {{ {code}, {{ {', '.join(str(int(v)) for v in cfg19)} }}, in{i}, w{i}, "
                    f"{f'bias{i}' if bias is not None else 'NULL'}, mult{i}, shift{i}, {x.size}, {w.size}, "
                    f"{n_out}, {out_bytes}, {len(mult)} }},")
        macs.append(str(m))
    return ("".join(text) + f"#define N_CASES {len(cases)}\nstatic const xp_case_t cases[N_CASES] = {{\n"
            + "\n".join(rows) + f"\n}};\nstatic const long case_macs[N_CASES] = {{ {', '.join(macs)} }};\n")


def run_on_gvsoc(tmp_path, cases):
    """Build xp_check.c with cases.h and run it on pulp-open; {case: (fast, insn mismatches,
    plain mismatches, distinct, macs, insn cycles, plain cycles, ref cycles)}."""
    gv = _gvsoc()
    (tmp_path / "cases.h").write_text(_cases_header(cases))
    objs = []

    def cc(src, name, extra=()):
        obj = tmp_path / name
        res = subprocess.run([RV_CC, *RV_FLAGS, *extra, "-c", str(src), "-o", str(obj)],
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        objs.append(str(obj))

    for n in ("nn_xp_conv2d.c", "nn_xp_linear.c", "nn_xp_dwconv.c", "nn_xp_lut.c"):
        cc(GAP9 / n, n + ".insn.o", ["-DNN_XPULP_INSN"])
        cc(GAP9 / n, n + ".plain.o", PLAIN_NAMES)
    cc(COMMON / "nn_hwc_conv2d.c", "hwc.o")
    cc(COMMON / "nn_linear.c", "linear.o")
    cc(COMMON / "nn_lut.c", "lut.o")
    cc(COMMON / "nn_hwc_eltwise.c", "eltwise.o")
    cc(PULP_OPEN / "xp_check.c", "check.o", [f"-I{tmp_path}"])
    cc(PULP_OPEN / "crt0.S", "crt0.o")
    elf = tmp_path / "xp_check.elf"
    res = subprocess.run([RV_CC, "-march=rv32imc_zicsr", "-mabi=ilp32", "-nostdlib", "-nostartfiles",
                          "-Wl,--no-warn-rwx-segments", "-T", str(PULP_OPEN / "link.ld"), *objs, "-lgcc",
                          "-o", str(elf)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    res = subprocess.run([gv, "--target=pulp-open", f"--binary={elf.resolve()}",
                          f"--work-dir={tmp_path / 'gvsoc'}", "run"], capture_output=True, text=True, timeout=600)
    lines = {int(m[0]): tuple(int(v) for v in m[1:]) for m in re.findall(
        r"^case (\d+) fast (\d) mism (\d+) (\d+) distinct (\d+) macs (\d+) cycles (\d+) (\d+) (\d+)$",
        res.stdout, re.M)}
    assert len(lines) == len(cases), res.stdout[-3000:] + res.stderr[-2000:]
    return lines


def _insn_conv_case(rng, fast=True, dense=False):
    """fast: a conv the direct SIMD path takes; else any random conv (dense: groups 1, which
    the im2col path takes when the direct one does not)."""
    while True:
        geo, x, w, bias, mult, shift = random_xp_conv(rng) if fast else random_conv(rng)
        if dense and geo["groups"] != 1:
            continue
        n_pix = geo["out_h"] * geo["out_w"]
        size = (x.size + w.size + 3 * (4 * geo["out_c"] + n_pix * geo["out_c"])
                + 16 * (geo["k_h"] * geo["k_w"] * geo["in_c"] + 3))
        if size < 40000 and (not fast or n_pix >= 2):
            break
    cfg = [geo[f] for f in CONV_HWC_FIELDS]
    macs = n_pix * geo["out_c"] * geo["k_h"] * geo["k_w"] * geo["in_c"] // geo["groups"]
    return ("conv", cfg, x.transpose(1, 2, 0), w.transpose(0, 2, 3, 1), bias, mult, shift, n_pix,
            n_pix * geo["out_c"], macs)


def _insn_tail_case(rng):
    """A 3 x 3 pixel tile of 8 channels, 3x3 stride 2 from 16 channels, zero point -128: on 8
    cores its last pixel is shared by all of them, one channel each (the 1x1 loop)."""
    geo = dict(in_h=5, in_w=5, in_c=16, out_h=3, out_w=3, out_c=8, k_h=3, k_w=3, stride_h=2, stride_w=2,
               dil_h=1, dil_w=1, pad_top=1, pad_left=1, groups=1, in_zp=-128, out_zp=_out_zp(rng),
               act_min=-128, act_max=127)
    x, w = rand_int8(rng, (16, 5, 5)), rand_int8(rng, (8, 16, 3, 3))
    bias = rng.integers(-20000, 20000, 8).astype(np.int32)
    mult, shift = _requant_table(rng, 8, 70 * 70 * math.sqrt(16 * 9))
    return ("conv", [geo[f] for f in CONV_HWC_FIELDS], x.transpose(1, 2, 0), w.transpose(0, 2, 3, 1), bias,
            mult, shift, 9, 9 * 8, 9 * 8 * 9 * 16)


def test_xpulp_insn_on_gvsoc_equals_plain(tmp_path):
    """The .insn build (hardware loops, post-increment loads, pv.sdotsp.b / pv.sdotusp.b) on
    GVSoC's 8-core pulp-open cluster gives the same bytes as nn_xpulp.h's plain C build and
    as the plain C kernels, for random convs (direct and im2col SIMD paths, fallback) and
    linears."""
    _gvsoc()
    rng = np.random.default_rng(4242)
    cases = ([_insn_conv_case(rng) for _ in range(10)] + [_insn_conv_case(rng, fast=False) for _ in range(2)]
             + [_insn_conv_case(rng, fast=False, dense=True) for _ in range(2)])
    for in_zp, in_f in ((-128, 256), (0, 100), (-128, 36), (5, 64)):
        out_f = int(rng.integers(5, 40))
        mult, shift = _requant_table(rng, out_f, 70 * 70 * math.sqrt(in_f))
        cases.append(("linear", [in_f, out_f, in_zp, _out_zp(rng), -128, 127], rand_int8(rng, in_f),
                      rand_int8(rng, (out_f, in_f)), rng.integers(-20000, 20000, out_f).astype(np.int32),
                      mult, shift, out_f, out_f, in_f * out_f))
    cases.append(_insn_tail_case(rng))     # the last pixel shared by the cores (1x1 loops)
    while len(cases) < 25:                  # the pointwise path (exact rule and fallbacks too)
        geo, x, w, bias, mult, shift = random_pointwise(rng)
        n_pix = geo["out_h"] * geo["out_w"]
        if x.size + w.size + 3 * (4 * geo["out_c"] + n_pix * geo["out_c"]) < 40000:
            cases.append(("conv", [geo[f] for f in CONV_HWC_FIELDS], x.transpose(1, 2, 0), w.transpose(0, 2, 3, 1),
                          bias, mult, shift, n_pix, n_pix * geo["out_c"], n_pix * geo["out_c"] * geo["in_c"]))
    got = run_on_gvsoc(tmp_path, cases)
    for i, (fast, mism, mism_plain, distinct, *_rest) in got.items():
        assert (mism, mism_plain) == (0, 0), f"case {i} ({cases[i][0]} {cases[i][1]}): {mism} / {mism_plain} bytes differ"
    assert sum(v[3] > 2 for v in got.values()) >= 12, got      # most outputs do not just clamp
    paths = [got[i][0] for i in range(14)]
    assert paths.count(1) >= 10 and paths.count(2) >= 1 and sum(got[i][0] for i in range(14, 18)) == 3
    assert got[18][0] == 1 and all(got[i][0] == 1 for i in range(19, 25))


def _insn_dw_case(rng, geo=None):
    """A depthwise conv for xp_check.c: random (random_dw_conv) or the geometry given."""
    while geo is None:
        g, *_ = random_dw_conv(rng)
        if g["in_c"] * g["in_h"] * g["in_w"] * 4 + g["out_c"] * (g["out_h"] * g["out_w"] * 3 + 12) < 30000:
            geo = g
    c, k = geo["in_c"], (geo["k_h"], geo["k_w"])
    x, w = rand_int8(rng, (c, geo["in_h"], geo["in_w"])), rand_int8(rng, (c, 1) + k)
    mult, shift = _requant_table(rng, c, 70 * 70 * math.sqrt(k[0] * k[1]))
    bias = rng.integers(-20000, 20000, c).astype(np.int32)
    n_pix = geo["out_h"] * geo["out_w"]
    return ("dw", [geo[f] for f in CONV_HWC_FIELDS], x.transpose(1, 2, 0), w.transpose(0, 2, 3, 1), bias, mult,
            shift, c * geo["out_h"], n_pix * c, n_pix * c * k[0] * k[1])


def _dw_geo(c, h, w, k, s, in_zp=-128):
    """A MobileNet-style depthwise tile: k x k, stride s, padding (k - 1) / 2 on every side."""
    p = (k - 1) // 2
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    return dict(in_h=h, in_w=w, in_c=c, out_h=oh, out_w=ow, out_c=c, k_h=k, k_w=k, stride_h=s, stride_w=s,
                dil_h=1, dil_w=1, pad_top=p, pad_left=p, groups=c, in_zp=in_zp, out_zp=-128, act_min=-128,
                act_max=127)


# the zoo's depthwise tile shapes (mobilenetv2 / v3 on pulp-open): (channels, h, w, kernel, stride)
DW_TILES = [(8, 12, 48, 3, 1), (24, 16, 24, 3, 1), (12, 24, 24, 3, 2), (144, 6, 6, 3, 1), (336, 3, 3, 3, 1),
            (48, 12, 12, 5, 1), (128, 6, 6, 3, 2)]


def test_xpulp_dwconv_insn_on_gvsoc_equals_plain(tmp_path):
    """nn_xp_dwconv_s8's .insn build (hardware-loop gathers, unaligned loads, pv.sdotsp.b) on
    pulp-open's 8 cores gives the bytes of the plain C build and of the plain C kernel, on
    random depthwise convs and the zoo's tile shapes; prints the cycles of each."""
    _gvsoc()
    rng = np.random.default_rng(5150)
    cases = [_insn_dw_case(rng) for _ in range(8)] + [_insn_dw_case(rng, _dw_geo(*t)) for t in DW_TILES]
    got = run_on_gvsoc(tmp_path, cases)
    print()
    for i, (fast, mism, mism_plain, distinct, macs, insn, plain, ref) in got.items():
        assert (fast, mism, mism_plain) == (3, 0, 0), f"dw case {i} ({cases[i][1]}): {mism} / {mism_plain} bytes differ"
        print(f"dw case {i} {cases[i][1][:9]}: {macs} MACs, cycles xpulp .insn {insn} ({macs / insn:.2f} MACs/cycle), "
              f"xpulp plain C {plain}, plain C kernel {ref} ({macs / ref:.2f})")
    assert sum(v[3] > 2 for v in got.values()) >= 10, got


def test_xpulp_lut_insn_on_gvsoc_equals_plain(tmp_path):
    """nn_xp_lut_s8's .insn build (hardware loop, unaligned p.lw, pv.extract.b, p.lbu
    rd, rs2(rs1)) on pulp-open's 8 cores, each on a byte range cut anywhere, gives the bytes of
    the plain C build and of nn_lut_s8; prints the cycles."""
    _gvsoc()
    rng = np.random.default_rng(77)
    cases = []
    for n in (1, 5, 37, 256, 1001, 8192):
        x = rand_int8(rng, n)
        x[:min(n, 256)] = (np.arange(min(n, 256)) - 128).astype(np.int8)
        cases.append(("lut", [0] * 19, x, rand_int8(rng, 256), None, np.zeros(1, np.int32), np.zeros(1, np.int32),
                      n, n, n))
    got = run_on_gvsoc(tmp_path, cases)
    print()
    for i, (fast, mism, mism_plain, distinct, n, insn, plain, ref) in got.items():
        assert (fast, mism, mism_plain) == (4, 0, 0), f"lut case {i} (n {n}): {mism} / {mism_plain} bytes differ"
        print(f"lut n {n}: cycles xpulp .insn {insn}, xpulp plain C {plain}, nn_lut_s8 {ref}")
    assert got[5][3] > 100         # distinct outputs: the table is not degenerate


@pytest.mark.slow
def test_xpulp_pointwise_macs_per_cycle_on_gvsoc(tmp_path):
    """A ResNet-18 1x1 downsample tile (64 -> 128 channels, stride 2, 4 x 8 output pixels from
    a 7 x 15 input box; its zero point folded into the bias at build time, so 0 here) on the 8
    cores, bit-exact with the plain C kernel. The direct path took 50.8 k cycles (5.16
    MACs/cycle), about 790 per 4-channel x 2-pixel block, mostly instruction-cache misses
    (about 78 per block) and requantization; the pointwise path (one hardware loop per pixel
    pair, the short requantization, calls and their cold code out of the pair loop, channel
    blocks split across the cores, p.clip for a clamp to [-128, 127]) 32.1 k (8.16). This floor
    guards against regressions."""
    rng = np.random.default_rng(11)
    geo = dict(in_h=7, in_w=15, in_c=64, out_h=4, out_w=8, out_c=128, k_h=1, k_w=1, stride_h=2, stride_w=2,
               dil_h=1, dil_w=1, pad_top=0, pad_left=0, groups=1, in_zp=0, out_zp=3, act_min=-128,
               act_max=127)
    mult, shift = _requant_table(rng, 128, 70 * 70 * 8)
    case = ("conv", [geo[f] for f in CONV_HWC_FIELDS], rand_int8(rng, (7, 15, 64)), rand_int8(rng, (128, 1, 1, 64)),
            rng.integers(-20000, 20000, 128).astype(np.int32), mult, shift, 32, 32 * 128, 32 * 128 * 64)
    fast, mism, mism_plain, distinct, macs, insn, plain, ref = run_on_gvsoc(tmp_path, [case])[0]
    print(f"\npulp-open 8 cores, 1x1/2 64->128 tile: {macs} MACs; xpulp .insn {insn} cycles "
          f"({macs / insn:.2f} MACs/cycle), plain C kernel {ref} ({macs / ref:.2f})")
    assert fast == 1 and mism == mism_plain == 0 and distinct > 2
    assert macs / insn >= 7.0


@pytest.mark.slow
def test_xpulp_conv_macs_per_cycle_on_gvsoc(tmp_path):
    """A ResNet-18 3x3 conv tile (64 -> 64 channels, 4 x 16 output pixels, input zero point
    -128 as after a ReLU) on the 8 cores: the Xpulp kernel reaches 10 MACs/cycle on pulp-open
    (a proxy for GAP9), several times the plain C kernel in the same run."""
    rng = np.random.default_rng(18)
    geo = dict(in_h=6, in_w=18, in_c=64, out_h=4, out_w=16, out_c=64, k_h=3, k_w=3, stride_h=1, stride_w=1,
               dil_h=1, dil_w=1, pad_top=0, pad_left=0, groups=1, in_zp=-128, out_zp=-128, act_min=-128,
               act_max=127)
    mult, shift = _requant_table(rng, 64, 70 * 70 * 24)
    case = ("conv", [geo[f] for f in CONV_HWC_FIELDS], rand_int8(rng, (6, 18, 64)), rand_int8(rng, (64, 3, 3, 64)),
            rng.integers(-20000, 20000, 64).astype(np.int32), mult, shift, 64, 64 * 64, 64 * 64 * 576)
    fast, mism, mism_plain, distinct, macs, insn, plain, ref = run_on_gvsoc(tmp_path, [case])[0]
    print(f"\npulp-open 8 cores, 3x3 64->64 tile: {macs} MACs; xpulp .insn {insn} cycles "
          f"({macs / insn:.2f} MACs/cycle), xpulp plain C {plain} ({macs / plain:.2f}), "
          f"plain C kernel {ref} ({macs / ref:.2f})")
    assert fast == 1 and mism == mism_plain == 0 and distinct > 2
    assert macs / insn >= 10.0
    assert ref / insn >= 5.0
