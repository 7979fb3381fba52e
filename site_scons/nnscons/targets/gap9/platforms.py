"""Where GAP9 code runs: platform choice, tool checks, compiler settings and the run step.

  emul   the machine's C compiler + the PMSIS emulation (kernels/gap9/emul), threads
  qemu   riscv64-unknown-elf-gcc for rv32 + the emulation on one hart, qemu-system-riscv32
  gvsoc  the GAP SDK's compiler and gvsoc (see gvsoc.py)
  gvsoc-gap9  riscv64-unknown-elf-gcc + the bare-metal runtime of kernels/gap9/open on
         GreenWaves' GVSoC model of GAP9 ($GAP9_GVSOC), with per-layer cycles and TCDM contention
         (baremetal.py, gvsoc_gap9.py)
A kind reusing this code lists its own bare-metal simulators in its Chip (chip.py); which
platform is which is read there (session.kind.CHIP), never from the chip's name.
"""
from __future__ import annotations

import glob
import os
import shutil

from ...builders.run.hostrun import run_program
from ...errors import UserError
from ...resources import data_path
from ..base import cross_ar
from . import baremetal, gvsoc, gvsoc_gap9

EMUL_DIR = data_path("kernels", "gap9", "emul")
_announced = set()


def resolve(opts, target_name, explicit) -> str:
    platform = opts["run"]["platform"]
    if platform != "auto":
        return platform
    # the GAP SDK's gvsoc when installed, else GVSoC's GAP9 model, else the emulation
    sdk = gvsoc.find_sdk()
    model = None if sdk else gvsoc_gap9.find_gap9_model(install=True)
    chosen = "gvsoc" if sdk else "gvsoc-gap9" if model and shutil.which(baremetal.CC) else "emul"
    if target_name not in _announced:          # one line per scons call
        _announced.add(target_name)
        if sdk:
            why = f"GAP SDK at {sdk.home or sdk.launcher}"
        elif chosen == "gvsoc-gap9":
            why = f"GAP SDK not found; GVSoC's GAP9 model at {os.path.dirname(model)}"
        else:
            why = ("GAP SDK not found (GAP_SDK_HOME unset and no gvsoc on PATH), nor GVSoC's GAP9 model "
                   "(GAP9_GVSOC unset, no ../shared/gap9-gvsoc" + (")" if not model else f"; {baremetal.CC} not on PATH)"))
        print(f"nnscons: target {target_name}: platform=auto -> {chosen} ({why}); "
              f"choose with platform=gvsoc|gvsoc-gap9|emul|qemu")
    return chosen


def simulator(session, platform):
    """The bare-metal GVSoC Simulator (chip.py) of the session's kind for platform, else None."""
    return session.kind.CHIP.simulator(platform)


def check_tools(env, session) -> None:
    platform = session.options["run"]["platform"]
    name = session.target_cfg.name
    if platform == "gvsoc":
        gvsoc.require_sdk(name)
    elif sim := simulator(session, platform):
        baremetal.check_tools(name, sim)
    elif platform == "qemu":
        from . import qemu
        for tool, package in ((qemu.cross_flags()["CC"], "gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf"),
                              ("qemu-system-riscv32", "qemu-system-misc")):
            if not shutil.which(tool):
                raise UserError(f"target '{name}' platform=qemu: '{tool}' not found on PATH; install it "
                                f"(Debian: apt-get install {package}) or use platform=emul")
    else:
        cc = session.options["toolchain"]["cc"]
        if not env.Detect(cc):
            raise UserError(f"target '{name}' platform=emul: C compiler '{cc}' not found on PATH; install "
                            f"it (Debian: apt-get install gcc) or set targets.{name}.toolchain.cc")


def _emul_defines(opts) -> list:
    m, d = opts["memory"], opts["dma"]
    return [f"NN_EMUL_L1_SIZE={m['l1']}u", f"NN_EMUL_L2_SIZE={m['l2'] - m['l2_reserved']}u",
            f"NN_EMUL_L3_SIZE={m['l3_size']}u", f"NN_EMUL_DMA_MAX_SIZE={d['max_transfer']}u",
            f"NN_EMUL_DMA_MAX_INFLIGHT={d['max_inflight']}"]


def runtime_defines(opts) -> list:
    d = opts["dma"]
    flash = ["NN_L3_FLASH"] if opts["memory"]["l3_device"] == "flash" else []
    return [f"NN_DMA_MAX_INFLIGHT={d['max_inflight']}", f"NN_DMA_MAX_SIZE={d['max_transfer']}",
            f"NN_NUM_CORES={opts['cluster']['cores']}"] + flash


# How kernels/gap9/nn_xpulp.h implements the Xpulp operations on each platform: the GAP SDK
# compiler's builtins on gvsoc; `.insn` encodings on the bare-metal GVSoC platforms (NN_XPULP_INSN, set
# with their flags in baremetal.py); plain C with the same semantics on emul and qemu.
XPULP = {"gvsoc": ["NN_XPULP_BUILTIN"]}


def xpulp_defines(platform) -> list:
    return list(XPULP.get(platform, []))


def emul_sources(platform) -> list:
    """The emulation's C files for a platform: threads natively, one hart on qemu."""
    files = sorted(glob.glob(os.path.join(EMUL_DIR, "*.c")))
    drop = "team_threads" if platform == "qemu" else "team_sequential"
    return [f for f in files if drop not in os.path.basename(f)]


