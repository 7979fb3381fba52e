"""NE16's bit-serial weight layout: int8 convolution weights -> the bytes NE16 streams.

NE16 (GVSoC's model, ne16_matrixvec.cpp) multiplies 16 input channels at a time by one bit
plane of an unsigned qw-bit weight and adds WEIGHT_OFFSET * sum(x) once per output (the
"Wmin" offset), so a signed weight w is stored as w - offset with offset = -2**(qw-1).
A bit plane of 16 channels is 2 bytes: channel c of the group is bit c % 8 of byte c // 8.

Layouts (nn_ne16.h sets the matching strides), nb_ki = ceil(k_in / 16):
  3x3       [k_out][nb_ki][qw][9 positions, ky*3+kx][2 bytes]
  1x1       [k_out][nb_ki][qw][2 bytes]
  dw3x3     [ceil(c / 16)][qw][9][2 bytes]   (lane = channel % 16)
Input channels beyond k_in are stored as 0 (NE16 loads zeros for them).
"""
from __future__ import annotations

import numpy as np

MODES = ("3x3", "1x1", "dw3x3")
TP_IN = 16


class Ne16WeightError(ValueError):
    """Weights NE16 cannot take: the message says which argument and what was expected."""


def weight_offset(bits: int = 8) -> int:
    """The WEIGHT_OFFSET register value for signed `bits`-bit weights."""
    return -(1 << (bits - 1))


def _as_ohwi(w: np.ndarray, mode: str, layout: str) -> np.ndarray:
    if layout not in ("OHWI", "OIHW"):
        raise Ne16WeightError(f"layout={layout!r}: expected 'OHWI' or 'OIHW'")
    w = np.asarray(w)
    if w.ndim != 4:
        raise Ne16WeightError(f"weights of shape {w.shape}: expected 4 dimensions ({layout})")
    if layout == "OIHW":
        w = w.transpose(0, 2, 3, 1)
    k = 1 if mode == "1x1" else 3
    if w.shape[1:3] != (k, k):
        raise Ne16WeightError(f"mode {mode} needs {k}x{k} kernels, the weights are "
                              f"{w.shape[1]}x{w.shape[2]} (shape {tuple(w.shape)} as OHWI)")
    if mode == "dw3x3" and w.shape[3] != 1:
        raise Ne16WeightError(f"mode dw3x3 needs one input channel per filter (OHWI (C,3,3,1)), "
                              f"got shape {tuple(w.shape)} as OHWI")
    return w


def pack(w: np.ndarray, mode: str, layout: str = "OHWI", bits: int = 8) -> bytes:
    """Packs signed integer weights (int8 for bits=8) into NE16's layout for `mode`."""
    if mode not in MODES:
        raise Ne16WeightError(f"mode={mode!r}: expected one of {', '.join(MODES)}")
    if not 2 <= bits <= 8:
        raise Ne16WeightError(f"bits={bits}: NE16 takes 2..8-bit weights")
    w = _as_ohwi(w, mode, layout).astype(np.int64)
    lo, hi = weight_offset(bits), -weight_offset(bits) - 1
    if w.size and (w.min() < lo or w.max() > hi):
        raise Ne16WeightError(f"weights in [{w.min()}, {w.max()}] do not fit {bits} signed bits "
                              f"[{lo}, {hi}]")
    u = w - weight_offset(bits)                               # unsigned, 0 .. 2**bits-1
    planes = (u[..., None] >> np.arange(bits)) & 1            # (..., bits)
    if mode == "dw3x3":
        c = u.shape[0]
        ng = -(-c // TP_IN)
        p = np.zeros((ng * TP_IN, 9, bits), np.uint8)
        p[:c] = planes.reshape(c, 9, bits)
        p = p.reshape(ng, TP_IN, 9, bits).transpose(0, 3, 2, 1)  # (g, bit, pos, lane)
    else:
        ko, kh, kw, ki = u.shape
        nb = -(-ki // TP_IN)
        p = np.zeros((ko, kh * kw, nb * TP_IN, bits), np.uint8)
        p[:, :, :ki] = planes.reshape(ko, kh * kw, ki, bits)
        p = p.reshape(ko, kh * kw, nb, TP_IN, bits).transpose(0, 2, 4, 1, 3)  # (o, g, bit, pos, lane)
    lanes = p.reshape(*p.shape[:-1], 2, 8)                    # lane -> (byte, bit)
    packed = (lanes << np.arange(8, dtype=np.uint8)).sum(-1).astype(np.uint8)
    return packed.tobytes()


def packed_size(mode: str, k_in: int, k_out: int, bits: int = 8) -> int:
    """Bytes pack() returns for a layer (k_out == k_in for dw3x3)."""
    nb = -(-k_in // TP_IN)
    if mode == "dw3x3":
        return nb * bits * 9 * 2
    return k_out * nb * bits * (9 if mode == "3x3" else 1) * 2
