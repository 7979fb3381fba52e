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
import re
import shutil
from dataclasses import dataclass, field

from ...builders.hostrun import run_program
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
        mk = Make({"TARGET_CHIP_FAMILY": CHIP, "TARGET_CHIP": "GAP9_V2", "BOARD_NAME": "gap9_evk",
                   "GAP_SDK_HOME": self.home, "PMSIS_HOME": self._p("rtos", "pmsis"),
                   "PMSIS_IMPLEM_DIR": os.path.join(gwt, CHIP_DIR, "pmsis"),
                   "PMSIS_SHARED_IMPLEM_DIR": self._p("rtos", "pmsis", "implem"),
                   "PMSIS_RTOS_DIR": os.path.join(gwt, "pmsis", "rtos"), "GWT_PMSIS": os.path.join(gwt, "pmsis"),
                   "PMSIS_BSP_DIR": self._p("rtos", "pmsis", "bsp")})
        mk.include(os.path.join(gwt, CHIP_DIR, "pmsis", "src.mk"))
        mk.include(os.path.join(gwt, "pmsis", "src.mk"))
        mk.include(self._p("rtos", "pmsis", "bsp", "rules", "freertos_bsp_rules.mk"))
        for var in ("PMSIS_IMPLEM_CHIP_ASM_SRCS", "PMSIS_IMPLEM_CHIP_SRCS", "PMSIS_BSP_SRCS", "PMSIS_RTOS_SRCS"):
            out += mk.words(var)
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


class Make:
    """Just enough of GNU make to read the SDK's src.mk lists: assignments (= := += ?=),
    ifeq/ifneq/ifdef/ifndef/else/endif, include, $(VAR), $(foreach), $(filter-out)."""

    _ASSIGN = re.compile(r"^(?:override\s+|export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*(\+=|:=|::=|\?=|=)\s*(.*)$")

    def __init__(self, variables: dict):
        self.vars = {k: str(v) for k, v in variables.items()}

    def include(self, path: str) -> None:
        if not os.path.isfile(path):
            return
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read().replace("\\\n", " ")
        stack = []                       # per open conditional: [active now, some branch taken]
        for raw in text.splitlines():
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            word = line.split(None, 1)[0]
            if word in ("ifeq", "ifneq", "ifdef", "ifndef"):
                ok = self._cond(line) if all(s[0] for s in stack) else False
                stack.append([ok, ok])
                continue
            if word == "else" and stack:
                rest = line[4:].strip()
                top = stack[-1]
                ok = (not top[1]) and (self._cond(rest) if rest else True)
                top[0] = ok
                top[1] = top[1] or ok
                continue
            if word == "endif" and stack:
                stack.pop()
                continue
            if not all(s[0] for s in stack):
                continue
            if word in ("include", "-include", "sinclude"):
                for p in self.expand(line.split(None, 1)[1]).split():
                    self.include(p)
                continue
            m = self._ASSIGN.match(line)
            if m:
                name, op, value = m.groups()
                if op == "+=":
                    self.vars[name] = (self.vars.get(name, "") + " " + value).strip()
                elif op == "?=":
                    self.vars.setdefault(name, value)
                elif op in (":=", "::="):
                    self.vars[name] = self.expand(value)
                else:
                    self.vars[name] = value

    def _cond(self, line: str) -> bool:
        word, _, rest = line.partition(" ")
        rest = rest.strip()
        if word in ("ifdef", "ifndef"):
            return bool(self.expand(self.vars.get(rest.strip(), "")).strip()) == (word == "ifdef")
        if rest.startswith("("):
            a, _, b = rest[1:-1].partition(",")
        else:
            parts = [x or y for x, y in re.findall(r"'([^']*)'|\"([^\"]*)\"", rest)]
            a, b = (parts + ["", ""])[:2]
        same = self.expand(a).strip() == self.expand(b).strip()
        return same == (word == "ifeq")

    def expand(self, text: str, depth: int = 0) -> str:
        if depth > 30 or "$" not in text:
            return text
        out, i = [], 0
        while i < len(text):
            c = text[i]
            if c != "$" or i + 1 >= len(text):
                out.append(c)
                i += 1
                continue
            n = text[i + 1]
            if n in "({":
                close = ")" if n == "(" else "}"
                j, level = i + 2, 1
                while j < len(text) and level:
                    level += {n: 1, close: -1}.get(text[j], 0)
                    j += 1
                out.append(self._ref(text[i + 2:j - 1], depth))
                i = j
            else:
                out.append(self.expand(self.vars.get(n, ""), depth + 1) if n != "$" else "$")
                i += 2
        return "".join(out)

    def _ref(self, body: str, depth: int) -> str:
        fn, _, args = body.partition(" ")
        if fn == "foreach":
            var, lst, tmpl = (a.strip() for a in _split_args(args, 3))
            saved = self.vars.get(var)
            res = []
            for w in self.expand(lst, depth + 1).split():
                self.vars[var] = w
                res.append(self.expand(tmpl, depth + 1))
            if saved is None:
                self.vars.pop(var, None)
            else:
                self.vars[var] = saved
            return " ".join(r for r in res if r)
        if fn == "filter-out":
            pats, words = (self.expand(a, depth + 1).split() for a in _split_args(args, 2))
            return " ".join(w for w in words if w not in pats)
        if " " in body or "," in body:   # other functions ($(shell ...), $(dir ...)): not needed
            return ""
        return self.expand(self.vars.get(body, ""), depth + 1)

    def words(self, name: str) -> list:
        return self.expand(self.vars.get(name, "")).split()


def _split_args(args: str, n: int) -> list:
    parts, level, cur = [], 0, []
    for ch in args:
        if ch in "({":
            level += 1
        elif ch in ")}":
            level -= 1
        if ch == "," and level == 0 and len(parts) < n - 1:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts + [""] * (n - len(parts))


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
