"""kernels/common/nn_island_pool.c on its own: the HWC entry (host), the CHW layout (k210's
CPU, aie2p's host fallback) and channel ranges of an L1 tile (gap9's cores) give the
reference's codes (ops/island_pool.reference), per-channel and shared tables, rounding ties
included."""
from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

from conftest import ROOT, kernel_library

I32, P = ctypes.c_int32, ctypes.c_void_p


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    k = os.path.join(ROOT, "kernels", "common")
    return kernel_library(tmp_path_factory, "island", [os.path.join(k, "nn_island_pool.c")], [k])


def _ptr(a):
    return a.ctypes.data_as(P)


def _expected(x, table, tables, frac, zp, lo, hi):
    """The reference's arithmetic (ops/island_pool.reference) on a (C, HW) array of codes."""
    from nnscons import numerics
    c = x.shape[0]
    t = table.astype(np.int64).reshape(-1, 256)
    rows = np.arange(c).reshape(c, 1) if tables > 1 else np.zeros((c, 1), np.int64)
    s = t[rows, x.astype(np.int64) + 128].sum(axis=1)
    return np.clip(numerics.div_round(s, x.shape[1], frac) + zp, lo, hi).astype(np.int8)


@pytest.mark.parametrize("tables", [1, 7])
def test_every_layout_and_channel_range_gives_the_reference(lib, tables):
    rng = np.random.default_rng(tables)
    c, hw, frac, zp, lo, hi = 7, 9, 16, -3, -128, 120
    x = rng.integers(-128, 128, (c, hw)).astype(np.int8)
    table = rng.integers(-(1 << 22), 1 << 22, tables * 256).astype(np.int32)
    if tables > 1:     # channel 1's mean is exactly 3.5 or -2.5 output LSB: a tie, to even
        table[256:512] = np.where(np.arange(256) % 2, 7 << 15, -5 << 15)
        x[1] = np.where(np.arange(hw) < hw // 2, 1, 0) if hw % 2 == 0 else 1
    want = _expected(x, table, tables, frac, zp, lo, hi)
    hwc = np.ascontiguousarray(x.T)
    out = np.zeros(c, np.int8)
    lib.nn_island_avgpool_s8(c, hw, tables, _ptr(hwc), _ptr(table), I32(frac), I32(zp), I32(lo), I32(hi), _ptr(out))
    assert np.array_equal(out, want)
    chw = np.ascontiguousarray(x)
    out = np.zeros(c, np.int8)
    lib.nn_island_avgpool_part_s8(hw, ctypes.c_long(1), ctypes.c_long(hw), 0, c, tables, _ptr(chw), _ptr(table),
                                  I32(frac), I32(zp), I32(lo), I32(hi), _ptr(out))
    assert np.array_equal(out, want)
    out = np.zeros(c, np.int8)
    for b, e in ((0, 3), (3, 4), (4, 7)):         # the cores' ranges of one tile
        lib.nn_island_avgpool_part_s8(hw, ctypes.c_long(c), ctypes.c_long(1), b, e, tables, _ptr(hwc), _ptr(table),
                                      I32(frac), I32(zp), I32(lo), I32(hi), _ptr(out))
    assert np.array_equal(out, want)
