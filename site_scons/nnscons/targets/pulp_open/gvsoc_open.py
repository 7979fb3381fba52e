"""gvsoc-open: GVSoC's pulp-open as a bare-metal Simulator (targets/gap9/baremetal.py's runtime).

pulp-open is the open PULP model closest to GAP9 (8 RI5CY cores with Xpulpv2, 64 KiB L1, mchan
DMA; ../shared/gvsoc/NOTES.md); a program runs with `gvsoc --target=pulp-open`.
"""
from __future__ import annotations

import os
import shutil

from ...errors import UserError
from ..gap9 import baremetal
from ..gap9.chip import Simulator

CC = baremetal.CC
GVSOC_TARGET = "pulp-open"

INSTALL_HINT = ("install GVSoC with its pulp-open target: `bash ../shared/gvsoc/install.sh DIR` (beside "
                "this repository) or from https://github.com/gvsoc/gvsoc (build it with "
                "GVSOC_TARGETS=pulp-open), then put DIR/gvsoc on PATH or set GVSOC=DIR/gvsoc")


def find_gvsoc() -> str | None:
    """The gvsoc launcher: $GVSOC (the launcher or the folder holding it), else `gvsoc` on PATH."""
    env = os.environ.get("GVSOC")
    if env:
        path = os.path.join(env, "gvsoc") if os.path.isdir(env) else env
        return os.path.abspath(path) if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which("gvsoc")


def require_gvsoc(target_name: str) -> str:
    path = find_gvsoc()
    if path:
        return path
    env = os.environ.get("GVSOC")
    why = (f"GVSOC={env} is not an executable gvsoc launcher (nor a folder holding one)" if env
           else "GVSOC is unset and no gvsoc on PATH")
    raise UserError(f"target '{target_name}' platform=gvsoc-open: GVSoC not found ({why}); {INSTALL_HINT}; "
                    f"or use platform=emul")


def run_command(gvsoc: str, elf_path: str, work_dir: str) -> list:
    return [gvsoc, f"--target={GVSOC_TARGET}", "--binary", os.path.abspath(elf_path),
            f"--work-dir={os.path.abspath(work_dir)}", "run"]


SIMULATOR = Simulator(
    platform="gvsoc-open",
    find=find_gvsoc,
    require=require_gvsoc,
    command=run_command,
    cycles_source=("pulp-open proxy figures for GAP9 (GVSoC pulp-open: 8 RI5CY cores, Xpulpv2, 64 KiB L1; "
                   "not GAP9's 9 cores, 128 KiB L1, Xpulpv3); " + baremetal.CYCLES),
    runtime_name="PULP-OPEN",         # open_fc.c's OPEN_CHIP_NAME without NN_OPEN_CHIP_GAP9
    cores=8,
)
