"""The GEMM view of a conv (groups 1) or linear layer: shapes, the padded int16 buffer and
the K structure (segments, taps) the microkernels reduce over, and the u8 buffer's quads.
"""
from __future__ import annotations

import numpy as np

from .. import ops


def geometry(layer, graph) -> dict:
    """The GEMM view of a conv (groups 1) or linear layer."""
    ins = graph.tensor(layer.inputs[0]).shape
    out = graph.tensor(layer.output).shape
    if not ops.has_window(layer):         # a Linear: one pixel, K = its flattened input
        k = int(np.prod(ins[1:]))
        return dict(ic=k, ih=1, iw=1, oc=int(out[1]), oh=1, ow=1, kh=1, kw=1, sh=1, sw=1, dh=1, dw=1,
                    pt=0, pl=0, pb=0, pr=0)
    a = layer.attrs
    kh, kw = a["kernel"]
    dh, dw = a.get("dilation", (1, 1))
    pt, pl, pb, pr = a["pads"]
    return dict(ic=int(ins[1]), ih=int(ins[2]), iw=int(ins[3]), oc=int(out[1]), oh=int(out[2]),
                ow=int(out[3]), kh=kh, kw=kw, sh=a["stride"][0], sw=a["stride"][1], dh=dh, dw=dw,
                pt=pt, pl=pl, pb=pb, pr=pr)


def padded(g: dict) -> dict:
    """The int16 buffer and the K structure.  Buffer: rows/cols the windows reach, icp
    channels per pixel.  With column dilation 1 the kw taps of a kernel row are one
    contiguous run of kw*IC values in an HWC row, so a kernel row is one batch-reduce
    segment (kh segments of seg values; an odd run reads one value past its end, times a
    zero weight); otherwise every tap is a segment of IC values, channels padded to even.
    k2: multiply-add pairs per output (K/2)."""
    hp = max(g["ih"] + g["pt"], (g["oh"] - 1) * g["sh"] + (g["kh"] - 1) * g["dh"] + 1)
    wp = max(g["iw"] + g["pl"], (g["ow"] - 1) * g["sw"] + (g["kw"] - 1) * g["dw"] + 1)
    merged = g["dw"] == 1
    if merged:
        icp, run, ntaps = g["ic"], g["kw"] * g["ic"], g["kh"]
    else:
        icp = g["ic"] + (g["ic"] & 1)
        run, ntaps = icp, g["kh"] * g["kw"]
    seg = run + (run & 1)
    return dict(hp=hp, wp=wp, icp=icp, seg=seg, ntaps=ntaps, k2=ntaps * seg // 2, merged=merged)


def tap_offsets(g: dict) -> tuple:
    """Element offset of each segment from a pixel's window origin in the buffer."""
    p = padded(g)
    if p["merged"]:
        return tuple(ky * g["dh"] * p["wp"] * p["icp"] for ky in range(g["kh"]))
    return tuple((ky * g["dh"] * p["wp"] + kx * g["dw"]) * p["icp"]
                 for ky in range(g["kh"]) for kx in range(g["kw"]))


def segments(wm: np.ndarray, g: dict) -> np.ndarray:
    """(N, kh*kw, IC) weights -> (N, segments, run) in the order the kernel reduces."""
    if padded(g)["merged"]:
        return wm.reshape(wm.shape[0], g["kh"], g["kw"] * g["ic"])
    return wm


def supports(layer) -> bool:
    """The generator takes the layer: one GEMM (the op's dense hook: conv groups 1, linear)."""
    return ops.is_dense(layer)


def u8_supported(g: dict) -> bool:
    """The u8 buffer is the int16 one's geometry (merged kernel rows: column dilation 1)."""
    return padded(g)["merged"]


def u8_im2col(g: dict) -> bool:
    """The u8 buffer as one row per output pixel of its whole window (kh kernel rows of kw*IC
    values back to back, K = kh*kw*IC padded to a multiple of 4 once) instead of one
    zero-padded run per kernel row, where the runs' padding wastes a tenth of the quads or
    more: the few-channel stems (ResNet's 7x7x3: 37 quads against 7 x 6 = 42; a 3x3x3: 7
    against 9).  The copy is K bytes per pixel against K*OC multiply-adds."""
    if not padded(g)["merged"] or g["kh"] < 2:
        return False
    rows = g["kh"] * -(-g["kw"] * g["ic"] // 4)
    return rows * 10 >= 11 * -(-g["kh"] * g["kw"] * g["ic"] // 4)


def u8_quads(g: dict) -> int:
    """Groups of 4 K values per segment (a kernel row of kw*IC values, zero-padded; the
    whole window under u8_im2col)."""
    if u8_im2col(g):
        return -(-g["kh"] * g["kw"] * g["ic"] // 4)
    return -(-g["kw"] * g["ic"] // 4)


def u8_taps(g: dict) -> tuple:
    """Element offset of each u8 segment from a pixel's window origin."""
    return (0,) if u8_im2col(g) else tap_offsets(g)


def u8_steps(g: dict) -> int:
    """Quads per output on the u8 buffer (all segments)."""
    return len(u8_taps(g)) * u8_quads(g)
