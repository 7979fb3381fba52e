"""GAP9 code on GVSoC, bare metal: compiler flags, finding the simulator, the run.

Two chips, one runtime (kernels/gap9/open: PMSIS subset, semihosting) and one compiler
(Debian's riscv64-unknown-elf-gcc + picolibc):
  gvsoc-open  GVSoC's pulp-open, the open PULP model closest to GAP9 (8 RI5CY cores with
              Xpulpv2, 64 KiB L1, mchan DMA; ../shared/gvsoc/NOTES.md), `gvsoc --target=pulp-open`
  gvsoc-gap9  GreenWaves' own GVSoC model of GAP9 (9 cluster cores, 128 KiB L1 in 16 banks with
              bank conflicts modelled, mchan at another alias, NE16; no uDMA, so no L3;
              ../shared/gap9-gvsoc/NOTES.md), `$GAP9_GVSOC/run.sh prog.elf workdir`

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
GVSOC_TARGET = "pulp-open"
PLATFORMS = ("gvsoc-open", "gvsoc-gap9")      # the bare-metal GVSoC platforms of this module
RUNTIME_DIR = data_path("kernels", "gap9", "open")
WORK_DIR = "gvsoc-work"

L2_BASE = 0x1C010000
L2_SIZE = 0x180000
CODE_SIZE = 256 * 1024
FC_STACK_SIZE = 16 * 1024
MIN_L2_RESERVED = 320 * 1024      # CODE_SIZE, data and bss, the FC stack: what targets.yaml's pulp-open keeps

# What the cycle figures are (report.json `cycles_source`, under the table)
_CYCLES = ("cycles = cluster core 0 from the layer's task start to its end, DMA waits and forks included, "
           "parameters already in L2")
CYCLES_SOURCE = {
    "gvsoc-open": ("pulp-open proxy figures for GAP9 (GVSoC pulp-open: 8 RI5CY cores, Xpulpv2, 64 KiB L1; "
                   "not GAP9's 9 cores, 128 KiB L1, Xpulpv3); " + _CYCLES),
    "gvsoc-gap9": ("gvsoc-gap9: GreenWaves' GVSoC model of GAP9 (release-v4.13.0: 9 cluster cores, 128 KiB L1 "
                   "in 16 banks with bank conflicts, mchan DMA; clocks fixed, no L3); " + _CYCLES +
                   "; tcdm_contention = cycles the cores lost to L1 bank conflicts"),
}

_CC_TARGET = ["-march=rv32imc_zicsr", "-mabi=ilp32", "--specs=picolibc.specs"]
_LINK_TARGET = ["-march=rv32imc", "-mabi=ilp32", "--specs=picolibc.specs"]

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


GAP9_INSTALL_HINT = ("install it with `bash ../shared/gap9-gvsoc/install.sh DIR` (the folder beside this "
                     "repository; DIR e.g. ~/.cache/nnscons/gap9-gvsoc) and set GAP9_GVSOC=DIR, or put "
                     "shared/gap9-gvsoc beside the project and nnscons installs it into build/tools")


# where the GAP9 model is installed from ../shared/gap9-gvsoc when GAP9_GVSOC is unset: inside
# the project's build/ (nothing outside it is written), shared by every target and model
LOCAL_GAP9_MODEL = os.path.join("build", "tools", "gap9-gvsoc")


def _shared_installer() -> str | None:
    """../shared/gap9-gvsoc/install.sh beside the project (the folder SCons runs in)."""
    path = os.path.join(os.path.dirname(os.getcwd()), "shared", "gap9-gvsoc", "install.sh")
    return path if os.path.isfile(path) else None


def _run_sh(home: str) -> str | None:
    run_sh = os.path.join(home, "run.sh")
    return os.path.abspath(run_sh) if os.path.isfile(run_sh) and os.access(run_sh, os.X_OK) else None


def find_gap9_model(install: bool = False) -> str | None:
    """The GAP9 model's run.sh: $GAP9_GVSOC (the install folder holding it) when set; else the
    project's own install in build/tools, made from ../shared/gap9-gvsoc when that is beside
    the project and `install` is true (about a second: a prebuilt; published by one rename,
    so an interrupted install leaves nothing that is used)."""
    home = os.environ.get("GAP9_GVSOC")
    if home:
        return _run_sh(home)
    if os.path.isfile(os.path.join(LOCAL_GAP9_MODEL, ".installed")):
        return _run_sh(LOCAL_GAP9_MODEL)
    installer = _shared_installer()
    if not (install and installer and shutil.which(CC)):
        return None
    import subprocess
    import tempfile
    os.makedirs(os.path.dirname(LOCAL_GAP9_MODEL), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="gap9-gvsoc.", dir=os.path.dirname(LOCAL_GAP9_MODEL))
    print(f"nnscons: installing GVSoC's GAP9 model from {installer} into {LOCAL_GAP9_MODEL}")
    proc = subprocess.run(["bash", installer, tmp], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode or not os.path.isfile(os.path.join(tmp, ".installed")):
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"nnscons: the GAP9 model's installer failed:\n{proc.stdout[-2000:]}")
        return None
    try:
        os.rename(tmp, LOCAL_GAP9_MODEL)
    except OSError:         # another build installed it first
        shutil.rmtree(tmp, ignore_errors=True)
    return _run_sh(LOCAL_GAP9_MODEL)


def require_gap9_model(target_name: str) -> str:
    path = find_gap9_model(install=True)
    if path:
        return path
    home = os.environ.get("GAP9_GVSOC")
    why = (f"GAP9_GVSOC={home} holds no executable run.sh" if home else
           "GAP9_GVSOC is unset and no ../shared/gap9-gvsoc beside the project to install it from")
    raise UserError(f"target '{target_name}' platform=gvsoc-gap9: GVSoC's GAP9 model not found ({why}); "
                    f"{GAP9_INSTALL_HINT}; or use platform=emul")


def check_tools(target_name: str, platform: str = "gvsoc-open") -> None:
    if not shutil.which(CC):
        raise UserError(f"target '{target_name}' platform={platform}: '{CC}' not found on PATH; install it "
                        f"(Debian: apt-get install gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf) "
                        f"or use platform=emul")
    if platform == "gvsoc-gap9":
        require_gap9_model(target_name)
    else:
        require_gvsoc(target_name)


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


def cross_flags(fs_dir: str, opts, platform: str = "gvsoc-open") -> dict:
    """CC, CFLAGS, LINKFLAGS, defines and runtime sources for a bare-metal GVSoC build.
    fs_dir: where bin/ is, relative to the simulator's work dir."""
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
        CPPDEFINES=["NN_XPULP_INSN"] + (["NN_OPEN_CHIP_GAP9"] if platform == "gvsoc-gap9" else []) + [
                    f"NN_OPEN_SLAVE_STACK_SIZE={opts['cluster']['slave_stack_size']}u",
                    ("NN_OPEN_FS_DIR", '\\"%s\\"' % fs_dir)],
        CPPPATH=[RUNTIME_DIR],
        SOURCES=[os.path.join(RUNTIME_DIR, "open_fc.c"), os.path.join(RUNTIME_DIR, "open_cluster.c")],
    )


def run_command(gvsoc: str, elf_path: str, work_dir: str) -> list:
    return [gvsoc, f"--target={GVSOC_TARGET}", "--binary", os.path.abspath(elf_path),
            f"--work-dir={os.path.abspath(work_dir)}", "run"]


def run(target_name: str, elf_path: str, work_dir: str, timeout: float, show: bool = False,
        platform: str = "gvsoc-open") -> tuple:
    """(exit status or None on timeout, log). gvsoc's status is the program's semihosting exit
    (0, or 1 for any failure): the run step trusts the log, as on the other platforms.  The
    GAP9 model's run.sh prepares its configuration in work_dir and runs from there."""
    if platform == "gvsoc-gap9":
        cmd = [require_gap9_model(target_name), os.path.abspath(elf_path), os.path.abspath(work_dir)]
    else:
        cmd = run_command(require_gvsoc(target_name), elf_path, work_dir)
    os.makedirs(work_dir, exist_ok=True)
    status, log = run_program(cmd, timeout, show=show)
    if status is None:
        log += f"\ngvsoc: timed out after {timeout} s\n"
    return status, log
