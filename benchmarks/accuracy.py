"""End-to-end agreement of the integer reference with onnxruntime on the zoo models.

For each zoo model: quantize (PTQ), export the QDQ model, run both on N seeded inputs,
print the share of output elements within 1 LSB and the top-1 agreement.

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
            within, top1, ref_s = [], 0, []
            for i in range(n):
                x = np.random.default_rng(100 + i).standard_normal(shape).astype(np.float32)
                t0 = time.perf_counter()
                ours = reference.run_graph(graph, reference.quantize_input(graph, x))[graph.output]
                ref_s.append(time.perf_counter() - t0)
                theirs = ort_oracle.run_intermediates(qdq, x)[graph.output].reshape(ours.shape)
                within.append(np.mean(np.abs(ours.astype(int) - theirs.astype(int)) <= 1))
                top1 += int(np.argmax(ours) == np.argmax(theirs))
            print(f"{name}: {100 * np.mean(within):.2f}% of output elements within 1 LSB of onnxruntime, "
                  f"top-1 agreement {top1}/{n}, reference run median {np.median(ref_s):.3f} s")


if __name__ == "__main__":
    main()
