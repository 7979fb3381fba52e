"""SCons Tool for the `gap9` target kind: C compilation and the run step of its platforms.

The platform (emul, qemu, gvsoc) sets the compiler per build (targets/gap9/platforms.py);
this Tool brings gcc/gnulink and NnsGap9Run, which runs the firmware, reads its log for
the per-layer results and for fatal patterns, and writes run.log and output.npy.
"""
import SCons.Action
import SCons.Builder

from nnscons.builders.graph import actions
from nnscons.targets.gap9 import layerwise, runstep




def generate(env):
    env.Tool("gcc")
    env.Tool("as")       # .S runtime files of the GAP SDK, preprocessed by $CC
    env.Tool("gnulink")
    env.Tool("ar")       # lib/libnns_<model>.a
    env["BUILDERS"]["NnsGap9Run"] = SCons.Builder.Builder(
        action=SCons.Action.Action(runstep.run_firmware, actions.label))
    # layer by layer (layerwise.py): sliced .bin files, one run per layer, the merged run.log
    env["BUILDERS"]["NnsGap9Slice"] = SCons.Builder.Builder(
        action=SCons.Action.Action(layerwise.write_slice, actions.label))
    env["BUILDERS"]["NnsGap9LayerRun"] = SCons.Builder.Builder(
        action=SCons.Action.Action(layerwise.run_layer, actions.label))
    env["BUILDERS"]["NnsGap9Merge"] = SCons.Builder.Builder(
        action=SCons.Action.Action(layerwise.merge_logs, actions.label))


def exists(env):
    """Whether this target's tools (compiler, emulator or SDK of the chosen platform) are
    here: the same check that names what to install (check_tools)."""
    from ..base import tools_exist
    from .platforms import check_tools
    return tools_exist(check_tools, env)
