"""SCons Tool: the target-independent nnscons builders.

NnsCodegen   Value(spec) + template  -> generated source (template includes are scanned)
NnsWeights   Value(weights key)      -> a layer's weights .bin
NnsGolden    Value(golden key)       -> a layer's golden output .bin
NnsInput     Value(input key)        -> the quantized input .bin
NnsZooModel  Value(zoo args) + generator sources -> model.onnx
NnsQdq       Value(graph key)        -> quantized.onnx
NnsReport    Value(plan summary) + run.log -> report.json (per-layer table data and the verdict)
NnsCheck     report.json             -> check.txt (only when it passed; else prints the table and
                                        fails the build naming the first wrong layer)
"""
import os

import SCons.Action
import SCons.Builder
import SCons.Scanner

from nnscons import codegen
from nnscons.builders import actions


def _scan_templates(node, env, path):
    if not node.exists():
        return []
    directory = os.path.dirname(node.abspath)
    return [env.File(os.path.join(directory, name))
            for name in codegen.template_references(node.get_text_contents())]


def _builder(func, **kw):
    return SCons.Builder.Builder(action=SCons.Action.Action(func, actions.label), **kw)


def generate(env):
    scanner = SCons.Scanner.Scanner(function=_scan_templates, skeys=[".j2"], recursive=True,
                                    name="jinja2")
    env.Append(SCANNERS=[scanner])
    env["BUILDERS"].update({
        "NnsCodegen": _builder(actions.render_source),
        "NnsWeights": _builder(actions.write_weights),
        "NnsGolden": _builder(actions.write_golden),
        "NnsInput": _builder(actions.write_input),
        "NnsZooModel": _builder(actions.write_zoo_model),
        "NnsQdq": _builder(actions.write_qdq),
        "NnsCheck": _builder(actions.run_check),
        "NnsReport": _builder(actions.write_report),
    })


def exists(env):
    return True
