"""The host's depthwise kernels on their own (kernels/host/nn_dw_vnni.c, nn_simd.c): the
AVX-512 VNNI kernel, with the tables the build packs (targets/host/dwtables.dw_vnni_tables),
and the AVX2 one give the portable kernel's codes over a sweep of channel counts (1 to
336: partial vectors, several pixels per vector), kernels, strides, dilations, padding,
zero points (-128, 127, random), clamps, negative multipliers and rounding ties; the
build's tables equal the C packer's bytes; a shift outside the fma's range makes the VNNI
kernel decline (the AVX2 one runs); under `kernel.choose: measure` the depthwise kernels are
timed and cached as the generated layers' variants are."""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import os

import numpy as np
import pytest

from conftest import ROOT, adhoc, kernel_library
from nnscons.targets.host import dwtables

I32, P, L = ctypes.c_int32, ctypes.c_void_p, ctypes.c_long


class Cfg(ctypes.Structure):
    """nn_hwc_conv_cfg_t (kernels/common/nn_hwc.h)."""
    _fields_ = [(n, ctypes.c_int) for n in ("in_h", "in_w", "in_c", "out_h", "out_w", "out_c", "k_h", "k_w",
                                            "stride_h", "stride_w", "dil_h", "dil_w", "pad_top", "pad_left",
                                            "groups")] + [(n, I32) for n in ("in_zp", "out_zp", "act_min", "act_max")]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    k, h = os.path.join(ROOT, "kernels", "common"), os.path.join(ROOT, "kernels", "host")
    dll = kernel_library(tmp_path_factory, "hostdw",
                         [os.path.join(h, "nn_simd.c"), os.path.join(h, "nn_dw_vnni.c"),
                          os.path.join(k, "nn_eltwise.c"), os.path.join(k, "nn_hwc_pool.c")], [k, h],
                         flags=("-std=gnu99", "-Wall", "-Wextra", "-Werror"))
    dll.nn_dwconv_vnni_bytes.restype = L
    dll.nn_dwconv_vnni_table_bytes.restype = L
    dll.nn_dwconv_band_fast.argtypes = [ctypes.c_int, P, P, P, P, P, P, P, ctypes.c_int, P, ctypes.c_int, P, P,
                                        P, P, P, L]
    dll.nn_dwconv_band_fast.restype = ctypes.c_char_p
    dll.nn_dwconv_hwc_fast.argtypes = [ctypes.c_int, P, P, P, P, P, P, P, ctypes.c_int, ctypes.c_int]
    return dll


def _p(a):
    return a.ctypes.data_as(P)


