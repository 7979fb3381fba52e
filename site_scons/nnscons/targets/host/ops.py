"""Host op registry: template, kernel sources and constraints per IR op, and the
per-layer spec (the only thing a layer's generated code depends on).

Activations are HWC.  Conv (groups 1) and linear layers get a generated BRGEMM kernel
(nnscons.kernelgen, template gemm.c.j2); grouped/depthwise convs, pools, concat and
requant use the portable HWC kernels (kernels/common/nn_hwc_*.c, gap9 runs them too)."""
from __future__ import annotations

from ...errors import UserError
from ...resources import data_path
from ...planning.tiling import min_bytes, row_bands
from dataclasses import dataclass
from typing import Callable, Optional

from ... import ops as registry
from ..base import OpImpl, pool_check
from ...ops import bilinear, div, instnorm, island_pool, lrn, softmax

K = data_path("kernels", "common") + "/"
T = (K + "nn_threads.c",)
H = data_path("kernels", "host") + "/"
SIMD = (H + "nn_simd.c", K + "nn_eltwise.c", K + "nn_hwc_pool.c")   # nn_simd.c falls back on both


@dataclass(frozen=True)
class HostImpl(OpImpl):
    """A host op-table entry: OpImpl and what the host planner asks of it."""
    variant: Optional[Callable] = None  # (layer, graph) -> the entry that runs this layer, or None
    isa: bool = False                   # a vectorized kernel (nn_simd.c): takes the kernel.isa switch


def _grouped(layer, graph):
    """A conv the generator does not take (groups > 1): depthwise or the direct kernel."""
    if layer.attrs.get("groups", 1) == 1:
        return None
    return DEPTHWISE_CONV if depthwise(layer, graph) else GROUPED_CONV


OPS = {
    "conv2d": HostImpl("gemm.c.j2", T, variant=_grouped),
    "linear": OpImpl("gemm.c.j2", T),
    "maxpool": HostImpl("pool.c.j2", SIMD, pool_check, isa=True),
    "avgpool": OpImpl("pool.c.j2", SIMD, pool_check),
    "global_avgpool": OpImpl("global_avgpool.c.j2", (K + "nn_hwc_pool.c",)),
    "add": HostImpl("add.c.j2", SIMD, isa=True, residual=True),
    "concat": OpImpl("concat.c.j2", (K + "nn_hwc_eltwise.c",)),
    "requant": OpImpl("requant.c.j2", (K + "nn_hwc_eltwise.c",)),
    "reshape": OpImpl("reshape.c.j2", ()),
    "lut": OpImpl("lut.c.j2", (K + "nn_lut.c",)),
    "mul": OpImpl("mul.c.j2", (K + "nn_broadcast.c",), spec=lambda l, g: {"mode": l.attrs["mode"]}),
    "move": OpImpl("move.c.j2", (K + "nn_gather.c",), spec=lambda l, g: {"fill": l.attrs["fill"]}),
    "island_avgpool": OpImpl("island_avgpool.c.j2", (K + "nn_island_pool.c",),
                             spec=lambda l, g: {"tables": int(l.attrs["tables"]), "frac": island_pool.FRAC}),
    "softmax": OpImpl("softmax.c.j2", (K + "nn_softmax.c",), spec=lambda l, g: softmax.spec(l, g)),
    "resize": OpImpl("resize.c.j2", (K + "nn_resize.c",)),
    "instnorm": OpImpl("instnorm.c.j2", (K + "nn_instnorm.c",), spec=lambda l, g: instnorm.spec(l, g)),
    "lrn": OpImpl("lrn.c.j2", (K + "nn_lrn.c",), spec=lambda l, g: lrn.spec(l, g)),
    "div": OpImpl("div.c.j2", (K + "nn_div.c",), spec=lambda l, g: div.spec(l, g)),
    "bilinear": OpImpl("bilinear.c.j2", (K + "nn_bilinear.c",), spec=lambda l, g: bilinear.spec(l, g)),
    "reduce": OpImpl("reduce.c.j2", (K + "nn_reduce.c",), spec=lambda l, g: _reduce_spec(l, g)),
    "nary": OpImpl("nary.c.j2", (K + "nn_nary.c",), spec=lambda l, g: _nary_spec(l, g)),
}


def _nary_spec(layer, graph):
    from ...ops.nary import spec
    return spec(layer, graph)


def _reduce_spec(layer, graph):
    from ...ops.reduce import spec
    return spec(layer, graph)
# convs the generator does not take (groups > 1): depthwise (groups = channels) on the
# vectorized kernel, other grouped convs on the HWC direct kernel
GROUPED_CONV = OpImpl("conv2d.c.j2", (K + "nn_hwc_conv2d.c",))
DEPTHWISE_CONV = HostImpl("dwconv.c.j2", SIMD, isa=True)


def depthwise(layer, graph) -> bool:
    """A depthwise conv: groups = input channels = output channels (only convs have groups)."""
    g = layer.attrs.get("groups", 1)
    return (registry.has_window(layer) and g > 1 and g == graph.tensor(layer.inputs[0]).shape[1]
            and g == graph.tensor(layer.output).shape[1])


def _chw(shape):
    if len(shape) == 4:
        return {"c": shape[1], "h": shape[2], "w": shape[3]}
    return {"c": shape[1], "h": 1, "w": 1}


def layer_spec(layer, graph, cname, layout, budget, budget_at, ops=None) -> dict:
    """ops: the op table whose spec hooks apply (default this target's; k210's CPU layers
    pass theirs)."""
    ins = [graph.tensor(t) for t in layer.inputs]
    out = graph.tensor(layer.output)
    spec = {
        "op": layer.op,
        "name": layer.name,
        "cname": cname,
        "inputs": [dict(_chw(t.shape), zp=t.q.zero_point, size=_numel(t.shape)) for t in ins],
        "out": dict(_chw(out.shape), zp=out.q.zero_point, size=_numel(out.shape)),
        "act": [layer.act_min, layer.act_max],
        "params": {section: {"dtype": dtype, "count": count, "offset": offset}
                   for section, dtype, count, offset in layout},
    }
    impl = (ops or OPS)[layer.op]
    if impl.spec:
        spec.update(impl.spec(layer, graph))
    a = layer.attrs
    if registry.has_window(layer):
        kh, kw = a["kernel"]
        sh, sw = a["stride"]
        dh, dw = a.get("dilation", (1, 1))
        pt, pl, pb, pr = a["pads"]
        spec.update(kernel=[kh, kw], stride=[sh, sw], dilation=[dh, dw], pads=[pt, pl, pb, pr],
                    groups=a.get("groups", 1), count_include_pad=a.get("count_include_pad", 0))
        i, o = spec["inputs"][0], spec["out"]
        tile = row_bands(i["c"], i["h"], i["w"], o["c"], o["h"], o["w"], kh, sh, dh, budget)
        if tile is None:
            need = min_bytes(i["c"], i["h"], i["w"], o["c"], o["w"], kh, sh, dh)
            raise UserError(
                f"{budget_at}: layer '{layer.name}' ({layer.op}) needs at least {need} B of L1 scratch "
                f"for one output row band (input {i['c']}x{min(i['h'], kh)}x{i['w']} + output "
                f"{o['c']}x1x{o['w']}), but l1_budget is {budget} B; raise this layer's l1_budget")
        spec["tile"] = tile
    return spec


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n
