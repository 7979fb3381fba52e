"""Fold BatchNormalization into the conv2d/linear that produces its input (in float)."""
from __future__ import annotations

import numpy as np

from .opgraph import OpGraph


def fold_batchnorm(g: OpGraph) -> None:
    for bn in [op for op in g.ops if op.kind == "bn"]:
        src = g.producer(bn.inputs[0])
        if src is None or src.kind not in ("conv2d", "linear"):
            what = "the network input" if src is None else f"{src.name!r} ({src.source_op})"
            raise g.fail(bn, f"BatchNormalization must directly follow a Conv or Gemm to be "
                             f"folded, but its input comes from {what}; fold it in the "
                             f"training framework or move it after a convolution")
        if len(g.consumers(bn.inputs[0])) != 1 or bn.inputs[0] == g.output:
            raise g.fail(bn, f"the output of {src.name!r} is also used elsewhere, so the "
                             f"BatchNormalization cannot be folded into it")
        a = bn.attrs
        k = a["scale"] / np.sqrt(a["var"] + a["eps"])
        n_out = src.weight.shape[0]
        if k.shape != (n_out,):
            raise g.fail(bn, f"has {k.shape[0]} channels but {src.name!r} has {n_out} outputs")
        bias = src.bias if src.bias is not None else np.zeros(n_out)
        src.weight = src.weight * k.reshape((-1,) + (1,) * (src.weight.ndim - 1))
        src.bias = (bias - a["mean"]) * k + a["bias"]
        # The model's integer weights/bias no longer describe the folded layer.
        src.weight_q = src.bias_q = None
        src.output = bn.output
        src.fused.append(bn.name)
        src.source_ops.append(bn.source_op)
        g.ops.remove(bn)
