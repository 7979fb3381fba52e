"""Code of a PULP cluster chip on GVSoC, bare metal: compiler flags, memory layout, the run.

One runtime (kernels/gap9/open: PMSIS subset, semihosting) and one compiler (Debian's
riscv64-unknown-elf-gcc + picolibc) for every GVSoC model a chip kind lists as a Simulator
(chip.py): gap9's gvsoc-gap9 (gvsoc_gap9.py) and those of the kinds that reuse gap9's code
(a simulator module of their own).

-march: the code is rv32imc + Zicsr (binutils 2.40 wants `_zicsr` for the performance-counter
CSRs; Xpulp goes through `.insn`, NN_XPULP_INSN); the link names plain rv32imc so that gcc picks
picolibc's rv32im/ilp32 multilib (with `_zicsr` it falls back to the rv64 default).

Memory (L2, 1.5 MiB free from 0x1C010000): picolibc's linker script places code and read-only
data in the first CODE_SIZE bytes ("flash" to picolibc; GVSoC's loader writes every segment),
then data, bss, the heap behind pi_l2_malloc and the FC stack. The target's memory.l2_reserved
must cover CODE_SIZE + data + FC stack; the rest is what the memory plan may use.

Files: the program reads bin/*.bin through semihosting, relative to gvsoc's --work-dir
(<platform dir>/gvsoc-work), so the path it is compiled with (NN_OPEN_FS_DIR) is relative too.
"""
from __future__ import annotations

import os
import shutil

from ...builders.run.hostrun import run_program
from ...errors import UserError
from ...resources import data_path

CC = "riscv64-unknown-elf-gcc"
RUNTIME_DIR = data_path("kernels", "gap9", "open")
WORK_DIR = "gvsoc-work"

L2_BASE = 0x1C010000
L2_SIZE = 0x180000
CODE_SIZE = 256 * 1024
FC_STACK_SIZE = 16 * 1024
MIN_L2_RESERVED = 320 * 1024      # CODE_SIZE, data and bss, the FC stack, with room to spare

# What the cycle figures are (report.json `cycles_source`, after each Simulator's model)
CYCLES = ("cycles = cluster core 0 from the layer's task start to its end, DMA waits and forks included, "
          "parameters already in L2")

_CC_TARGET = ["-march=rv32imc_zicsr", "-mabi=ilp32", "--specs=picolibc.specs"]
_LINK_TARGET = ["-march=rv32imc", "-mabi=ilp32", "--specs=picolibc.specs"]


def check_tools(target_name: str, sim) -> None:
    """The cross compiler, then the simulator's launcher (sim: chip.Simulator)."""
    if not shutil.which(CC):
        raise UserError(f"target '{target_name}' platform={sim.platform}: '{CC}' not found on PATH; install it "
                        f"(Debian: apt-get install gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf) "
                        f"or use platform=emul")
    sim.require(target_name)


def check_memory(opts, where) -> None:
    """The target's L2 must match the runtime's layout (what the memory plan may use is
    l2 - l2_reserved; the code, data and FC stack live in the reserved part)."""
    m, platform = opts["memory"], opts["run"]["platform"]
    if m["l2"] > L2_SIZE:
        raise UserError(f"{where(None, 'memory', 'l2')}: platform={platform} has {L2_SIZE} B of free L2 from "
                        f"{L2_BASE:#x}; memory.l2 = {m['l2']} B is more")
    if m["l2_reserved"] < CODE_SIZE + 2 * FC_STACK_SIZE:
        raise UserError(f"{where(None, 'memory', 'l2_reserved')}: platform={platform} keeps {CODE_SIZE} B "
                        f"of L2 for code and {FC_STACK_SIZE} B for the FC stack, plus data: "
                        f"memory.l2_reserved must be at least {CODE_SIZE + 2 * FC_STACK_SIZE} B")


def cross_flags(fs_dir: str, opts, sim) -> dict:
    """CC, CFLAGS, LINKFLAGS, defines and runtime sources for a bare-metal GVSoC build.
    fs_dir: where bin/ is, relative to the simulator's work dir; sim: chip.Simulator."""
    ram = L2_BASE + CODE_SIZE
    return dict(
        CC=CC,
        CFLAGS=_CC_TARGET + ["-O2", "-ffunction-sections", "-fdata-sections", "-Wall", "-Wextra", "-Werror"],
        LINKFLAGS=_LINK_TARGET + [
            "--oslib=semihost", "-Wl,--gc-sections",
            f"-Wl,--defsym=__flash={L2_BASE:#x}",
            f"-Wl,--defsym=__flash_size={CODE_SIZE:#x}",
            f"-Wl,--defsym=__ram={ram:#x}",
            f"-Wl,--defsym=__ram_size={L2_BASE + L2_SIZE - ram:#x}",
            f"-Wl,--defsym=__stack_size={FC_STACK_SIZE:#x}",
        ],
        CPPDEFINES=["NN_XPULP_INSN"] + list(sim.defines) + [
                    f"NN_OPEN_SLAVE_STACK_SIZE={opts['cluster']['slave_stack_size']}u",
                    ("NN_OPEN_FS_DIR", '\\"%s\\"' % fs_dir)],
        CPPPATH=[RUNTIME_DIR],
        SOURCES=[os.path.join(RUNTIME_DIR, "open_fc.c"), os.path.join(RUNTIME_DIR, "open_cluster.c")],
    )


def run(target_name: str, sim, elf_path: str, work_dir: str, timeout: float, show: bool = False) -> tuple:
    """(exit status or None on timeout, log). gvsoc's status is the program's semihosting exit
    (0, or 1 for any failure): the run step trusts the log, as on the other platforms."""
    cmd = sim.command(sim.require(target_name), elf_path, work_dir)
    os.makedirs(work_dir, exist_ok=True)
    status, log = run_program(cmd, timeout, show=show)
    if status is None:
        log += f"\ngvsoc: timed out after {timeout} s\n"
    return status, log
