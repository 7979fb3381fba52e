"""Exact integer Winograd F(4,3) (kernelgen.winomath): the transforms' algebra, their int16
ranges, and the recovery of y from 576 * y mod 2^32 up to |y| < 2^25, both signs."""
from __future__ import annotations

import numpy as np

from nnscons.kernelgen import winomath as wm


def _direct(x, w):
    """x (6, 6, IC), w (OC, IC, 3, 3) -> the 4x4 valid correlation (4, 4, OC)."""
    out = np.zeros((4, 4, w.shape[0]), np.int64)
    for i in range(4):
        for j in range(4):
            out[i, j] = np.einsum("hwc,ochw->o", x[i:i + 3, j:j + 3].astype(np.int64), w.astype(np.int64))
    return out


def test_constants():
    assert (9 * wm.INV9) % 2 ** 32 == 1 and wm.INV9 == 0x38E38E39
    assert np.abs(wm.BT).sum(1).max() == 10          # |V| <= 100 * 128: int16
    assert np.abs(wm.GS).sum(1).max() == 7           # |U'| <= 49 * 128: int16
    assert (wm.AS_T == wm.AT * np.array([6, 4, 4, 1, 1, 24])).all()
    assert wm.U_LIMIT == 128 * 7 * max(6 * 1, 4 * 3, 1 * 7, 24 * 1)


def test_random_tiles_exact():
    rng = np.random.default_rng(1)
    for ic in (1, 3, 16, 64):
        x = rng.integers(-128, 128, (6, 6, ic))
        w = rng.integers(-128, 128, (5, ic, 3, 3))
        assert (wm.tile_conv(x, w) == _direct(x, w)).all()


def test_extremes_int16_ranges():
    x = np.full((6, 6, 1), -128)
    x[::2, 1::2, 0] = 127
    w = np.full((1, 1, 3, 3), -128)
    assert np.abs(wm.inputs(np.moveaxis(x, -1, 0))).max() <= 12800
    assert np.abs(wm.weights(w)).max() <= wm.U_LIMIT
    worst = wm.weights(np.array([[1, -1, 1], [-1, 1, -1], [1, -1, 1]]) * -128)
    assert np.abs(worst).max() <= wm.U_LIMIT <= 32767
    # every sign pattern of full-scale weights: |U''| reaches U_LIMIT (row 5 x column 3) and no more
    signs = (np.arange(512)[:, None] >> np.arange(9)) & 1
    us = wm.weights((signs * 255 - 128).reshape(512, 3, 3))
    assert np.abs(us).max() == wm.U_LIMIT


def test_near_the_bound_both_signs():
    """|y| just under 2^25 (many channels of extreme values) recovers; at 2^25 it would not."""
    ic = 2 ** 25 // (128 * 128 * 9) + 1          # 228: 128*128*9*228 > 2^25
    w = np.full((2, ic, 3, 3), -128)
    w[1] = 127
    x = np.full((6, 6, ic), -128)
    y = _direct(x, w)
    assert np.abs(y).max() >= 2 ** 25            # this one exceeds the bound ...
    assert not wm.bound_ok(np.moveaxis(w, 1, -1).reshape(2, 9, ic))
    ic = 2 ** 25 // (128 * 128 * 9)              # 227: the largest full-scale layer in bound
    w, x = w[:, :ic], x[..., :ic]
    x[0, 0, :] = 127
    y = _direct(x, w)
    assert np.abs(y).max() > 2 ** 24 and (y < 0).any() and (y > 0).any()
    assert wm.bound_ok(np.moveaxis(w, 1, -1).reshape(2, 9, ic))
    assert (wm.tile_conv(x, w) == y).all()
    rng = np.random.default_rng(2)
    x = rng.choice([-128, 127], (6, 6, ic))
    w = rng.choice([-128, 127], (3, ic, 3, 3))
    assert (wm.tile_conv(x, w) == _direct(x, w)).all()
