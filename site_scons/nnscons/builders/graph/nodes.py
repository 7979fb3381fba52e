"""Declare the SCons nodes of one (target, model) build.

Target-independent here: per layer its generated files (Value(spec) + template),
weights .bin (Value(weights key)) and golden .bin (Value(golden chain key)); per network
the network files, input .bin, quantized.onnx, the zoo model, check and report.
The target kind adds what turns sources into a run: `kind.declare_nodes(env, session,
common)` returns at least {"firmware": nodes, "run": [run.log, output.npy]}.
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

import SCons.Action

from ... import binfiles, codegen as render
from ...fileio import file_digest
from ...planning import keys
from ...resources import data_path, zoo_dir
from . import actions, workspace
from .deps import py_sources, value  # noqa: F401  (value: the targets' nodes use it too)
from ..reports import consistency, report

@dataclass
class CommonNodes:
    """What a target's declare_nodes builds on."""
    layer_files: dict                   # cname -> {path under build dir: node}
    network_files: dict                 # path under build dir -> node
    weights: list
    goldens: list
    input: list
    label: dict = field(default_factory=dict)   # cname -> printable layer name
    export: list = field(default_factory=list)  # the standalone export's nodes (declare_library)


def compile_object(env, obj, src, label):
    """One C compile node with its `CC label [target]` progress line."""
    quiet = not env["NNS_VERBOSE"]
    return env.Object(obj, src, CCCOMSTR=f"CC {label} [{env['NNS_TARGET']}]" if quiet else None,
                      ASPPCOMSTR=f"AS {label} [{env['NNS_TARGET']}]" if quiet else None)


def compile_generated(env, session, common, obj_dir) -> list:
    """Objects of the generated C (and .S) files: obj_dir/layers/<cname>.o, and for network
    files obj_dir/<path under src/>.o."""
    objects = []
    for lp in session.plan.layers:
        for path, node in common.layer_files[lp.cname].items():
            if path.endswith(".c"):
                objects += compile_object(env, os.path.join(obj_dir, "layers", lp.cname + ".o"), node,
                                          common.label[lp.cname])
    for path, node in common.network_files.items():
        if path.endswith((".c", ".S")):
            rel = os.path.relpath(path, "src") if path.startswith("src/") else path
            stem = os.path.splitext(os.path.basename(path))[0]
            objects += compile_object(env, os.path.join(obj_dir, os.path.splitext(rel)[0] + ".o"), node, stem)
    return objects


def declare_library(env, session, common, obj_dir, extra_sources=(), extra_objects=()) -> tuple:
    """The network as a library and its harness, for targets that compile the generated C:
    every generated C/.S file but src/main.c, the plan's kernels and extra_sources (e.g. a
    HAL) and extra_objects into <build>/<plan.extra["library"]["lib"]>; returns (library nodes: the archive,
    the header, the .cmake/.mk files; the harness's objects).  env: the compiler of the
    platform, with library.weights_include() on its assembler flags."""
    b = session.build_dir
    files = session.plan.extra["library"]
    objects = compile_generated(env, session, common, obj_dir)
    harness = [o for o in objects if os.path.basename(str(o)) == "main.o"]
    lib_objects = [o for o in objects if o not in harness] + list(extra_objects)
    for k in list(session.plan.kernels) + list(extra_sources):
        stem = os.path.splitext(os.path.basename(k))[0]
        lib_objects += compile_object(env, os.path.join(obj_dir, "kernels", stem + ".o"), k, stem)
    for w in common.weights:                       # the .S objects embed the .bin bytes
        stem = os.path.splitext(os.path.basename(str(w)))[0]
        env.Depends(os.path.join(obj_dir, "weights", stem + ".o"), w)
    quiet = not env["NNS_VERBOSE"]
    archive = env.StaticLibrary(os.path.join(b, files["lib"]), sorted(lib_objects, key=str),
                                ARFLAGS=["rcs"], RANLIBCOM="",   # `s`: the index, no ranlib step
                                ARCOMSTR=f"AR {os.path.basename(files['lib'])} [{env['NNS_TARGET']}]"
                                if quiet else None)
    others = [common.network_files[files[k]] for k in ("header", "cmake", "mk") if files[k] in common.network_files]
    generated = [node for lp in session.plan.layers for path, node in common.layer_files[lp.cname].items()
                 if path.endswith(".c")]
    generated += [node for path, node in common.network_files.items()
                  if path.endswith((".c", ".S")) and os.path.basename(path) != "main.c"]
    from . import export
    common.export = export.declare(env, session, files, generated,
                                   [str(k) for k in list(session.plan.kernels) + list(extra_sources)],
                                   common.weights)
    return archive + others, harness


def network_labels(files) -> list:
    """The CODEGEN label of each network file: its name, or its path under the build folder
    when several have that name (one .cmake and .mk per platform's archive folder)."""
    names = [os.path.basename(path) for path, _, _ in files]
    return [name if names.count(name) == 1 else path for (path, _, _), name in zip(files, names)]