def _vnni():
    """The CPU runs AVX-512 VNNI and BW (the kernel's own check, from /proc/cpuinfo here)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return False
    return {"avx512_vnni", "avx512bw", "avx512vl"} <= set(flags)


def _cases(rng):
    """(channels, kernel, stride, dilation, pads, in_hw) over the sweep, plus random ones."""
    fixed = [(c, (3, 3), s, (1, 1), (1, 1), (9, 11)) for c in (1, 3, 8, 12, 16, 24, 48, 72, 144, 336)
             for s in ((1, 1), (2, 2))]
    fixed += [(8, (3, 3), (1, 1), (1, 1), (1, 1), (48, 48)), (48, (3, 3), (2, 2), (1, 1), (0, 1), (24, 24)),
              (336, (3, 3), (1, 1), (1, 1), (1, 1), (3, 3)), (16, (1, 1), (2, 2), (1, 1), (0, 0), (7, 7)),
              (24, (5, 5), (2, 2), (1, 1), (2, 2), (17, 19)), (12, (3, 3), (1, 1), (2, 2), (2, 2), (9, 10)),
              (40, (7, 1), (1, 3), (1, 1), (3, 0), (12, 13)), (8, (3, 9), (2, 1), (1, 2), (1, 4), (8, 30))]
    for _ in range(60):
        kh, kw = int(rng.integers(1, 6)), int(rng.integers(1, 7))
        fixed.append((int(rng.choice([1, 2, 4, 8, 12, 16, 20, 32, 56, 96])), (kh, kw),
                      (int(rng.integers(1, 3)), int(rng.integers(1, 4))),
                      (int(rng.integers(1, 3)), int(rng.integers(1, 3))),
                      (int(rng.integers(0, 3)), int(rng.integers(0, 3))),
                      (int(rng.integers(kh * 2, 16)), int(rng.integers(kw * 2, 20)))))
    return fixed


def _run(lib, isa, cfg, x, w, bias, mult, shift, tables, atables=None, ran=None):
    """nn_dwconv_band_fast with its scratch as the host template gives it (band of 2 rows);
    ran: the kernel it must say it ran."""
    c, kh, kw = cfg.in_c, cfg.k_h, cfg.k_w
    wp = max(cfg.in_w + cfg.pad_left, (cfg.out_w - 1) * cfg.stride_w + (kw - 1) * cfg.dil_w + 1)
    band_in = cfg.stride_h + (kh - 1) * cfg.dil_h + 1
    buf = np.zeros(band_in * wp * c + 16, np.int16)
    wq = np.zeros((c // 16) * ((kh * kw + 1) // 2) * 32 + 1, np.int16)
    epi = np.zeros(64 * 1024, np.uint8)
    nv = lib.nn_dwconv_vnni_bytes(ctypes.byref(cfg))
    vq = np.zeros(nv + 1, np.uint8)
    out = np.full(cfg.out_h * cfg.out_w * c + 64, 0x55, np.uint8).view(np.int8)
    name = lib.nn_dwconv_band_fast(isa, ctypes.byref(cfg), _p(x), _p(w), _p(bias), _p(mult), _p(shift), _p(out), 2,
                                   _p(buf), wp, _p(wq), _p(epi), _p(tables) if tables is not None else None,
                                   _p(atables) if atables is not None else None,
                                   ctypes.c_void_p(vq.ctypes.data + 1), nv)   # an unaligned scratch
    assert ran is None or name.decode() == ran, (name, ran)
    return out


def test_vnni_and_avx2_depthwise_match_the_portable_kernel(lib):
    rng = np.random.default_rng(7)
    vnni = _vnni()
    tabled = 0
    for n, (c, (kh, kw), (sh, sw), (dh, dw), (pt, pl), (ih, iw)) in enumerate(_cases(rng)):
        oh = (ih + 2 * pt - (kh - 1) * dh - 1) // sh + 1
        ow = (iw + 2 * pl - (kw - 1) * dw - 1) // sw + 1
        mode = n % 4       # 0: -128 everywhere, 1: 127 / -128 weights, else random
        zp_in = -128 if mode == 0 else 127 if mode == 1 else int(rng.integers(-128, 128))
        zp_out = int(rng.integers(-128, 128))
        lo, hi = (-128, 127) if n % 3 else (max(zp_out, -128), min(zp_out + 60, 127))
        cfg = Cfg(ih, iw, c, oh, ow, c, kh, kw, sh, sw, dh, dw, pt, pl, c, zp_in, zp_out, lo, hi)
        if mode < 2:
            x = np.full(ih * iw * c, -128 if mode == 0 else 127, np.int8)
            w = np.full((c, 1, kh, kw), 127 if mode == 0 else -128, np.int8)
        else:
            x = rng.integers(-128, 128, ih * iw * c).astype(np.int8)
            w = rng.integers(-128, 128, (c, 1, kh, kw)).astype(np.int8)
        wt = np.ascontiguousarray(w.reshape(c, kh * kw).T)          # [taps][channels], the .bin's
        bias = rng.integers(-100000, 100001, c).astype(np.int32)
        shift = rng.integers(11, 41, c).astype(np.int32)
        mult = rng.integers(2 ** 30, 2 ** 31, c).astype(np.int64)
        mult[::3] = 2 ** rng.integers(0, 10, mult[::3].size)         # small powers of two: ties
        mult[1::5] *= -1
        mult = mult.astype(np.int32)
        ref = np.full(oh * ow * c + 64, 0x55, np.uint8).view(np.int8)
        lib.nn_dwconv_hwc_fast(1, ctypes.byref(cfg), _p(x), _p(wt), _p(bias), _p(mult), _p(shift), _p(ref), 0, oh * ow)
        geo = dwtables.dw_vnni_geometry(c, ow, (kh, kw), (sh, sw), (dh, dw))
        assert geo["bytes"] == lib.nn_dwconv_vnni_bytes(ctypes.byref(cfg))
        assert geo["table_bytes"] == lib.nn_dwconv_vnni_table_bytes(ctypes.byref(cfg))
        tables = dwtables.dw_vnni_tables(w, bias, mult, shift, zp_in, geo)
        packed = np.zeros(geo["table_bytes"], np.uint8)
        assert lib.nn_dwconv_vnni_pack(ctypes.byref(cfg), _p(wt), _p(bias), _p(mult), _p(shift), _p(packed)) == 1
        assert np.array_equal(tables, packed), f"case {n}: the build's tables differ from the C packer's"
        what = f"case {n}: c={c} k={kh}x{kw} s={sh},{sw} d={dh},{dw} pads={pt},{pl} in={ih}x{iw} zp={zp_in}"
        if vnni:
            assert np.array_equal(_run(lib, 3, cfg, x, wt, bias, mult, shift, tables), ref), "vnni " + what
        assert np.array_equal(_run(lib, 2, cfg, x, wt, bias, mult, shift, None), ref), "avx2 " + what
        # the AVX2 kernel on the build's tables (16 (pixel, channel) positions per vector)
        atables = dwtables.dw_avx2_tables(w, bias, mult, shift)
        assert atables.size == dwtables.dw_avx2_geometry(c, kh, kw)["table_bytes"]
        bound = [abs(int(b)) + 255 * int(np.abs(w[i].astype(np.int64)).sum()) for i, b in enumerate(bias)]
        assert (atables[0] == 1) == all(v * abs(int(m)) < 2 ** 53 for v, m in zip(bound, mult)), what
        # byte 1: the fma epilogue (a2_requant16_fma) exact too, |v| * mult / 2**shift < 2**51
        assert atables[1] == (atables[0] == 1 and all(v * abs(int(m)) < 2 ** (51 + int(s))
                                                      for v, m, s in zip(bound, mult, shift))), what
        used = atables[0] == 1 and (sw == 1 or c % 16 == 0)
        tabled += used
        assert np.array_equal(_run(lib, 2, cfg, x, wt, bias, mult, shift, None, atables, "avx2" if used else None),
                              ref), "avx2 tables " + what
        if used and atables[1]:      # and the double epilogue (vroundpd) the tables also allow
            mul = atables.copy()
            mul[1] = 0
            assert np.array_equal(_run(lib, 2, cfg, x, wt, bias, mult, shift, None, mul, "avx2"), ref), "avx2 mul " + what
    assert tabled > 40          # the sweep reaches the tables' kernel, not only its fallback
    if not vnni:
        pytest.skip("the AVX2 kernel and the tables checked; this CPU lacks AVX-512 VNNI (the VNNI kernel not run)")


def _same_3x3(rng, c, ih, iw, zp_in, zp_out):
    """A 3x3 stride-1 'same' depthwise layer: its config, random input and weights ([c, 1, 3,
    3] and the .bin's [taps][channels])."""
    cfg = Cfg(ih, iw, c, ih, iw, c, 3, 3, 1, 1, 1, 1, 1, 1, c, zp_in, zp_out, -128, 127)
    x = rng.integers(-128, 128, ih * iw * c).astype(np.int8)
    w = rng.integers(-128, 128, (c, 1, 3, 3)).astype(np.int8)
    return cfg, x, w, np.ascontiguousarray(w.reshape(c, 9).T)


def test_vnni_depthwise_declines_outside_the_fma_range(lib):
    """A shift below 11 (or TFLite's negative ones): the tables say so and the AVX2 kernel runs."""
    rng = np.random.default_rng(3)
    c, ih, iw = 16, 6, 7
    cfg, x, w, wt = _same_3x3(rng, c, ih, iw, 5, -3)
    bias = np.zeros(c, np.int32)
    mult = np.full(c, 1 << 30, np.int32)
    shift = np.full(c, 40, np.int32)
    shift[5] = 10
    geo = dwtables.dw_vnni_geometry(c, iw, (3, 3), (1, 1), (1, 1))
    tables = dwtables.dw_vnni_tables(w, bias, mult, shift, 5, geo)
    assert tables[0] == 0
    packed = np.zeros(geo["table_bytes"], np.uint8)
    assert lib.nn_dwconv_vnni_pack(ctypes.byref(cfg), _p(wt), _p(bias), _p(mult), _p(shift), _p(packed)) == 0
    ref = np.full(ih * iw * c + 64, 0x55, np.uint8).view(np.int8)
    lib.nn_dwconv_hwc_fast(1, ctypes.byref(cfg), _p(x), _p(wt), _p(bias), _p(mult), _p(shift), _p(ref), 0, ih * iw)
    assert np.array_equal(_run(lib, 3, cfg, x, wt, bias, mult, shift, tables), ref)
    # a bias so large that (|bias| + 255 * sum|w|) * mult reaches 2**53: no exact double
    # epilogue, the AVX2 tables decline (the per-call kernel runs, on the same codes)
    bias[3] = 1 << 24
    ref = np.full(ih * iw * c + 64, 0x55, np.uint8).view(np.int8)
    lib.nn_dwconv_hwc_fast(1, ctypes.byref(cfg), _p(x), _p(wt), _p(bias), _p(mult), _p(shift), _p(ref), 0, ih * iw)
    atables = dwtables.dw_avx2_tables(w, bias, mult, shift)
    assert atables[0] == 0
    assert np.array_equal(_run(lib, 2, cfg, x, wt, bias, mult, shift, None, atables, "avx2"), ref)


def test_measured_choice_times_the_depthwise_kernels(project):
    """host-measured: each depthwise layer's kernels (VNNI where its shifts allow, AVX2,
    portable) timed once and cached (a second build measures nothing), the layer built with
    the fastest first, bit-exact; the report and bench say which ran."""
    from test_kernelgen import _depthwise_model
    path = _depthwise_model(project.file("m/dwm.onnx"), 12)
    proc = project.scons("target=host-measured", f"model={path}")
    assert "Test PASSED [host-measured] dwm" in proc.stdout, proc.stdout[-3000:]
    for name in ("dw5", "dw3dil"):
        line = next(ln for ln in proc.stdout.splitlines() if ln.startswith(f"VARIANTS {name}: "))
        assert "avx2 " in line and "portable " in line and ("avx512vnni " in line or "avx512vnni not timed" in line)
    b = adhoc(project, "host-measured", "dwm")
    layers = {l["name"]: l for l in json.loads(project.read(f"{b}/report.json"))["layers"]}
    dw = layers["dw5"]["depthwise"]
    assert dw["choice"]["by"] == "measure" and dw["variants"][0] in dw["choice"]["median_ms"]
    assert dw["choice"]["cache"].startswith("variants/")
    again = project.scons("target=host-measured", f"model={path}")
    assert "VARIANTS" not in again.stdout and "Test PASSED [host-measured] dwm" in again.stdout


def test_avx2_depthwise_is_exact_under_another_rounding_mode(lib):
    """The fma epilogue rounds by MXCSR: an application that set another rounding mode
    (fesetround) gets the same codes (the kernel sees it and takes the double epilogue,
    whose rounding is explicit)."""
    rng = np.random.default_rng(11)
    c, ih, iw = 24, 9, 8
    cfg, x, w, wt = _same_3x3(rng, c, ih, iw, 3, -7)
    bias = rng.integers(-5000, 5000, c).astype(np.int32)
    mult = rng.integers(2 ** 30, 2 ** 31, c).astype(np.int32)
    mult[::4] = 1 << 20                  # ties: a truncating mode rounds them differently
    shift = rng.integers(20, 30, c).astype(np.int32)
    ref = np.full(ih * iw * c + 64, 0x55, np.uint8).view(np.int8)
    lib.nn_dwconv_hwc_fast(1, ctypes.byref(cfg), _p(x), _p(wt), _p(bias), _p(mult), _p(shift), _p(ref), 0, ih * iw)
    atables = dwtables.dw_avx2_tables(w, bias, mult, shift)
    assert atables[0] == atables[1] == 1
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    for mode in (0xc00, 0x800, 0x400):   # glibc x86-64: toward zero, upward, downward
        assert libm.fesetround(mode) == 0
        try:
            got = _run(lib, 2, cfg, x, wt, bias, mult, shift, None, atables, "avx2")
        finally:
            libm.fesetround(0)
        assert np.array_equal(got, ref), hex(mode)
