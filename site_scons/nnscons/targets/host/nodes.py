"""The host target's nodes after codegen: compile, link, native run."""
from __future__ import annotations

import os


def declare_nodes(env, session, common) -> dict:
    b = session.build_dir
    t = session.target_cfg.name

    def compile_(obj, src, label):
        return env.Object(obj, src, CCCOMSTR=f"CC {label} [{t}]" if not env["NNS_VERBOSE"] else None)

    objects = []
    for lp in session.plan.layers:
        for path, node in common.layer_files[lp.cname].items():
            if path.endswith(".c"):
                objects += compile_(os.path.join(b, "obj", "layers", lp.cname + ".o"), node,
                                    common.label[lp.cname])
    for path, node in common.network_files.items():
        if path.endswith(".c"):
            stem = os.path.splitext(os.path.basename(path))[0]
            objects += compile_(os.path.join(b, "obj", stem + ".o"), node, stem)
    for k in session.plan.kernels:
        stem = os.path.splitext(os.path.basename(k))[0]
        objects += compile_(os.path.join(b, "obj", "kernels", stem + ".o"), k, stem)

    firmware = env.Program(os.path.join(b, "firmware"), sorted(objects, key=str),
                           LINKCOMSTR=None if env["NNS_VERBOSE"] else f"LINK firmware [{t}]")
    run = env.NnsRun([os.path.join(b, "run.log"), os.path.join(b, "output.npy")],
                     firmware + common.input + common.weights + common.goldens,
                     NNS_VERB="RUN", NNS_LABEL=session.model_cfg.name)
    env.SideEffect(os.path.join(b, "output.bin"), run)
    env.Clean(firmware, [os.path.join(b, "output.bin")])
    cdb = env.CompilationDatabase(os.path.join(b, "compile_commands.json"))
    return {"firmware": firmware, "run": run, "compiledb": cdb}
