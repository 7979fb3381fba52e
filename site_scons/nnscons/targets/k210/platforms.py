"""Where K210 firmware runs.

  emul   the machine's C compiler; the KPU is the C emulator (kernels/k210/kpu_emul.c)
  qemu   rv64imafc bare metal (-march=rv64imafc_zicsr_zifencei -mabi=lp64f), Debian's
         riscv64-unknown-elf-gcc + picolibc + semihosting, with the emulator linked in, on
         qemu-system-riscv64 -M virt (one hart; the K210 has two, the CPU layers use one)
  board  the Kendryte standalone SDK's CMake build (kpu_board.c: the real KPU registers) and
         kflash (the `flash` alias only); the serial log holds the run's lines (board.py)

qemu memory (-m 256M at 0x80000000): code and read-only data in the first 16 MiB, then data,
bss (the emulated 2 MiB AI RAM), heap (the layers' parameters, 256-byte aligned) and a 1 MiB
stack. picolibc's linker script takes the layout from the __flash/__ram symbols below.
"""
from __future__ import annotations

import os
import shutil

from ...builders.run.hostrun import run_program
from ...errors import UserError
from ...resources import data_path
from ..base import cross_ar

QEMU = "qemu-system-riscv64"
RAM_MB = 256
_RAM_BASE = 0x80000000
_TEXT_SIZE = 16 << 20
_STACK_SIZE = 1 << 20
MARCH = ["-march=rv64imafc_zicsr_zifencei", "-mabi=lp64f", "-mcmodel=medany"]
EMUL_SOURCES = [data_path("kernels", "k210", "kpu_emul.c")]
DEFAULT_CROSS_CC = "riscv64-unknown-elf-gcc"


def cross_flags(cc: str) -> dict:
    target = MARCH + ["--specs=picolibc.specs"]
    ram = _RAM_BASE + _TEXT_SIZE
    return dict(
        CC=cc,
        CFLAGS=target + ["-O2", "-ffunction-sections", "-fdata-sections", "-Wall", "-Wextra", "-Werror"],
        LINKFLAGS=target + [
            "--oslib=semihost", "--crt0=semihost", "-Wl,--gc-sections",
            f"-Wl,--defsym=__flash={_RAM_BASE:#x}", f"-Wl,--defsym=__flash_size={_TEXT_SIZE:#x}",
            f"-Wl,--defsym=__ram={ram:#x}", f"-Wl,--defsym=__ram_size={(RAM_MB << 20) - _TEXT_SIZE:#x}",
            f"-Wl,--defsym=__stack_size={_STACK_SIZE:#x}",
        ],
    )


def qemu_command(elf_path: str) -> list:
    return [QEMU, "-M", "virt", "-smp", "1", "-m", f"{RAM_MB}M", "-bios", "none",
            "-kernel", os.path.abspath(elf_path), "-display", "none", "-serial", "none",
            "-monitor", "none", "-no-reboot", "-semihosting-config", "enable=on,target=native"]


def check_tools(env, session) -> None:
    opts = session.options
    platform = opts["run"]["platform"]
    name = session.target_cfg.name
    if platform == "board":
        from . import sdk
        sdk.locate(session)              # kflash and the port: checked by the flash step only
        sdk.require_toolchain(session)
        return
    if platform == "qemu":
        for tool, package in ((opts["toolchain"]["cross_cc"], "gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf"),
                              (QEMU, "qemu-system-misc")):
            if not shutil.which(tool):
                raise UserError(f"target '{name}' platform=qemu: '{tool}' not found on PATH; install it "
                                f"(Debian: apt-get install {package}) or use platform=emul")
        if not os.path.isdir("/usr/lib/picolibc/riscv64-unknown-elf") and \
                opts["toolchain"]["cross_cc"] == DEFAULT_CROSS_CC:
            raise UserError(f"target '{name}' platform=qemu: picolibc for riscv64-unknown-elf is missing; "
                            f"install it (Debian: apt-get install picolibc-riscv64-unknown-elf)")
        return
    cc = opts["toolchain"]["cc"]
    if not env.Detect(cc):
        raise UserError(f"target '{name}' platform=emul: C compiler '{cc}' not found on PATH; install it "
                        f"(Debian: apt-get install gcc) or set targets.{name}.toolchain.cc")


def environment(env, session, platform):
    """(a clone of env with this platform's compiler and flags, extra C sources: the KPU HAL,
    here the emulator).  The weights' .S files find their .bin through the assembler flags."""
    from .. import library
    opts = session.options
    b = session.build_dir
    cpp = [data_path("kernels", "common"), data_path("kernels", "k210"), os.path.join(b, "include")]
    if platform == "qemu":
        x = cross_flags(opts["toolchain"]["cross_cc"])
        e = env.Clone(CC=x["CC"], LINK=x["CC"], AR=cross_ar(x["CC"]), CFLAGS=x["CFLAGS"], LINKFLAGS=x["LINKFLAGS"],
                      ASPPFLAGS=MARCH + [library.weights_include(b)], CPPPATH=cpp,
                      CPPDEFINES=["NN_BIN_DIR_FROM_CWD"], PROGSUFFIX=".elf", LIBS=[])
        return e, EMUL_SOURCES
    tc = opts["toolchain"]
    e = env.Clone(CC=tc["cc"], LINK=tc["cc"], CFLAGS=list(tc["cflags"]), LINKFLAGS=list(tc["ldflags"]),
                  ASPPFLAGS=[library.weights_include(b)], CPPPATH=cpp, CPPDEFINES=[], LIBS=[])
    return e, EMUL_SOURCES


def run(platform, session, firmware, bin_dir, env=None) -> tuple:
    """(exit status or None on timeout, log)."""
    timeout = session.options["run"]["timeout"]
    if platform == "qemu":
        status, log = run_program(qemu_command(firmware), timeout, cwd=bin_dir)
        return status, log
    if platform == "board":
        from . import board
        return board.run(session, firmware, timeout, env)
    return run_program([os.path.abspath(firmware), bin_dir], timeout)
