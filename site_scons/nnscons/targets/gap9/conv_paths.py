"""Which cluster kernel path a gap9 conv takes (kernels/gap9/nn_xp_conv2d.c, nn_xp_dwconv.c) and
what that path needs from the plan: the input zero point folded into the bias, the pre-flip of
-128 inputs, the im2col and depthwise scratch, padded weight rows."""
from __future__ import annotations

import functools

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
    if til.pipeline == "inner":     # each input tile loaded once, read by every channel tile
        return True
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


def xp_split(n_pix, out_c, words, n_cores, choice=None) -> list:
    """nn_xp_conv2d_split's answer for every core, (pb, pe, cb, ce, tb, te) each, computed at
    build time: a layer's tiles have a few shapes, and the search (some forty divisions, about
    1.5 k cycles) would otherwise run on every core for every tile. The same integer arithmetic
    as the C (test_gap9_kernels compares them). choice: (channel groups, tail) to use instead
    of the C's estimate (xp_splits lists them)."""
    n_blk, per_t = -(-out_c // 4), -(-out_c // n_cores)
    best, tail = _grid(n_pix, n_blk, words, n_cores), 0
    if choice is not None:
        best, tail = choice
        n_pix -= tail
    elif n_pix % 2 and n_pix >= 3:
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


def _taps(base, step, n, limit):
    """nn_xp_conv2d.c valid_taps: the taps [lo, hi) of n at base + i * step inside [0, limit)."""
    inside = [i for i in range(n) if 0 <= base + i * step < limit]
    return (inside[0], inside[-1] + 1) if inside else (0, 0)


def _fields(geo, kh, kw, sh, sw, dh, in_c):
    """field_of's (rows, n, w0) per output pixel of a tile (the pairing key) and its words."""
    rows_, cols, in_rows, in_cols, pad_top, pad_left = geo
    out, col_taps = [], [_taps(x * sw - pad_left, 1, kw, in_cols) for x in range(cols)]
    for y in range(rows_):
        ki0, ki1 = _taps(y * sh - pad_top, dh, kh, in_rows)
        for kj0, kj1 in col_taps:
            n = (kj1 - kj0) * in_c // 4
            r = ki1 - ki0 if n else 0
            out.append((r, n, (ki0 * kw + kj0) * in_c if r else 0))
    return out


def _core_cycles(fields, pb, pe, cb, ce, tb, te):
    """The direct path's cycles for one core's share by the split's estimates: direct()'s
    pairing (a pixel waits, up to 4 of them, for a later one with the same field), a pair's 4
    channels about 14 per word and 200 besides, a lone pixel's 10 and 100, a channel of 1 x 1
    loops 4 and 25, 250 per pixel."""
    blocks, left = (ce - cb) // 4 if ce > cb else 0, (ce - cb) % 4 if ce > cb else 0
    cyc, wait = 0, []

    def run(f, pair):
        w = f[0] * f[1]
        return (blocks * ((14 * w + 200) if pair else (10 * w + 100)) + left * (1 + pair) * (4 * w + 25))
    if pb < pe and cb < ce:
        for p in range(pb, pe):
            f = fields[p]
            cyc += 250
            if f in wait:
                wait.remove(f)
                cyc += run(f, True)
            else:
                if len(wait) == 4:
                    cyc += run(wait[0], False)
                    wait[0] = wait[-1]
                    wait.pop()
                wait.append(f)
        cyc += sum(run(f, False) for f in wait)
    if tb < te:
        w = fields[-1][0] * fields[-1][1]
        cyc += 250 + (te - tb) // 4 * (10 * w + 100) + (te - tb) % 4 * (4 * w + 25)
    return cyc


@functools.lru_cache(maxsize=256)       # a network repeats its layers' tile kinds
def xp_split_for(geo, out_c, kh, kw, sh, sw, dh, in_c, n_cores):
    """The split of a tile of geometry geo (rows, cols, in_rows, in_cols, pad_top, pad_left)
    whose busiest core is done first counting which pixels can pair (a tile's padded row or
    column: its pixels pair only among themselves): nn_xp_conv2d_split's answer unless
    another of its grids (channel groups dividing the cores, the last pixel shared or not)
    is faster by that count by a tenth or more (the count is rough: on pulp-open GVSoC, a 4 x 4
    tile with a padded row and column at 8 channels of 256-channel 3 x 3 fields, 19.1 k
    against 20.1 k for the C's choice, measured some 850 cycles slower; 8-pixel edge tiles of
    24 channels, 13.2 k against 18.1 k, took layer3.0.conv1's shape 12.15 -> 12.76 MACs/cycle)."""
    fields = _fields(geo, kh, kw, sh, sw, dh, in_c)
    n_pix, words = len(fields), kh * kw * in_c // 4
    best = xp_split(n_pix, out_c, words, n_cores)
    best_cyc = max(_core_cycles(fields, *c) for c in best) * 9 // 10
    for cc in range(1, min(n_cores, -(-out_c // 4)) + 1):
        for tail in ((0, 1) if n_pix % 2 and n_pix >= 3 else (0,)):
            if n_cores % cc:
                continue
            cand = xp_split(n_pix, out_c, words, n_cores, (cc, tail))
            cyc = max(_core_cycles(fields, *c) for c in cand)
            if cyc < best_cyc:
                best, best_cyc = cand, cyc
    return best


@functools.lru_cache(maxsize=256)
def xp_split_ordered(geo, out_c, kh, kw, sh, sw, dh, in_c, n_cores):
    """(split, order): xp_split_for's split, or one over a pixel order when that is faster by
    the same count (order[i] = the tile's i-th pixel as y << 8 | x, the split's
    pixel ranges index it; None: the natural order). The order puts pixels that pair (same
    field) next to each other and deals the pairs and lone pixels to the pixel groups, the
    longest first, each to the group done first: a 4 x 7 tile with a padded row and column cut
    in ranges of 4 left pixels without partners (its 7-pixel rows pair across row ends only
    where the fields agree). No margin: counts of 0.97-0.99 of the natural order's measured
    faster too (GVSoC pulp-open: layer4.0.conv1's 4 x 7 x 8 corner tile, ic_resnet8's 32 x 32 x
    16 and 16 x 16 x 32 tiles)."""
    fields = _fields(geo, kh, kw, sh, sw, dh, in_c)
    n_pix, cols = len(fields), geo[1]
    best = xp_split_for(geo, out_c, kh, kw, sh, sw, dh, in_c, n_cores)
    if n_pix < 2 or geo[0] > 256 or cols > 256:
        return best, None
    best_cyc, order = max(_core_cycles(fields, *c) for c in best), None
    groups = {}
    for p, f in enumerate(fields):
        groups.setdefault(f, []).append(p)
    units = [ps[i:i + 2] for ps in groups.values() for i in range(0, len(ps), 2)]
    cost = {id(u): fields[u[0]][0] * fields[u[0]][1] * (14 if len(u) == 2 else 10) + 250 * len(u) for u in units}
    units.sort(key=lambda u: -cost[id(u)])
    n_blk = -(-out_c // 4)
    for cc in range(1, min(n_cores, n_blk) + 1):
        if n_cores % cc:
            continue
        bins, load = [[] for _ in range(n_cores // cc)], [0] * (n_cores // cc)
        for u in units:
            j = load.index(min(load))
            bins[j] += u
            load[j] += cost[id(u)]
        seq = [p for b in bins for p in b]
        per_c, split, at = 4 * -(-n_blk // cc), [], 0
        for g, b in enumerate(bins):
            for c in range(cc):
                cb = min(c * per_c, out_c)
                split.append((at, at + len(b), cb, min(cb + per_c, out_c), out_c, out_c))
            at += len(b)
        cyc = max(_core_cycles([fields[p] for p in seq], *c) for c in split)
        if cyc < best_cyc:
            best, best_cyc, order = split, cyc, [(p // cols) << 8 | p % cols for p in seq]
    return best, order


def xp_split_table(layer, graph, til, xpulp=True):
    """The direct path's split (xp_split_for) of each kind of tile of a layer: (distinct splits,
    index per kind), the kind ((first row tile) << 4 | (last) << 3 | (first column tile) << 2
    | (last) << 1 | (last channel tile)) deciding the tile's shape and padding; None when the
    layer does not take the direct (non-pointwise) path, or two tiles of a kind differ."""
    if til is None or xp_conv_path(layer, graph, xpulp) != "direct" or pointwise(layer, graph, xpulp):
        return None
    a = layer.attrs
    o, i = hwc(graph.tensor(layer.output).shape), hwc(graph.tensor(layer.inputs[0]).shape)
    (kh, kw), (sh, sw), (dh, _) = a["kernel"], a["stride"], a.get("dilation", (1, 1))
    pt, pl = a["pads"][0], a["pads"][1]

    def span(t, n_t, size, s, d, k, pad, limit, idx):    # tile_at's clipped box along one axis
        y0 = idx * t
        n = min(size - y0, t)
        first = y0 * s - pad
        last = first + (n - 1) * s + (k - 1) * d
        r0 = max(first, 0)
        return n, max(min(last, limit - 1) - r0 + 1, 0), r0 - first
    kinds, splits, index = {}, [], [0] * 32
    for ty in range(til.n_h):
        rows, in_rows, pad_top = span(til.th, til.n_h, o["h"], sh, dh, kh, pt, i["h"], ty)
        for tx in range(til.n_w):
            cols, in_cols, pad_left = span(til.tw, til.n_w, o["w"], sw, 1, kw, pl, i["w"], tx)
            for co in sorted({0, til.n_c - 1}):
                chans = min(o["c"] - co * til.tc, til.tc)
                kind = ((ty == 0) << 4 | (ty == til.n_h - 1) << 3 | (tx == 0) << 2 | (tx == til.n_w - 1) << 1
                        | (co == til.n_c - 1))
                geo = (rows, cols, in_rows, in_cols, pad_top, pad_left, chans)
                if kinds.setdefault(kind, geo) != geo:
                    return None
    chosen = {kind: xp_split_ordered(geo[:6], geo[6], kh, kw, sh, sw, dh, i["c"], til.cores)
              for kind, geo in sorted(kinds.items())}
    ordered = any(order for _, order in chosen.values())
    for kind, (sp, order) in chosen.items():
        if max(max(c) for c in sp) >= 2 ** 15:      # int16 entries
            return None
        rows_, cols = kinds[kind][:2]
        # with orders, every split gets one (the natural order where it has none)
        key = (sp, tuple(order or [y << 8 | x for y in range(rows_) for x in range(cols)]) if ordered else ())
        if key not in splits:
            splits.append(key)
        index[kind] = splits.index(key)
    if not ordered:
        return {"splits": [sp for sp, _ in splits], "index": index}
    n = max(len(o) for _, o in splits)
    return {"splits": [sp for sp, _ in splits], "index": index,
            "orders": [list(o) + [0] * (n - len(o)) for _, o in splits]}
