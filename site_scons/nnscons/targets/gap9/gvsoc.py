"""The GAP SDK and gvsoc: finding them, the SDK's compiler settings, and a gvsoc run.

Every command line the gvsoc platform issues is built here (build_settings for the
compile and link nodes, run_command for the run node), so tests can assert them.

Where the names come from (the SDK's own files; GAP9 = TARGET_CHIP_FAMILY GAP9,
TARGET_CHIP GAP9_V2, BOARD_NAME gap9_evk, PMSIS_OS freertos, the SDK's GAP9 default):
  GreenWaves-Technologies/gap_sdk configs/common.sh
      GAP_RISCV_GCC_TOOLCHAIN (default /usr/lib/gap_riscv_toolchain), its bin/ goes on PATH;
      RULES_DIR=$GAP_SDK_HOME/utils/rules; FREERTOS_PATH=$GAP_SDK_HOME/rtos/freeRTOS
  GreenWaves-Technologies/gap_sdk rtos/freeRTOS/vendors/gwt/rules/freeRTOS_rules.mk
      CC riscv32-unknown-elf-gcc; GAP9_V2: -march=rv32imcxgap9 -mPE=8 -mFC=1 -mint64;
      -D__riscv__ -D__GAP__ -D__GAP9__ -D__RISCV_ARCH_GAP__=1 -DCHIP_VERSION=2,
      gvsoc: -D__PLATFORM_GVSOC__ -D__PLATFORM__=ARCHI_PLATFORM_GVSOC and io=rtl (PRINTF_RTL);
      the COMMON/WARNINGS/CFLAGS/ASMFLAGS/LDFLAGS sets; the runtime compiled with the app:
      crt0 (*.S of gwt/<chip>/src/device), the FreeRTOS kernel and port, device, driver,
      libs, printf, PMSIS backend, and the PMSIS implementation/RTOS/BSP lists of the src.mk
      files; the link script gwt/<chip>/src/device/ld/<CHIP>.ld
  GreenWaves-Technologies/gap_sdk utils/rules/pmsis_rules.mk (and pmsis_defs.mk)
      READFS_FILES become flash content (readfs partition); CONFIG_FREQUENCY_* defaults;
      BOARD_NAME gap9_evk -> -DCONFIG_GAP9_EVK; `make all run platform=gvsoc`
  pulp-platform/Deeploy cmake/gap9/gap9_gvsoc.cmake (a GAP9 SDK user)
      $GAP_SDK_HOME/utils/gapy_v2/bin/gapy --target=gap9.evk --platform=gvsoc ... with
      --flash-property=<elf>@mram:app:binary, <file>@flash:readfs_flash:files, fsbl/ssbl,
      --multi-flash-content=utils/layouts/default_layout_multi_readfs.json, `image flash run`
  gvsoc/gvsoc README: the `gvsoc` launcher takes the same --target/--binary/--flash-property
      options and the `image flash run` commands
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
from dataclasses import dataclass, field

from ...builders.run.hostrun import run_program
from ...errors import UserError

CC_NAME = "riscv32-unknown-elf-gcc"
GAPY_REL = os.path.join("utils", "gapy_v2", "bin", "gapy")
GVSOC_TARGET = "gap9.evk"
CHIP, CHIP_DIR, CHIP_VERSION = "GAP9", "gap9", 2

ARCH = ["-march=rv32imcxgap9", "-mPE=8", "-mFC=1", "-mint64"]
# freeRTOS_rules.mk COMMON + WARNINGS (the SDK's own set: no -Werror, the runtime must build)
COMMON = ["-gdwarf-2", "-gstrict-dwarf", "-ffunction-sections", "-fdata-sections",
          "-fno-delete-null-pointer-checks", "-fomit-frame-pointer", "-fno-tree-loop-distribute-patterns",
          "-fno-jump-tables"]
WARNINGS = ["-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-unused-function", "-Wno-unused-variable",
            "-Wno-unused-but-set-variable", "-Wno-missing-field-initializers", "-Wno-format",
            "-Wimplicit-fallthrough=0", "-Wno-discarded-qualifiers"]
DEFINES = ["__riscv__", "__GAP__", f"__{CHIP}__", "__RISCV_ARCH_GAP__=1", f"CHIP_VERSION={CHIP_VERSION}",
           "FEATURE_CLUSTER=1", "PREEMPTION", "__FREERTOS__", "MAIN_APP_STACK_SIZE=2048",
           "__PLATFORM_GVSOC__", "__PLATFORM__=ARCHI_PLATFORM_GVSOC", "PRINTF_RTL", "CONFIG_GAP9_EVK",
           "__USE_TCDM_MALLOC__=1", "PMSIS_DRIVERS=1", "__FC_MALLOC_NATIVE__=0", "__L2_MALLOC_NATIVE__=0",
           "__PMSIS_L2_MALLOC_NATIVE__=0",
           # pmsis_rules.mk defaults
           "CONFIG_FREQUENCY_PERIPH=160000000", "CONFIG_FREQUENCY_FC=50000000",
           "CONFIG_FREQUENCY_CLUSTER=50000000", "CONFIG_FREQUENCY_SFU=50000000",
           "CONFIG_FAST_OSC_FREQUENCY=24576063", "CONFIG_FREQUENCY_FPGA=50000000"]


@dataclass
class Sdk:
    home: str | None            # GAP_SDK_HOME (None: only tools on PATH were found)
    cc: str | None              # the SDK's riscv32-unknown-elf-gcc
    launcher: str | None        # gapy (preferred) or gvsoc
    missing: list = field(default_factory=list)

    # ---- layout of the SDK tree (freeRTOS_rules.mk names)
    def _p(self, *parts):
        return os.path.join(self.home, *parts)

    @property
    def _gwt(self):
        return self._p("rtos", "freeRTOS", "vendors", "gwt")

    def include_dirs(self) -> list:
        rtos, gwt = self._p("rtos", "freeRTOS"), self._gwt
        implem = os.path.join(gwt, CHIP_DIR, "pmsis")
        return [os.path.join(rtos, "freertos_kernel", "include"),
                os.path.join(rtos, "demos", "gwt", "config", CHIP_DIR),
                os.path.join(rtos, "freertos_kernel", "portable", "GCC", f"RI5CY-{CHIP}"),
                gwt, os.path.join(gwt, CHIP_DIR, "include"), os.path.join(gwt, CHIP_DIR, "include", "driver"),
                os.path.join(gwt, "libs", "include"), os.path.join(gwt, "libs", "printf"),
                os.path.join(gwt, "pmsis", "include"), self._p("rtos", "pmsis", "api", "include"),
                self._p("rtos", "pmsis", "archi", "include"), os.path.join(gwt, "pmsis", "backend", "include"),
                implem, os.path.join(implem, "include"),
                os.path.join(implem, "include", "cores", "TARGET_RISCV_32"),
                os.path.join(implem, "include", "pmsis", "implem"),
                os.path.join(implem, "include", "pmsis", "targets"),
                self._p("rtos", "pmsis", "bsp", "include"),
                os.path.join(gwt, "pmsis", "rtos"), os.path.join(gwt, "pmsis", "rtos", "include"),
                self._p("rtos", "pmsis", "implem", "include")]

    def link_script(self) -> str:
        return os.path.join(self._gwt, CHIP_DIR, "src", "device", "ld", f"{CHIP}.ld")

    def runtime_sources(self) -> list:
        """The SDK runtime that freeRTOS_rules.mk compiles and links with every app."""
        rtos, gwt = self._p("rtos", "freeRTOS"), self._gwt
        kernel = os.path.join(rtos, "freertos_kernel")
        port = os.path.join(kernel, "portable", "GCC", f"RI5CY-{CHIP}")
        device = os.path.join(gwt, CHIP_DIR, "src", "device")
        out = _find(device, ".S") + _find(port, ".S") + _find(port, ".c")
        out += [os.path.join(kernel, f) for f in ("list.c", "queue.c", "tasks.c", "timers.c",
                                                  "event_groups.c", "stream_buffer.c")]
        out += [os.path.join(rtos, "demos", "gwt", "config", CHIP_DIR, "FreeRTOS_util.c")]
        out += _find(device, ".c") + _find(os.path.join(gwt, CHIP_DIR, "src", "driver"), ".c")
        out += _find(os.path.join(gwt, "libs", "src"), ".c") + [os.path.join(gwt, "libs", "printf", "printf.c")]
        out += _find(os.path.join(gwt, "pmsis", "backend"), ".c")
        lists = ("PMSIS_IMPLEM_CHIP_ASM_SRCS", "PMSIS_IMPLEM_CHIP_SRCS", "PMSIS_BSP_SRCS", "PMSIS_RTOS_SRCS")
        makefiles = [os.path.join(gwt, CHIP_DIR, "pmsis", "src.mk"), os.path.join(gwt, "pmsis", "src.mk"),
                     self._p("rtos", "pmsis", "bsp", "rules", "freertos_bsp_rules.mk")]
        mk = make_variables(makefiles, lists, {
            "TARGET_CHIP_FAMILY": CHIP, "TARGET_CHIP": "GAP9_V2", "BOARD_NAME": "gap9_evk",
            "GAP_SDK_HOME": self.home, "PMSIS_HOME": self._p("rtos", "pmsis"),
            "PMSIS_IMPLEM_DIR": os.path.join(gwt, CHIP_DIR, "pmsis"),
            "PMSIS_SHARED_IMPLEM_DIR": self._p("rtos", "pmsis", "implem"),
            "PMSIS_RTOS_DIR": os.path.join(gwt, "pmsis", "rtos"), "GWT_PMSIS": os.path.join(gwt, "pmsis"),
            "PMSIS_BSP_DIR": self._p("rtos", "pmsis", "bsp")})
        for var in lists:
            out += mk.get(var, [])
        seen, result = set(), []
        for f in out:
            f = os.path.normpath(f)
            if f not in seen:
                seen.add(f)
                result.append(f)
        return result

    # ---- the command lines
    def build_settings(self, opts) -> dict:
        """Compiler, flags and extra sources for the per-layer compile nodes and the link."""
        return {
            "CC": self.cc,
            "CFLAGS": ARCH + ["-std=gnu99", "-O2"] + COMMON + WARNINGS,
            # the runtime's assembly (crt0, port, cluster entry), as freeRTOS_rules.mk's ASMFLAGS
            "ASPPFLAGS": ARCH + ["-DASSEMBLY_LANGUAGE"],
            "LINKFLAGS": ARCH + ["-T" + self.link_script(), "-nostartfiles", "-nostdlib",
                                 "-Wl,--gc-sections,-static"],
            "CPPPATH": self.include_dirs(),
            "CPPDEFINES": list(DEFINES),
            "LIBS": ["gcc"],
            "SOURCES": self.runtime_sources(),
            "SOURCE_ROOT": self.home,
        }

    def run_command(self, firmware: str, bin_dir: str, work_dir: str) -> list:
        """gapy (or the gvsoc launcher) booting the firmware from MRAM, the .bin files of
        bin_dir as the readfs partition of the external flash, then running it."""
        fw = os.path.abspath(firmware)
        readfs = [f"--flash-property={os.path.abspath(f)}@flash:readfs_flash:files"
                  for f in sorted(glob.glob(os.path.join(bin_dir, "*.bin")))]
        work = f"--work-dir={os.path.abspath(work_dir)}"
        if os.path.basename(self.launcher) != "gvsoc":
            cmd = [self.launcher, f"--target={GVSOC_TARGET}", "--platform=gvsoc", work]
            if self.home:
                cmd += [f"--target-dir={self._p('install', 'workstation', 'generators')}",
                        f"--model-dir={self._p('install', 'workstation', 'models')}"]
            cmd += ["--target-property=boot.flash_device=mram", "--target-property=boot.mode=flash"]
            if self.home:
                cmd += [f"--multi-flash-content={self._p('utils', 'layouts', 'default_layout_multi_readfs.json')}"]
            cmd += [f"--flash-property={fw}@mram:app:binary"] + readfs
            if self.home:
                cmd += [f"--flash-property={self._p('install', 'target', 'bin', b)}@mram:{b}:binary"
                        for b in ("fsbl", "ssbl")]
            return cmd + ["--py-stack", "image", "flash", "run", f"--binary={fw}"]
        return [self.launcher, f"--target={GVSOC_TARGET}", work, f"--binary={fw}"] + readfs + \
            ["image", "flash", "run"]

    def run(self, firmware: str, bin_dir: str, timeout: int, show: bool = False) -> tuple:
        """(exit status or None on timeout, log text). The status is not trusted by the
        caller: gvsoc's is unreliable, so the log decides."""
        work_dir = os.path.join(os.path.dirname(os.path.abspath(firmware)), "gvsoc_work")
        os.makedirs(work_dir, exist_ok=True)
        if self.home:   # as the SDK's flows do: the chip's efuse content for the boot
            efuse = self._p("utils", "efuse", "GAP9", "efuse_hyper_preload.data")
            if os.path.isfile(efuse):
                shutil.copyfile(efuse, os.path.join(work_dir, "chip.efuse_preload.data"))
        return run_program(self.run_command(firmware, bin_dir, work_dir), timeout, cwd=work_dir, show=show)


