"""SCons Tool for the `k210` target kind: C compilation, the run step of its platforms and the
QDQ agreement node.

The platform (emul, qemu, board) sets the compiler per build (targets/k210/platforms.py);
NnsK210Run runs the firmware and writes run.log/output.npy; NnsK210Agreement compares the
K210 reference with the ONNX QDQ model layer by layer (agreement.json, merged into
report.json)."""
import SCons.Action
import SCons.Builder

from nnscons.builders.graph import actions
from nnscons.targets.k210 import agreement, runstep




def generate(env):
    env.Tool("gcc")
    env.Tool("as")       # src/weights/*.S: the weights linked into the library
    env.Tool("gnulink")
    env.Tool("ar")
    env["BUILDERS"]["NnsK210Run"] = SCons.Builder.Builder(
        action=SCons.Action.Action(runstep.run_firmware, actions.label))
    env["BUILDERS"]["NnsK210Agreement"] = SCons.Builder.Builder(
        action=SCons.Action.Action(agreement.write_agreement, actions.label))


def exists(env):
    """Whether this target's tools (compiler, emulator of the chosen platform) are here:
    the same check that names what to install (check_tools)."""
    from ..base import tools_exist
    from .platforms import check_tools
    return tools_exist(check_tools, env)
