"""SCons Tool for the `host` target kind: the machine's C compiler and a native run.

Options come from targets.yaml (toolchain.cc, toolchain.cflags, run.timeout) via
env['NNS_OPTIONS']. NnsRun runs the firmware on this machine (or under qemu-x86_64 -cpu
<run.cpu>: platform qemu) and writes run.log, output.bin and output.npy.
"""
import difflib
import re
import shutil
import subprocess

import SCons.Action
import SCons.Builder

from nnscons.errors import UserError

from nnscons.builders.graph import actions
from nnscons.builders.run.hostrun import run_native
from nnscons.targets.host.bench import run_bench
from nnscons.targets.host.tune import run_tune


def generate(env):
    opts = env["NNS_OPTIONS"]
    env.Tool("gcc")
    env.Tool("as")       # src/weights/*.S: the weights linked into the library
    env.Tool("gnulink")
    env.Tool("ar")
    env.Replace(CC=opts["toolchain"]["cc"], LINK=opts["toolchain"]["cc"],
                CFLAGS=list(opts["toolchain"]["cflags"]), LINKFLAGS=list(opts["toolchain"]["ldflags"]))
    env["BUILDERS"]["NnsRun"] = SCons.Builder.Builder(
        action=SCons.Action.Action(run_host, actions.label))
    env["BUILDERS"]["NnsBench"] = SCons.Builder.Builder(
        action=SCons.Action.Action(run_bench, actions.label))
    env["BUILDERS"]["NnsTune"] = SCons.Builder.Builder(
        action=SCons.Action.Action(run_tune, actions.label))


# qemu's warning for each feature of the -cpu model its TCG does not emulate (the CPU it
# presents lacks them), e.g. "CPUID.07H:EBX.avx512f [bit 16]"
_TCG_MISSING = re.compile(r"^qemu-x86_64: warning: TCG doesn't support requested feature: "
                          r"\S*?\.?([\w-]+) \[bit \d+\]\s*$")
# the features the kernels' dispatch asks CPUID for (kernels/common/nn_gemm.h)
DISPATCH_FEATURES = ("avx2", "avx512f", "avx512bw", "avx512vl", "avx512vnni", "avx-vnni")


def without_tcg_warnings(text: str) -> tuple:
    """(the program's output without qemu's TCG feature warnings, the dispatch features among
    them: the CPU qemu presented lacked those)."""
    lines, missing = [], []
    for line in text.splitlines(keepends=True):
        m = _TCG_MISSING.match(line)
        if m is None:
            lines.append(line)
        elif m.group(1) in DISPATCH_FEATURES:
            missing.append(m.group(1))
    return "".join(lines), missing


def run_host(target, source, env):
    """The run step: natively, or under qemu-x86_64 as the CPU run.cpu names (platform qemu:
    the firmware's dispatch takes the kernels that CPU has; TCG's speed says nothing)."""
    session = env["NNS_SESSION"]
    run = session.options["run"]
    if run["platform"] != "qemu":
        return run_native(target, source, env)

    def clean(text: str) -> str:
        text, missing = without_tcg_warnings(text)
        if missing:
            print(f"note [{session.target_cfg.name}]: qemu-x86_64 does not emulate {', '.join(missing)} "
                  f"of -cpu {run['cpu']}: the firmware ran as that CPU without them")
        return text
    return run_native(target, source, env, prefix=[run["qemu"], "-cpu", run["cpu"]], clean=clean)


def exists(env):
    """Whether this target's tools (compiler, emulator or SDK of the chosen platform) are
    here: the same check that names what to install (check_tools)."""
    from ..base import tools_exist
    return tools_exist(check_tools, env)


def check_tools(env, session) -> None:
    cc = session.options["toolchain"]["cc"]
    name = session.target_cfg.name
    if not env.Detect(cc):
        raise UserError(f"target '{name}': C compiler '{cc}' not found on PATH; install it "
                        f"(Debian: apt-get install gcc) or set targets.{name}.toolchain.cc")
    run = session.options["run"]
    if run["platform"] != "qemu":
        return
    if not env.Detect(run["qemu"]):
        raise UserError(f"target '{name}': '{run['qemu']}' not found on PATH (platform=qemu); install "
                        f"it (Debian: apt-get install qemu-user) or set targets.{name}.run.qemu")
    model = run["cpu"].split(",")[0]     # a model, then qemu's +feature,-feature switches
    known = _qemu_cpus(run["qemu"])
    if known and model not in known:
        close = ([m for m in known if m.lower() == model.lower()]
                 or difflib.get_close_matches(model, known, n=3, cutoff=0.5))
        raise UserError(f"target '{name}': {run['qemu']} has no CPU model '{model}' (targets.{name}.run.cpu)"
                        + (f"; did you mean: {', '.join(close)}" if close else "")
                        + f"; `{run['qemu']} -cpu help` lists them (EPYC-Rome: AVX2 without AVX-512)")


def _qemu_cpus(qemu: str) -> list:
    """The x86 CPU models `qemu -cpu help` lists ([] if it lists none: left to qemu itself)."""
    try:
        text = subprocess.run([shutil.which(qemu) or qemu, "-cpu", "help"], capture_output=True,
                              text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.split()[1] for line in text.splitlines() if line.startswith("x86 ") and len(line.split()) > 1]