def _zoo_key(session) -> str:
    """The zoo model's cache entry: its name holds the digest of the generator and its
    arguments, so of the model's bytes."""
    from ...planning.zoo_cache import entry_path
    m = session.model_cfg
    return os.path.basename(entry_path(m.zoo, m.seed, m.input_shape, session.build_dir))


def _zoo_model(env, session) -> list:
    """The MODEL step of a zoo model (its file, written from the cache entry or the proto
    the planning generated), or []."""
    if not session.model_cfg.zoo:
        return []
    m, b = session.model_cfg, session.build_dir
    from ...planning import zoo_cache
    zoo_node = env.NnsZooModel(zoo_cache.model_path(b, m.zoo),
                               value(env, [m.zoo, m.seed, list(m.input_shape or [])]),
                               NNS_VERB="MODEL", NNS_LABEL=m.zoo)
    env.Depends(zoo_node, sorted(glob.glob(os.path.join(zoo_dir(), "*.py"))))
    env.Precious(zoo_node)
    entry = zoo_cache.entry_path(m.zoo, m.seed, m.input_shape, b)
    env.Clean(zoo_node, [entry, entry + ".sha256"])      # -c removes the zoo cache's entry too
    return list(zoo_node)


def declare(env, session) -> dict:
    """Create every node; return the aliases {name: nodes}."""
    b = session.build_dir
    t = session.target_cfg.name
    plan = session.plan
    tdir = plan.templates_dir
    env = env.Clone(NNS_SESSION=session, NNS_TARGET=t, NNS_BIN_DIR=os.path.join(b, "bin"),
                    CPPPATH=[data_path("kernels", "common"), os.path.join(b, "src")])

    codegen_py = py_sources("codegen.py", "cstrings.py", "cpuinfo.py", "builders/graph/actions.py", "kernelgen/*.py")
    # the ops' hwc_params hooks reorder weights for HWC layouts (targets/base.pack_hwc)
    weights_py = py_sources("targets/base.py", "ops/*.py", "tensor_layout.py", "numerics.py") + list(plan.extra.get("weights_py", []))
    golden_py = py_sources("reference/*.py", "numerics.py", "tensor_layout.py") + list(plan.extra.get("golden_py", []))

    def codegen(path, template, spec, label):
        node = env.NnsCodegen(os.path.join(b, path), [value(env, spec), os.path.join(tdir, template)],
                              NNS_VERB="CODEGEN", NNS_LABEL=label)
        env.Depends(node, codegen_py)
        # templates the template includes by a name from its spec (the scanner sees literal names)
        includes = spec.get("includes", ()) if isinstance(spec, dict) else ()
        env.Depends(node, [render.template_file(tdir, name) for name in includes])
        env.Precious(node)
        return node

    layer_files, weights, goldens, labels = {}, [], [], {}
    for lp in plan.layers:
        label = report.printable(lp.layer.name)
        labels[lp.cname] = label
        files = lp.sources()
        # several files per layer: each CODEGEN line names its file
        layer_files[lp.cname] = {path: codegen(path, template, spec, label if len(files) == 1 else
                                               f"{label} ({os.path.basename(path)})")[0]
                                 for path, template, spec in files}
        if lp.param_layout:
            w = env.NnsWeights(os.path.join(b, "bin", plan.bin_path("weights", lp.cname)),
                               value(env, [session.numeric_keys[lp.layer.name], lp.param_layout,
                                           plan.layout] + ([lp.pack_key] if lp.pack_key else [])),
                               NNS_VERB="WEIGHTS", NNS_LABEL=label, NNS_CNAME=lp.cname)
            env.Depends(w, weights_py)
            weights += w
        gkey = [session.golden_keys[lp.layer.output], plan.layout, plan.tensor_layouts.get(lp.layer.output)]
        if lp.layer.output in plan.golden_tags:
            gkey.append(plan.golden_tags[lp.layer.output])
        g = env.NnsGolden(os.path.join(b, "bin", plan.bin_path("golden", lp.cname)), value(env, gkey),
                          NNS_VERB="GOLDEN", NNS_LABEL=label, NNS_TENSOR=lp.layer.output)
        env.Depends(g, golden_py)
        goldens += g

    inp = env.NnsInput(binfiles.input_path(b), value(env, [session.input_key, plan.layout]),
                       NNS_VERB="INPUT", NNS_LABEL=session.model_cfg.name)
    env.Depends(inp, py_sources("reference/quant.py"))
    network_files = {path: codegen(path, template, spec, label)[0]
                     for (path, template, spec), label in zip(plan.network_files,
                                                              network_labels(plan.network_files))}
    env.Precious(weights + goldens + inp)

    common = CommonNodes(layer_files=layer_files, network_files=network_files,
                         weights=weights, goldens=goldens, input=inp, label=labels)
    target_nodes = session.kind.declare_nodes(env, session, common)
    run = target_nodes.pop("run")
    extra_bins = target_nodes.pop("bins", [])      # more files a target writes under bin/
    out_dir = os.path.dirname(str(run[0]))
    # run -> report.json (the run's verdict) -> check.txt (only when it passed) -> verdict
    # (printed by every build that includes the check).  A new run first removes the old
    # report and check, so an interrupted run leaves nothing that claims success.
    report_path, check_path = os.path.join(out_dir, "report.json"), os.path.join(out_dir, "check.txt")
    html_path = os.path.join(out_dir, "report.html")
    env.AddPreAction(run, SCons.Action.Action(
        lambda target, source, env: actions.remove_stale([report_path, html_path, check_path]), None))
    # report_extra: JSON files a target adds to the report ({"layers": {name: {...}}, ...})
    report_extra = list(target_nodes.pop("report_extra", []))
    float_source = getattr(session.graph, "float_source", None)
    zoo_model = _zoo_model(env, session)
    if float_source:        # a float model quantized here: its fidelity joins the report
        # a zoo model's file is the MODEL step's (its content a function of the zoo key)
        model_key = _zoo_key(session) if zoo_model else file_digest(float_source["path"])
        fid = env.NnsFidelity(os.path.join(b, "fidelity.json"),
                              value(env, [session.input_key, session.golden_keys[session.graph.output],
                                          {k: v for k, v in float_source.items() if k != "path"},
                                          model_key]),
                              NNS_VERB="FIDELITY", NNS_LABEL=session.model_cfg.name)
        env.Depends(fid, py_sources("builders/reports/fidelity.py") + zoo_model)
        report_extra += fid
    graph_key = keys.digest([session.numeric_keys[l.name] for l in session.graph.layers],
                            [(l.name, l.inputs, l.output, l.fused) for l in session.graph.layers])
    qdq = env.NnsQdq(os.path.join(b, "quantized.onnx"), value(env, graph_key),
                     NNS_VERB="EXPORT", NNS_LABEL="quantized.onnx")
    env.Depends(qdq, py_sources("export/*.py"))
    verify = []
    if consistency.applies(session.graph):   # quantized.onnx, evaluated exactly, = the reference
        cons = env.NnsConsistency(os.path.join(b, "consistency.json"),
                                  qdq + [value(env, [session.input_key, sorted(session.golden_keys.items())])],
                                  NNS_VERB="VERIFY", NNS_LABEL=session.model_cfg.name)
        env.Depends(cons, py_sources("builders/reports/consistency.py", "export/*.py", "reference/*.py"))
        if sum(lp.macs for lp in session.plan.layers) <= consistency.CHEAP_MACS:
            report_extra += cons
        verify = env.AlwaysBuild(env.Alias(f"verify-{session.target_cfg.name}-{session.model_cfg.name}",
                                           cons, SCons.Action.Action(consistency.print_consistency, None)))
    rep = env.NnsReport([report_path, html_path], [value(env, report.plan_summary(session)), run[0]]
                        + report_extra,
                        NNS_VERB="REPORT", NNS_LABEL=session.model_cfg.name)
    env.Depends(rep, py_sources("builders/reports/report.py", "builders/run/runlog.py", "builders/reports/html.py"))
    check = env.NnsCheck(check_path, rep[0], NNS_VERB="CHECK", NNS_LABEL=session.model_cfg.name)
    session.report_nodes = [rep[0]]
    session.check_node = check           # the default build orders it last (builders/graph/console.py)
    verdict = env.AlwaysBuild(env.Alias(f"verdict-{session.target_cfg.name}-{session.model_cfg.name}",
                                        [check, rep[0]], SCons.Action.Action(actions.print_verdict, None)))

    extra = zoo_model
    env.Clean(target_nodes["firmware"], [os.path.join(b, "cache")])
    sources = [n for files in layer_files.values() for n in files.values()] + list(network_files.values())
    aliases = {
        "codegen": sources, "weights": weights + inp, "goldens": goldens,
        "run": run, "check": verdict, "report": rep, "quantized": qdq, "model": extra,
        "verify": verify, "export": common.export,
    }
    aliases.update(target_nodes)
    aliases.setdefault("compiledb", [])
    env.NoCache(aliases["compiledb"])       # holds absolute paths: never shared through a cache
    from SCons.Script import GetOption
    if not (GetOption("no_exec") or GetOption("clean") or GetOption("help")):
        # bin/ is flashed as a whole on gvsoc: files of layers that are gone must not stay
        workspace.prune(b, ["bin", os.path.join("src", "layers"), os.path.join("src", "weights")],
                        [str(n) for n in weights + goldens + inp + sources + list(extra_bins)])
        # a built file changed since its step wrote it (truncated, edited) is rebuilt
        from . import damaged
        for path in damaged.remove_damaged([n for nodes in aliases.values() for n in nodes]):
            print(f"nnscons: {path} changed since it was built: building it again")
    return aliases
