"""Paired rounds of two nnscons trees' host firmware against onnxruntime (1 thread):

    .venv/bin/python benchmarks/host_ab.py BASE_TREE [model] [iterations] [rounds]

BASE_TREE is another checkout of nnscons (e.g. `git archive main | tar -x -C /tmp/base`,
with its .venv) whose `benchmarks/host_latency.py model N R host` has built
build/host/<model> on the same input (host_latency's seeded one); this tree's build must
exist too (the same command here).  Each round runs the base firmware's benchmark mode,
then this tree's, then onnxruntime on this tree's quantized.onnx (N inferences each,
medians); prints every round and the medians of the times and of the per-round ratios
(this / base is the change's figure: both sides of a round see the same machine load).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from host_latency import ort_median, ort_session  # noqa: E402


def firmware(root, model, iterations):
    b = os.path.join(root, "build", "host", model)
    out = subprocess.run([os.path.join(b, "firmware"), os.path.join(b, "bin"), os.path.join(b, "bench_output.bin"),
                          str(iterations)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         check=True).stdout
    return float(next(ln for ln in out.splitlines() if ln.startswith("bench total")).split()[-1])


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    base = sys.argv[1]
    model = sys.argv[2] if len(sys.argv) > 2 else "mobilenetv2"
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 7
    for root in (base, ROOT):
        if not os.path.isfile(os.path.join(root, "build", "host", model, "firmware")):
            sys.exit(f"{root}: no build/host/{model}/firmware: run `benchmarks/host_latency.py {model} {n} 1 host` there")
    onnx_path = os.path.join(ROOT, "build", "host", model, "quantized.onnx")
    x = np.load(os.path.join(ROOT, "build", f"latency_input_{model}.npy"))
    sess = ort_session(onnx_path, 1)
    rows = []
    for r in range(rounds):
        b, a = firmware(base, model, n), firmware(ROOT, model, n)
        o = ort_median(onnx_path, x, 1, n, sess)
        rows.append((b, a, o))
        print(f"round {r}: base {b:.3f} ms  this {a:.3f} ms  onnxruntime {o:.3f} ms  base/ort {b / o:.2f}  "
              f"this/ort {a / o:.2f}  this/base {a / b:.3f}", flush=True)

    def med(f):
        return statistics.median(f(t) for t in rows)
    print(f"{model}, {rounds} paired rounds of {n} inferences, 1 thread, medians: base {med(lambda t: t[0]):.3f} ms, "
          f"this {med(lambda t: t[1]):.3f} ms, onnxruntime {med(lambda t: t[2]):.3f} ms; base/ort "
          f"{med(lambda t: t[0] / t[2]):.2f}, this/ort {med(lambda t: t[1] / t[2]):.2f}, "
          f"this/base {med(lambda t: t[1] / t[0]):.3f}")


if __name__ == "__main__":
    main()
