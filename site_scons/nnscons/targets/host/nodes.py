"""The host target's nodes after codegen: compile, link, native run."""
from __future__ import annotations

import os

from ...build.nodes import compile_generated, compile_object, value


def declare_nodes(env, session, common) -> dict:
    b = session.build_dir
    t = session.target_cfg.name
    # the HWC kernels shared with gap9 (portable C), the host's vector kernels; threads
    # need libpthread
    env = env.Clone()
    env.Append(CPPPATH=["kernels/gap9", "kernels/host"], LIBS=["pthread"])

    objects = compile_generated(env, session, common, os.path.join(b, "obj"))
    for k in session.plan.kernels:
        stem = os.path.splitext(os.path.basename(k))[0]
        objects += compile_object(env, os.path.join(b, "obj", "kernels", stem + ".o"), k, stem)

    firmware = env.Program(os.path.join(b, "firmware"), sorted(objects, key=str),
                           LINKCOMSTR=None if env["NNS_VERBOSE"] else f"LINK firmware [{t}]")
    run = env.NnsRun([os.path.join(b, "run.log"), os.path.join(b, "output.npy")],
                     firmware + common.input + common.weights + common.goldens,
                     NNS_VERB="RUN", NNS_LABEL=session.model_cfg.name)
    env.SideEffect(os.path.join(b, "output.bin"), run)
    env.Clean(firmware, [os.path.join(b, "output.bin")])
    cdb = env.CompilationDatabase(os.path.join(b, "compile_commands.json"))
    bench = env.NnsBench(os.path.join(b, "bench.json"), firmware + common.input + common.weights,
                         NNS_VERB="BENCH", NNS_LABEL=session.model_cfg.name)
    env.AlwaysBuild(bench)
    env.SideEffect(os.path.join(b, "bench_output.bin"), bench)
    env.Clean(firmware, [os.path.join(b, "bench_output.bin")])
    specs = [lp.spec for lp in session.plan.layers if "gemm" in lp.spec]
    tune = env.NnsTune(os.path.join(b, "tuning.json"), value(env, specs),
                       NNS_VERB="TUNE", NNS_LABEL=session.model_cfg.name)
    env.AlwaysBuild(tune)
    return {"firmware": firmware, "run": run, "compiledb": cdb, "bench": bench, "tune": tune}