def _find(top: str, suffix: str) -> list:
    """`find top -iname '*suffix'`, sorted."""
    out = []
    for dirpath, dirnames, files in os.walk(top):
        dirnames.sort()
        out += [os.path.join(dirpath, f) for f in sorted(files) if f.lower().endswith(suffix.lower())]
    return out


def make_variables(makefiles: list, names: list, variables: dict) -> dict:
    """{name: words} of `names` after GNU make reads `makefiles` (missing ones skipped, as
    the SDK's -include does), with `variables` in its environment as the SDK's rules set
    them. The SDK's own make evaluates its lists: no second make dialect to keep in step."""
    make = shutil.which("make")
    if not make:
        raise UserError("platform=gvsoc: GNU make not found on PATH; the GAP SDK needs it to list its "
                        "runtime sources (Debian: apt-get install make)")
    text = "".join(f"-include {path}\n" for path in makefiles)
    text += "".join(f"$(info NNS {name} $({name}))\n" for name in names) + "nns-print: ;@:\n"
    env = dict(os.environ, **{k: str(v) for k, v in variables.items()}, MAKEFLAGS="", MAKELEVEL="")
    proc = subprocess.run([make, "-s", "--no-print-directory", "-f", "-", "nns-print"], input=text,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise UserError(f"platform=gvsoc: make could not read the GAP SDK's source lists "
                        f"({', '.join(makefiles)}): {proc.stderr.strip()[-800:]}; check GAP_SDK_HOME")
    out = {}
    for line in proc.stdout.splitlines():
        tag, _, rest = line.partition(" ")
        if tag == "NNS":
            name, _, words = rest.partition(" ")
            out[name] = words.split()
    return out


def _which_in(dirs, name):
    for d in dirs:
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def find_sdk():
    """The GAP SDK from GAP_SDK_HOME, or from gapy/gvsoc on PATH; None when neither is there.
    The result may still lack pieces (Sdk.missing) that require_sdk reports."""
    home = os.environ.get("GAP_SDK_HOME") or None
    if home and not os.path.isdir(home):
        home = None
    launcher = None
    if home:
        launcher = _which_in([os.path.dirname(os.path.join(home, GAPY_REL))], "gapy")
    launcher = launcher or shutil.which("gapy") or shutil.which("gvsoc")
    if home is None and launcher is None:
        return None
    toolchain = os.environ.get("GAP_RISCV_GCC_TOOLCHAIN")
    cc = _which_in([os.path.join(toolchain, "bin")], CC_NAME) if toolchain else None
    cc = cc or shutil.which(CC_NAME)
    missing = []
    if home is None:
        missing.append("GAP_SDK_HOME (the SDK's headers, runtime and rules) is not set")
    if cc is None:
        missing.append(f"the SDK's compiler {CC_NAME} is neither in $GAP_RISCV_GCC_TOOLCHAIN/bin nor on PATH")
    if launcher is None:
        missing.append(f"gapy ($GAP_SDK_HOME/{GAPY_REL}) / gvsoc is not found")
    return Sdk(home=home, cc=cc, launcher=launcher, missing=missing)


def require_sdk(target_name):
    sdk = find_sdk()
    if sdk is None or sdk.missing:
        what = "; ".join(sdk.missing) if sdk else "the GAP SDK was not found (GAP_SDK_HOME unset, no gapy or gvsoc on PATH)"
        raise UserError(f"target '{target_name}' platform=gvsoc: {what}. Install the GAP9 SDK and its "
                        f"RISC-V toolchain (GreenWaves gap_sdk with gap_riscv_toolchain), then source its "
                        f"GAP9 configuration (e.g. `source $GAP_SDK_HOME/configs/gap9_evk_audio.sh`), which "
                        f"sets GAP_SDK_HOME and GAP_RISCV_GCC_TOOLCHAIN and puts gapy/gvsoc on PATH; "
                        f"or use platform=emul / platform=qemu")
    return sdk
