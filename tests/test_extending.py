"""The README's "How to add an op" is true: in a copy of the project, exactly the files it
lists turn an op nnscons does not know (ONNX Sign) into one that builds and passes bit for
bit on the host, and that another target refuses in one line naming the layer."""
from __future__ import annotations

from pathlib import Path

import pytest
from onnx import helper

import opsgen

# ops/sign.py: the op's whole Python side (converter, shape, integer reference, QDQ export)
SIGN_OP = '''"""sign: ONNX Sign on int8 codes: -1, 0 or +1 of the dequantized input, quantized at the
output's scale (three codes fixed at planning time)."""
from __future__ import annotations

import numpy as np

from ..frontends import onnx_ops as X
from ..passes.opgraph import Op
from . import OpDef
from ._common import n_out, scale_f64


def convert(w, name, node, ins, out):
    return Op(name, "sign", [X.activation(w, name, node, ins[0])], out, node.op_type)


def shape(g, op, ins):
    return ins[0]


def codes(layer, graph) -> list:
    """The output codes of -1, 0 and +1."""
    q = graph.tensor(layer.output).q
    return [int(np.clip(np.rint(v / scale_f64(q)) + q.zero_point, layer.act_min, layer.act_max))
            for v in (-1.0, 0.0, 1.0)]


def reference(layer, graph, inputs):
    neg, zero, pos = codes(layer, graph)
    x = inputs[0].astype(np.int32) - int(graph.tensor(layer.inputs[0]).q.zero_point)
    return np.where(x > 0, pos, np.where(x < 0, neg, zero)).astype(np.int8)


def export(w, layer, ins, core_out):
    w.node("Sign", ins, [core_out], layer.name, exact_name=True)


OPS = [OpDef("sign", onnx={"Sign": convert}, shape=shape, reference=reference, macs=n_out,
             export=export, doc="(the sign of the input, quantized)")]
'''

SIGN_KERNEL = '''#include "nn_ops.h"

void nn_sign_s8(int n, const int8_t *in, int in_zp, int8_t neg, int8_t zero, int8_t pos, int8_t *out)
{
    for (int i = 0; i < n; i++) {
        const int v = in[i] - in_zp;
        out[i] = v > 0 ? pos : v < 0 ? neg : zero;
    }
}
'''

SIGN_PROTOTYPE = ("/* out = the code of sign(in - in_zp): neg, zero or pos. */\n"
                  "void nn_sign_s8(int n, const int8_t *in, int in_zp, int8_t neg, int8_t zero, "
                  "int8_t pos, int8_t *out);\n")

SIGN_TEMPLATE = '''{% import "_layer.j2" as L %}
{{ L.header(spec) }}
#include "nn_ops.h"

{{ L.signature(spec) }}
{
    (void)params;
    nn_sign_s8({{ spec.out.size }}, in[0], {{ spec.inputs[0].zp }}, {{ spec.codes | join(", ") }}, out);
}
'''

HOST_ENTRY = ('\nfrom ...ops import sign as _sign  # noqa: E402\n'
              'OPS["sign"] = OpImpl("sign.c.j2", (K + "nn_sign.c",), '
              'spec=lambda l, g: {"codes": _sign.codes(l, g)})\n')


def add_sign_op(project) -> None:
    """The files README's "How to add an op" names, for an op on the host."""
    project.write("site_scons/nnscons/ops/sign.py", SIGN_OP)
    project.write("kernels/common/nn_sign.c", SIGN_KERNEL)
    header = project.read("kernels/common/nn_ops.h")
    project.write("kernels/common/nn_ops.h", header.replace("#endif /* NN_OPS_H */",
                                                            SIGN_PROTOTYPE + "\n#endif /* NN_OPS_H */"))
    project.write("templates/host/sign.c.j2", SIGN_TEMPLATE)
    table = project.read("site_scons/nnscons/targets/host/ops.py")
    project.write("site_scons/nnscons/targets/host/ops.py", table + HOST_ENTRY)


def sign_model(project) -> str:
    return opsgen.conv_then(project.file("m/signnet.onnx"),
                            [helper.make_node("Sign", ["c"], ["y"], "sign")], hw=7)


@pytest.mark.slow
def test_a_new_op_builds_bit_exact_on_the_host(project):
    path = sign_model(project)
    before = project.scons("target=host", f"model={path}", check=False)
    assert before.returncode != 0 and "Sign" in before.stdout + before.stderr
    assert "Traceback" not in before.stdout + before.stderr

    add_sign_op(project)
    proc = project.scons("target=host", f"model={path}", "-j2")
    assert "Test PASSED [host] signnet" in proc.stdout, proc.stdout[-3000:]
    # its layer was generated from the new template and checked against its golden
    sources = list(Path(project.file("build/host")).glob("file-signnet-*/src/layers/*sign*.c"))
    assert sources and "nn_sign_s8(" in sources[0].read_text()


@pytest.mark.slow
def test_a_new_op_another_target_lacks_is_one_clear_refusal(project):
    add_sign_op(project)
    proc = project.scons("target=gap9", "platform=emul", f"model={sign_model(project)}", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out
    assert "'sign'" in out and "gap9" in out, out[-2000:]
