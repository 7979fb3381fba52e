"""Declare the SCons nodes of one (target, model) build.

Per layer: codegen (Value(spec) + template), weights .bin (Value(weights key)),
golden .bin (Value(golden chain key)), object. Per network: network/main sources,
link, run, check, report, quantized.onnx, compile_commands.json.
"""
from __future__ import annotations

import glob
import json
import os

from ..planning import keys
from . import report

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _py(*patterns):
    return sorted(f for p in patterns for f in glob.glob(os.path.join(_PKG, p)))


def _value(env, obj):
    return env.Value(json.dumps(obj, sort_keys=True, separators=(",", ":")))


def declare(env, session) -> dict:
    """Create every node; return the aliases {name: nodes}."""
    b = session.build_dir
    t = session.target_cfg.name
    plan = session.plan
    tdir = plan.templates_dir
    env = env.Clone(NNS_SESSION=session, NNS_TARGET=t, NNS_BIN_DIR=os.path.join(b, "bin"),
                    CPPPATH=["kernels/common", os.path.join(b, "src")])

    codegen_py = _py("codegen.py", "build/actions.py")
    weights_py = _py("targets/base.py", "numerics.py")
    golden_py = _py("reference/*.py", "numerics.py")

    def codegen(target, spec, template, label):
        node = env.NnsCodegen(target, [_value(env, spec), os.path.join(tdir, template)],
                              NNS_VERB="CODEGEN", NNS_LABEL=label)
        env.Depends(node, codegen_py)
        env.Precious(node)
        return node

    def compile_(obj, src, label):
        return env.Object(obj, src, CCCOMSTR=f"CC {label} [{t}]" if not env["NNS_VERBOSE"] else None)

    objects, weights, goldens, sources = [], [], [], []
    for lp in plan.layers:
        label = report.printable(lp.layer.name)
        src = codegen(os.path.join(b, "src", "layers", lp.cname + ".c"), lp.spec, lp.template, label)
        sources += src
        objects += compile_(os.path.join(b, "obj", "layers", lp.cname + ".o"), src, label)
        if lp.param_layout:
            w = env.NnsWeights(os.path.join(b, "bin", "weights", lp.cname + ".bin"),
                               _value(env, [session.numeric_keys[lp.layer.name], lp.param_layout]),
                               NNS_VERB="WEIGHTS", NNS_LABEL=label, NNS_CNAME=lp.cname)
            env.Depends(w, weights_py)
            weights += w
        g = env.NnsGolden(os.path.join(b, "bin", "golden", lp.cname + ".bin"),
                          _value(env, session.golden_keys[lp.layer.output]),
                          NNS_VERB="GOLDEN", NNS_LABEL=label, NNS_TENSOR=lp.layer.output)
        env.Depends(g, golden_py)
        goldens += g

    inp = env.NnsInput(os.path.join(b, "bin", "input.bin"), _value(env, session.input_key),
                       NNS_VERB="INPUT", NNS_LABEL=session.model_cfg.name)
    env.Depends(inp, _py("reference/quant.py"))

    for name in ("network.c", "network.h", "main.c"):
        sources += codegen(os.path.join(b, "src", name), plan.network if name != "main.c" else {},
                           name + ".j2", name)
    for name in ("network", "main"):
        objects += compile_(os.path.join(b, "obj", name + ".o"), os.path.join(b, "src", name + ".c"), name)
    for k in plan.kernels:
        stem = os.path.splitext(os.path.basename(k))[0]
        objects += compile_(os.path.join(b, "obj", "kernels", stem + ".o"), k, stem)

    firmware = env.Program(os.path.join(b, "firmware"), sorted(objects, key=str),
                           LINKCOMSTR=None if env["NNS_VERBOSE"] else f"LINK firmware [{t}]")
    run = env.NnsRun([os.path.join(b, "run.log"), os.path.join(b, "output.npy")],
                     firmware + inp + weights + goldens,
                     NNS_VERB="RUN", NNS_LABEL=session.model_cfg.name)
    env.SideEffect(os.path.join(b, "output.bin"), run)
    check = env.NnsCheck(os.path.join(b, "check.txt"), run[0],
                         NNS_VERB="CHECK", NNS_LABEL=session.model_cfg.name)
    rep = env.NnsReport(os.path.join(b, "report.json"), [_value(env, report.plan_summary(session)), run[0]],
                        NNS_VERB="REPORT", NNS_LABEL=session.model_cfg.name)
    env.Depends(rep, _py("build/report.py"))

    graph_key = keys.digest([session.numeric_keys[l.name] for l in session.graph.layers],
                            [(l.name, l.inputs, l.output, l.fused) for l in session.graph.layers])
    qdq = env.NnsQdq(os.path.join(b, "quantized.onnx"), _value(env, graph_key),
                     NNS_VERB="EXPORT", NNS_LABEL="quantized.onnx")
    env.Depends(qdq, _py("export/*.py"))

    extra = []
    if session.model_cfg.zoo:
        m = session.model_cfg
        zoo_node = env.NnsZooModel(os.path.join(b, "model.onnx"),
                                   _value(env, [m.zoo, m.seed, list(m.input_shape or [])]),
                                   NNS_VERB="MODEL", NNS_LABEL=m.zoo)
        env.Depends(zoo_node, sorted(glob.glob(os.path.join(session.root, "models", "zoo", "*.py"))))
        env.Precious(zoo_node)
        extra += zoo_node

    cdb = env.CompilationDatabase(os.path.join(b, "compile_commands.json"))
    env.Precious(weights + goldens + inp)
    env.Clean(firmware, [os.path.join(b, "cache"), os.path.join(b, "output.bin")])
    return {
        "codegen": sources, "weights": weights + inp, "goldens": goldens, "firmware": firmware,
        "run": run, "check": check, "report": rep, "quantized": qdq, "compiledb": cdb,
        "model": extra,
    }
