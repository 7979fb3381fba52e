"""The host target's nodes after codegen: the library (layers, network, linked-in weights,
kernels), the harness program linked against it, the native run."""
from __future__ import annotations

import os

from ...builders.nodes import compile_generated, compile_object, value
from ...resources import data_path
from .. import library


def declare_nodes(env, session, common, bench: bool = True) -> dict:
    """bench: the bench and tune nodes too (they time the firmware on this machine)."""
    b = session.build_dir
    t = session.target_cfg.name
    files = session.plan.extra["library"]
    verbose = env["NNS_VERBOSE"]
    # .incbin finds each layer's weights .bin on the assembler's include path; the HWC
    # kernels shared with gap9 (portable C) and the host's vector kernels; threads need
    # libpthread
    env = env.Clone()
    env.Append(ASPPFLAGS=[library.weights_include(b)])
    env.Append(CPPPATH=[os.path.join(b, "include"), data_path("kernels", "gap9"), data_path("kernels", "host")],
               LIBS=["pthread"])

    objects = compile_generated(env, session, common, os.path.join(b, "obj"))
    harness = [o for o in objects if os.path.basename(str(o)) == "main.o"]
    lib_objects = [o for o in objects if o not in harness]
    for k in session.plan.kernels:
        stem = os.path.splitext(os.path.basename(k))[0]
        lib_objects += compile_object(env, os.path.join(b, "obj", "kernels", stem + ".o"), k, stem)
    for w in common.weights:                       # the .S objects embed the .bin bytes
        stem = os.path.splitext(os.path.basename(str(w)))[0]
        env.Depends(os.path.join(b, "obj", "weights", stem + ".o"), w)

    lib = env.StaticLibrary(os.path.join(b, files["lib"]), sorted(lib_objects, key=str),
                                ARFLAGS=["rcs"], RANLIBCOM="",   # `s`: the index, no ranlib step
                                ARCOMSTR=None if verbose else f"AR {os.path.basename(files['lib'])} [{t}]")
    firmware = env.Program(os.path.join(b, "firmware"), harness + lib,
                           LINKCOMSTR=None if verbose else f"LINK firmware [{t}]")
    run = env.NnsRun([os.path.join(b, "run.log"), os.path.join(b, "output.npy")],
                     firmware + common.input + common.goldens,
                     NNS_VERB="RUN", NNS_LABEL=session.model_cfg.name)
    env.SideEffect(os.path.join(b, "output.bin"), run)
    env.Clean(firmware, [os.path.join(b, "output.bin")])
    cdb = env.CompilationDatabase(os.path.join(b, "compile_commands.json"))
    header = [common.network_files[files["header"]]]
    extras = [common.network_files[files[k]] for k in ("cmake", "mk")]
    nodes = {"firmware": firmware, "run": run, "compiledb": cdb, "library": lib + header + extras}
    if not bench or "NNS_ITERATIONS" not in env:   # only nnscons's own front end times
        return nodes
    bench = env.NnsBench(os.path.join(b, "bench.json"), firmware + common.input,
                         NNS_VERB="BENCH", NNS_LABEL=session.model_cfg.name)
    env.AlwaysBuild(bench)
    env.SideEffect(os.path.join(b, "bench_output.bin"), bench)
    env.Clean(firmware, [os.path.join(b, "bench_output.bin")])
    specs = [lp.spec for lp in session.plan.layers if "gemm" in lp.spec]
    tune = env.NnsTune(os.path.join(b, "tuning.json"), value(env, specs),
                       NNS_VERB="TUNE", NNS_LABEL=session.model_cfg.name)
    env.AlwaysBuild(tune)
    return dict(nodes, bench=bench, tune=tune)
