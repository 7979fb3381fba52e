"""Conv layers on NE16 (GAP9's convolution accelerator), platform=gvsoc-gap9 only.

Which convs go (eligible), NE16's L1 tiling, the .bin layout and its packing, the spec of
templates/gap9/conv2d_ne16.c.j2. What NE16 computes (nn_ne16.h, tests/test_ne16.py):
unsigned activations u = x ^ 0x80 = x + 128 (pads hold zp + 128), int8 weights packed
bit-serially (ne16_weights.py), 32-bit accumulators streamed out; so
  acc_ne16 = sum(u * w) = sum((x - zp) * w) + (zp + 128) * sum(w)
and the cores requantize bias' + acc_ne16 with bias' = bias - (zp + 128) * sum(w), folded
into the bias section at build time: the same integer the cluster path requantizes, so the
same rounding (nn_xp_requant, round half to even), bit for bit.

Stride 2 ("rows" mode: 3x3/2, the 7x7/2 stem, the 1x1/2 downsamples): NE16 has no strided
mode, but its input streamer takes any pixel and row stride and reads a pixel's channels as
contiguous bytes from any byte address (ne16_load.cpp, stream.cpp). So kernel row dy is one
1x1 job whose "pixel" (r, c) is the kw * ic bytes at padded input row s * r + dy, column s * c
(the kw neighbouring pixels' channels, HWC), pixel stride s * ic, row stride s * pw * ic, with
the weights of that kernel row as kw * ic input channels; the kh jobs accumulate through
streamin. NE16 computes only the outputs the layer keeps, at 1x1 mode's rate (31 + k cycles
per 16 channels and 3x3 pixels, against 4x the outputs at 43 + 8k before). Where the
estimate says faster, a 3x3/2 tile's windows are gathered densely instead
(ne16_geometry.dense_rows: the DMA brings each output pixel's kw * ic bytes per kernel row,
every 3x3 subtile of NE16 full), and where the whole map's buffers fit L1, as tap jobs
(ne16_geometry.taps: one 1x1 job per kernel tap over ic channels, its weights streamed per job,
so the tile keeps 32 output channels and all output rows).

Tiles: whole output rows (NE16's padding needs the full width), tc output channels (a
multiple of NE16's 32 per step, or all), every input channel in one job; or, when the weights
crowd L1 (ResNet-18's 512x7x7: 4.6 KiB per output channel), the input channels in n_g groups
of kg, one job each, NE16 streaming the previous groups' 32-bit sums back in (streamin), so
the tile keeps 32 output channels and every row (measured: 1.6x the cluster in 16-channel
tiles before, see README).
"""
from __future__ import annotations


import numpy as np

from ... import ops as nnsops
from ...errors import UserError
from .. import base
from . import ne16_weights, tiling
from .ne16_geometry import (dense, dense_cols, dense_rows, dense_slots, dr_rows, dr_slots, geometry as _geometry, in_rows, jobs,
                            stack_bytes, stacked, tap_jobs, taps, taps_slots, weight_row)

ENGINES = ("ne16", "cluster")
TAP_SECTION = "weight_taps"     # + tc: the weights of a tap-job tiling, tap_tiles' layout
TP_OUT = 32
TP_IN = ne16_weights.TP_IN


def enabled(opts, platform, where) -> bool:
    """kernels.ne16: auto = on for gvsoc-gap9 (the only platform with NE16's model)."""
    v = opts["kernels"].get("ne16", "auto")
    if v == "auto":
        return platform == "gvsoc-gap9"
    if v and platform != "gvsoc-gap9":
        raise UserError(f"{where(None, 'kernels', 'ne16')}: kernels.ne16 = true needs platform=gvsoc-gap9 "
                        f"(GVSoC's GAP9 model has NE16; platform={platform} does not): set it to auto or false")
    return bool(v)


