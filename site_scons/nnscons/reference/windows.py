"""Sliding-window views over padded CHW planes, shared by convolution and pooling."""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided


def window_view(x, kernel, stride, dilation, pads, out_hw, fill):
    """Read-only view (C, kh, kw, OH, OW) of x (C, H, W) surrounded by `fill`.

    Output position (r, c) with kernel tap (i, j) reads image row r*sh - top + i*dh and
    column c*sw - left + j*dw.  The padded plane is sized from the output shape, so
    asymmetric pads and ceil_mode windows that run past the bottom/right need no
    special case.
    """
    c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    top, left = pads[0], pads[1]
    oh, ow = out_hw
    need_h = (oh - 1) * sh + (kh - 1) * dh + 1
    need_w = (ow - 1) * sw + (kw - 1) * dw + 1
    buf = np.full((c, need_h, need_w), fill, dtype=x.dtype)
    r0, r1 = max(0, -top), min(h, need_h - top)
    c0, c1 = max(0, -left), min(w, need_w - left)
    if r1 > r0 and c1 > c0:
        buf[:, r0 + top:r1 + top, c0 + left:c1 + left] = x[:, r0:r1, c0:c1]
    s0, s1, s2 = buf.strides
    return as_strided(buf, shape=(c, kh, kw, oh, ow),
                      strides=(s0, dh * s1, dw * s2, sh * s1, sw * s2), writeable=False)
