"""nnscons on the host target against onnxruntime, same quantized.onnx, same input, one run.

    .venv/bin/python benchmarks/host_latency.py [model] [iterations] [rounds] [targets]

targets: comma-separated, default host,host-measured,host-2t (host-measured: 1 thread, each
layer's kernel variant chosen by timing every variant on this CPU, `kernel: {choose: measure}`).

Builds `model` (default resnet18) for target=host (1 thread) and host-2t (2 threads)
with the firmware's benchmark mode (`bench iterations=N`: N inferences after a warm-up,
median), and times onnxruntime on build/host/<model>/quantized.onnx with 1 and 2 intra-op
threads on the same float input (N runs after a warm-up, median).  Then, per thread count,
`rounds` (default 5) paired rounds: the firmware's benchmark mode (N inferences, median),
then onnxruntime (N runs, median), so that a machine whose speed drifts (other work on
shared cores) slows both sides of a pair alike.  Prints, per thread count, the median over
the rounds of each side's medians and the median of the rounds' ratios nnscons / onnxruntime.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def nnscons_bench(target, model, iterations, x_path):
    cmd = [os.path.join(ROOT, "nnscons"), "-j2", f"target={target}", f"model={model}", f"input={x_path}",
           "bench", f"iterations={iterations}"]
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}")
    with open(os.path.join(ROOT, "build", target, model, "bench.json"), encoding="utf-8") as f:
        return json.load(f)["median_ms"]


def firmware_median(target, model, iterations):
    """One more run of the built firmware's benchmark mode: its whole-inference median."""
    b = os.path.join(ROOT, "build", target, model)
    proc = subprocess.run([os.path.join(b, "firmware"), os.path.join(b, "bin"),
                           os.path.join(b, "bench_output.bin"), str(iterations)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=True)
    return float(next(l for l in proc.stdout.splitlines() if l.startswith("bench total")).split()[-1])


def ort_session(onnx_path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])


def ort_median(onnx_path, x, threads, iterations, sess=None):
    sess = sess or ort_session(onnx_path, threads)
    name = sess.get_inputs()[0].name
    sess.run(None, {name: x})                       # warm-up
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        sess.run(None, {name: x})
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def benchmark_input(model):
    """(quantized.onnx path, input array, its .npy path under build/): the model's input shape
    comes from a first build's quantized.onnx; the same seeded input for both sides."""
    os.makedirs(os.path.join(ROOT, "build"), exist_ok=True)
    subprocess.run([os.path.join(ROOT, "nnscons"), "-j2", "target=host", f"model={model}", "quantized"],
                   cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
    onnx_path = os.path.join(ROOT, "build", "host", model, "quantized.onnx")
    import onnx
    dims = [d.dim_value for d in onnx.load(onnx_path).graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
    x_path = os.path.join(ROOT, "build", f"latency_input_{model}.npy")
    np.save(x_path, x)
    return onnx_path, x, x_path


# the targets compared, with their threads (onnxruntime gets as many intra-op threads)
TARGETS = {"host": 1, "host-measured": 1, "host-2t": 2}


def main():
    model = sys.argv[1] if len(sys.argv) > 1 else "resnet18"
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    onnx_path, x, x_path = benchmark_input(model)
    rows = []
    wanted = sys.argv[4].split(",") if len(sys.argv) > 4 else list(TARGETS)
    for target in wanted:
        threads = TARGETS.get(target, 1)
        nnscons_bench(target, model, iterations, x_path)      # build, check, bench.json
        sess = ort_session(onnx_path, threads)
        pairs = []
        for _ in range(rounds):
            nn = firmware_median(target, model, iterations)
            pairs.append((nn, ort_median(onnx_path, x, threads, iterations, sess)))
        rows.append((target, threads, statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs),
                     statistics.median(p[0] / p[1] for p in pairs)))
    print(f"{model}, {rounds} paired rounds of {iterations} iterations after a warm-up (same quantized.onnx "
          f"and input); medians over the rounds:")
    print(f"{'target':<14} {'threads':>7}  {'nnscons ms':>10}  {'onnxruntime ms':>14}  {'nnscons/ort':>11}")
    for target, threads, nn, ort_ms, ratio in rows:
        print(f"{target:<14} {threads:>7}  {nn:>10.2f}  {ort_ms:>14.2f}  {ratio:>11.2f}")


if __name__ == "__main__":
    main()
