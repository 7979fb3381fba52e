"""GAP9 op registry and per-layer specs: template, kernels, L1 tiling.

A layer's spec holds everything its generated code depends on: HWC shapes, zero points,
clamps, the resolved tiling (not the budget it came from), and whether its parameters come from L2 or are
staged from L3. Nothing global (buffer offsets, slab numbers) so one layer's edit never
changes another layer's code.
"""
from __future__ import annotations

import numpy as np

from ...errors import UserError
from ...resources import data_path
from dataclasses import dataclass
from typing import Callable, Optional

from ... import ops as registry
from ..base import OpImpl, flattened_from, layer_fields, window_fields, layout_bytes, param_arrays, pool_check
from . import add_short, tiling
from .conv_paths import (hwc, _p_per_oc, xp_conv_path, folds_zp, kernel_zp, folded_bias,  # noqa: F401
                         xp_preflip, xp_split_table, im2col_bytes, dw_plane_bytes, weight_row)
from ...ops import bilinear, div, instnorm, island_pool, lrn, softmax

C = data_path("kernels", "common") + "/"
G = data_path("kernels", "gap9") + "/"



def _nary_spec(layer, graph):
    """The op's spec and its L1 plan: chunks of output pixels (C values, HWC); an input of
    the output's shape streams with them (slot ("in", j): the j-th such, chunk-sized), a
    broadcast one (per channel, one value) stays whole after the parameters (("par", byte
    offset in that block))."""
    from ...ops.nary import spec
    s = dict(spec(layer, graph))
    out = hwc(graph.tensor(layer.output).shape)
    slots, n_same, off = [], 0, 8 * len(layer.inputs)
    for t, mode in zip(layer.inputs, layer.attrs["modes"]):
        if mode == "same":
            slots.append(["in", n_same])
            n_same += 1
        else:
            slots.append(["par", off])
            off += tiling._align4(_numel(graph.tensor(t).shape))
    # l3_stream: set by the memory plan when the activations live in L3 and the inputs stream
    # from there (memory.spill_plan)
    s.update(slots=slots, n_same=n_same, fixed_bytes=off, n_units=out["h"] * out["w"], unit=out["c"],
             l3_stream=False)
    return s


