"""Zoo networks as onnxruntime's quantizer writes them, against the oracle.

Each zoo model (random weights, its own seed) is quantized by onnxruntime's quantize_static
without pre-processing -- BatchNormalization left unfolded, the float islands that leaves --
with uint8 asymmetric weights (QUInt8, per tensor) and uint8 activations, in QDQ and in
QOperator form. nnscons imports it and runs the integer reference on a random input; the
oracle is the float64 evaluation of the QDQ graph (the QOperator one spelled as QDQ). Prints
per model and format: layers, layers that read weight slots (passes/weight_slots.py), and
the share of the network output equal to the oracle and within 1 LSB. No CPU dependence:
integer reference against float64.

    .venv/bin/python benchmarks/ort_quantizer_zoo.py [model[:HxW] ...]
"""
from __future__ import annotations

import os
import sys
import tempfile

import numpy as np
import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "site_scons"), ROOT]

DEFAULT = ["mobilenetv2:64", "resnet18:64", "mobilenetv3:64", "dscnn"]


def main(args) -> None:
    import logging

    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    from models import zoo
    from nnscons import reference
    from nnscons.export import ort_oracle
    from nnscons.frontends import load_model
    logging.getLogger().setLevel(logging.ERROR)
    d = tempfile.mkdtemp()
    print(f"{'model':14s} {'format':10s} {'layers':>6s} {'slots':>5s} {'exact %':>8s} {'<=1 LSB %':>9s}")
    for spec in args or DEFAULT:
        name, _, hw = spec.partition(":")
        shape = (1, 3, int(hw), int(hw)) if hw else None
        src = os.path.join(d, f"{name}.onnx")
        zoo.write(name, 0, shape, src)
        inp = onnx.load(src).graph.input[0]
        ishape = [x.dim_value for x in inp.type.tensor_type.shape.dim]

        class Reader(CalibrationDataReader):
            def __init__(self):
                self.it = iter([{inp.name: np.random.default_rng(k).standard_normal(ishape).astype(np.float32)}
                                for k in range(4)])

            def get_next(self):
                return next(self.it, None)

        for fmt in ("QDQ", "QOperator"):
            q = os.path.join(d, f"{name}_{fmt}.onnx")
            quantize_static(src, q, Reader(), quant_format=getattr(QuantFormat, fmt), per_channel=False,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8)
            g = load_model(q, name=name)
            x = np.random.default_rng(9).standard_normal(ishape).astype(np.float32)
            ours = reference.run_graph(g, reference.quantize_input(g, x))[g.output].astype(int)
            want = ort_oracle.run_intermediates(q, x)[g.output].reshape(ours.shape).astype(int)
            slots = sum(layer.name.endswith("_weight_slots") for layer in g.layers)
            print(f"{name:14s} {fmt:10s} {len(g.layers):6d} {slots:5d} {100 * np.mean(ours == want):8.1f} "
                  f"{100 * np.mean(np.abs(ours - want) <= 1):9.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
