"""SCons Tool for the `host` target kind: the machine's C compiler and a native run.

Options come from targets.yaml (toolchain.cc, toolchain.cflags, run.timeout) via
env['NNS_OPTIONS']. NnsRun runs the firmware on this machine and writes run.log,
output.bin and output.npy.
"""
import shutil

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
        action=SCons.Action.Action(run_native, actions.label))
    env["BUILDERS"]["NnsBench"] = SCons.Builder.Builder(
        action=SCons.Action.Action(run_bench, actions.label))
    env["BUILDERS"]["NnsTune"] = SCons.Builder.Builder(
        action=SCons.Action.Action(run_tune, actions.label))


def exists(env):
    """Whether this target's tools (compiler, emulator or SDK of the chosen platform) are
    here: the same check that names what to install (check_tools)."""
    from ..base import tools_exist
    return tools_exist(check_tools, env)


def check_tools(env, session) -> None:
    cc = session.options["toolchain"]["cc"]
    if not env.Detect(cc):
        name = session.target_cfg.name
        raise UserError(f"target '{name}': C compiler '{cc}' not found on PATH; install it "
                        f"(Debian: apt-get install gcc) or set targets.{name}.toolchain.cc")