def mode(layer, graph):
    """'3x3' or '1x1' (stride 1) or 'rows' (stride 2, kernels up to 7x7, pads below the
    kernel) when NE16 can run the conv (dense, no dilation, int8 weights, a bias fold that
    fits int32), else None."""
    if not (nnsops.is_conv(layer) and nnsops.is_dense(layer)) or layer.weight is None:
        return None
    a = layer.attrs
    if tuple(a.get("dilation", (1, 1))) != (1, 1):
        return None
    k, stride, pads = tuple(a["kernel"]), tuple(a["stride"]), tuple(a["pads"])
    if stride == (1, 1):
        m = {(3, 3): "3x3", (1, 1): "1x1"}.get(k)
        if m is None or (m == "1x1" and any(pads)):
            return None
    elif stride == (2, 2) and max(k) <= 7 and pads[0] < k[0] and pads[2] < k[0] \
            and pads[1] < k[1] and pads[3] < k[1]:
        m = "rows"          # one 1x1 job per kernel row, strided by NE16's input strides
    else:
        return None
    w = np.asarray(layer.weight)
    if w.dtype.kind not in "iu" or w.min() < -128 or w.max() > 127:
        return None
    b = fold_bias(layer, graph)
    if b.min() < -2**31 or b.max() >= 2**31:
        return None
    return m


def fold_bias(layer, graph) -> np.ndarray:
    """bias - (zp + 128) * sum(w) per output channel, int64 (see the module's docstring)."""
    zp = int(graph.tensor(layer.inputs[0]).q.zero_point)
    w = np.asarray(layer.weight).astype(np.int64)
    bias = np.zeros(w.shape[0], np.int64) if layer.bias is None else np.asarray(layer.bias).astype(np.int64)
    return bias - (zp + 128) * w.reshape(w.shape[0], -1).sum(1)


