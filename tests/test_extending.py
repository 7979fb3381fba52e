"""The README's "How to add an op" is true: in a copy of the project, exactly the files it
lists turn an op nnscons does not know (ONNX Shrink) into one that builds and passes bit for
bit on the host, and that another target refuses in one line naming the layer."""
from __future__ import annotations

from pathlib import Path

from onnx import helper

import opsgen

# ops/shrink.py: the op's whole Python side (converter, shape, integer reference, QDQ export)
SHRINK_OP = '''"""shrink: ONNX Shrink on int8 codes, as a table of the 256 input codes computed in float64
at planning time (dequantize, shrink, quantize at the output's scale: QDQ semantics)."""
from __future__ import annotations

import numpy as np

from ..opkit import onnx_operands as X
from ..opkit.onnx_attrs import attributes
from ..opkit.opgraph import Op
from . import OpDef
from ._common import n_out, scale_f64


def convert(w, name, node, ins, out):
    a = attributes(node)
    attrs = {"lambd": float(np.float32(a.get("lambd", 0.5))), "bias": float(np.float32(a.get("bias", 0.0)))}
    return Op(name, "shrink", [X.activation(w, name, node, ins[0])], out, node.op_type, attrs=attrs)


def shape(g, op, ins):
    return ins[0]


def table(layer, graph) -> list:
    """The output code of each input code -128..127."""
    qi, qo = graph.tensor(layer.inputs[0]).q, graph.tensor(layer.output).q
    lambd, bias = layer.attrs["lambd"], layer.attrs["bias"]
    x = (np.arange(-128, 128) - float(qi.zero_point)) * scale_f64(qi)
    y = np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0.0))
    q = np.clip(np.rint(y / scale_f64(qo)) + qo.zero_point, layer.act_min, layer.act_max)
    return [int(v) for v in q]


def reference(layer, graph, inputs):
    return np.asarray(table(layer, graph), np.int8)[inputs[0].astype(np.int32) + 128]


def export(w, layer, ins, core_out):
    w.node("Shrink", ins, [core_out], layer.name, exact_name=True, lambd=layer.attrs["lambd"],
           bias=layer.attrs["bias"])


OPS = [OpDef("shrink", onnx={"Shrink": convert}, attrs=("lambd", "bias"), shape=shape,
             reference=reference, macs=n_out, export=export, doc="lambd bias  (ONNX Shrink, by table)")]
'''

SHRINK_KERNEL = '''#include "nn_ops.h"

void nn_table_s8(int n, const int8_t *in, const int8_t *table, int8_t *out)
{
    for (int i = 0; i < n; i++)
        out[i] = table[in[i] + 128];
}
'''

SHRINK_PROTOTYPE = ("/* out[i] = table[in[i] + 128]: an op given as its 256 output codes. */\n"
                    "void nn_table_s8(int n, const int8_t *in, const int8_t *table, int8_t *out);\n")

SHRINK_TEMPLATE = '''{% import "_layer.j2" as L %}
{{ L.header(spec) }}
#include "nn_ops.h"

static const int8_t table[256] = { {{ spec.table | join(", ") }} };

{{ L.signature(spec) }}
{
    (void)params;
    nn_table_s8({{ spec.out.size }}, in[0], table, out);
}
'''

HOST_ENTRY = ('\nfrom ...ops import shrink as _shrink  # noqa: E402\n'
              'OPS["shrink"] = OpImpl(_t("shrink.c.j2"), (K + "nn_shrink.c",), '
              'spec=lambda l, g: {"table": _shrink.table(l, g)})\n')


def add_shrink_op(project) -> None:
    """The files README's "How to add an op" names, for an op on the host."""
    project.write("site_scons/nnscons/ops/shrink.py", SHRINK_OP)
    project.write("kernels/common/nn_shrink.c", SHRINK_KERNEL)
    header = project.read("kernels/common/nn_ops.h")
    project.write("kernels/common/nn_ops.h", header.replace("#endif /* NN_OPS_H */",
                                                            SHRINK_PROTOTYPE + "\n#endif /* NN_OPS_H */"))
    project.write("templates/cpu/shrink.c.j2", SHRINK_TEMPLATE)
    table = project.read("site_scons/nnscons/targets/host/ops.py")
    project.write("site_scons/nnscons/targets/host/ops.py", table + HOST_ENTRY)


