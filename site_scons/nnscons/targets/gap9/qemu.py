"""GAP9 code on qemu: rv32 cross-compilation and qemu-system-riscv32 runs.

The generated PMSIS sources are compiled with Debian's riscv64-unknown-elf-gcc against the
PMSIS emulation (kernels/gap9/emul, sequential team backend) and picolibc, and run bare-metal
on `qemu-system-riscv32 -M virt`. printf, fopen (readfs files) and exit() go through
semihosting: relative file names resolve in qemu's working directory and the program's exit
status becomes qemu's.

-march: GAP9 cores are rv32imc (+ Xpulp). Debian's picolibc ships no rv32imc multilib; gcc
maps -march=rv32imc -mabi=ilp32 onto the rv32im/ilp32 one (code without compressed
instructions runs on any rv32imc hart), so the program is rv32imc and the C library rv32im.

Memory (qemu -m 256M, RAM at 0x80000000): code and read-only data in the first 16 MiB, the rest
is RAM for data, bss (the emulation's L1/L2/L3 arenas: 128 KiB + 1.5 MiB + 32 MiB by default),
heap and a 1 MiB stack at the top. picolibc's own linker script places everything from the
__flash/__ram symbols below, so no linker script of our own is needed.
"""
from __future__ import annotations

import os
import shutil

from ...builders.run.hostrun import run_program

CC = "riscv64-unknown-elf-gcc"
QEMU = "qemu-system-riscv32"

RAM_MB = 256
_RAM_BASE = 0x80000000
_TEXT_SIZE = 16 << 20
_STACK_SIZE = 1 << 20

_TARGET = ["-march=rv32imc", "-mabi=ilp32", "-mcmodel=medany", "--specs=picolibc.specs"]


def cross_flags() -> dict:
    """Compiler and linker flags for rv32imc/ilp32 + picolibc + semihosting.

    CFLAGS carry only target flags (no -O, no warnings); NN_EMUL_SEQUENTIAL selects the
    one-hart team backend (the emulation also forces it on bare metal). LIBS is what to link
    after the objects when kernels need libm."""
    ram = _RAM_BASE + _TEXT_SIZE
    return dict(
        CC=CC,
        CFLAGS=_TARGET + ["-ffunction-sections", "-fdata-sections", "-DNN_EMUL_SEQUENTIAL"],
        LINKFLAGS=_TARGET + [
            "--oslib=semihost", "--crt0=semihost",
            f"-Wl,--defsym=__flash={_RAM_BASE:#x}",
            f"-Wl,--defsym=__flash_size={_TEXT_SIZE:#x}",
            f"-Wl,--defsym=__ram={ram:#x}",
            f"-Wl,--defsym=__ram_size={(RAM_MB << 20) - _TEXT_SIZE:#x}",
            f"-Wl,--defsym=__stack_size={_STACK_SIZE:#x}",
        ],
        LIBS=["m"],
    )


def qemu_command(elf_path: str) -> list:
    """The qemu command line: one rv32 hart, no devices in use, semihosting to the host."""
    return [QEMU, "-M", "virt", "-smp", "1", "-m", f"{RAM_MB}M", "-bios", "none",
            "-kernel", os.path.abspath(elf_path),
            "-display", "none", "-serial", "none", "-monitor", "none", "-no-reboot",
            "-semihosting-config", "enable=on,target=native"]


def missing_tools() -> list:
    """The tools of this module not on PATH."""
    return [t for t in (CC, QEMU) if not shutil.which(t)]


def run_qemu(elf_path: str, cwd: str, timeout: float, show: bool = False) -> tuple:
    """Run an ELF built with cross_flags() on qemu in directory cwd.

    Returns (exit status, log): the program's exit status (3 when the emulation detected a
    misuse, 1 for a CPU fault, which picolibc reports with a register dump), or None when it
    did not finish within timeout seconds; log is everything the program printed (stdout and
    stderr, both through semihosting) and qemu's own messages."""
    status, log = run_program(qemu_command(elf_path), timeout, cwd=cwd, show=show)
    if status is None:
        log += f"\nqemu: timed out after {timeout} s\n"
    return status, log
