"""The `arm64` target: Linux user space on 64-bit Arm, static binaries cross-compiled with
Debian's aarch64-linux-gnu-gcc, run under qemu-aarch64 (platform qemu, `run.cpu` the
emulated core), natively on an aarch64 build machine, or on a board over ssh.

The plan, templates, kernels and nodes are the host target's (HWC activations, generated
BRGEMM conv/linear kernels, the library + header + harness); only the ISA set differs:
the generator's NEON variants (kernelgen.isa: neon Armv8.0, dotprod SDOT, i8mm SMMLA),
chosen at run time from getauxval(AT_HWCAP/AT_HWCAP2) under `isa: auto`, or forced.
"""
from __future__ import annotations

import platform as _platform

from ...errors import UserError
from .. import base
from ..host import TEMPLATES, plan as _host_plan  # noqa: F401
from . import tool  # noqa: F401  (the kind's SCons Tool)
from .tool import check_tools  # noqa: F401  (the kind's hook: its tools are the Tool's)
from .nodes import declare_nodes  # noqa: F401
from .schema import CPUS, ISAS, PLATFORMS, SCHEMA  # noqa: F401  (the kind's manifest keys)

# generated conv/linear kernels under isa: auto, best first (each behind its runtime check)
AUTO = ("i8mm", "dotprod", "neon", "portable")
# nn_simd.c's element-wise kernels: 0 auto, 1 portable; the NEON ones count as auto
ISA_CODES = {"auto": 0, "portable": 1, "neon": 0, "dotprod": 0, "i8mm": 0}


DEFAULTS = {
    "toolchain": {"cc": "aarch64-linux-gnu-gcc",
                  "cflags": ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-march=armv8-a"],
                  "ldflags": ["-static"]},
    "memory": {"l1": 128 * 1024, "l2": 256 * 1024 * 1024},
    "tiling": {"l1_budget": 64 * 1024},
    "kernel": {"isa": "auto", "threads": 1},
    "run": {"platform": "qemu", "timeout": 1200, "cpu": "max", "qemu": "qemu-aarch64",
            "host": "", "dir": "/tmp/nnscons", "ssh": "ssh", "scp": "scp", "iterations": 0},
}


def options(target_cfg) -> dict:
    return base.merged_options(DEFAULTS, target_cfg)


def resolve_platform(opts, target_name, explicit) -> str:
    p = opts["run"]["platform"]
    if p == "native" and _platform.machine() not in ("aarch64", "arm64"):
        raise UserError(f"target '{target_name}': platform=native runs the firmware on this machine, "
                        f"which is {_platform.machine()}, not aarch64; use platform=qemu or platform=ssh")
    if p == "ssh" and not opts["run"]["host"]:
        raise UserError(f"target '{target_name}': platform=ssh needs targets.{target_name}.run.host "
                        f"(user@board)")
    return p


def macs_per_insn(spec: dict) -> dict:
    """{isa: int8 MACs per instruction of the main microkernel's inner loop} for the NEON
    variants the layer holds (the generator's static figure: qemu says nothing of speed)."""
    from ... import kernelgen
    from ...kernelgen.isa import ISAS as KISAS
    gm = spec["gemm"]
    micros = kernelgen.micro_set(gm["geom"], gm["blocking"], gm["band"])
    main = max(micros.values(), key=lambda mk: (mk.mr * mk.nv, mk.mr))
    return {v: round(KISAS[v].macs_per_instruction(main), 2) for v in gm["variants"]
            if hasattr(KISAS[v], "macs_per_instruction")}


def plan(graph, cnames: dict, opts: dict, overrides: dict, where) -> base.TargetPlan:
    tp = _host_plan(graph, cnames, opts, overrides, where, auto=AUTO, isa_codes=ISA_CODES, kind="arm64")
    for lp in tp.layers:
        if "gemm" in lp.spec:
            gm = lp.spec["gemm"]
            figs = macs_per_insn(lp.spec)
            if gm["isa"] == "auto" and len(gm["variants"]) > 1:
                # dispatch order: the best static figure first (an mr = 1 layer, e.g. a
                # Linear, wastes half of SMMLA's 2x8 A operand: dotprod beats i8mm there)
                gm["variants"] = sorted(gm["variants"], key=lambda v: (v == "portable", -figs.get(v, 0),
                                                                       AUTO.index(v)))
                lp.report["gemm"]["variants"] = list(gm["variants"])
                figs = {v: figs[v] for v in gm["variants"] if v in figs}
            lp.report["macs_per_insn"] = figs
            lp.report["variants"] = " ".join(f"{k}:{v}" for k, v in figs.items())
    tp.columns = tp.columns + [("MACs/insn", "variants"), ("ran", "variant")]
    return tp
