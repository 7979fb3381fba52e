"""Per-layer time of nnscons (target=host, 1 thread) beside onnxruntime's per-node profile.

    .venv/bin/python benchmarks/host_layers.py [model] [iterations] [rounds]

Builds `model` (default resnet18) for target=host with the firmware's benchmark mode, then
runs `rounds` (default 3) paired rounds: the firmware (N inferences, per-layer medians),
then onnxruntime with 1 intra-op thread and profiling on (N runs, per-node medians), on
build/host/<model>/quantized.onnx and the same input.  ORT's nodes are matched to
nnscons's layers by name (ORT's fused node names end in `_token_N`); an Add that nnscons
fused into a conv's epilogue is counted with that conv, and what ORT runs outside any
layer (input quantize, transposes, output dequantize) is listed apart.  Prints, per
layer, the median over the rounds of each side and of the per-round ratio.
"""
from __future__ import annotations

import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from host_latency import benchmark_input, nnscons_bench, ort_session  # noqa: E402


def firmware_layers(model, iterations):
    """{cname: median ms} and the whole-inference median of one benchmark-mode run."""
    b = os.path.join(ROOT, "build", "host", model)
    out = subprocess.run([os.path.join(b, "firmware"), os.path.join(b, "bin"),
                          os.path.join(b, "bench_output.bin"), str(iterations)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=True).stdout
    layers, total = {}, None
    for line in out.splitlines():
        f = line.split()
        if line.startswith("bench layer"):
            layers[f[3]] = float(f[4])
        elif line.startswith("bench total"):
            total = float(f[-1])
    return layers, total


def ort_nodes(onnx_path, x, iterations):
    """{node name: median ms} over `iterations` profiled runs after a warm-up, and the
    median of the whole runs."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.gettempdir(), "nnscons_ort_profile")
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    for _ in range(iterations + 1):
        sess.run(None, {name: x})
    path = sess.end_profiling()
    with open(path, encoding="utf-8") as f:
        events = json.load(f)
    os.remove(path)
    nodes, runs = collections.defaultdict(list), []
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            nodes[re.sub(r"_token_\d+$", "", e["name"][:-len("_kernel_time")])].append(e["dur"] / 1e3)
        elif e.get("cat") == "Session" and e["name"] == "model_run":
            runs.append(e["dur"] / 1e3)
    return {k: statistics.median(v[1:]) for k, v in nodes.items()}, statistics.median(runs[1:])


def main():
    model = sys.argv[1] if len(sys.argv) > 1 else "resnet18"
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    onnx_path, x, x_path = benchmark_input(model)
    nnscons_bench("host", model, iterations, x_path)
    # the layer table comes from the build's report (the bench alias alone does not write it)
    subprocess.run([os.path.join(ROOT, "nnscons"), "-j2", "target=host", f"model={model}", f"input={x_path}"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(ROOT, "build", "host", model, "report.json"), encoding="utf-8") as f:
        layers = json.load(f)["layers"]
    ort_session(onnx_path, 1)
    nn_rounds, ort_rounds = [], []
    for _ in range(rounds):
        nn_rounds.append(firmware_layers(model, iterations))
        ort_rounds.append(ort_nodes(onnx_path, x, iterations))
    rows = []
    claimed = set()
    for l in layers:
        names = [l["name"]] + list(l.get("fused", []))
        nn = [r[0].get(l["cname"], 0.0) for r in nn_rounds]
        ot = [sum(r[0].get(n, 0.0) for n in names) for r in ort_rounds]
        claimed.update(n for r in ort_rounds for n in r[0] if n in names)
        rows.append((l["name"], l.get("macs", 0), nn, ot))
    rest = sorted({n for r in ort_rounds for n in r[0]} - claimed)
    print(f"{model}, {rounds} paired rounds of {iterations} iterations, 1 thread; medians over the rounds (ms)")
    print(f"{'layer':24s} {'MMAC':>7s} {'nnscons':>9s} {'ort':>9s} {'ratio':>6s} {'nn-ort':>7s}")
    for name, macs, nn, ot in rows:
        ratio = statistics.median(a / b for a, b in zip(nn, ot)) if all(ot) else float("nan")
        print(f"{name:24s} {macs / 1e6:7.1f} {statistics.median(nn):9.3f} {statistics.median(ot):9.3f} "
              f"{ratio:6.2f} {statistics.median(a - b for a, b in zip(nn, ot)):7.3f}")
    for n in rest:
        print(f"{'(ort) ' + n:24s} {'':7s} {'':9s} {statistics.median(r[0].get(n, 0.0) for r in ort_rounds):9.3f}")
    nt = [r[1] for r in nn_rounds]
    otot = [r[1] for r in ort_rounds]
    print(f"{'whole inference':24s} {'':7s} {statistics.median(nt):9.3f} {statistics.median(otot):9.3f} "
          f"{statistics.median(a / b for a, b in zip(nt, otot)):6.2f}")


if __name__ == "__main__":
    main()
