"""SCons actions for the per-layer and per-network nodes.

Each action reads what it needs from the Session (env['NNS_SESSION']) and its
sources; outputs go through fileio.write_if_changed (atomic, mtime kept when equal).
"""
from __future__ import annotations

import json
import os

import numpy as np

from ... import codegen
from ...fileio import write_if_changed
from ...tensor_layout import to_layout


def label(target, source, env):
    """`VERB label [target]`; with verbose=1 also what the step reads and writes (these
    steps are Python functions: they have no command line)."""
    line = f"{env['NNS_VERB']} {env['NNS_LABEL']} [{env['NNS_TARGET']}]"
    if env.get("NNS_VERBOSE"):
        files = [str(s) for s in source if s.__class__.__name__ == "File"]
        line += f": {', '.join(str(t) for t in target)}" + (f" <- {', '.join(files)}" if files else "")
    return line


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
    data = to_layout(session.reference()[tensor].astype(np.int8), plan.layout,
                     plan.tensor_layouts.get(tensor))
    write_if_changed(str(target[0]), data.tobytes())
    return 0


def write_input(target, source, env):
    session = env["NNS_SESSION"]
    codes = session.quantized_input()
    if not isinstance(codes, dict):
        codes = {session.graph.input: codes}
    # several inputs: their codes back to back, in the model's order (the C API's packing)
    data = b"".join(to_layout(codes[t].astype(np.int8), session.plan.layout).tobytes()
                    for t in session.graph.inputs)
    write_if_changed(str(target[0]), data)
    return 0


def write_zoo_model(target, source, env):
    from ...planning import zoo_cache      # the bytes the planning generated, not generated again
    m = env["NNS_SESSION"].model_cfg
    zoo_cache.write(m.zoo, m.seed, m.input_shape, str(target[0]))
    return 0


def write_qdq(target, source, env):
    from ...export.qdq_onnx import write_qdq as export
    tmp = str(target[0]) + ".partial"
    export(env["NNS_SESSION"].graph, tmp)
    with open(tmp, "rb") as f:
        data = f.read()
    os.unlink(tmp)
    write_if_changed(str(target[0]), data)
    return 0


def write_report(target, source, env):
    """report.json from the plan summary and run.log, with the verdict of that run."""
    from ..reports import report
    summary = json.loads(source[0].read())
    session = env["NNS_SESSION"]
    extra = [json.loads(s.get_text_contents()) for s in source[2:]]
    rep = report.write(session, summary, source[1].get_text_contents(), str(target[0]), extra)
    if len(target) > 1:                       # report.html beside it
        from ..reports import html
        write_if_changed(str(target[1]), html.build_page(rep))
    session.report_written = True
    return 0


def run_check(target, source, env):
    """source[0]: report.json.  Prints the verdict (and the table when this build wrote
    the report).  Passed: check.txt holds the verdict.  Failed: no check.txt remains and
    the build fails."""
    from ..reports import report
    session = env["NNS_SESSION"]
    rep, problem = _readable_report(str(source[0]))
    session.verdict_printed = True
    if problem:
        print(f"CHECK FAILED [{session.target_cfg.name}] {session.model_cfg.name}: {source[0]} {problem}; "
              f"it is not the report this build wrote: remove it and build again")
        remove_stale([str(target[0])])
        return 1
    if session.report_written or not rep["passed"]:
        try:
            print(report.table(rep))
        except (KeyError, TypeError, ValueError, AttributeError):
            print(f"({source[0]} holds no complete per-layer table)")     # an edited report
    print(rep["verdict"])
    if not rep["passed"]:
        remove_stale([str(target[0])])
        return 1
    write_if_changed(str(target[0]), rep["verdict"] + "\n")
    return 0


def _readable_report(path: str):
    """(report, None), or (None, what is wrong with it): a report that does not parse, lacks
    its verdict, or whose verdict contradicts its `passed` (an edit) decides nothing."""
    from ..reports import report
    try:
        rep = report.load(path)
    except (OSError, ValueError) as e:
        return None, f"cannot be read ({e})"
    if not isinstance(rep, dict) or not isinstance(rep.get("passed"), bool) \
            or not isinstance(rep.get("verdict"), str) or not isinstance(rep.get("layers"), list):
        return None, "lacks its verdict (\"passed\", \"verdict\", \"layers\")"
    if rep["passed"] != rep["verdict"].startswith("Test PASSED"):
        return None, (f"says \"passed\": {str(rep['passed']).lower()} but its verdict reads "
                      f"'{rep['verdict'][:120]}'")
    return rep, None


def print_verdict(target, source, env):
    """Every build that includes the check prints its verdict: when CHECK did not run
    (nothing changed), from the up-to-date report (source[1])."""
    from ..reports import report
    if not env["NNS_SESSION"].verdict_printed:
        rep, problem = _readable_report(str(source[1]))
        print(rep["verdict"] if rep else f"{source[1]} {problem}")
    return 0


def remove_stale(paths) -> None:
    """Remove verdict files that would outlive the run they describe."""
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
