"""Paired A/B rounds in process CPU time: host targets' firmware against each other and
onnxruntime (1 thread), the same quantized.onnx and input, one core.

    .venv/bin/python benchmarks/host_cputime.py [model] [iterations] [rounds] [target ...]

Builds `model` (default resnet18) for each target (default: host host-measured) with the
firmware's benchmark mode, then runs `rounds` (default 5) rounds; each round runs every
firmware once (`iterations` inferences after a warm-up, default 10) pinned to one CPU with
`taskset -c 1` when present, and onnxruntime `iterations` times in this process, one
intra-op thread.  Each side's figure is its CPU time (user + system) per inference: on a
machine shared with other work, wall time counts the waits for a core, CPU time does not
(though still moved by caches and frequency).  The firmware's CPU time includes its one
warm-up inference and loading the parameters: (run CPU time) / (iterations + 1), an upper
bound.  Prints the medians over the rounds and the median of the rounds' ratios to
onnxruntime, and the CPU (/proc/cpuinfo's model name, family, model).
"""
from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from host_latency import benchmark_input, nnscons_bench, ort_session  # noqa: E402


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def firmware_cpu_ms(root, target, model, iterations) -> float:
    b = os.path.join(root, "build", target, model)
    cmd = [os.path.join(b, "firmware"), os.path.join(b, "bin"), os.path.join(b, "bench_output.bin"), str(iterations)]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "1"] + cmd
    t0 = children_cpu()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (children_cpu() - t0) * 1e3 / (iterations + 1)


def ort_cpu_ms(sess, x, iterations) -> float:
    name = sess.get_inputs()[0].name
    sess.run(None, {name: x})
    t0 = time.process_time()
    for _ in range(iterations):
        sess.run(None, {name: x})
    return (time.process_time() - t0) * 1e3 / iterations


def cpu_name() -> str:
    fields = {}
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields.setdefault(k.strip(), v.strip())
    avx = [fl for fl in fields.get("flags", "").split() if fl in ("avx2", "avx512f", "avx512_vnni", "avx_vnni")]
    return (f"{fields.get('model name')} (family {fields.get('cpu family')}, model {fields.get('model')}, "
            f"{' '.join(avx)})")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    model = sys.argv[1] if len(sys.argv) > 1 else "resnet18"
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    targets = sys.argv[4:] or ["host", "host-measured"]
    onnx_path, x, x_path = benchmark_input(model)
    for t in targets:
        nnscons_bench(t, model, 1, x_path)
    if shutil.which("taskset"):
        os.sched_setaffinity(0, {1})
    sess = ort_session(onnx_path, 1)
    res = {t: [] for t in targets + ["onnxruntime"]}
    for r in range(rounds):
        for t in targets:
            res[t].append(firmware_cpu_ms(root, t, model, iterations))
        res["onnxruntime"].append(ort_cpu_ms(sess, x, iterations))
        print(f"round {r + 1}: " + ", ".join(f"{t} {v[-1]:.2f}" for t, v in res.items()) + " ms CPU per inference")
    print(f"{model}, 1 thread, {rounds} paired rounds of {iterations} inferences; CPU: {cpu_name()}")
    ort = res["onnxruntime"]
    for t in targets:
        ratios = [a / b for a, b in zip(res[t], ort)]
        print(f"  {t:<16} {statistics.median(res[t]):8.2f} ms CPU  / onnxruntime {statistics.median(ratios):.3f} "
              f"(rounds {min(ratios):.3f}-{max(ratios):.3f})")
    print(f"  {'onnxruntime':<16} {statistics.median(ort):8.2f} ms CPU")
    if len(targets) == 2:
        ab = [a / b for a, b in zip(res[targets[1]], res[targets[0]])]
        print(f"  {targets[1]} / {targets[0]}: {statistics.median(ab):.3f} (rounds {min(ab):.3f}-{max(ab):.3f})")


if __name__ == "__main__":
    main()
