"""SCons Tool for the `cortex-m` target kind: arm-none-eabi-gcc for the chosen core and
the run step under qemu-system-arm (the core's MPS2/MPS3 machine, semihosting)."""
import os

import SCons.Action
import SCons.Builder

from nnscons import binfiles
from nnscons.builders.graph import actions
from nnscons.builders.run.hostrun import run_program
from nnscons.errors import UserError

from .cores import core

# code and data in their own sections, so the linker drops what a network does not call
SECTIONS = ["-mthumb", "-ffunction-sections", "-fdata-sections"]


def qemu_command(opts, machine, firmware, bin_dir, output_bin):
    """qemu-system-arm on the core's machine; the harness's command line (semihosting
    SYS_GET_CMDLINE) names the .bin folder and the output file relative to qemu's folder.
    -icount: the virtual clock (and so SysTick) advances 2^ICOUNT_SHIFT ns per instruction,
    which makes the harness's per-layer ticks instruction counts (insns.py)."""
    from nnscons.targets.cortex_m.insns import ICOUNT_SHIFT
    return [opts["run"]["qemu"], "-M", machine, "-nographic", "-monitor", "none", "-serial", "none",
            "-icount", f"shift={ICOUNT_SHIFT}",
            "-semihosting-config", f"enable=on,target=native,arg=firmware,arg={bin_dir},arg={output_bin}",
            "-kernel", firmware]


def run_qemu(target, source, env):
    from nnscons.builders.run import runlog
    from nnscons.fileio import write_if_changed
    session = env["NNS_SESSION"]
    log_path, npy_path = str(target[0]), str(target[1])
    cwd = os.path.dirname(os.path.abspath(log_path))
    output_bin = binfiles.output_path(cwd)
    cmd = qemu_command(session.options, core(session.options)["machine"], source[0].abspath,
                       os.path.relpath(env["NNS_BIN_DIR"], cwd), os.path.basename(output_bin))
    timeout = session.options["run"]["timeout"]
    status, text = run_program(cmd, timeout, cwd=cwd, show=env["NNS_VERBOSE"])
    name = session.target_cfg.name
    if status is None:
        print(f"RUN FAILED [{name}]: no result after {timeout} s (targets.{name}.run.timeout)")
        return 1
    if status not in (0, 1):
        tail = "\n".join(text.splitlines()[-15:])
        print(f"RUN FAILED [{name}]: qemu-system-arm exited with status {status}:\n{tail}")
        return 1
    runlog.write_output(session, output_bin, npy_path)
    write_if_changed(log_path, text)
    return 0


def generate(env):
    from nnscons.targets.base import cross_ar
    opts = env["NNS_OPTIONS"]
    env.Tool("gcc")
    env.Tool("as")
    env.Tool("gnulink")
    env.Tool("ar")
    cc = opts["toolchain"]["cc"]
    flags = core(opts)["flags"] + SECTIONS
    env.Replace(CC=cc, AS=cc, LINK=cc, AR=cross_ar(cc), ASFLAGS=list(flags),
                CFLAGS=list(opts["toolchain"]["cflags"]) + flags,
                LINKFLAGS=flags + list(opts["toolchain"]["ldflags"]))
    env["BUILDERS"]["NnsRun"] = SCons.Builder.Builder(action=SCons.Action.Action(run_qemu, actions.label))


def check_tools(env, session) -> None:
    name = session.target_cfg.name
    cc = session.options["toolchain"]["cc"]
    if not env.Detect(cc):
        raise UserError(f"target '{name}': C compiler '{cc}' not found on PATH; install it "
                        f"(Debian: apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi) "
                        f"or set targets.{name}.toolchain.cc")
    qemu = session.options["run"]["qemu"]
    if session.options["run"]["platform"] == "qemu" and not env.Detect(qemu):
        raise UserError(f"target '{name}': '{qemu}' not found on PATH; install it "
                        f"(Debian: apt-get install qemu-system-arm) or set targets.{name}.run.qemu")


def exists(env):
    from ..base import tools_exist
    return tools_exist(check_tools, env)
