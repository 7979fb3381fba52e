"""The GAP9 run node: run the firmware on its platform, vet the log, write run.log/output.npy.

gvsoc's exit status is not reliable, so success is read from the log: the program's
`Test PASSED` and no fatal pattern (builders/run/simrun.py). The network output comes back as
`output <offset> <hex>` lines (the only channel every platform has).
"""
from __future__ import annotations

import re

from ...builders.run import simrun
from . import platforms

# Lines by which gvsoc, the SDK runtime or the emulation report a crash the program
# itself cannot print.
FATAL = [
    (re.compile(r"stack overflow", re.I), "stack overflow"),
    (re.compile(r"invalid (access|fetch)", re.I), "invalid memory access"),
    (re.compile(r"illegal instruction", re.I), "illegal instruction"),
    (re.compile(r"PMSIS-EMUL ERROR"), "PMSIS emulation error"),
    (re.compile(r"\b(segmentation fault|bus error|abort)", re.I), "crash"),
]


def error_tags(session) -> list:
    """The bare-metal runtimes' own error lines (open_fc.c: "<chip> ERROR: ...") on the
    session's chip, each its Simulator's runtime_name."""
    return [f"{sim.runtime_name} ERROR" for sim in session.kind.CHIP.simulators.values()]


def fatal(session) -> list:
    """FATAL and the chip's bare-metal runtime errors (before the crash pattern, as they say more)."""
    tags = error_tags(session)
    runtime = [(re.compile("|".join(re.escape(t) for t in tags)), "bare-metal GVSoC runtime error")] if tags else []
    return FATAL[:-1] + runtime + FATAL[-1:]


def run_firmware(target, source, env):
    session = env["NNS_SESSION"]
    platform = env["NNS_PLATFORM"]
    status, log = platforms.run(platform, session, str(source[0]), env["NNS_BIN_DIR"], show=env["NNS_VERBOSE"])
    return simrun.finish(f"RUN FAILED [{session.target_cfg.name}] on {platform}", session, status, log, fatal(session),
                         str(target[0]), str(target[1]))
