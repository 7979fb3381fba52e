"""The K210's CPU layers: the portable CHW kernels of kernels/common (the KPU's own layout
is channel planes) through the shared CPU templates (templates/cpu, targets/portable.py),
one op table entry per IR op, and the per-layer spec."""
from __future__ import annotations

from ...ops import softmax
from ...resources import data_path
from .. import portable
from ..base import OpImpl, pool_check
from ..portable import SPEC

K = portable.KERNELS
# the K210's CPU layers in the shared templates: CHW, the portable kernels
CPU = portable.Cpu("chw", "target kind 'k210' (a layer on the CPU)", ("nn_kernels.h",))


def _t(name: str) -> str:
    return portable.template(name, data_path("templates", "k210"))


OPS = {
    "conv2d": OpImpl(_t("conv2d.c.j2"), (K + "nn_conv2d.c",)),
    "linear": OpImpl(_t("linear.c.j2"), (K + "nn_linear.c",)),
    "maxpool": OpImpl(_t("pool.c.j2"), (K + "nn_pool.c",), pool_check),
    "avgpool": OpImpl(_t("pool.c.j2"), (K + "nn_pool.c",), pool_check),
    "global_avgpool": OpImpl(_t("global_avgpool.c.j2"), (K + "nn_pool.c",)),
    "add": OpImpl(_t("add.c.j2"), (K + "nn_eltwise.c",)),
    "concat": OpImpl(_t("concat.c.j2"), (K + "nn_eltwise.c",)),
    "requant": OpImpl(_t("requant.c.j2"), (K + "nn_eltwise.c",)),
    "reduce": OpImpl(_t("reduce.c.j2"), (K + "nn_reduce.c",), spec=SPEC["reduce"]),
    "nary": OpImpl(_t("nary.c.j2"), (K + "nn_nary.c",), spec=SPEC["nary"]),
    "reshape": OpImpl(_t("reshape.c.j2"), ()),
    "softmax": OpImpl(_t("softmax.c.j2"), (K + "nn_softmax.c",), check=softmax.channel_first_check,
                      spec=SPEC["softmax"]),
    "resize": OpImpl(_t("resize.c.j2"), (K + "nn_resize.c",)),
    "move": OpImpl(_t("move.c.j2"), (K + "nn_gather.c",), spec=SPEC["move"]),
    "lut": OpImpl(_t("lut.c.j2"), (K + "nn_lut.c",)),
    "mul": OpImpl(_t("mul.c.j2"), (K + "nn_broadcast.c",), spec=SPEC["mul"]),
    "island_avgpool": OpImpl(_t("island_avgpool.c.j2"), (K + "nn_island_pool.c",), spec=SPEC["island_avgpool"]),
}


def layer_spec(layer, graph, cname, layout, budget, budget_at) -> dict:
    """The portable CPU spec (shapes, zero points, row bands) in CHW."""
    return portable.layer_spec(layer, graph, cname, layout, budget, budget_at, OPS, CPU)
