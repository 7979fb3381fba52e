"""Host op registry: template, kernel sources and constraints per IR op, and the
per-layer spec (the only thing a layer's generated code depends on).

Activations are HWC.  Conv (groups 1) and linear layers get a generated BRGEMM kernel
(nnscons.kernelgen, template gemm.c.j2); grouped/depthwise convs, pools, concat and the
other ops run the portable kernels (kernels/common, HWC: nn_hwc_*.c) or the host's
vectorized ones (kernels/host/nn_simd.c) through the shared CPU templates (templates/cpu,
targets/portable.py)."""
from __future__ import annotations

from ...resources import data_path
from dataclasses import dataclass
from typing import Callable, Optional

from ... import ops as registry
from ..base import OpImpl, pool_check
from .. import portable
from ..portable import SPEC

K = portable.KERNELS
T = (K + "nn_threads.c",)
H = data_path("kernels", "host") + "/"
SIMD = (H + "nn_simd.c", H + "nn_dw_vnni.c", K + "nn_eltwise.c", K + "nn_hwc_pool.c")   # nn_simd.c falls back on both
TEMPLATES = data_path("templates", "host")
# the host's CPU layers in the shared templates: HWC, the portable and vectorized kernels
CPU = portable.Cpu("hwc", "target kind 'host'", ("nn_hwc.h", "nn_simd.h"))


def _t(name: str) -> str:
    return portable.template(name, TEMPLATES)


@dataclass(frozen=True)
class HostImpl(OpImpl):
    """A host op-table entry: OpImpl and what the host planner asks of it."""
    variant: Optional[Callable] = None  # (layer, graph) -> the entry that runs this layer, or None
    isa: bool = False                   # a vectorized kernel (nn_simd.c): takes the kernel.isa switch
    bands: bool = False                 # a row-band kernel: its L1 bands in the arena's scratch region


def _grouped(layer, graph):
    """A conv the generator does not take (groups > 1): depthwise or the direct kernel."""
    if layer.attrs.get("groups", 1) == 1:
        return None
    return DEPTHWISE_CONV if depthwise(layer, graph) else GROUPED_CONV


OPS = {
    "conv2d": HostImpl("gemm.c.j2", T, variant=_grouped),
    "linear": OpImpl("gemm.c.j2", T),
    "maxpool": HostImpl(_t("pool.c.j2"), SIMD, pool_check, isa=True, bands=True),
    "avgpool": HostImpl(_t("pool.c.j2"), SIMD, pool_check, bands=True),
    "global_avgpool": OpImpl(_t("global_avgpool.c.j2"), (K + "nn_hwc_pool.c",)),
    "add": HostImpl(_t("add.c.j2"), SIMD, isa=True, residual=True),
    "concat": OpImpl(_t("concat.c.j2"), (K + "nn_hwc_eltwise.c",)),
    "requant": OpImpl(_t("requant.c.j2"), (K + "nn_hwc_eltwise.c",)),
    "reshape": OpImpl(_t("reshape.c.j2"), ()),
    "lut": OpImpl(_t("lut.c.j2"), (K + "nn_lut.c",)),
    "mul": OpImpl(_t("mul.c.j2"), (K + "nn_broadcast.c",), spec=SPEC["mul"]),
    "move": OpImpl(_t("move.c.j2"), (K + "nn_gather.c",), spec=SPEC["move"]),
    "island_avgpool": OpImpl(_t("island_avgpool.c.j2"), (K + "nn_island_pool.c",), spec=SPEC["island_avgpool"]),
    "softmax": OpImpl(_t("softmax.c.j2"), (K + "nn_softmax.c",), spec=SPEC["softmax"]),
    "resize": OpImpl(_t("resize.c.j2"), (K + "nn_resize.c",)),
    "instnorm": OpImpl(_t("instnorm.c.j2"), (K + "nn_instnorm.c",), spec=SPEC["instnorm"]),
    "lrn": OpImpl(_t("lrn.c.j2"), (K + "nn_lrn.c",), spec=SPEC["lrn"]),
    "div": OpImpl(_t("div.c.j2"), (K + "nn_div.c",), spec=SPEC["div"]),
    "bilinear": OpImpl(_t("bilinear.c.j2"), (K + "nn_bilinear.c",), spec=SPEC["bilinear"]),
    "reduce": OpImpl(_t("reduce.c.j2"), (K + "nn_reduce.c",), spec=SPEC["reduce"]),
    "nary": OpImpl(_t("nary.c.j2"), (K + "nn_nary.c",), spec=SPEC["nary"]),
}

# convs the generator does not take (groups > 1): depthwise (groups = channels) on the
# vectorized kernel, other grouped convs on the HWC direct kernel
GROUPED_CONV = HostImpl(_t("conv2d.c.j2"), (K + "nn_hwc_conv2d.c",), bands=True)
DEPTHWISE_CONV = HostImpl(_t("dwconv.c.j2"), SIMD, isa=True)


def depthwise(layer, graph) -> bool:
    """A depthwise conv: groups = input channels = output channels (only convs have groups)."""
    g = layer.attrs.get("groups", 1)
    return (registry.has_window(layer) and g > 1 and g == graph.tensor(layer.inputs[0]).shape[1]
            and g == graph.tensor(layer.output).shape[1])


def layer_spec(layer, graph, cname, layout, budget, budget_at) -> dict:
    """The host layer's spec: the portable CPU spec (targets/portable.py) in HWC."""
    return portable.layer_spec(layer, graph, cname, layout, budget, budget_at, OPS, CPU)
