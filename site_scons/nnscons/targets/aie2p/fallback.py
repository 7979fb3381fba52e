"""fallback: host -- the op table and the layer plan of aie2p's layers that do not map onto
the NPU and run on the host CPU instead, with the portable CHW kernels of kernels/common.

One op table (OPS): its ops are host_layers.BINDINGS' (the ctypes calls the NPU runner
makes into nn_host.so); each entry names the shared CPU template (templates/cpu, CHW, as the
K210's CPU layers use it) that the emulated library (platform=emul) compiles for that layer.
The activations are HWC in DDR, so the library's layer source (<L>_host.c) is the CHW layer
of templates/cpu and aie2p's wrapper transposing around it (templates/aie2p/host_layer.c.j2). reduce and nary are offered:
tests/test_ops_fallback.py runs them through HostKernels bit-exact (reducenet, narynet,
cpunet), and tests/test_onnx_ops_more.py builds those nets on the emulated library.
"""
from __future__ import annotations

import os

import numpy as np

from ...ops import softmax
from ...resources import data_path
from .. import base, portable
from ..base import OpImpl, pool_check
from .host_layers import BINDINGS

TEMPLATES = data_path("templates", "aie2p")
CPU = portable.Cpu("chw", "target kind 'aie2p' (mapping.fallback: host, a layer on the host CPU)",
                   ("nn_kernels.h",))
# the templates/cpu file of an op, when it is not <op>.c.j2
_TEMPLATE = {"maxpool": "pool.c.j2", "avgpool": "pool.c.j2"}
# what the kernel of an op does not run, (layer, graph) -> why, or None
_CHECK = {"maxpool": pool_check, "avgpool": pool_check, "softmax": softmax.channel_first_check}

# the fallback's op table: exactly the ops host_layers.py binds
OPS = {op: OpImpl(portable.template(_TEMPLATE.get(op, op + ".c.j2"), TEMPLATES), (),
                  _CHECK.get(op), spec=portable.SPEC.get(op)) for op in BINDINGS}


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def host_layer(layer, graph, cname: str, why: str) -> base.LayerPlan:
    """The layer's plan on the host CPU: the portable CPU spec in CHW (one row band: the
    whole layer), each tensor marked `hwc` when its HWC and CHW orders differ."""
    layout = base.param_layout(layer, graph)
    shapes = [graph.tensor(t).shape for t in list(layer.inputs) + [layer.output]]
    whole = sum(int(np.prod(s)) for s in shapes)       # one band: no halo bookkeeping
    spec = portable.layer_spec(layer, graph, cname, layout, whole, "aie2p host fallback", OPS, CPU)
    for t, sh in zip(spec["inputs"] + [spec["out"]], shapes):
        t["hwc"] = len(sh) == 4 and t["h"] * t["w"] > 1 and t["c"] > 1
    spec["why_not_npu"] = why
    return base.LayerPlan(layer=layer, cname=cname, template="", kernels=(), spec=spec,
                          param_layout=layout, macs=base.macs(layer, graph),
                          param_bytes=base.layout_bytes(layout),
                          files=[(f"src/layers/{cname}_host.json", "host.json.j2", spec)],
                          report={"aie": {"runs_on": "host", "why_not_npu": why}, "runs_on": "host"})


def host_scratch(spec: dict) -> dict:
    """A host layer's bytes of the arena's scratch region: each HWC input's CHW copy, the
    CHW output when the output is HWC (host_layer.c.j2's transposes), then the CHW layer's
    own row band (templates/cpu/_layer.j2's scratch_bytes)."""
    at, off = {}, 0
    for k, t in enumerate(spec["inputs"]):
        if t["hwc"]:
            at[f"x{k}"] = off
            off += _align(t["size"], 16)
    if spec["out"]["hwc"]:
        at["y"] = off
        off += _align(spec["out"]["size"], 16)
    at["cpu"] = off
    tile = spec.get("tile")
    off += (_align(tile["l1_in"], 16) + tile["l1_out"]) if tile else 0
    return {"scratch_at": dict(at, bytes=off)}


def host_files(lp, model: str) -> list:
    """platform=emul: the layer's C, <L>_host.c: the CHW layer of templates/cpu (its symbol
    <symbol>_cpu), included by aie2p's wrapper transposing around it (host_layer.c.j2)."""
    cpu = "cpu/" + os.path.basename(OPS[lp.spec["op"]].template)
    return [(f"src/layers/{lp.cname}_host.c", "host_layer.c.j2",
             dict(lp.spec, symbol=f"nns_{model}_{lp.cname}", cpu_template=cpu,
                  includes=[cpu, "cpu/_layer.j2"], **host_scratch(lp.spec)))]