def shrink_model(project) -> str:
    return opsgen.conv_then(project.file("m/shrinknet.onnx"),
                            [helper.make_node("Shrink", ["c"], ["y"], "shrink", lambd=0.3, bias=0.1)], hw=7)


def test_a_new_op_builds_bit_exact_on_the_host(project):
    path = shrink_model(project)
    before = project.scons("target=host", f"model={path}", check=False)
    assert before.returncode != 0 and "Shrink" in before.stdout + before.stderr
    assert "Traceback" not in before.stdout + before.stderr

    add_shrink_op(project)
    proc = project.scons("target=host", f"model={path}", "-j2")
    assert "Test PASSED [host] shrinknet" in proc.stdout, proc.stdout[-3000:]
    # its layer was generated from the new template and checked against its golden
    sources = list(Path(project.file("build/host")).glob("file-shrinknet-*/src/layers/*shrink*.c"))
    assert sources and "nn_table_s8(" in sources[0].read_text()


def test_a_new_op_another_target_lacks_is_one_clear_refusal(project):
    add_shrink_op(project)
    proc = project.scons("target=gap9", "platform=emul", f"model={shrink_model(project)}", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out
    assert "'shrink'" in out and "gap9" in out, out[-2000:]


# ---- a target kind: the files README's "How to add a target" names ------------------------

TOY_KIND = '''"""toy: a target kind that describes every layer of a network in C (its op, output bytes and
its tile budget, a per-layer key) and compiles the descriptions into an archive."""
from __future__ import annotations

import os

import numpy as np

from ...builders.graph.nodes import compile_generated
from ...errors import UserError
from ...planning.buffers import plan_buffers
from ...resources import data_path
from .. import base
from . import tool  # noqa: F401  (the kind's SCons Tool)
from .tool import check_tools  # noqa: F401

TEMPLATES = data_path("templates", "toy")
SCHEMA = {"toolchain": {"cc": "str"}, "tiling": {"budget": "size"},
          "run": {"platform": ["none"], "timeout": "count"}, "layer": {"budget": "size"}}
DEFAULTS = {"toolchain": {"cc": "gcc"}, "tiling": {"budget": 4096},
            "run": {"platform": "none", "timeout": 60}}


def options(target_cfg) -> dict:
    return base.merged_options(DEFAULTS, target_cfg)


def plan(graph, cnames, opts, overrides, where):
    layers = []
    for layer in graph.layers:
        budget, _ = base.layer_key(layer.name, "budget", opts, overrides, where, "tiling")
        spec = {"name": layer.name, "op": layer.op, "symbol": "toy_" + cnames[layer.name],
                "out_bytes": int(np.prod(graph.tensor(layer.output).shape)), "budget": budget}
        layout = base.param_layout(layer, graph)
        layers.append(base.LayerPlan(layer=layer, cname=cnames[layer.name], template="layer.c.j2",
                                     kernels=(), spec=spec, param_layout=layout,
                                     macs=base.macs(layer, graph),
                                     param_bytes=base.layout_bytes(layout)))
    # the network's spec: what its templates need, and the activation arena's size (report.json)
    network = {"arena_size": plan_buffers(graph)["arena_size"], "layers": [lp.layer.name for lp in layers]}
    return base.TargetPlan(layers=layers, network=network, kernels=[], templates_dir=TEMPLATES,
                           network_files=[("src/network.c", "network.c.j2", network)])


def _no_run(target, source, env):
    raise UserError("target kind 'toy' describes layers; it does not run them")


def declare_nodes(env, session, common) -> dict:
    b = session.build_dir
    objects = compile_generated(env, session, common, os.path.join(b, "obj"))
    firmware = env.StaticLibrary(os.path.join(b, "toy_layers"), objects)
    run = env.Command([os.path.join(b, "run.log"), os.path.join(b, "output.npy")], firmware, _no_run)
    return {"firmware": firmware, "run": run}
'''

TOY_TOOL = '''"""SCons Tool of the `toy` target kind: the C compiler for its descriptions."""
from nnscons.errors import UserError


def generate(env):
    env.Tool("gcc")
    env.Tool("ar")
    env.Replace(CC=env["NNS_OPTIONS"]["toolchain"]["cc"])


def exists(env):
    from ..base import tools_exist
    return tools_exist(check_tools, env)


def check_tools(env, session) -> None:
    cc = session.options["toolchain"]["cc"]
    if not env.Detect(cc):
        raise UserError(f"target '{session.target_cfg.name}': C compiler '{cc}' not found on PATH")
'''

TOY_LAYER = '''/* Generated by nnscons for target kind 'toy'. Do not edit. */
#include <stdint.h>

const struct { const char *name, *op; uint32_t out_bytes, budget; } {{ spec.symbol }} =
    { {{ spec.name | c_string }}, "{{ spec.op }}", {{ spec.out_bytes }}u, {{ spec.budget }}u};
'''

TOY_NETWORK = '''/* Generated by nnscons for target kind 'toy'. Do not edit. */
const char *const toy_layer_names[] = {
{% for name in spec.layers %}
    {{ name | c_string }},
{% endfor %}
};
'''

TOY_MANIFEST = '''
  toy1:
    kind: toy
    description: the test's toy kind
    tiling: {budget: 2KiB}
'''


def add_toy_kind(project) -> None:
    project.write("site_scons/nnscons/targets/toy/__init__.py", TOY_KIND)
    project.write("site_scons/nnscons/targets/toy/tool.py", TOY_TOOL)
    project.write("templates/toy/layer.c.j2", TOY_LAYER)
    project.write("templates/toy/network.c.j2", TOY_NETWORK)
    manifest = project.read("targets.yaml")
    at = manifest.index("\ntargets:\n") + len("\ntargets:\n")
    project.write("targets.yaml", manifest[:at] + TOY_MANIFEST.lstrip("\n") + "\n" + manifest[at:])


def test_a_new_target_kind_plans_generates_and_compiles(project):
    from conftest import steps
    add_toy_kind(project)
    proc = project.scons("target=toy1", "model=simplecnn", "codegen", "firmware")
    out = Path(project.file("build/toy1/simplecnn"))
    layers = sorted(out.glob("src/layers/*.c"))
    assert layers and (out / "src/network.c").is_file() and list(out.glob("*toy_layers.a"))
    assert all("2048u" in p.read_text() for p in layers)          # the target's tiling.budget
    assert "CODEGEN" in " ".join(steps(proc.stdout))

    # a per-layer key of the kind's schema: that layer alone is generated again
    manifest = project.read("targets.yaml")
    project.write("targets.yaml", manifest.replace(
        "      host:\n        layers:\n          conv1: {l1_budget: 8KiB}",
        "      host:\n        layers:\n          conv1: {l1_budget: 8KiB}\n"
        "      toy1:\n        layers:\n          conv1: {budget: 1KiB}"))
    again = steps(project.scons("target=toy1", "model=simplecnn", "codegen").stdout)
    assert [s for s in again if s.startswith("CODEGEN")] == ["CODEGEN conv1"], again
    assert "1024u" in (out / "src/layers/conv1.c").read_text()

    # a key the kind does not declare: one clear manifest error
    project.write("targets.yaml", project.read("targets.yaml").replace("tiling: {budget: 2KiB}",
                                                                       "tiling: {bugdet: 2KiB}"))
    bad = project.scons("target=toy1", "model=simplecnn", "codegen", check=False)
    text = bad.stdout + bad.stderr
    assert bad.returncode != 0 and "Traceback" not in text and "bugdet" in text, text[-2000:]
