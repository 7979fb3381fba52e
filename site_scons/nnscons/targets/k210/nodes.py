"""K210 nodes after codegen: per-platform compile, link, run (build/<t>/<m>/<platform>/), and
the per-layer agreement of the K210 reference with the ONNX QDQ model (agreement.json)."""
from __future__ import annotations

import os

from ...builders.graph.nodes import declare_library, py_sources
from ... import binfiles


def declare_nodes(env, session, common) -> dict:
    platform = session.options["run"]["platform"]
    b = session.build_dir
    t = session.target_cfg.name
    label = session.model_cfg.name
    verbose = env["NNS_VERBOSE"]
    if platform == "board":
        from . import board
        nodes = board.declare_nodes(env, session, common)
    else:
        from . import platforms
        pdir = os.path.join(b, platform)
        penv, extra = platforms.environment(env, session, platform)
        # the library: layers, network, weights linked in, kernels and the KPU HAL of the
        # platform (the C emulator); the harness is linked against it
        lib_nodes, harness = declare_library(penv, session, common, os.path.join(pdir, "obj"), extra)
        firmware = penv.Program(os.path.join(pdir, "firmware"), harness + lib_nodes[:1],
                                LINKCOMSTR=None if verbose else f"LINK firmware [{t}]")
        run = penv.NnsK210Run([os.path.join(pdir, "run.log"), os.path.join(pdir, binfiles.output_array(len(session.graph.outputs))),
                               binfiles.output_path(pdir)],
                              firmware + common.input + common.goldens,
                              NNS_VERB="RUN", NNS_LABEL=f"{label} on {platform}", NNS_PLATFORM=platform)
        nodes = {"firmware": firmware, "run": run, "library": lib_nodes}
        if platform == "emul":
            nodes["compiledb"] = penv.CompilationDatabase(os.path.join(pdir, "compile_commands.json"))
    # shared by the platforms: it depends on the model and the goldens only
    agreement = env.NnsK210Agreement(os.path.join(b, "agreement.json"),
                                     [os.path.join(b, "quantized.onnx")] + common.goldens,
                                     NNS_VERB="AGREEMENT", NNS_LABEL=label)
    env.Depends(agreement, py_sources("targets/k210/agreement.py", "export/ort_oracle.py"))
    nodes["report_extra"] = agreement + nodes.get("report_extra", [])   # board: image.json too
    nodes["agreement"] = agreement
    return nodes
