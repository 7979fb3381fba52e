"""SCons Tool: the target-independent nnscons builders.

NnsCodegen   Value(spec) + template  -> generated source (template includes are scanned)
NnsWeights   Value(weights key)      -> a layer's weights .bin
NnsGolden    Value(golden key)       -> a layer's golden output .bin
NnsInput     Value(input key)        -> the quantized input .bin
NnsZooModel  Value(zoo args) + generator sources -> model.onnx
NnsQdq       Value(graph key)        -> quantized.onnx
NnsFidelity  Value(input, goldens, float model) -> fidelity.json (a float model's SQNR; builders/reports/fidelity.py)
NnsConsistency quantized.onnx + Value(input, goldens) -> consistency.json (quantized.onnx
             evaluated exactly against the reference; builders/reports/consistency.py)
NnsReport    Value(plan summary) + run.log -> report.json (per-layer table data and the verdict)
NnsCheck     report.json             -> check.txt (only when it passed; else prints the table and
                                        fails the build naming the first wrong layer)
"""
import os

import SCons.Action
import SCons.Builder
import SCons.Scanner

from nnscons import codegen
from nnscons.builders.graph import actions
from nnscons.builders.reports import consistency, fidelity


def _scan_templates(node, env, path):
    if not node.exists():
        return []
    directory = os.path.dirname(node.abspath)
    return [env.File(codegen.template_file(directory, name))
            for name in codegen.template_references(node.get_text_contents())]


# Each builder prints $NNS_<NAME>COMSTR (SCons's $XXXCOMSTR convention: set it in an
# Environment to change a step's line, or to "" to silence it).  These builders are Python
# functions: they have no command line, so there is no $XXXCOM to change.
_COMSTR = "$NNS_VERB $NNS_LABEL [$NNS_TARGET]"
_COMSTR_VERBOSE = "$NNS_VERB $NNS_LABEL [$NNS_TARGET]: $TARGETS"
NAMES = {"NnsCodegen": "CODEGEN", "NnsWeights": "WEIGHTS", "NnsGolden": "GOLDEN", "NnsInput": "INPUT",
         "NnsZooModel": "MODEL", "NnsQdq": "EXPORT", "NnsCheck": "CHECK", "NnsReport": "REPORT",
         "NnsFidelity": "FIDELITY", "NnsConsistency": "VERIFY"}


def _builder(func, name, **kw):
    return SCons.Builder.Builder(action=SCons.Action.Action(func, f"$NNS_{name}COMSTR"), **kw)


def generate(env):
    for name in NAMES.values():
        env.SetDefault(**{f"NNS_{name}COMSTR": _COMSTR_VERBOSE if env.get("NNS_VERBOSE") else _COMSTR})
    scanner = SCons.Scanner.Scanner(function=_scan_templates, skeys=[".j2"], recursive=True,
                                    name="jinja2")
    env.Append(SCANNERS=[scanner])
    env["BUILDERS"].update({
        "NnsCodegen": _builder(actions.render_source, "CODEGEN"),
        "NnsWeights": _builder(actions.write_weights, "WEIGHTS"),
        "NnsGolden": _builder(actions.write_golden, "GOLDEN"),
        "NnsInput": _builder(actions.write_input, "INPUT"),
        "NnsZooModel": _builder(actions.write_zoo_model, "MODEL"),
        "NnsQdq": _builder(actions.write_qdq, "EXPORT"),
        "NnsCheck": _builder(actions.run_check, "CHECK"),
        "NnsReport": _builder(actions.write_report, "REPORT"),
        "NnsFidelity": _builder(fidelity.write_fidelity, "FIDELITY"),
        "NnsConsistency": _builder(consistency.write_consistency, "VERIFY"),
    })


def exists(env):
    return True