def _rows_per_tile(oh) -> list:
    """Candidate output rows per tile, best first: at least 4 tiles when there are 6 rows or
    more (NE16 computes one tile while the cores requantize the one before), multiples of 3
    first (NE16's 3x3 output pixels per step), then the rest, fewer rows last."""
    cap = oh if oh < 6 else max(3, -(-(-(-oh // 4)) // 3) * 3)
    rows = list(range(min(cap, oh), 0, -1))
    fills = [r for r in rows if r % 3 == 0 or r == oh]
    return fills + [r for r in rows if r not in fills]


def _tile_bytes(i, o, kh, row, th, tc, in_bufs, w_grp=None, stack=False, c_inner=False, w_stream=False,
                dense_tile=False, dr=False, taps=False) -> dict:
    """L1 bytes of a tile; w_grp (bytes of one output channel's input-channel group) when the
    input channels are split: two group buffers (the DMA brings group g + 1 while NE16 runs g)
    and two bias/mult/shift buffers (tile k's load while the cores requantize tile k - 1);
    c_inner ("rows" mode, channel tiles inner): every channel tile's bias/mult/shift in L1 at
    once, and its weights too, or (w_stream) two channel tiles' weights at a time."""
    d = {"l1_in": tiling._align4(in_rows(o, th, kh) * o["pw"] * i["c"])
         + (tiling._align4(stack_bytes(o, th, kh, i["c"])) if stack else 0), "l1_acc": 4 * th * o["w"] * tc,
         "l1_out": tiling._align4(th * o["w"] * tc)}
    if dense_tile:          # ne16_geometry.dense: the read pixels only, 3 rows of dense_cols and a margin
        d.update(l1_in=dense_slots(th * o["w"]) * i["c"], l1_acc=4 * dense_slots(th * o["w"]) * tc)
    if dr:                  # ne16_geometry.dense_rows: kw * ic bytes per pixel of each kernel-row buffer
        kw = o["pw"] - (o["w"] - 1) * o["s"]
        d.update(l1_in=tiling._align4(sum(dr_slots(o, th, kh)) * kw * i["c"]), l1_acc=4 * dense_slots(th * o["w"]) * tc)
    if taps:                # ne16_geometry.taps: the whole map, tap jobs, weights streamed per job
        # L1: input, acc0, wmid, acc1, w_single, out, par. A pair's weights (l1_wp) lie over the
        # accumulator buffer not in use and wmid beside it (acc0 + wmid or wmid + acc1); one output
        # and one bias/mult/shift buffer (a tile's are used up before the next tile's come)
        kw = o["pw"] - (o["w"] - 1) * o["s"]
        d.update(l1_in=tiling._align4(sum(taps_slots(o, kh)) * kw * i["c"]), l1_acc=4 * 3 * dense_cols(th * o["w"]) * tc,
                 l1_ws=tiling._align4(tc * i["c"]), l1_wp=tiling._align4(2 * tc * i["c"]), l1_par=3 * 4 * tc)
        d["l1_wmid"] = max(0, d["l1_wp"] - d["l1_acc"])
        d["l1_w"] = d["l1_wmid"] + d["l1_ws"]
        d["l1_bytes"] = d["l1_in"] + 2 * d["l1_acc"] + d["l1_out"] + d["l1_w"] + d["l1_par"]
        return d
    if c_inner:
        n_c = -(-o["c"] // tc)
        d.update(l1_w=(2 if w_stream else n_c) * tiling._align4(tc * row), l1_par=n_c * 3 * 4 * tc,
                 w_ctile=tiling._align4(tc * row), w_stream=w_stream)
    elif w_grp is None:
        d.update(l1_w=tiling._align4(tc * row), l1_par=3 * 4 * tc)
    else:
        d.update(l1_w=2 * tiling._align4(tc * w_grp), l1_par=2 * 3 * 4 * tc)
    d["l1_bytes"] = in_bufs * d["l1_in"] + 2 * (d["l1_acc"] + d["l1_out"]) + d["l1_w"] + d["l1_par"]
    return d


def _group_sizes(ic) -> list:
    """Input channels per group when a layer's are split, fewest groups first: multiples of
    NE16's 16 channels per step, as even as they come (ceil(ic / n) rounded up to 16)."""
    out = []
    for n in range(2, -(-ic // TP_IN) + 1):
        kg = -(-(-(-ic // n)) // TP_IN) * TP_IN
        if kg < ic and kg not in out:
            out.append(kg)
    return out


def _in_bytes(i, o, kh, pt, th, n_c):
    s = o["s"]
    return n_c * sum(min(i["h"], (min(o["h"], (t + 1) * th) - 1) * s + kh - pt) - max(0, t * th * s - pt)
                     for t in range(-(-o["h"] // th))) * i["w"] * i["c"]


def plan_tiling(layer, graph, m, budget):
    """(tiling dict or None): whole output rows; accumulators and outputs double buffered,
    inputs too when they fit (in_bufs). Preferred, in order:
    1. every input channel in one job: row counts NE16 fills (a multiple of its 3 output rows
       per step, or all rows) before more output channels per tile (all, else multiples of its
       32 per step), then double-buffered inputs;
    2. when the weights crowd L1 (no 32-channel tile fits), the input channels split into
       groups (n_g jobs per tile, NE16 streaming the 32-bit sums of the groups before back in):
       all output rows first (the input tile stays in L1 for every channel tile and each weight
       is read once), fewest groups, then the most output channels;
    3. 16 or 8 output channels per tile, all input channels (before splitting this measured
       1.6x the cluster on ResNet-18's 512x7x7 3x3 convs).
    "rows" mode (stride 2): the tiling ne16_cost estimates cheapest over output rows, output
    channels (multiples of 32, all, 16, 8), one or two input buffers and the loop order
    (channel tiles outer, or inner so each input tile is loaded and prepared once, with every
    channel's weights in L1 or two channel tiles' at a time, the next one's coming while NE16
    runs this one); no input-channel groups (its kernel-row jobs already stream
    the sums)."""
    i, o, kh, kw = _geometry(layer, graph)
    row = weight_row(layer, m)
    tcs = [o["c"]] + list(range((o["c"] - 1) // TP_OUT * TP_OUT, 0, -TP_OUT))
    rows = _rows_per_tile(o["h"])
    full = [r for r in rows if r % 3 == 0 or r == o["h"]]
    pt = int(layer.attrs["pads"][0])
    dn = dense(m, kh, kw, o["s"], tuple(layer.attrs["pads"]), i["c"])
    params = o["c"] * (row + 12)
    lower = i["h"] * i["w"] * i["c"] + params + o["h"] * o["w"] * o["c"]

    def tile(d, th, tc, in_bufs, kg=None):
        n_h, n_c = -(-o["h"] // th), -(-o["c"] // tc)
        c_inner = "w_ctile" in d
        t = dict(d, pipeline="ne16", th=th, tw=o["w"], tc=tc, n_h=n_h, n_w=1, n_c=n_c,
                 n_tiles=n_h * n_c, in_bufs=in_bufs, l1_params=d["l1_w"] + d["l1_par"],
                 kg=kg or i["c"], n_g=1, c_inner=c_inner, w_stream=d.get("w_stream", False), dense=dn,
                 l2_l1_bytes=(o["h"] * o["w"] * i["c"] if dn else _in_bytes(i, o, kh, pt, th, 1))
                 * (1 if c_inner else n_c) + params + o["h"] * o["w"] * o["c"], lower_bound=lower)
        if kg:
            w_grp = ne16_weights.packed_size(m, kg, 1)
            t.update(n_g=-(-i["c"] // kg), w_grp=w_grp, w_last=row - (-(-i["c"] // kg) - 1) * w_grp,
                     resident=n_h == 1)
            t["l2_l1_bytes"] = (i["h"] * i["w"] * i["c"] if n_h == 1 else _in_bytes(i, o, kh, pt, th, n_c)) \
                + n_h * o["c"] * row + 12 * o["c"] + o["h"] * o["w"] * o["c"]
        return t

    if m == "rows":         # the cheapest tiling by ne16_cost's estimate (no input-channel groups)
        from . import ne16_cost
        best = None
        drs = (False, True) if dense_rows(m, kh, o["s"], i["c"]) else (False,)
        pl = int(layer.attrs["pads"][1])        # dense kernel rows: output columns whose window leaves the input
        edges = sum(1 for c in range(o["w"]) if c * o["s"] - pl < 0 or c * o["s"] - pl + kw > i["w"])
        for dr, c_inner, w_stream in [(x,) + y for x in drs for y in ((False, False), (True, False), (True, True))]:
            for tc in tcs + [c for c in (16, 8) if c < o["c"]]:
                if c_inner and tc >= o["c"] or w_stream and -(-o["c"] // tc) <= 2:
                    continue            # one channel tile: the same as channels outer; two: all fit
                for th in range(min(o["h"], 24), 0, -1):
                    for in_bufs in (2, 1):
                        d = _tile_bytes(i, o, kh, row, th, tc, in_bufs, stack=stacked(m, i["c"]), c_inner=c_inner,
                                        w_stream=w_stream, dense_tile=dn, dr=dr)
                        if d["l1_bytes"] <= budget:
                            t = dict(tile(d, th, tc, in_bufs), dr=dr, dr_edges=edges)
                            if dr:      # the DMA brings each pixel's window rows (kw * ic bytes)
                                t["l2_l1_bytes"] += (1 if c_inner else t["n_c"]) * kw * i["c"] * o["w"] * sum(
                                    sum(dr_rows(o, min(th, o["h"] - y), kh)) for y in range(0, o["h"], th)) \
                                    - (o["h"] * o["w"] * i["c"] if dn else _in_bytes(i, o, kh, pt, th, 1)) \
                                    * (1 if c_inner else t["n_c"])
                            est = ne16_cost.ne16_cycles(layer, graph, m, t, 9)
                            if best is None or est < best[0]:
                                best = (est, t)
                            break
        if taps(m, kh, kw, o["s"], i["c"]):     # the whole map per channel tile, one job per tap (dy, dx)
            for tc in tcs:
                d = _tile_bytes(i, o, kh, row, o["h"], tc, 1, taps=True)
                if d["l1_bytes"] <= budget:
                    t = dict(tile(d, o["h"], tc, 1), dr=True, dr_edges=edges, taps=True)
                    t["l2_l1_bytes"] = kw * i["c"] * o["w"] * sum(dr_rows(o, o["h"], kh)) + params + o["h"] * o["w"] * o["c"]
                    est = ne16_cost.ne16_cycles(layer, graph, m, t, 9)
                    if best is None or est < ne16_cost.TAPS_MARGIN * best[0]:
                        best = (est, t)
                    break
        return best and best[1]
    for th_set in (full, [r for r in rows if r not in full]):
        for tc in tcs:
            for in_bufs in (2, 1):
                for th in th_set:
                    d = _tile_bytes(i, o, kh, row, th, tc, in_bufs)
                    if d["l1_bytes"] <= budget:
                        return tile(d, th, tc, in_bufs)
    ths = [o["h"]] + [r for r in rows if r != o["h"]]
    for th in ths:
        for kg in _group_sizes(i["c"]):
            w_grp = ne16_weights.packed_size(m, kg, 1)
            for tc in tcs:
                for in_bufs in ((1,) if th == o["h"] else (2, 1)):
                    d = _tile_bytes(i, o, kh, row, th, tc, in_bufs, w_grp)
                    if d["l1_bytes"] <= budget:
                        return tile(d, th, tc, in_bufs, kg)
    for th_set in (full, [r for r in rows if r not in full]):
        for tc in [c for c in (16, 8) if c < o["c"]]:
            for in_bufs in (2, 1):
                for th in th_set:
                    d = _tile_bytes(i, o, kh, row, th, tc, in_bufs)
                    if d["l1_bytes"] <= budget:
                        return tile(d, th, tc, in_bufs)
    return None


def param_layout(layer, graph, m, til=None) -> list:
    """weight (NE16's bytes, one row per output channel; a tap-job tiling's: TAP_SECTION + tc,
    tap_tiles), bias (always: the folded one), mult, shift: channel-major sections, so a slice of
    the first k channels (whole channel tiles) is a prefix."""
    from ... import ops as registry
    oc = int(layer.weight.shape[0])
    wname = f"{TAP_SECTION}{til['tc']}" if til and til.get("taps") else "weight"
    counts = [(wname, "int8", oc * weight_row(layer, m)), ("bias", "int32", oc)]
    counts += [(s, "int32", n) for s, n in registry.requant_counts(layer, graph).items()]
    layout, off = [], 0
    for section, dtype, count in counts:
        layout.append((section, dtype, count, off))
        off += -(-count * np.dtype(dtype).itemsize // 4) * 4
    return layout


def weight_bytes(w, m) -> bytes:
    """NE16's bytes of OIHW int8 weights, weight_row(m) per output channel; "rows": per output
    channel one 1x1 weight per kernel row dy over (dx, ic), or stacked one over (dx, dy, ic)."""
    if m != "rows":
        return ne16_weights.pack(w, m, "OIHW")
    o, ic, kh, kw = w.shape
    if stacked(m, ic):
        return ne16_weights.pack(w.transpose(0, 3, 2, 1).reshape(o, 1, 1, kw * kh * ic), "1x1", "OHWI")
    return ne16_weights.pack(w.transpose(0, 2, 3, 1).reshape(o * kh, 1, 1, kw * ic), "1x1", "OHWI")


def tap_tiles(rows: bytes, oc, kh, kw, ic, tc) -> bytes:
    """weight_bytes' "rows" bytes ([oc][dy][dx][ic]: 1x1 packing, one byte per input channel)
    as [channel tile of tc][dy][job's dx .. dx + taps - 1 (ne16_geometry.tap_jobs)][the tile's
    channels][taps x ic]: a tap job's weights are one contiguous run (one DMA chunk train instead
    of one chunk per channel), each channel's NE16 bytes for its taps together, at the same
    offset (dy kw + dx) x chans x ic as one job per tap had; the first k channels, k a multiple
    of tc, are still a prefix (layerwise.slice_layout)."""
    w = np.frombuffer(rows, np.uint8).reshape(oc, kh, kw, ic)
    groups = sorted({(dx, nt) for _, dx, nt in tap_jobs(kh, 1)})
    return b"".join(w[c0:c0 + tc, dy, dx:dx + nt].reshape(-1, nt * ic).tobytes()
                    for c0 in range(0, oc, tc) for dy in range(kh) for dx, nt in groups)


def short_rule_shifts(bias, mult, shift, zp, span) -> np.ndarray:
    """shift per channel, or -(shift - 32) where the short requantization rule is exact for every
    bias + acc with |acc| <= span: nn_xp_rq_short_ok (nn_xpulp.h) decided at build time, in its
    own 32/64-bit arithmetic, so the dense 1x1/S tiles' cores skip the check (two 64-bit
    products, ~140 cycles per channel and core per tile)."""
    out = np.asarray(shift, np.int64).copy()
    for c, (b, mu, sh) in enumerate(zip(np.broadcast_to(bias, out.shape), np.broadcast_to(mult, out.shape), out)):
        b, mu, sh = int(b), int(mu), int(sh)
        m, ab = abs(mu) & 0xFFFFFFFF, abs(b) & 0xFFFFFFFF
        amax = (ab + span) & 0xFFFFFFFF
        if sh < 33 or sh > 55 or zp < -128 or zp > 128 or ab >= 1 << 30 or span >= 1 << 30:
            continue
        if ((amax * (m & -m)) >> 32) & 0xFFFFFFFF or ((amax * m) >> 32) & 0xFFFFFFFF >= 0x3f000000:
            continue
        out[c] = -(sh - 32)
    return out.astype(np.int32)


def pack(layer, graph, layout) -> bytes:
    """The .bin of an NE16 layer (param_layout); a dense 1x1/S layer's and a tap-job layer's
    shift section holds short_rule_shifts (conv2d_ne16.c.j2's requant_worker reads shift < 0 as
    k = -shift: no per-channel check at run time, ~140 cycles a (channel, pixel chunk) unit)."""
    m = mode(layer, graph)
    arrays = dict(base.param_arrays(layer, graph))
    arrays["weight"] = np.frombuffer(weight_bytes(np.asarray(layer.weight), m), np.int8)
    tap = next((int(sec[len(TAP_SECTION):]) for sec, *_ in layout if sec.startswith(TAP_SECTION)), None)
    if tap:
        o, ic, kh, kw = layer.weight.shape
        arrays[f"{TAP_SECTION}{tap}"] = np.frombuffer(tap_tiles(arrays["weight"].tobytes(), o, kh, kw, ic, tap), np.int8)
    arrays["bias"] = fold_bias(layer, graph).astype(np.int32)
    i, o, kh, kw = _geometry(layer, graph)
    if (tap or dense(m, kh, kw, o["s"], tuple(layer.attrs["pads"]), i["c"])) and kh * kw * i["c"] <= 32768:
        arrays["shift"] = short_rule_shifts(arrays["bias"], arrays["mult"], arrays["shift"],
                                            int(graph.tensor(layer.output).q.zero_point), kh * kw * i["c"] << 15)
    blob = bytearray(base.layout_bytes(layout))
    for section, dtype, count, offset in layout:
        raw = np.ascontiguousarray(arrays[section], dtype=np.dtype(dtype).newbyteorder("<")).reshape(-1).tobytes()
        if len(raw) != count * np.dtype(dtype).itemsize:
            raise AssertionError(f"{layer.name}: {section} has {len(raw)} B, layout says {count} values")
        blob[offset:offset + len(raw)] = raw
    return bytes(blob)


def layer_spec(layer, graph, cname, layout, m, til) -> dict:
    """What conv2d_ne16.c.j2 needs."""
    i, o, kh, kw = _geometry(layer, graph)
    pt, pl = int(layer.attrs["pads"][0]), int(layer.attrs["pads"][1])
    zp = int(graph.tensor(layer.inputs[0]).q.zero_point)
    n_jobs, k_job = jobs(m, kh, kw, i["c"])
    return {
        "jobs": n_jobs, "k_job": k_job, "w_job": weight_row(layer, m) // n_jobs, "stack": stacked(m, i["c"]),
        "dense": dense(m, kh, kw, o["s"], (pt, pl) + tuple(layer.attrs["pads"][2:]), i["c"]),
        "dr": bool(til.get("dr")),     # ne16_geometry.dense_rows: each kernel-row buffer's byte offset
        "dr_off": [int(x) * kw * i["c"] for x in np.cumsum([0] + (taps_slots(o, kh) if til.get("taps") else dr_slots(o, til["th"], kh)))[:-1]]
        if til.get("dr") else [],
        "l1_pad": tiling._align4(in_rows(o, til["th"], kh) * o["pw"] * i["c"]),   # stack: the DMA's padded tile
        "in_cols": min(i["w"], o["pw"] - pl),      # input columns inside the padded tile
        "op": "conv2d", "engine": "ne16", "name": layer.name, "cname": cname, "mode": m,
        "inputs": [dict(i, zp=zp, size=i["h"] * i["w"] * i["c"])],
        "out": dict(o, zp=int(graph.tensor(layer.output).q.zero_point), size=o["h"] * o["w"] * o["c"]),
        "act": [layer.act_min, layer.act_max], "kernel": [kh, kw], "pads": [pt, pl], "stride": o["s"],
        "pad_u8": (zp + 128) & 0xFF, "w_row": weight_row(layer, m),
        "params": {("weight" if s.startswith(TAP_SECTION) else s): {"dtype": d, "count": n, "offset": off}
                   for s, d, n, off in layout},
        "tap_jobs": [list(j) for j in tap_jobs(kh, o["s"])] if til.get("taps") else [],
        "w_taps": next((int(s[len(TAP_SECTION):]) for s, *_ in layout if s.startswith(TAP_SECTION)), 0),
        "tier": "L2", "tile": til, "l3_stream": False,
        "sections": [{"name": s, "offset": 0, "src": off, "per_oc": n // o["c"]} for s, _, n, off in layout],
    }


def placement(layer, graph, cname, budget, cluster_til, opts, ne16: bool, on, where) -> tuple:
    """plan_layer's answer for a layer of the plan, with the layer's `on` key (ne16 | cluster,
    targets.yaml) over the estimate: cluster keeps it off NE16; ne16 puts it there whatever
    the estimates say, or is a UserError naming why NE16 cannot run it."""
    if on == "cluster" or not (ne16 or on == "ne16"):
        return None, ({"why": "on: cluster (targets.yaml)"} if on == "cluster" and ne16 and mode(layer, graph) else None)
    at = where(layer.name, "on")
    if not ne16:
        raise UserError(f"{at}: ne16, but NE16 is off for this build (kernels.ne16, or a platform other "
                        f"than gvsoc-gap9, or a conv fused with its residual add): remove the key or use on: cluster")
    cores, xpulp = opts["cluster"]["cores"], opts["kernels"]["xpulp"]
    planned, why = plan_layer(layer, graph, cname, budget, cluster_til, cores, xpulp, forced=on == "ne16")
    if on == "ne16" and planned is None:
        raise UserError(f"{at}: ne16, but NE16 cannot run layer '{layer.name}': "
                        f"{(why or {}).get('why', 'not a conv NE16 implements (3x3, 1x1, depthwise 3x3, stride 2 up to 7x7)')}"
                        f"; remove the key or use on: cluster")
    return planned, why


def plan_layer(layer, graph, cname, budget, cluster_til=None, cores=9, xpulp=True, forced=False):
    """((spec, layout) or None, why or None): the conv on NE16 when NE16 can run it within
    budget and ne16_cost estimates it faster than the cluster on cluster_til; why says which
    (the estimates, or what NE16 cannot do) for an eligible conv, None for the others."""
    from . import ne16_cost
    m = mode(layer, graph)
    if m is None:
        return None, None
    til = plan_tiling(layer, graph, m, budget)
    if til is None:
        return None, {"why": f"no NE16 tiling in the L1 budget of {budget:,} B"}
    on, why = ne16_cost.choose(layer, graph, m, til, cluster_til, cores, xpulp)
    if forced:
        on, why = True, dict(why, why="on: ne16 (targets.yaml); " + why["why"])
    if not on:
        return None, why
    layout = param_layout(layer, graph, m, til)
    return (layer_spec(layer, graph, cname, layout, m, til), layout), why


def summary_line(layers):
    """One console line: how many eligible convs went to NE16, and which stayed and why."""
    why = [(lp.layer.name, lp.report) for lp in layers if lp.report.get("engine_why")]
    if not why:
        return []
    on = [n for n, r in why if r["engine"] == "ne16"]
    off = [f"{n} ({r['engine_why']})" for n, r in why if r["engine"] != "ne16"]
    return [f"NE16: {len(on)} of {len(why)} eligible convs (dense 3x3/1x1 stride 1, stride 2 up to 7x7) where the cost estimate "
            f"(ne16_cost.py) says NE16 is faster" + (f"; on the cluster: {'; '.join(off)}" if off else "")]


def reslice(lp, graph, budget):
    """A layer run layer by layer on its first k output channels (layerwise.py re-planned it
    for the cluster): its NE16 spec for those channels, the sliced .bin layout unchanged."""
    from .layerwise import sliced_layer
    k = lp.report["slice"]["channels"]
    layer = lp.layer
    sl, view = sliced_layer(graph, layer, k)
    m = mode(sl, view)
    til = plan_tiling(sl, view, m, budget)
    if til is None:
        return None
    layout = [tuple(x) for x in lp.report["slice"]["layout"]]
    spec = layer_spec(sl, view, lp.cname, layout, m, til)
    if spec["w_taps"] and not (til.get("taps") and til["tc"] == spec["w_taps"] and k % til["tc"] == 0):
        raise UserError(f"layer '{layer.name}': its {k}-channel slice plans NE16 tiles of {til['tc']} channels"
                        f"{'' if til.get('taps') else ' without tap jobs'}, its weights are laid out in tap-job tiles "
                        f"of {spec['w_taps']}: set on: cluster for it in targets.yaml")
    return spec
