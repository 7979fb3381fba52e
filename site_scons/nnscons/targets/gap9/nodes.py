"""GAP9 nodes after codegen: per-platform compile, link, run (build/<t>/<m>/<platform>/)."""
from __future__ import annotations

import os

from ...builders.nodes import compile_generated, compile_object
from . import gvsoc_open, platforms


def declare_nodes(env, session, common) -> dict:
    platform = session.options["run"]["platform"]
    b = session.build_dir
    pdir = os.path.join(b, platform)
    t = session.target_cfg.name
    penv, extra_sources = platforms.environment(env, session, platform)
    verbose = env["NNS_VERBOSE"]
    objects = compile_generated(penv, session, common, os.path.join(pdir, "obj"))
    root = penv.get("NNS_SOURCE_ROOT")
    for src in list(session.plan.kernels) + list(extra_sources):
        # objects mirror their source's path (repo-relative, or under the SDK) so that two
        # runtime files of the same name never share an object
        rel = os.path.relpath(src, root) if os.path.isabs(src) and root else src
        stem = os.path.splitext(os.path.basename(src))[0]
        objects += compile_object(penv, os.path.join(pdir, "obj", "runtime", os.path.splitext(rel)[0] + ".o"),
                                  src, stem)

    firmware = penv.Program(os.path.join(pdir, "firmware"), sorted(objects, key=str),
                            LINKCOMSTR=None if verbose else f"LINK firmware [{t}]")
    run = penv.NnsGap9Run([os.path.join(pdir, "run.log"), os.path.join(pdir, "output.npy")],
                          firmware + common.input + common.weights + common.goldens,
                          NNS_VERB="RUN", NNS_LABEL=f"{session.model_cfg.name} on {platform}",
                          NNS_PLATFORM=platform)
    penv.SideEffect(os.path.join(pdir, "output.bin"), run)
    env.Clean(firmware, [os.path.join(pdir, "output.bin")] +
              ([os.path.join(pdir, gvsoc_open.WORK_DIR)] if platform == "gvsoc-open" else []))
    aliases = {"firmware": firmware, "run": run}
    if platform not in ("qemu", "gvsoc-open"):
        aliases["compiledb"] = penv.CompilationDatabase(os.path.join(pdir, "compile_commands.json"))
    return aliases
