"""End-to-end agreement of the integer reference with the QDQ graph on the zoo models.

For each zoo model: quantize (PTQ), export the QDQ model, run both on N seeded inputs,
print the share of output elements equal to the exact (float64) evaluation of the QDQ
graph and top-1 agreement, and beside it the agreement with onnxruntime's own float32
evaluation (graph optimizations disabled), which drifts on deep networks.

    .venv/bin/python benchmarks/accuracy.py [inputs]
"""
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "site_scons"), ROOT]

from models import zoo  # noqa: E402
from nnscons import frontends, reference  # noqa: E402
from nnscons.export import ort_oracle, qdq_onnx  # noqa: E402

MODELS = {"simplecnn": (1, 1, 28, 28), "resnet18": (1, 3, 224, 224)}


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    with tempfile.TemporaryDirectory() as tmp:
        for name, shape in MODELS.items():
            src, qdq = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + "_qdq.onnx")
            zoo.write(name, 0, shape, src)
            graph = frontends.load_model(src, name=name, input_shape=shape,
                                         calibration={"count": 4, "seed": 0})
            qdq_onnx.write_qdq(graph, qdq)
            equal, within, ort_equal, top1, ref_s = [], [], [], 0, []
            for i in range(n):
                x = np.random.default_rng(100 + i).standard_normal(shape).astype(np.float32)
                t0 = time.perf_counter()
                ours = reference.run_graph(graph, reference.quantize_input(graph, x))[graph.output]
                ref_s.append(time.perf_counter() - t0)
                exact = ort_oracle.run_intermediates(qdq, x)[graph.output].reshape(ours.shape)
                ort32 = ort_oracle.run_intermediates(qdq, x, exact=False)[graph.output].reshape(ours.shape)
                equal.append(np.mean(ours == exact))
                within.append(np.mean(np.abs(ours.astype(int) - ort32.astype(int)) <= 1))
                ort_equal.append(np.mean(ours == ort32))
                top1 += int(np.argmax(ours) == np.argmax(exact))
            print(f"{name}: {100 * np.mean(equal):.2f}% of output elements equal to the exact (float64) "
                  f"QDQ graph, top-1 agreement {top1}/{n}; against onnxruntime's float32 evaluation "
                  f"(unoptimized): {100 * np.mean(ort_equal):.2f}% equal, {100 * np.mean(within):.2f}% "
                  f"within 1 LSB; reference run median {np.median(ref_s):.3f} s")


if __name__ == "__main__":
    main()
