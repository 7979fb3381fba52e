"""SCons actions for the per-layer and per-network nodes.

Each action reads what it needs from the Session (env['NNS_SESSION']) and its
sources; outputs go through fileio.write_if_changed (atomic, mtime kept when equal).
"""
from __future__ import annotations

import json
import os

import numpy as np

from .. import codegen
from ..fileio import write_if_changed
from ..targets import base


def label(target, source, env):
    return f"{env['NNS_VERB']} {env['NNS_LABEL']} [{env['NNS_TARGET']}]"


def render_source(target, source, env):
    """source[0]: Value(json spec); source[1]: the template file."""
    spec = json.loads(source[0].read())
    template = os.path.basename(str(source[1]))
    text = codegen.render(os.path.dirname(source[1].abspath), template, spec=spec, net=spec)
    write_if_changed(str(target[0]), text)
    return 0


def write_weights(target, source, env):
    session = env["NNS_SESSION"]
    lp = session.plan_by_cname[env["NNS_CNAME"]]
    write_if_changed(str(target[0]), lp.packed_params(session.graph))
    return 0


def write_golden(target, source, env):
    session = env["NNS_SESSION"]
    tensor = env["NNS_TENSOR"]
    plan = session.plan
    data = base.to_layout(session.reference()[tensor].astype(np.int8), plan.layout,
                          plan.tensor_layouts.get(tensor))
    write_if_changed(str(target[0]), data.tobytes())
    return 0


def write_input(target, source, env):
    session = env["NNS_SESSION"]
    data = base.to_layout(session.quantized_input().astype(np.int8), session.plan.layout)
    write_if_changed(str(target[0]), data.tobytes())
    return 0


def write_zoo_model(target, source, env):
    from models import zoo
    m = env["NNS_SESSION"].model_cfg
    zoo.write(m.zoo, m.seed, m.input_shape, str(target[0]))
    return 0


def write_qdq(target, source, env):
    from ..export.qdq_onnx import write_qdq as export
    tmp = str(target[0]) + ".partial"
    export(env["NNS_SESSION"].graph, tmp)
    with open(tmp, "rb") as f:
        data = f.read()
    os.unlink(tmp)
    write_if_changed(str(target[0]), data)
    return 0


def run_check(target, source, env):
    from . import runlog
    session = env["NNS_SESSION"]
    passed, message = runlog.check(session, source[0].get_text_contents())
    print(message)
    if not passed:
        return 1
    write_if_changed(str(target[0]), message + "\n")
    return 0


def write_report(target, source, env):
    from . import report
    summary = json.loads(source[0].read())
    extra = [json.loads(s.get_text_contents()) for s in source[2:]]
    print(report.write(summary, source[1].get_text_contents(), str(target[0]), extra))
    return 0