def _reduce_spec(layer, graph):
    """The reduction's spec and its chunk unit: an input row (W x C bytes, HWC) when H is
    kept (CBAM's mean over channels streams row by row), else the whole tensor."""
    from ...ops.reduce import spec
    s = dict(spec(layer, graph))
    i = hwc(graph.tensor(layer.inputs[0]).shape)
    units = i["h"] if not s["reduced_chw"][1] else 1
    s.update(n_units=units, unit_in=i["h"] * i["w"] * i["c"] // units,
             unit_out=_numel(graph.tensor(layer.output).shape) // units)
    return s


def _mul_spec(layer, graph):
    mode = layer.attrs["mode"]
    c = hwc(graph.tensor(layer.output).shape)["c"]
    return {"mode": mode, "unit": c if mode == "channel" else 1,
            "b_bytes": _numel(graph.tensor(layer.inputs[1]).shape)}


def bilinear_rows(layer, graph, rows_per_band: int) -> list:
    """[(first output row, rows, first input row, input rows)] of each band of output rows:
    the input rows its two source rows per output row span."""
    from ...ops import bilinear
    oh = layer.attrs["out_hw"][0]
    table = bilinear.tables(layer)[0]
    src = table[0] if table is not None else np.stack([np.arange(oh)] * 2, axis=1)
    bands = []
    for r0 in range(0, oh, rows_per_band):
        r1 = min(oh, r0 + rows_per_band)
        lo, hi = int(src[r0:r1].min()), int(src[r0:r1].max())
        bands.append((r0, r1 - r0, lo, hi - lo + 1))
    return bands


def bilinear_tiling(layer, graph, budget, cores=8, xpulp=True):
    """Bands of output rows with the input rows they read, double-buffered when there are
    several (tiling 'flat': tw = output rows per band, in_rows = the most input rows a band
    reads); the index section stays in L1."""
    i, o = hwc(graph.tensor(layer.inputs[0]).shape), hwc(graph.tensor(layer.output).shape)
    params = tiling._align4(4 * registry_counts(layer, graph))
    smallest = None
    for t in range(o["h"], 0, -1):
        bands = bilinear_rows(layer, graph, t)
        rows_in = max(b[3] for b in bands)
        l1_in, l1_out = tiling._align4(rows_in * i["w"] * i["c"]), tiling._align4(t * o["w"] * o["c"])
        l1 = (l1_in + l1_out) * (1 if len(bands) == 1 else 2) + params
        smallest = l1 if smallest is None else min(smallest, l1)
        if l1 <= budget:
            moved = sum(b[3] for b in bands) * i["w"] * i["c"] + o["h"] * o["w"] * o["c"] + params
            return tiling.Tiling(pipeline="flat", th=1, tw=t, tc=1, n_h=1, n_w=len(bands), n_c=1,
                                 in_rows=rows_in, in_cols=i["w"], in_chans=i["c"], l1_in=l1_in,
                                 l1_out=l1_out, l1_params=params, l1_bytes=l1, l2_l1_bytes=moved,
                                 lower_bound=i["h"] * i["w"] * i["c"] + o["h"] * o["w"] * o["c"] + params), smallest
    return None, smallest


def registry_counts(layer, graph) -> int:
    """The number of 4-byte parameter values of a layer whose sections are all int32."""
    from ... import ops as registry
    return sum(registry.requant_counts(layer, graph).values())


def staged_bytes(layer) -> int:
    """The parameter bytes that may be staged from L3 in channel slabs (0: the layer's
    parameters stay in L2): the op table's `staged` hook (conv and linear weights, an island
    pool's per-channel tables)."""
    impl = OPS.get(layer.op)
    return impl.staged(layer) if impl is not None and impl.staged else 0


def _weight_bytes(layer) -> int:
    return int(layer.weight.size) if layer.weight is not None else 0


def _island_table_bytes(layer) -> int:
    return 4 * int(layer.bias.size) if int(layer.attrs["tables"]) > 1 else 0


def _lut_check(layer):
    """Per-channel tables stay in L1 beside a chunk of whole pixels: the tiling's budget
    decides (a budget error names the bytes needed); MobileNetV3's 240-channel hard-swish
    islands take 60 KiB of the 112 KiB."""
    return None


def _lut_tiling(layer, graph, budget, cores, xpulp):
    unit = hwc(graph.tensor(layer.output).shape)["c"] if layer.weight.shape[0] > 1 else 1
    return tiling.plan_flat(_n(layer, graph) // unit, unit, unit, int(layer.weight.size), budget)

def _numel(shape):
    return int(np.prod(shape))


def window(layer, graph, cores=8, xpulp=True) -> tiling.Window:
    i = hwc(graph.tensor(layer.inputs[0]).shape)
    o = hwc(graph.tensor(layer.output).shape)
    a = layer.attrs
    kh, kw = a["kernel"]
    conv = registry.is_conv(layer)      # else a pool
    fixed = 0 if conv else 8
    # the im2col path: its buffers, and weight rows padded to whole words (weight_row)
    im2col = conv and cores > 0 and xp_conv_path(layer, graph, xpulp) == "im2col"
    # the depthwise path: per core, a plane of one channel's input rows (dw_plane_bytes)
    dw = conv and cores > 0 and xp_conv_path(layer, graph, xpulp) == "dw"
    return tiling.Window(c=i["c"], h=i["h"], w=i["w"], oc=o["c"], oh=o["h"], ow=o["w"], kh=kh, kw=kw,
                         sh=a["stride"][0], sw=a["stride"][1],
                         dh=a.get("dilation", (1, 1))[0], dw=a.get("dilation", (1, 1))[1],
                         pt=a["pads"][0], pl=a["pads"][1],
                         groups=a.get("groups", 1) if conv else i["c"],
                         w_per_oc=(tiling._align4 if im2col else int)(int(np.prod(layer.weight.shape[1:])))
                         if conv else 0,
                         p_per_oc=_p_per_oc(layer) if conv else 0, p_fixed=fixed,
                         scratch=cores * im2col_bytes(layer, graph) if im2col else 0,
                         tc_multiple=4 if (conv and xp_conv_path(layer, graph, xpulp) in ("direct", "im2col"))
                         or (not conv and xpulp) else 1,
                         kernel=xp_conv_path(layer, graph, xpulp) if conv and cores > 0 and
                         xp_conv_path(layer, graph, xpulp) in ("direct", "im2col") else "", cores=max(cores, 1),
                         plane_cores=cores if dw else 0, plane_extra=4 * -(-kw // 4) if dw else 0,
                         all_channels=not conv and xpulp and cores > 0,
                         residual=conv and "residual" in a)


def plan_tiling(layer, graph, budget, cores=8, xpulp=True):
    """(Tiling or None, smallest budget that works): the op table's `tiling` hook; cores: the
    cluster's, for per-core scratch; xpulp: the target's kernels.xpulp. None, 0: no L1 (an
    alias: reshape)."""
    impl = OPS.get(layer.op)
    if impl is None or impl.tiling is None:
        return None, 0
    return impl.tiling(layer, graph, budget, cores, xpulp)


def _window_tiling(layer, graph, budget, cores, xpulp):
    """Convs and pools. A conv whose im2col buffers fit beside no tiling is planned without
    them (plain kernel)."""
    til, need = tiling.plan_window(window(layer, graph, cores, xpulp), budget)
    if til is None and registry.is_conv(layer) and xp_conv_path(layer, graph, xpulp) in ("im2col", "dw"):
        # the kernel's buffers do not fit beside any tiling: the plain kernel needs none
        til, need = tiling.plan_window(window(layer, graph, 0), budget)
    return til, need


def _linear_tiling(layer, graph, budget, cores, xpulp):
    out_f, in_f = layer.weight.shape
    return tiling.plan_linear(int(in_f), int(out_f), _p_per_oc(layer), budget)


def _global_pool_tiling(layer, graph, budget, cores, xpulp):
    s = graph.tensor(layer.inputs[0]).shape
    return tiling.plan_global_pool(int(s[1]), int(s[2] * s[3]), budget, 4 if xpulp else 1)


def _island_tiling(layer, graph, budget, cores, xpulp):
    """Channel tiles of all pixels, each with its channels' 1 KiB tables."""
    s, per = graph.tensor(layer.inputs[0]).shape, int(layer.attrs["tables"]) > 1
    return tiling.plan_window(tiling.Window(
        c=int(s[1]), h=1, w=int(s[2] * s[3]), oc=int(s[1]), oh=1, ow=1, kh=1, kw=int(s[2] * s[3]), sh=1, sw=1,
        dh=1, dw=1, pt=0, pl=0, groups=int(s[1]), w_per_oc=0, p_per_oc=1024 if per else 0,
        p_fixed=0 if per else 1024), budget)


def _n(layer, graph):
    return _numel(graph.tensor(layer.output).shape)


def _add_tiling(layer, graph, budget, cores, xpulp):
    """Its parameters: 2 multipliers and a shift (TFLite's rule: 3 and 3)."""
    return tiling.plan_flat(_n(layer, graph), 2, 1, 4 * registry_counts(layer, graph), budget)


def _requant_tiling(layer, graph, budget, cores, xpulp):
    return tiling.plan_flat(_n(layer, graph), 1, 1, 8, budget)


def _softmax_tiling(layer, graph, budget, cores, xpulp):
    """Chunks of whole rows (a pixel's channels), the exp table with the parameters."""
    r, row = softmax.rows(layer, graph)
    return tiling.plan_flat(r, row, row, 1024 + 8, budget)


def _reduce_tiling(layer, graph, budget, cores, xpulp):
    """Chunks of input rows (or the whole tensor), the cores split the outputs."""
    s = _reduce_spec(layer, graph)
    return tiling.plan_flat(s["n_units"], s["unit_in"], s["unit_out"], 8, budget)


def _nary_tiling(layer, graph, budget, cores, xpulp):
    """Chunks of pixels; broadcast inputs whole beside the parameters."""
    s = _nary_spec(layer, graph)
    return tiling.plan_flat(s["n_units"], s["unit"] * s["n_same"], s["unit"], s["fixed_bytes"], budget)


def _move_tiling(layer, graph, budget, cores, xpulp):
    """The whole input and the table stay in L1; index chunks stream."""
    n_in = _numel(graph.tensor(layer.inputs[0]).shape)
    return tiling.plan_flat(_n(layer, graph), 4, 1, 256 + n_in, budget)


def _pixels_tiling(stats_per_channel):
    """Chunks of whole pixels (instnorm: read twice, its statistics 32 B per channel; lrn:
    the window runs over the channels)."""
    def plan(layer, graph, budget, cores, xpulp):
        c = hwc(graph.tensor(layer.output).shape)["c"]
        return tiling.plan_flat(_n(layer, graph) // c, c, c, stats_per_channel * c, budget)
    return plan


def _broadcast_tiling(fixed):
    """mul (8 B of parameters) and div (none): the broadcast operand whole beside them."""
    def plan(layer, graph, budget, cores, xpulp):
        m, n = _mul_spec(layer, graph), _n(layer, graph)
        if m["mode"] == "same":
            return tiling.plan_flat(n, 2, 1, fixed, budget)
        return tiling.plan_flat(n // m["unit"], m["unit"], m["unit"], fixed + m["b_bytes"], budget)
    return plan


def _concat_tiling(layer, graph, budget, cores, xpulp):
    c = hwc(graph.tensor(layer.output).shape)["c"]
    return tiling.plan_flat(_n(layer, graph) // c, c, c, 8 * len(layer.inputs), budget)


def layer_spec(layer, graph, cname, layout, tier, til, xpulp=True) -> dict:
    spec = dict(layer_fields(layer, graph, cname, layout, hwc), has_bias=layer.bias is not None, tier=tier,
                tile=None if til is None else til.as_dict())
    impl = OPS[layer.op]
    if impl.spec:
        spec.update(impl.spec(layer, graph))
    a = layer.attrs
    if registry.has_window(layer):
        spec.update(window_fields(layer))
    if impl.xpulp:
        spec["xpulp"] = xpulp
    if "residual" in a:         # a fused residual add (residual.py): out is the add's tensor,
        spec["residual"] = a["residual"]    # the conv requantizes to its own zero point
        spec["out"]["zp"] = a["residual"]["conv_zp"]
        spec["xpulp"] = xpulp
    if til is not None:
        spec["l1_parts"] = l1_parts(til)
    if impl.more_spec:
        impl.more_spec(layer, graph, spec, til, xpulp)
    return spec


def _conv_spec(layer, graph, spec, til, xpulp):
    """The Xpulp kernel path and its buffers, the weights' row and their L1 sections."""
    spec["w_per_oc"] = weight_row(layer, graph, til, xpulp) or int(np.prod(layer.weight.shape[1:]))
    path = xp_conv_path(layer, graph, xpulp)
    # a budget too small for the kernel's buffers planned the layer without them
    spec["xp_path"] = "plain" if path in ("im2col", "dw") and til is not None and not til.l1_scratch else path
    spec["im2col_bytes"] = im2col_bytes(layer, graph)
    spec["xp_preflip"] = xp_preflip(layer, graph, til, xpulp)
    spec["xp_split"] = xp_split_table(layer, graph, til, xpulp)    # the cores' shares, per tile shape
    spec["in_zp_kernel"] = kernel_zp(layer, graph)      # 0 when folded into the bias (pack_params)
    if spec["xp_path"] == "dw":
        spec["dw_scratch_bytes"] = dw_plane_bytes(layer, til)
    if til is not None:
        spec["sections"] = tile_sections(spec["params"], til.tc, spec["w_per_oc"])


def _linear_spec(layer, graph, spec, til, xpulp):
    spec["w_per_oc"] = int(layer.weight.shape[1])
    if til is not None:
        spec["sections"] = tile_sections(spec["params"], til.tc, spec["w_per_oc"])


def _island_spec(layer, graph, spec, til, xpulp):
    if til is not None and spec["tables"] > 1:   # 1 KiB of tables per channel
        spec["sections"] = [{"name": "bias", "offset": 0, "src": spec["params"]["bias"]["offset"], "per_oc": 1024}]


def _add_spec(layer, graph, spec, til, xpulp):
    """The 32-bit rule proved exact for this add's parameters (add_short.py), or None."""
    z = [int(graph.tensor(n).q.zero_point) for n in (*layer.inputs, layer.output)]
    spec["add_short"] = xpulp and len(z) == 3 and add_short.layer_rule(
        registry.requant_params(layer, graph), *z, int(layer.act_min), int(layer.act_max))


def _concat_spec(layer, graph, spec, til, xpulp):
    offs = np.cumsum([0] + [hwc(graph.tensor(t).shape)["c"] for t in layer.inputs])
    spec["channel_offsets"] = [int(x) for x in offs[:-1]]


def l1_parts(t) -> list:
    """The named buffers carved from the layer's one L1 block, [(name, bytes)], summing to
    t.l1_bytes (see tiling: which buffers a pipeline double-buffers)."""
    if t.pipeline in ("spatial", "flat") and t.n_tiles > 1:
        parts = [("in0", t.l1_in), ("in1", t.l1_in), ("out0", t.l1_out), ("out1", t.l1_out),
                 ("par0", t.l1_params)]
    elif t.pipeline == "inner":         # spatial tiles outer, channel tiles inner
        parts = [("in0", t.l1_in)] + ([("in1", t.l1_in)] if t.in_bufs == 2 else []) + \
            [("par0", t.l1_params)] + ([] if t.params_single else [("par1", t.l1_params)]) + \
            [("out0", t.l1_out), ("out1", t.l1_out)]
    elif t.pipeline == "channel" and t.n_c > 1 and t.params_single:
        parts = [("in0", t.l1_in), ("par0", t.l1_params), ("out0", t.l1_out), ("out1", t.l1_out)]
    elif t.pipeline == "channel" and t.n_c > 1:
        parts = [("in0", t.l1_in), ("par0", t.l1_params), ("par1", t.l1_params),
                 ("out0", t.l1_out), ("out1", t.l1_out)]
    else:
        parts = [("in0", t.l1_in), ("par0", t.l1_params), ("out0", t.l1_out)]
    if t.l1_scratch:
        parts.append(("scratch", t.l1_scratch))
    if t.l1_res:
        parts.append(("res", t.l1_res))
    assert sum(n for _, n in parts) == t.l1_bytes, (parts, t)
    return [[name, n] for name, n in parts]


def tile_sections(params, tc, w_per_oc) -> dict:
    """The sections of one L1 parameter tile (= one L3 staging slab) of tc channels, in .bin
    order: [{name, offset in the tile, src: offset in the .bin, per_oc: bytes per channel}]."""
    sections, off = [], 0
    for name, p in sorted(params.items(), key=lambda kv: kv[1]["offset"]):
        per_oc = w_per_oc if name == "weight" else 4
        sections.append({"name": name, "offset": off, "src": p["offset"], "per_oc": per_oc})
        off += tiling._align4(tc * per_oc)
    return sections


def budget_error(layer, need, budget, budget_at) -> UserError:
    return UserError(f"{budget_at}: layer '{layer.name}' ({layer.op}) cannot be tiled into an L1 budget "
                     f"of {budget} B: the smallest tiling needs {need} B; raise this layer's "
                     f"l1_budget to at least {need} B (models.<m>.targets.<t>.layers.<layer>.l1_budget)")


def pack_params(layer, graph, layout) -> bytes:
    """The weights .bin in GAP9 order (HWC activations: base.pack_hwc)."""
    from ..base import pack_hwc
    blob = pack_hwc(layer, graph, layout)
    if folds_zp(layer, graph):      # the input zero point in the bias (every kernel path)
        off = next(offset for name, _, _, offset in layout if name == "bias")
        raw = folded_bias(layer, graph).astype("<i4").tobytes()
        blob = blob[:off] + raw + blob[off + len(raw):]
    return blob


@dataclass(frozen=True)
class Gap9Impl(OpImpl):
    """A gap9 op-table entry: OpImpl and what gap9's planner asks of it."""
    tiling: Optional[Callable] = None     # (layer, graph, budget, cores, xpulp) -> (Tiling | None, need)
    xpulp: bool = False                   # its kernel takes the target's kernels.xpulp switch
    staged: Optional[Callable] = None     # (layer) -> parameter bytes L3 may stage in channel slabs
    more_spec: Optional[Callable] = None  # (layer, graph, spec, til, xpulp) -> None: spec entries
    fused_name: Optional[str] = None      # the GAP9 kernel's name for the recipe the IR passes fused
    fused_always: bool = False            # ... which it always is (a pool's requantization)


_POOL = (C + "nn_hwc_pool.c", G + "nn_xp_pool.c")
OPS = {
    "conv2d": Gap9Impl("conv2d.c.j2", (C + "nn_hwc_conv2d.c", G + "nn_xp_conv2d.c", G + "nn_xp_dwconv.c"),
                       tiling=_window_tiling, staged=_weight_bytes, more_spec=_conv_spec,
                       fused_name="conv2d+relu+quant"),
    "linear": Gap9Impl("linear.c.j2", (C + "nn_linear.c", G + "nn_xp_linear.c"), tiling=_linear_tiling,
                       xpulp=True, staged=_weight_bytes, more_spec=_linear_spec, fused_name="linear+relu+quant"),
    "maxpool": Gap9Impl("pool.c.j2", _POOL, pool_check, tiling=_window_tiling, xpulp=True),
    "avgpool": Gap9Impl("pool.c.j2", _POOL, pool_check, tiling=_window_tiling, xpulp=True,
                        fused_name="avgpool+quant", fused_always=True),
    "global_avgpool": Gap9Impl("global_avgpool.c.j2", _POOL, tiling=_global_pool_tiling, xpulp=True,
                               fused_name="globalavgpool+quant", fused_always=True),
    "add": Gap9Impl("add.c.j2", (C + "nn_eltwise.c", G + "nn_xp_add.c"), residual=True, tiling=_add_tiling,
                    xpulp=True, more_spec=_add_spec),
    "concat": Gap9Impl("concat.c.j2", (C + "nn_hwc_eltwise.c", G + "nn_xp_lut.c"), tiling=_concat_tiling,
                       xpulp=True, more_spec=_concat_spec),
    "requant": Gap9Impl("requant.c.j2", (C + "nn_hwc_eltwise.c", G + "nn_xp_lut.c"), tiling=_requant_tiling,
                        xpulp=True),
    "reshape": Gap9Impl("reshape.c.j2", ()),
    # nn_xp_lut.c also holds the table-driven requant, which falls back on nn_hwc_eltwise.c
    "lut": Gap9Impl("lut.c.j2", (C + "nn_lut.c", G + "nn_xp_lut.c", C + "nn_hwc_eltwise.c"),
                    lambda layer, graph: _lut_check(layer), tiling=_lut_tiling, xpulp=True),
    "mul": Gap9Impl("mul.c.j2", (C + "nn_broadcast.c",), spec=_mul_spec, tiling=_broadcast_tiling(8)),
    "move": Gap9Impl("move.c.j2", (C + "nn_gather.c",), spec=lambda l, g: {"fill": l.attrs["fill"]},
                     tiling=_move_tiling),
    "softmax": Gap9Impl("softmax.c.j2", (C + "nn_softmax.c",), spec=softmax.spec, tiling=_softmax_tiling),
    "instnorm": Gap9Impl("instnorm.c.j2", (C + "nn_instnorm.c",), spec=instnorm.spec, tiling=_pixels_tiling(32)),
    "lrn": Gap9Impl("lrn.c.j2", (C + "nn_lrn.c",), spec=lrn.spec, tiling=_pixels_tiling(0)),
    "div": Gap9Impl("div.c.j2", (C + "nn_div.c",), spec=lambda l, g: {**div.spec(l, g), **_mul_spec(l, g)},
                    tiling=_broadcast_tiling(0)),
    "bilinear": Gap9Impl("bilinear.c.j2", (C + "nn_bilinear.c",), spec=bilinear.spec, tiling=bilinear_tiling),
    "reduce": Gap9Impl("reduce.c.j2", (C + "nn_reduce.c",), spec=_reduce_spec, tiling=_reduce_tiling),
    "nary": Gap9Impl("nary.c.j2", (C + "nn_nary.c",), spec=_nary_spec, tiling=_nary_tiling),
    "island_avgpool": Gap9Impl("island_avgpool.c.j2", (C + "nn_island_pool.c",),
                               spec=lambda l, g: {"tables": int(l.attrs["tables"]), "frac": island_pool.FRAC},
                               tiling=_island_tiling, staged=_island_table_bytes, more_spec=_island_spec),
}
