"""Exact integer Winograd F(4,3) (Lavin): the matrices, the weights transform and the bound
that makes it exact, in numpy (the generated C in kernelgen.wino computes the same).

Y = A^T [(G g G^T) (.) (B^T d B)] A for a 4x4 output tile from a 6x6 input tile.  G has
fractions; its rows scaled by S = [4, 6, 6, 24, 24, 1] are integers (GS), so U' = GS g GS^T
is int16 (|U'| <= 7 * 7 * 128).  B^T is integer with row |sums| <= 10, so V = B^T d B is
int16 (|V| <= 100 * 128).  The products M' = U' (.) V summed over the input channels are
diag(S) M diag(S); with L = 24, AS = diag(L / S) A (rows scaled by [6, 4, 4, 1, 1, 24]) is
integer and AS^T M' AS = L^2 * Y = 576 * y exactly.  The row scale L / S of the left factor
is folded into the weights: U'' = diag(L / S) U' is still int16 (row i of U' is at most
128 * |GS_i| * 7, times L / S_i: 128 * 7 * max(6 * 1, 4 * 3, 1 * 7, 24 * 1) = 21504), so
the output transform's first pass is A's plain one (fewer adds and shifts than AS's) and
A^T M'' AS = 576 * y the same.  Computed modulo 2^32 (wrapping int32,
as vpdpwssd / vpmaddwd + vpaddd and the transform's adds do), z = 576 * y mod 2^32; z times
9^-1 mod 2^32 is 64 * y mod 2^32, and its arithmetic shift right by 6 is y sign-extended
from 26 bits: y itself when -2^25 <= y < 2^25 (recover).  y is the direct kernels'
accumulator sum(w * x) over raw x (|x| <= 128), so bound_ok proves it per layer."""
from __future__ import annotations

import numpy as np

from .packing import channel_sums

BT = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
               [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.int64)
GS = np.array([[1, 0, 0], [-1, -1, -1], [-1, 1, -1], [1, 2, 4], [1, -2, 4], [0, 0, 1]], np.int64)
S = np.array([4, 6, 6, 24, 24, 1], np.int64)
AT = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], np.int64)
L = 24
AS_T = AT * (L // S)[None, :]          # columns of A^T scaled by [6, 4, 4, 1, 1, 24]
U_LIMIT = 21504                         # |U''| (module docstring): int16
INV9 = pow(9, -1, 2 ** 32)              # 0x38E38E39
Y_LIMIT = 2 ** 25                       # |y| < 2^25: recovered exactly


def weights(w: np.ndarray) -> np.ndarray:
    """(..., 3, 3) int -> (..., 6, 6) U'' = diag(L / S) GS w GS^T (int64; fits int16 for int8 w)."""
    return (L // S)[:, None] * np.einsum("ik,...kl,jl->...ij", GS, w.astype(np.int64), GS)


def inputs(d: np.ndarray) -> np.ndarray:
    """(..., 6, 6) -> V = B^T d B."""
    return np.einsum("ik,...kl,jl->...ij", BT, d.astype(np.int64), BT)


def wrap32(z: np.ndarray) -> np.ndarray:
    return ((z + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int64)


def outputs(m: np.ndarray) -> np.ndarray:
    """(..., 6, 6) M'' (mod 2^32) -> (..., 4, 4) z = A^T M'' AS mod 2^32."""
    return wrap32(np.einsum("ik,...kl,jl->...ij", AT, wrap32(m), AS_T))


def recover(z: np.ndarray) -> np.ndarray:
    """z = 576 y mod 2^32 -> y (exact when |y| < 2^25): (z * 9^-1 mod 2^32) >> 6, arithmetic."""
    return wrap32((z.astype(object) * INV9) % 2 ** 32).astype(np.int64) >> 6


def bound_ok(wm: np.ndarray) -> bool:
    """(N, 9, IC) int8 weights: |sum(w * x)| < 2^25 for every int8 x (|x| <= 128)."""
    return 128 * int(channel_sums(wm, absolute=True).max(initial=0)) < Y_LIMIT


def tile_conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Reference Winograd of one tile: x (6, 6, IC), w (OC, IC, 3, 3) -> y (4, 4, OC), through
    the wrapping int32 arithmetic of the kernels."""
    v = inputs(np.moveaxis(x, -1, 0))                    # (IC, 6, 6)
    u = weights(w)                                       # (OC, IC, 6, 6)
    m = wrap32(np.einsum("cij,ocij->oij", v, u))         # the 36 GEMMs, wrapping
    return np.moveaxis(recover(outputs(m)), 0, -1)
