"""GAP9 nodes after codegen: per-platform compile, link, run (build/<t>/<m>/<platform>/)."""
from __future__ import annotations

import os

from . import platforms


def declare_nodes(env, session, common) -> dict:
    platform = session.options["run"]["platform"]
    b = session.build_dir
    pdir = os.path.join(b, platform)
    t = session.target_cfg.name
    penv, extra_sources = platforms.environment(env, session, platform)
    verbose = env["NNS_VERBOSE"]

    def compile_(obj, src, label):
        return penv.Object(obj, src, CCCOMSTR=None if verbose else f"CC {label} [{t}]")

    objects = []
    for lp in session.plan.layers:
        for path, node in common.layer_files[lp.cname].items():
            objects += compile_(os.path.join(pdir, "obj", "layers", lp.cname + ".o"), node,
                                common.label[lp.cname])
    for path, node in common.network_files.items():
        if path.endswith(".c"):
            stem = os.path.splitext(os.path.basename(path))[0]
            objects += compile_(os.path.join(pdir, "obj", stem + ".o"), node, stem)
    root = penv.get("NNS_SOURCE_ROOT")
    for src in list(session.plan.kernels) + list(extra_sources):
        # objects mirror their source's path (repo-relative, or under the SDK) so that two
        # runtime files of the same name never share an object
        rel = os.path.relpath(src, root) if os.path.isabs(src) and root else src
        stem = os.path.splitext(os.path.basename(src))[0]
        objects += compile_(os.path.join(pdir, "obj", "runtime", os.path.splitext(rel)[0] + ".o"), src, stem)

    firmware = penv.Program(os.path.join(pdir, "firmware"), sorted(objects, key=str),
                            LINKCOMSTR=None if verbose else f"LINK firmware [{t}]")
    run = penv.NnsGap9Run([os.path.join(pdir, "run.log"), os.path.join(pdir, "output.npy")],
                          firmware + common.input + common.weights + common.goldens,
                          NNS_VERB="RUN", NNS_LABEL=f"{session.model_cfg.name} on {platform}",
                          NNS_PLATFORM=platform)
    penv.SideEffect(os.path.join(pdir, "output.bin"), run)
    env.Clean(firmware, [os.path.join(pdir, "output.bin")])
    aliases = {"firmware": firmware, "run": run}
    if platform != "qemu":
        aliases["compiledb"] = penv.CompilationDatabase(os.path.join(pdir, "compile_commands.json"))
    return aliases
