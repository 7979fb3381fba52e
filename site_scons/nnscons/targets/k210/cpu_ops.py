"""The K210's CPU layers: the portable CHW kernels of kernels/common (the KPU's own layout
is channel planes), one op table entry per IR op, and the per-layer spec; templates in
templates/k210/cpu/."""
from __future__ import annotations

from ...ops import island_pool, nary, reduce, softmax
from ...resources import data_path
from ..base import OpImpl, pool_check

K = data_path("kernels", "common") + "/"


OPS = {
    "conv2d": OpImpl("conv2d.c.j2", (K + "nn_conv2d.c",)),
    "linear": OpImpl("linear.c.j2", (K + "nn_linear.c",)),
    "maxpool": OpImpl("pool.c.j2", (K + "nn_pool.c",), pool_check),
    "avgpool": OpImpl("pool.c.j2", (K + "nn_pool.c",), pool_check),
    "global_avgpool": OpImpl("global_avgpool.c.j2", (K + "nn_pool.c",)),
    "add": OpImpl("add.c.j2", (K + "nn_eltwise.c",)),
    "concat": OpImpl("concat.c.j2", (K + "nn_eltwise.c",)),
    "requant": OpImpl("requant.c.j2", (K + "nn_eltwise.c",)),
    "reduce": OpImpl("reduce.c.j2", (K + "nn_reduce.c",), spec=lambda l, g: reduce.spec(l, g)),
    "nary": OpImpl("nary.c.j2", (K + "nn_nary.c",), spec=lambda l, g: nary.spec(l, g)),
    "reshape": OpImpl("reshape.c.j2", ()),
    "softmax": OpImpl("softmax.c.j2", (K + "nn_softmax.c",), check=softmax.channel_first_check),
    "resize": OpImpl("resize.c.j2", (K + "nn_resize.c",)),
    "move": OpImpl("move.c.j2", (K + "nn_gather.c",), spec=lambda l, g: {"fill": l.attrs["fill"]}),
    "lut": OpImpl("lut.c.j2", (K + "nn_lut.c",)),
    "mul": OpImpl("mul.c.j2", (K + "nn_broadcast.c",), spec=lambda l, g: {"mode": l.attrs["mode"]}),
    "island_avgpool": OpImpl("island_avgpool.c.j2", (K + "nn_island_pool.c",),
                             spec=lambda l, g: {"tables": int(l.attrs["tables"]), "frac": island_pool.FRAC}),
}


def layer_spec(layer, graph, cname, layout, budget, budget_at) -> dict:
    """The same spec the host's row-band kernels take (shapes, zero points, tiling)."""
    from ..host.ops import layer_spec as row_band_spec
    return row_band_spec(layer, graph, cname, layout, budget, budget_at, ops=OPS)
