"""The host target's nodes after codegen: the library (layers, network, linked-in weights,
kernels), the harness program linked against it, the native run."""
from __future__ import annotations

import os

from ...builders.graph.nodes import declare_library, value
from ...resources import data_path
from .. import library
from ... import binfiles


def declare_nodes(env, session, common, bench: bool = True) -> dict:
    """bench: the bench and tune nodes too (they time the firmware on this machine: not
    for a run under qemu)."""
    bench = bench and session.options["run"]["platform"] == "native"
    b = session.build_dir
    t = session.target_cfg.name
    verbose = env["NNS_VERBOSE"]
    # .incbin finds each layer's weights .bin on the assembler's include path; the host's
    # vector kernels (the portable ones are in kernels/common); threads need
    # libpthread, the float64 kernels (nn_lrn.c, nn_instnorm.c) libm
    env = env.Clone()
    env.Append(ASPPFLAGS=[library.weights_include(b)])
    env.Append(CPPPATH=[os.path.join(b, "include"), data_path("kernels", "host")],
               LIBS=["pthread", "m"])

    lib_nodes, harness = declare_library(env, session, common, os.path.join(b, "obj"))
    firmware = env.Program(os.path.join(b, "firmware"), harness + lib_nodes[:1],
                           LINKCOMSTR=None if verbose else f"LINK firmware [{t}]")
    # where and as what the firmware runs (the platform, qemu's -cpu, a board): a change runs
    # it again, the verdict never stands for another CPU (the timeout changes no result)
    where = {k: v for k, v in session.options["run"].items() if k not in ("timeout", "iterations")}
    run = env.NnsRun([os.path.join(b, "run.log"),
                      os.path.join(b, binfiles.output_array(len(session.graph.outputs))),
                      binfiles.output_path(b)],
                     firmware + common.input + common.goldens + [value(env, where)],
                     NNS_VERB="RUN", NNS_LABEL=session.model_cfg.name)
    cdb = env.CompilationDatabase(os.path.join(b, "compile_commands.json"))
    nodes = {"firmware": firmware, "run": run, "compiledb": cdb, "library": lib_nodes}
    if not bench or "NNS_ITERATIONS" not in env:   # only nnscons's own front end times
        return nodes
    bench = env.NnsBench(os.path.join(b, "bench.json"), firmware + common.input,
                         NNS_VERB="BENCH", NNS_LABEL=session.model_cfg.name)
    env.AlwaysBuild(bench)
    env.SideEffect(binfiles.output_path(b, bench=True), bench)
    env.Clean(firmware, [binfiles.output_path(b, bench=True)])
    specs = [lp.spec for lp in session.plan.layers if "gemm" in lp.spec]
    tune = env.NnsTune(os.path.join(b, "tuning.json"), value(env, specs),
                       NNS_VERB="TUNE", NNS_LABEL=session.model_cfg.name)
    env.AlwaysBuild(tune)
    return dict(nodes, bench=bench, tune=tune)