def library_flags(opts, platform, lib_dir) -> dict:
    """What an application of <platform>/lib/libnns_<model>.a compiles and links with besides
    the header (its .mk and .cmake in lib_dir): nn_gap9.h's folder and the runtime defines; on
    emul and qemu the emulation's pmsis.h (the archive holds the emulation; natively it needs
    threads).  On gvsoc and the bare-metal GVSoC platforms the application brings its PMSIS runtime.  Include
    folders are relative to lib_dir (the files find them from where they are), so that two
    checkouts generate the same files and share a cache."""
    inc = [data_path("kernels", "common"), data_path("kernels", "gap9")]
    defines = runtime_defines(opts) + xpulp_defines(platform)
    if platform in ("emul", "qemu"):
        inc.append(EMUL_DIR)
        defines += _emul_defines(opts) + (["NN_EMUL_SEQUENTIAL"] if platform == "qemu" else [])
    here = os.path.abspath(lib_dir)
    return {"include_dirs": [os.path.relpath(os.path.abspath(d), here).replace(os.sep, "/") for d in inc],
            "cflags": [f"-D{d}" for d in defines],
            "link_libs": ["pthread", "m"] if platform == "emul" else []}


def library_runtime(platform) -> bool:
    """Whether the platform's archive holds the PMSIS runtime (the emulation)."""
    return platform in ("emul", "qemu")


def environment(env, session, platform):
    """A clone of env with this platform's compiler, flags and include paths;
    returns (env, extra C sources to compile and link)."""
    opts = session.options
    cpp = [data_path("kernels", "common"), data_path("kernels", "gap9"), os.path.join(session.build_dir, "src"),
           os.path.join(session.build_dir, "include")]
    defines = runtime_defines(opts) + xpulp_defines(platform)
    if platform == "gvsoc":
        sdk = gvsoc.require_sdk(session.target_cfg.name)
        s = sdk.build_settings(opts)
        e = env.Clone(CC=s["CC"], LINK=s["CC"], AR=cross_ar(s["CC"]), CFLAGS=s["CFLAGS"], ASPPFLAGS=s["ASPPFLAGS"],
                      LINKFLAGS=s["LINKFLAGS"], CPPPATH=cpp + s["CPPPATH"],
                      CPPDEFINES=defines + s["CPPDEFINES"], LIBS=s["LIBS"], PROGSUFFIX="",
                      NNS_SOURCE_ROOT=s["SOURCE_ROOT"])
        return e, s["SOURCES"]
    if sim := simulator(session, platform):
        # every run's work dir is <platform dir>/gvsoc-work/<program>: the same way up to bin/
        work = os.path.join(session.build_dir, platform, baremetal.WORK_DIR, "program")
        fs_dir = os.path.relpath(os.path.join(session.build_dir, "bin"), work)
        x = baremetal.cross_flags(fs_dir.replace(os.sep, "/"), opts, sim)
        e = env.Clone(CC=x["CC"], LINK=x["CC"], AR=cross_ar(x["CC"]), CFLAGS=x["CFLAGS"], LINKFLAGS=x["LINKFLAGS"],
                      CPPPATH=cpp + x["CPPPATH"], CPPDEFINES=defines + x["CPPDEFINES"], PROGSUFFIX=".elf")
        return e, x["SOURCES"]
    if platform == "qemu":
        from . import qemu
        x = qemu.cross_flags()
        e = env.Clone(CC=x["CC"], LINK=x["CC"], AR=cross_ar(x["CC"]),
                      CFLAGS=list(x["CFLAGS"]) + ["-Wall", "-Wextra", "-Werror"],
                      LINKFLAGS=list(x["LINKFLAGS"]), CPPPATH=cpp + [EMUL_DIR],
                      CPPDEFINES=defines + _emul_defines(opts) + ["NN_EMUL_SEQUENTIAL"], PROGSUFFIX=".elf")
        return e, emul_sources("qemu")
    tc = opts["toolchain"]
    e = env.Clone(CC=tc["cc"], LINK=tc["cc"], CFLAGS=list(tc["cflags"]) + ["-pthread"],
                  LINKFLAGS=list(tc["ldflags"]) + ["-pthread"], LIBS=["m"], CPPPATH=cpp + [EMUL_DIR],
                  CPPDEFINES=defines + _emul_defines(opts))
    return e, emul_sources("emul")


def run(platform, session, firmware, bin_dir, show=False) -> tuple:
    """(exit status or None on timeout, log text); show: print the command (verbose=1)."""
    timeout = session.options["run"]["timeout"]
    if platform == "gvsoc":
        return gvsoc.require_sdk(session.target_cfg.name).run(firmware, bin_dir, timeout, show)
    if sim := simulator(session, platform):
        work = os.path.join(session.build_dir, platform, baremetal.WORK_DIR,
                            os.path.splitext(os.path.basename(firmware))[0])
        return baremetal.run(session.target_cfg.name, sim, firmware, work, timeout, show)
    if platform == "qemu":
        from . import qemu
        return qemu.run_qemu(firmware, bin_dir, timeout, show)
    return run_program([os.path.abspath(firmware)], timeout, env=dict(os.environ, NN_EMUL_FS_DIR=bin_dir),
                       show=show)
