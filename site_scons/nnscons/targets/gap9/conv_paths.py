"""Which cluster kernel path a gap9 conv takes (kernels/gap9/nn_xp_conv2d.c, nn_xp_dwconv.c) and
what that path needs from the plan: the input zero point folded into the bias, the pre-flip of
-128 inputs, the im2col and depthwise scratch, padded weight rows."""
from __future__ import annotations

import numpy as np

from ... import ops as registry
from . import tiling


def hwc(shape):
    if len(shape) == 4:
        return {"h": shape[2], "w": shape[3], "c": shape[1]}
    return {"h": 1, "w": 1, "c": shape[1]}


def _p_per_oc(layer):
    return 4 * (2 + (layer.bias is not None))


def xp_conv_path(layer, graph, xpulp=True) -> str:
    """Which Xpulp kernel path a conv takes (kernels/gap9/nn_xp_conv2d.c, the same tests as
    nn_xp_conv2d_fast / nn_xp_conv2d_im2col, nn_xp_dwconv_fast): "direct" (in_c % 4 == 0,
    no column dilation, input zero point 0 or -128 as the kernel sees it: kernel_zp), "im2col"
    (the other dense convs), "dw"
    (depthwise: groups == in_c == out_c, no column dilation; nn_xp_dwconv.c), or "plain"
    (other grouped convs, or every conv with the target's kernels.xpulp off:
    nn_hwc_conv2d_s8)."""
    a = layer.attrs
    c = hwc(graph.tensor(layer.inputs[0]).shape)["c"]
    oc = hwc(graph.tensor(layer.output).shape)["c"]
    if not xpulp:
        return "plain"
    if a.get("groups", 1) != 1:
        kh, kw = a["kernel"]
        dw = a["groups"] == c == oc and a.get("dilation", (1, 1))[1] == 1 and kh * -(-kw // 4) <= 32
        return "dw" if dw else "plain"
    if c % 4 == 0 and a.get("dilation", (1, 1))[1] == 1 and kernel_zp(layer, graph) in (0, -128):
        return "direct"
    return "im2col"


def pointwise(layer, graph, xpulp=True) -> bool:
    """Whether the cluster runs this conv on the pointwise path (nn_xp_conv2d_pointwise's test):
    the direct path, a 1x1 kernel, no padding, zero point 0 as the kernel sees it."""
    a = layer.attrs
    return (xp_conv_path(layer, graph, xpulp) == "direct" and tuple(a.get("kernel", ())) == (1, 1)
            and not any(a.get("pads", ())) and kernel_zp(layer, graph) == 0)


def folds_zp(layer, graph) -> bool:
    """Whether a dense conv's input zero point folds into its bias (folded_bias): no padding
    (no tap reads the zero point), a bias section to hold it, a zero point other than 0, and
    the folded bias inside int32 for any weights (|zp| * 127 * K + max |bias|), so that
    bias' + sum(x * w) is the reference's bias + sum((x - zp) * w) exactly."""
    a = layer.attrs
    if not registry.is_conv(layer) or a.get("groups", 1) != 1 or layer.bias is None or any(a["pads"]):
        return False
    zp = int(graph.tensor(layer.inputs[0]).q.zero_point)
    k = int(np.prod(layer.weight.shape[1:]))
    return zp != 0 and abs(zp) * 127 * k + int(np.abs(layer.bias.astype(np.int64)).max()) < 2 ** 31


def kernel_zp(layer, graph) -> int:
    """The input zero point a conv's kernel is given: 0 when it is folded into the bias."""
    return 0 if folds_zp(layer, graph) else int(graph.tensor(layer.inputs[0]).q.zero_point)


def folded_bias(layer, graph) -> np.ndarray:
    """bias - zp * sum(w) per output channel (int32; folds_zp says it fits): the kernels then
    run the conv with zero point 0, the direct path for any zero point (sdotsp on the codes,
    no flip)."""
    zp = int(graph.tensor(layer.inputs[0]).q.zero_point)
    sums = layer.weight.reshape(layer.weight.shape[0], -1).astype(np.int64).sum(axis=1)
    return (layer.bias.astype(np.int64) - zp * sums).astype(np.int32)


def xp_preflip(layer, graph, til, xpulp=True) -> bool:
    """Whether a direct-path conv with input zero point -128 flips each input tile it loads to
    x ^ 0x80 once in place (nn_xp_conv2d_flip) instead of on every load in its loops: worth it
    when the xors saved (one per 16 MACs) outweigh the flip (about 2 cycles per input byte
    loaded), i.e. unless a large input is re-read for few output channels."""
    if til is None or xp_conv_path(layer, graph, xpulp) != "direct" or kernel_zp(layer, graph) != -128:
        return False
    o = hwc(graph.tensor(layer.output).shape)
    k = int(np.prod(layer.weight.shape[1:]))
    outs = 2 if "residual" in layer.attrs else 1        # a fused add's residual moves once too
    loaded = til.l2_l1_bytes - o["c"] * (k + _p_per_oc(layer)) - outs * o["h"] * o["w"] * o["c"]
    return o["h"] * o["w"] * o["c"] * k >= 32 * loaded


def im2col_bytes(layer, graph) -> int:
    """One core's im2col buffer: two receptive fields, each in whole words."""
    return 2 * tiling._align4(int(np.prod(layer.weight.shape[1:])))


def dw_plane_bytes(layer, til) -> int:
    """One core's plane on the depthwise path (nn_xp_dwconv_scratch of the largest tile): the
    input rows of th output rows, each as wide as tw outputs' windows plus a word."""
    a = layer.attrs
    (kh, kw), (sh, sw) = a["kernel"], a["stride"]
    rows = (til.th - 1) * sh + (kh - 1) * a.get("dilation", (1, 1))[0] + 1
    return rows * tiling._align4((til.tw - 1) * sw + 4 * -(-kw // 4))


def weight_row(layer, graph, til, xpulp=True):
    """Bytes per output channel of a conv's packed weights when the kernel wants them padded
    (the im2col path: rows of whole words), else None (k_h*k_w*in_c/groups)."""
    if not registry.is_conv(layer) or xp_conv_path(layer, graph, xpulp) != "im2col" or not til or not til.l1_scratch:
        return None
    return tiling._align4(int(np.prod(layer.weight.shape[1:])))


def _grid(n_pix, n_blk, words, n_cores):
    best, best_cost = 1, -1
    for cc in range(1, min(n_cores, n_blk) + 1):
        share = -(-n_pix // (n_cores // cc)) * (-(-n_blk // cc) * (7 * words + 100) + 250)
        if n_cores % cc == 0 and (best_cost < 0 or share < best_cost):
            best, best_cost = cc, share
    return best


def _busiest(n_pix, n_blk, words, n_cores, cc):
    px, blk = -(-n_pix // (n_cores // cc)), -(-n_blk // cc)
    return blk * (px // 2 * (14 * words + 200) + px % 2 * (10 * words + 100)) + 250 * px


def xp_split(n_pix, out_c, words, n_cores) -> list:
    """nn_xp_conv2d_split's answer for every core, (pb, pe, cb, ce, tb, te) each, computed at
    build time: a layer's tiles have a few shapes, and the search (some forty divisions, about
    1.5 k cycles) would otherwise run on every core for every tile. The same integer arithmetic
    as the C (test_gap9_kernels compares them)."""
    n_blk, per_t = -(-out_c // 4), -(-out_c // n_cores)
    best, tail = _grid(n_pix, n_blk, words, n_cores), 0
    if n_pix % 2 and n_pix >= 3:
        cc = 1
        t = per_t // 4 * (10 * words + 100) + per_t % 4 * (4 * words + 25) + 250
        for c in range(2, min(n_cores, n_blk) + 1):
            if n_cores % c == 0 and (_busiest(n_pix - 1, n_blk, words, n_cores, c)
                                     < _busiest(n_pix - 1, n_blk, words, n_cores, cc)):
                cc = c
        if _busiest(n_pix - 1, n_blk, words, n_cores, cc) + t < _busiest(n_pix, n_blk, words, n_cores, best):
            best, tail, n_pix = cc, 1, n_pix - 1
    cp = n_cores // best
    per_p, per_c = -(-n_pix // cp), 4 * -(-n_blk // best)
    out = []
    for core in range(n_cores):
        pb = min((core // best) * per_p, n_pix)
        cb = min((core % best) * per_c, out_c)
        tb = min(core * per_t, out_c) if tail else out_c
        out.append((pb, min(pb + per_p, n_pix), cb, min(cb + per_c, out_c), tb,
                    min(tb + per_t, out_c) if tail else out_c))
    return out


def xp_split_table(layer, graph, til, xpulp=True):
    """The direct path's split (xp_split) for each tile shape of a layer, indexed by
    (rows is the last row tile's) * 4 + (cols ...) * 2 + (chans ...), or None when the
    layer does not take the direct (non-pointwise) path."""
    if til is None or xp_conv_path(layer, graph, xpulp) != "direct" or pointwise(layer, graph, xpulp):
        return None
    o, c = hwc(graph.tensor(layer.output).shape), hwc(graph.tensor(layer.inputs[0]).shape)["c"]
    kh, kw = layer.attrs["kernel"]
    words = kh * kw * c // 4
    rows = (min(til.th, o["h"]), o["h"] - (til.n_h - 1) * til.th)      # tile_at's clipped boxes
    cols = (min(til.tw, o["w"]), o["w"] - (til.n_w - 1) * til.tw)
    chans = (min(til.tc, o["c"]), o["c"] - (til.n_c - 1) * til.tc)
    table = [xp_split(r * w, ch, words, til.cores) for r in rows for w in cols for ch in chans]
    return table if max(max(s) for e in table for s in e) < 2 ** 15 else None     # int16 entries
