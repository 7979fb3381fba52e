"""GAP9 nodes after codegen: per-platform compile, link, run (build/<t>/<m>/<platform>/)."""
from __future__ import annotations

import os

from ...builders.graph.nodes import compile_generated, compile_object, declare_library
from ... import binfiles
from . import baremetal, platforms


def declare_nodes(env, session, common) -> dict:
    platform = session.options["run"]["platform"]
    b = session.build_dir
    pdir = os.path.join(b, platform)
    t = session.target_cfg.name
    penv, extra_sources = platforms.environment(env, session, platform)
    penv["NNS_PLATFORM_NAME"] = platform
    verbose = env["NNS_VERBOSE"]
    layerwise = session.plan.network.get("layerwise")
    # the library: layers, network, API, kernels and, on emul and qemu, the PMSIS emulation;
    # the harness (main.c) is linked against it and, elsewhere, the platform's runtime
    in_lib = () if layerwise else list(extra_sources) if platforms.library_runtime(platform) else []
    runtime = [s for s in extra_sources if s not in in_lib]
    if not layerwise:
        lib_nodes, objects = declare_library(penv, session, common, os.path.join(pdir, "obj"), in_lib)
    else:
        objects = compile_generated(penv, session, common, os.path.join(pdir, "obj"))
    root = penv.get("NNS_SOURCE_ROOT")
    for src in (list(session.plan.kernels) if layerwise else []) + runtime:
        # objects mirror their source's path (repo-relative, or under the SDK) so that two
        # runtime files of the same name never share an object
        rel = os.path.relpath(src, root) if os.path.isabs(src) and root else src
        stem = os.path.splitext(os.path.basename(src))[0]
        objects += compile_object(penv, os.path.join(pdir, "obj", "runtime", os.path.splitext(rel)[0] + ".o"),
                                  src, stem)

    if layerwise:
        return _layerwise_nodes(env, penv, session, common, objects, pdir)
    # the harness, the library, the platform's runtime (gvsoc, the bare-metal GVSoC platforms)
    firmware = penv.Program(os.path.join(pdir, "firmware"),
                            objects[:1] + lib_nodes[:1] + sorted(objects[1:], key=str),
                            LINKCOMSTR=None if verbose else f"LINK firmware [{t}]")
    run = penv.NnsGap9Run([os.path.join(pdir, "run.log"),
                           os.path.join(pdir, binfiles.output_array(len(session.graph.outputs))),
                           binfiles.output_path(pdir)],
                          firmware + common.input + common.weights + common.goldens,
                          NNS_VERB="RUN", NNS_LABEL=f"{session.model_cfg.name} on {platform}",
                          NNS_PLATFORM=platform)
    bare_metal = platforms.simulator(session, platform) is not None
    if bare_metal:
        env.Clean(firmware, [os.path.join(pdir, baremetal.WORK_DIR)])
    aliases = {"firmware": firmware, "run": run, "library": lib_nodes}
    if platform != "qemu" and not bare_metal:
        aliases["compiledb"] = penv.CompilationDatabase(os.path.join(pdir, "compile_commands.json"))
    return aliases


def _layerwise_nodes(env, penv, session, common, objects, pdir) -> dict:
    """One program per layer (layerwise.py): main + its network + its layer + the shared
    kernel and runtime objects; one run per program; the logs merged into run.log."""
    t = session.target_cfg.name
    verbose = env["NNS_VERBOSE"]
    obj_dir = os.path.normpath(os.path.join(pdir, "obj"))
    by_path = {os.path.normpath(str(o)): o for o in objects}
    generated = {os.path.join(obj_dir, "main.o")} | {os.path.join(obj_dir, "layers", lp.cname + ".o")
                                                      for lp in session.plan.layers} | \
        {os.path.join(obj_dir, "runs", lp.cname, "network.o") for lp in session.plan.layers}
    shared = [o for p, o in sorted(by_path.items()) if p not in generated]
    bins = {os.path.normpath(str(n)): n for n in common.weights + common.goldens + common.input}
    bin_dir = os.path.join(session.build_dir, "bin")
    programs, logs, slices = [], [], []
    for lp in session.plan.layers:
        run = next(f for f in session.plan.network_files if f[0] == f"src/runs/{lp.cname}/network.c")[2]
        label = common.label[lp.cname]
        if run["sliced"]:
            full = [bins[_flat(session, k, lp.cname)] for k in ("weights", "golden")]
            sl = penv.NnsGap9Slice([os.path.join(bin_dir, f"{lp.cname}_slice_{k}.bin") for k in ("weights", "golden")],
                                   full, NNS_VERB="SLICE", NNS_LABEL=label, NNS_CNAME=lp.cname)
            penv.Depends(sl, penv.Value(repr(lp.report["slice"])))
            slices += sl
            own = list(sl)
        else:
            own = [bins[_flat(session, "golden", lp.cname)]]
            if run["layers"][0]["params_bytes"]:
                own.append(bins[_flat(session, "weights", lp.cname)])
        loads = [bins[os.path.normpath(os.path.join(bin_dir, f"{f['stem']}.bin"))] for f in run["loads"]]
        objs = [by_path[os.path.join(obj_dir, "main.o")], by_path[os.path.join(obj_dir, "layers", lp.cname + ".o")],
                by_path[os.path.join(obj_dir, "runs", lp.cname, "network.o")]] + shared
        prog = penv.Program(os.path.join(pdir, "runs", lp.cname), objs,
                            LINKCOMSTR=None if verbose else f"LINK {label} [{t}]")
        log = penv.NnsGap9LayerRun(os.path.join(pdir, "runs", lp.cname + ".log"), prog + own + loads,
                                   NNS_VERB="RUN", NNS_LABEL=label, NNS_PLATFORM=penv["NNS_PLATFORM_NAME"])
        programs += prog
        logs += log
    run = penv.NnsGap9Merge([os.path.join(pdir, "run.log"),
                             os.path.join(pdir, binfiles.output_array(len(session.graph.outputs))),
                             binfiles.output_path(pdir)], logs,
                            NNS_VERB="MERGE", NNS_LABEL=f"{session.model_cfg.name}: {len(logs)} layer runs")
    env.Clean(programs, [os.path.join(pdir, baremetal.WORK_DIR)])
    return {"firmware": programs, "run": run, "bins": slices}


def _flat(session, kind, cname) -> str:
    """A layer's .bin as the key of the nodes by path (gap9's readfs names are flat)."""
    return os.path.normpath(binfiles.bin_path(session.build_dir, kind, cname, "flat"))
