"""The `pulp-open` target: GVSoC's pulp-open (8 RI5CY cores with Xpulpv2, 64 KiB L1, mchan DMA,
no L3), the open PULP chip closest to GAP9, as a kind of its own.

It reuses gap9's codegen, kernels, tiling, memory plan, layer-by-layer runner, nodes and run
step through imports: what differs is data, this module's Chip (targets/gap9/chip.py) -- its
options schema, its geometry as DEFAULTS and its platforms:
  gvsoc-open  riscv64-unknown-elf-gcc + gap9's bare-metal runtime (kernels/gap9/open) on GVSoC's
         pulp-open, with per-layer cycle counts (gvsoc_open.py)
  emul   natively against the PMSIS emulation (kernels/gap9/emul) with pulp-open's L1 and L2
  qemu   rv32 cross-compiled, the emulation on one hart of qemu-system-riscv32
"""
from __future__ import annotations

import copy

from .. import gap9
from ..gap9 import tool  # noqa: F401  (gap9's SCons Tool: builders and the run step)
from ..gap9.chip import Chip
from ..gap9.nodes import declare_nodes  # noqa: F401  (the kind's node hook: gap9's)
from . import gvsoc_open
from .schema import SCHEMA  # noqa: F401  (the kind's manifest keys)


DEFAULTS = copy.deepcopy(gap9.DEFAULTS)
DEFAULTS.update({
    # L1: the cluster TCDM at 0x10000000; l1_reserved: mailbox, core 0's stack (cluster.stack_size)
    # and 7 worker stacks.  L2: free from 0x1C010000; l2_reserved: code 256 KiB, data, bss, FC
    # stack (gap9/baremetal.py).  No L3 on pulp-open: nothing is staged, every parameter lives in
    # L2 and a model that does not fit runs layer by layer.
    "memory": {"l1": 64 * 1024, "l1_reserved": 12 * 1024, "l2": 1536 * 1024, "l2_reserved": 320 * 1024,
               "l3_device": "flash", "l3_size": 0, "l3_threshold": 1 << 30},
    "cluster": {"cores": 8, "stack_size": 2048, "slave_stack_size": 1024},
    "kernels": {"xpulp": True, "fuse_residual": False},
    "run": {"platform": "gvsoc-open", "timeout": 1800, "layer_by_layer": "auto"},
})

CHIP = Chip(kind="pulp-open", title="pulp-open", defaults=DEFAULTS, platforms=tuple(SCHEMA["run"]["platform"]),
            simulators={"gvsoc-open": gvsoc_open.SIMULATOR})


def options(target_cfg) -> dict:
    return gap9.options(target_cfg, CHIP)


def resolve_platform(opts, target_name, explicit) -> str:
    return gap9.settle_platform(CHIP, opts, opts["run"]["platform"])


def check_tools(env, session) -> None:
    gap9.check_tools(env, session)


def plan(graph, cnames: dict, opts: dict, overrides: dict, where):
    return gap9.plan(graph, cnames, opts, overrides, where, CHIP)
