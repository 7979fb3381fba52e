"""L1 tiling for GAP9 layers: the tile shape that moves the fewest L2<->L1 bytes.

Activations are HWC in L2. A window op (conv2d, pools) is cut into output tiles of
th x tw pixels x tc channels; each tile's input box (with halo, clipped to the image)
moves with one 2-D DMA command. Two pipelines:

  spatial  more than one spatial tile: input and output tiles double-buffered, the
           tc-channel parameter slice loaded once per channel tile (channel tiles outer)
  channel  the whole output plane is one tile: the input is loaded once, parameter
           slices and output tiles double-buffered (Linear is always this)
  inner    (direct-path Xpulp convs) spatial tiles outer, channel tiles inner: each input
           tile loaded and flipped once (one or two buffers), parameter slices and output
           tiles double-buffered (Tiling.in_bufs)

Cost = L2<->L1 bytes (the input is re-read once per channel tile when every output channel
needs every input channel) plus TILE_OVERHEAD bytes per tile (programming the DMA, forking
and joining the cores: without it a strided 1x1 conv would pick one-pixel tiles that skip
the unread rows), then the L1 bytes. Convs on the Xpulp kernels (Window.kernel) are costed
in estimated cycles instead (_xp_cycles): the biggest tile that fits is not the fastest when
its pixels or channels leave cores idle, or when it re-reads a large input per few channels.
The search is vectorised over the distinct tile sizes ceil(n / k), so planning ResNet-18
stays cheap.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


TILE_OVERHEAD = 1024

# The cycle model of the Xpulp conv kernels (kernels/gap9/nn_xp_conv2d.c), fitted on
# pulp-open (a GAP9 proxy): one core's cycles per output pixel x 4 output channels are
# WORD_CYCLES per word of the receptive field (a 4 x 2 loop body of 14-16 instructions for 2
# pixels) + ROW_CYCLES per kernel row + PIXEL_CYCLES (4 requantizations, set-up), and
# PAIR_CYCLES per pixel (its field, its partner); the im2col path adds IM2COL_CYCLES per byte
# of a pixel's field. Per tile: TILE_CYCLES (forks, DMA programming and waits); the DMA moves
# DMA_BYTES_PER_CYCLE.
WORD_CYCLES = 7.5
ROW_CYCLES = 5
PIXEL_CYCLES = 110
PAIR_CYCLES = 250
IM2COL_CYCLES = 3
TILE_CYCLES = 3000
DMA_BYTES_PER_CYCLE = 7.6
# the inner pipeline: an input tile flipped once (x ^ 0x80, zero point -128) saves an xor per
# loaded word in the 4 x 2 loop (14 instructions for 2 pixels instead of 16); the flip itself
# costs FLIP_CYCLES per input word on one core's share and a fork
FLIP_WORD_CYCLES = 7.0
FLIP_CYCLES = 2
# the inner pipeline's estimate is taken when it is below this fraction of the others' best: it
# ran 0.96-1.13x its estimate where the spatial pipeline ran 1.02-1.13x (one-layer models of
# ResNet-18's 3x3 shapes, GVSoC pulp-open), and 64->128 3x3/2 at 56x56, estimated 0.96x the
# spatial pipeline, measured 1.02x
INNER_MARGIN = 0.95
# a fused residual add (residual.py): one core's cycles per element of nn_xp_add_s8's 16-bit
# path, and its fork per tile
ADD_CYCLES = 8
FORK_CYCLES = 300


def _touched(n_out, stride, k, dil, pad, n_in) -> int:
    """Input positions along one axis that some output reads."""
    pos = (np.arange(n_out)[:, None] * stride - pad + np.arange(k)[None, :] * dil).ravel()
    return len(np.unique(pos[(pos >= 0) & (pos < n_in)]))


def _align4(n):
    return -(-n // 4) * 4


def _sizes(n: int) -> np.ndarray:
    """Distinct tile sizes worth trying for a dimension of n: ceil(n / k)."""
    return np.array(sorted({-(-n // k) for k in range(1, n + 1)}), dtype=np.int64)


@dataclass(frozen=True)
class Tiling:
    pipeline: str        # "spatial" | "channel" | "flat"
    th: int
    tw: int
    tc: int
    n_h: int
    n_w: int
    n_c: int
    in_rows: int         # L1 input buffer box (rows x cols x channels)
    in_cols: int
    in_chans: int
    l1_in: int           # bytes of ONE buffer of each kind
    l1_out: int
    l1_params: int
    l1_bytes: int        # total L1 the layer allocates
    l2_l1_bytes: int     # bytes moved between L2 and L1
    lower_bound: int     # every tensor moved once
    l1_scratch: int = 0  # per-layer kernel scratch (the cores' im2col buffers), in l1_bytes
    # channel pipeline with one parameter buffer: the next channel tile's parameters load
    # after this tile's compute instead of during it (a whole input plane and 4-channel
    # parameter tiles fit a budget that double-buffered parameters would not: ResNet-18's
    # layer4 in 52 KiB)
    params_single: bool = False
    # a fused residual add (residual.py): one buffer for the residual tile, as big as an
    # output tile, loaded beside it (in l1_bytes)
    l1_res: int = 0
    cores: int = 8       # the cores sharing a tile (Window.cores): the kernels' split tables
    # the inner pipeline's input buffers: 2, the next spatial tile's input loads during this
    # one's channel tiles; 1, after its last (the cores wait for it)
    in_bufs: int = 0

    @property
    def n_tiles(self):
        return self.n_h * self.n_w * self.n_c

    def as_dict(self):
        return dict(asdict(self), n_tiles=self.n_tiles)


@dataclass(frozen=True)
class Window:
    """A conv2d / pool geometry, HWC."""
    c: int
    h: int
    w: int
    oc: int
    oh: int
    ow: int
    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    pt: int
    pl: int
    groups: int            # pools: groups == c (per-channel)
    w_per_oc: int          # weight bytes per output channel (0 for pools)
    p_per_oc: int          # int32 parameter bytes per output channel (bias, mult, shift)
    p_fixed: int           # parameter bytes that do not scale with channels (pool tables)
    scratch: int = 0       # L1 scratch the kernel needs whatever the tile (im2col buffers)
    tc_multiple: int = 1   # channel tiles the kernel prefers (a multiple, or all channels)
    kernel: str = ""       # "direct" / "im2col": an Xpulp conv, costed in cycles (_xp_cycles)
    cores: int = 8         # the cores sharing a tile (the Xpulp kernels' split)
    # the depthwise kernel's per-core channel planes: plane_cores x ((th - 1) * sh + (kh - 1) * dh
    # + 1) rows of align4((tw - 1) * sw + plane_extra) bytes (0: none)
    plane_cores: int = 0
    plane_extra: int = 0
    # the Xpulp pools run over a pixel's channels: a channel slice would make every pixel a
    # DMA chunk of its own and each tile re-run the kernel's set-up, so keep all channels
    # whenever some tiling with them fits
    all_channels: bool = False
    # a residual add fused into the conv (residual.py): a residual tile buffer as big as an
    # output tile, and the residual tensor read once
    residual: bool = False


def _clipped_extent(n_out, t, stride, k, dil, pad, n_in):
    """Per tile size t (array): (sum over tiles of clipped input extent, max clipped extent)."""
    total = np.zeros(len(t), dtype=np.int64)
    biggest = np.zeros(len(t), dtype=np.int64)
    for i, ti in enumerate(t):
        starts = np.arange(0, n_out, ti)
        rows = np.minimum(ti, n_out - starts)
        first = starts * stride - pad
        last = first + (rows - 1) * stride + (k - 1) * dil
        ext = np.minimum(last, n_in - 1) - np.maximum(first, 0) + 1
        ext = np.maximum(ext, 0)
        total[i] = ext.sum()
        biggest[i] = ext.max()
    return total, biggest


def _classes(n, t):
    """Per tile size t (array): the tiles of an axis of n as [(size, count)]: full, remainder."""
    full = n // t
    rem = n - full * t
    return [(t, full), (rem, (rem > 0).astype(np.int64))]


def _core_cycles(g: Window, P, tcs, px):
    """Compute cycles of a P-pixel, tcs-channel tile on its busiest core, split as the kernel
    splits it (nn_xp_conv2d_split: pixel groups x channel groups dividing the cores; im2col:
    pixels, or channels when fewer pixels than cores); px: cycles per pixel x 4 channels."""
    blocks = -(-tcs // 4)
    if g.kernel == "im2col":
        return np.where(P >= g.cores, -(-P // g.cores) * blocks, -(-blocks // g.cores) * P) * px
    best = -(-P // g.cores) * (blocks * px + PAIR_CYCLES)
    for cc in range(2, g.cores + 1):
        if g.cores % cc == 0:
            share = -(-P // (g.cores // cc)) * (-(-blocks // cc) * px + PAIR_CYCLES)
            best = np.where(cc <= blocks, np.minimum(best, share), best)
    return best


def _tile_classes(g: Window, th, tw, tc, H, W, C):
    """(pixels, channels, count) per kind of tile (full or edge, per dimension) on the grid."""
    for sh, nh in _classes(g.oh, th):
        for sw, nw in _classes(g.ow, tw):
            for sc, nc in _classes(g.oc, tc):
                yield sh[H] * sw[W], sc[C], nh[H] * nw[W] * nc[C]


def _xp_cycles(g: Window, th, tw, tc, H, W, C, l1_in, params_tile, single, serial_params=False):
    """Estimated cycles of the layer per (th, tw, tc) grid point (see the constants above):
    per tile max(compute on the busiest core, its DMA) + TILE_CYCLES; the spatial pipeline
    loads each channel tile's parameters between tiles, the channel pipeline the input once
    (serial_params: and each parameter tile after the previous tile's compute)."""
    k_words = g.kh * g.kw * g.c / 4
    px = k_words * WORD_CYCLES + g.kh * ROW_CYCLES + PIXEL_CYCLES
    total = np.zeros(H.shape)
    for P, tcs, count in _tile_classes(g, th, tw, tc, H, W, C):
        comp = _core_cycles(g, P, tcs, px)
        if g.kernel == "im2col":
            comp = comp + -(-P // g.cores) * g.kh * g.kw * g.c * IM2COL_CYCLES
        if g.residual:          # the fused add's pass over the tile (its own fork)
            comp = comp + -(-(P * tcs) // g.cores) * ADD_CYCLES + FORK_CYCLES
        # spatial: the next input and this output move meanwhile; channel: parameters
        if serial_params:
            total += count * (np.maximum(comp, P * tcs * (2 if g.residual else 1) / DMA_BYTES_PER_CYCLE) +
                              params_tile[C] / DMA_BYTES_PER_CYCLE + TILE_CYCLES)
            continue
        dma = np.where(single, params_tile[C], l1_in) + P * tcs * (2 if g.residual else 1)
        total += count * (np.maximum(comp, dma / DMA_BYTES_PER_CYCLE) + TILE_CYCLES)
    n_c = -(-g.oc // tc)[C]
    return total + np.where(single, l1_in, n_c * params_tile[C]) / DMA_BYTES_PER_CYCLE


def _inner_cycles(g: Window, th, tw, tc, H, W, C, l1_in, params_tile, in_bufs, par_bufs=2):
    """Estimated cycles of the inner pipeline (spatial tiles outer, channel tiles inner): per
    tile max(compute, its parameters' and outputs' DMA) + TILE_CYCLES at the flipped input's
    word rate; per spatial tile the flip, and with one input buffer its load while the cores
    wait."""
    k_words = g.kh * g.kw * g.c / 4
    px = k_words * FLIP_WORD_CYCLES + g.kh * ROW_CYCLES + PIXEL_CYCLES
    total = np.zeros(H.shape)
    for P, tcs, count in _tile_classes(g, th, tw, tc, H, W, C):
        comp = _core_cycles(g, P, tcs, px)
        if par_bufs == 1:       # the next parameters load after this tile's compute
            total += count * (np.maximum(comp, P * tcs / DMA_BYTES_PER_CYCLE) +
                              params_tile[C] / DMA_BYTES_PER_CYCLE + TILE_CYCLES)
        else:
            total += count * (np.maximum(comp, (params_tile[C] + P * tcs) / DMA_BYTES_PER_CYCLE) +
                              TILE_CYCLES)
    n_sp = (-(-g.oh // th))[H] * (-(-g.ow // tw))[W]
    per_sp = l1_in / 4 / g.cores * FLIP_CYCLES + FORK_CYCLES
    if in_bufs == 1:
        per_sp = per_sp + l1_in / DMA_BYTES_PER_CYCLE
    return total + n_sp * per_sp + l1_in / DMA_BYTES_PER_CYCLE


def plan_window(g: Window, budget: int):
    """(best Tiling or None, smallest L1 bytes any tiling needs)."""
    th = _sizes(g.oh)
    tw = _sizes(g.ow)
    opg, ipg = g.oc // g.groups, g.c // g.groups
    if g.groups == 1:
        tc = _sizes(g.oc)
    else:                                   # whole groups per channel tile
        tc = _sizes(g.groups) * opg
    rows_sum, rows_max = _clipped_extent(g.oh, th, g.sh, g.kh, g.dh, g.pt, g.h)
    cols_sum, cols_max = _clipped_extent(g.ow, tw, g.sw, g.kw, g.dw, g.pl, g.w)
    n_h = -(-g.oh // th)
    n_w = -(-g.ow // tw)
    n_c = -(-g.oc // tc)
    in_chans = np.full(len(tc), g.c) if g.groups == 1 else (tc // opg) * ipg
    # channels read summed over channel tiles: every tile needs all inputs when groups == 1
    chan_sum = n_c * g.c if g.groups == 1 else np.full(len(tc), g.c)

    params_tile = _align4(tc * g.w_per_oc) + tc * g.p_per_oc + _align4(g.p_fixed)
    params_total = g.oc * g.w_per_oc + g.oc * g.p_per_oc + g.p_fixed
    out_total = g.oc * g.oh * g.ow * (2 if g.residual else 1)
    in_needed = g.c * _touched(g.oh, g.sh, g.kh, g.dh, g.pt, g.h) * _touched(g.ow, g.sw, g.kw, g.dw, g.pl, g.w)
    lower = in_needed + params_total + out_total

    H, W, C = np.meshgrid(np.arange(len(th)), np.arange(len(tw)), np.arange(len(tc)), indexing="ij")
    # every L1 buffer starts 4-byte aligned (int32 parameters, word DMA)
    l1_in = _align4(rows_max[H] * cols_max[W] * in_chans[C])
    l1_out = _align4(th[H] * tw[W] * tc[C])
    n_sp = n_h[H] * n_w[W]
    single = n_sp == 1
    n_tiles = n_sp * n_c[C]
    # spatial pipeline: in/out double-buffered, params once per channel tile
    l1_sp = 2 * l1_in + 2 * l1_out + params_tile[C]
    # channel pipeline (one spatial tile): params and out double-buffered when n_c > 1
    dbl = np.where(n_c[C] > 1, 2, 1)
    l1_ch = l1_in + dbl * (params_tile[C] + l1_out)
    planes = (g.plane_cores * ((th[H] - 1) * g.sh + (g.kh - 1) * g.dh + 1) * _align4((tw[W] - 1) * g.sw + g.plane_extra)
              if g.plane_cores else 0)
    res = l1_out if g.residual else 0
    scratch = _align4(g.scratch) + planes + res
    l1 = np.where(single, l1_ch, l1_sp) + scratch
    # the Xpulp convs may also run the channel pipeline on one parameter buffer (params_single)
    l1_ps = np.where(single & (n_c[C] > 1), l1_in + params_tile[C] + dbl * l1_out + scratch, np.iinfo(np.int64).max) \
        if g.kernel else None
    # one spatial tile reads its input box once (every channel tile its own channels when
    # grouped); several re-read the boxes per channel tile when groups == 1
    traffic = np.where(single, rows_sum[H] * cols_sum[W] * g.c,
                       rows_sum[H] * cols_sum[W] * chan_sum[C]) + params_total + out_total
    smallest = int(l1.min()) if l1_ps is None else int(min(l1.min(), l1_ps.min()))

    def pick(l1, cost):
        """(cost, index) of the best grid point within the budget, or None"""
        ok = l1 <= budget
        if not ok.any():
            return None
        # a kernel blocked over tc_multiple channels (the Xpulp conv: 4) runs a partial block
        # several times slower: keep whole blocks whenever some tiling with them fits
        whole = ok & ((tc[C] % g.tc_multiple == 0) | (tc[C] == g.oc))
        if whole.any():
            ok = whole
        if g.all_channels and (ok & (tc[C] == g.oc)).any():
            ok = ok & (tc[C] == g.oc)
        idx = np.lexsort((l1[ok], -tw[W][ok], traffic[ok], cost[ok]))[0]
        return cost[ok][idx], (H[ok][idx], W[ok][idx], C[ok][idx])

    cost = traffic + TILE_OVERHEAD * n_tiles
    if g.kernel:
        cost = _xp_cycles(g, th, tw, tc, H, W, C, l1_in, params_tile, single)
    best = pick(l1, cost)
    params_single = False
    if l1_ps is not None:
        alt = pick(l1_ps, _xp_cycles(g, th, tw, tc, H, W, C, l1_in, params_tile, single, serial_params=True))
        if alt is not None and (best is None or alt[0] < best[0]):
            best, l1, params_single = alt, l1_ps, True
    in_bufs = 0
    if g.kernel == "direct" and g.groups == 1 and not g.residual and g.kh * g.kw > 1:
        # spatial tiles outer, channel tiles inner (not the 1x1 pointwise path: no flip, and
        # not measured there); outputs double-buffered
        big = np.iinfo(np.int64).max
        inner = None
        for nb, npar in ((2, 2), (1, 2), (2, 1), (1, 1)):
            l1_in_n = np.where(~single & (n_c[C] > 1), nb * l1_in + npar * params_tile[C] + 2 * l1_out + scratch, big)
            alt = pick(l1_in_n, _inner_cycles(g, th, tw, tc, H, W, C, l1_in, params_tile, nb, npar))
            if alt is not None and (inner is None or alt[0] < inner[0][0]):
                inner = alt, l1_in_n, nb, npar
        if inner is not None and (best is None or inner[0][0] < INNER_MARGIN * best[0]):
            best, l1, in_bufs, params_single = inner[0], inner[1], inner[2], inner[3] == 1
        if in_bufs:     # the input read once per spatial tile
            traffic = rows_sum[H] * cols_sum[W] * g.c + params_total * n_sp + out_total
    if best is None:
        return None, smallest
    h, w, c = best[1]
    pipeline = "inner" if in_bufs else "channel" if n_sp[h, w, c] == 1 else "spatial"
    return Tiling(pipeline=pipeline, th=int(th[h]), tw=int(tw[w]), tc=int(tc[c]),
                  n_h=int(n_h[h]), n_w=int(n_w[w]), n_c=int(n_c[c]),
                  in_rows=int(rows_max[h]), in_cols=int(cols_max[w]), in_chans=int(in_chans[c]),
                  l1_in=int(l1_in[h, w, c]), l1_out=int(l1_out[h, w, c]),
                  l1_params=int(params_tile[c]), l1_bytes=int(l1[h, w, c]),
                  l2_l1_bytes=int(traffic[h, w, c]), lower_bound=int(lower),
                  l1_scratch=int(np.broadcast_to(scratch - res, l1.shape)[h, w, c]),
                  params_single=params_single, l1_res=int(np.broadcast_to(res, l1.shape)[h, w, c]),
                  cores=g.cores, in_bufs=in_bufs), smallest


def plan_linear(in_f: int, out_f: int, p_per_oc: int, budget: int):
    """Linear = the channel pipeline over output features on a 1x1 plane."""
    g = Window(c=in_f, h=1, w=1, oc=out_f, oh=1, ow=1, kh=1, kw=1, sh=1, sw=1, dh=1, dw=1,
               pt=0, pl=0, groups=1, w_per_oc=in_f, p_per_oc=p_per_oc, p_fixed=0)
    return plan_window(g, budget)


def plan_global_pool(c: int, hw: int, budget: int, tc_multiple: int = 1):
    """Channel tiles of all hw pixels; double-buffered when there is more than one.
    tc_multiple: channel tiles the kernel prefers (the Xpulp one: whole words)."""
    return plan_window(Window(c=c, h=1, w=hw, oc=c, oh=1, ow=1, kh=1, kw=hw, sh=1, sw=1,
                              dh=1, dw=1, pt=0, pl=0, groups=c, w_per_oc=0, p_per_oc=0, p_fixed=8,
                              tc_multiple=tc_multiple), budget)


def plan_flat(n_units: int, unit_in: int, unit_out: int, fixed: int, budget: int):
    """Element-wise ops over the flat HWC buffers in chunks of units (add, requant: one
    element; concat: one pixel); inputs and output double-buffered when there is more than
    one chunk. unit_in / unit_out: L1 bytes per unit; fixed: parameter bytes."""
    per = unit_in + unit_out
    lower = n_units * per + fixed

    def l1_of(t, n):
        return (_align4(unit_in * t) + _align4(unit_out * t)) * (1 if n == 1 else 2) + _align4(fixed)

    smallest = l1_of(1, n_units)
    t = n_units if l1_of(n_units, 1) <= budget else (budget - _align4(fixed)) // (2 * per)
    while t >= 1:
        n = -(-n_units // t)
        tb = -(-n_units // n)             # balance the chunks
        if l1_of(tb, n) <= budget:
            return Tiling(pipeline="flat", th=1, tw=tb, tc=1, n_h=1, n_w=n, n_c=1, in_rows=1, in_cols=tb,
                          in_chans=unit_in, l1_in=_align4(unit_in * tb), l1_out=_align4(unit_out * tb),
                          l1_params=_align4(fixed), l1_bytes=l1_of(tb, n), l2_l1_bytes=lower,
                          lower_bound=lower), smallest
        t -= 1                            # alignment padding pushed it over
    return None, smallest
