"""nnscons on the host target against onnxruntime, same quantized.onnx, same input, one run.

    .venv/bin/python benchmarks/host_latency.py [model] [iterations] [rounds] [targets]

targets: comma-separated, default host,host-measured,host-2t (host-measured: 1 thread, each
layer's kernel variant chosen by timing every variant on this CPU, `kernel: {choose: measure}`).

    .venv/bin/python benchmarks/host_latency.py --cpu=avx2 [model] [iterations] [rounds] [targets]

runs both sides as on an AVX2-only x86-64 (benchmarks/cpu_mask.py: patched copies of the
firmware and of onnxruntime's libraries see CPUID without AVX-512/AVX-VNNI; each side's AVX2
kernels at this core's speed; the build itself runs under the mask, so what it times to
choose a kernel is the AVX2-only CPU's) and prints the variants the firmware ran.

Builds `model` (default resnet18) for target=host (1 thread) and host-2t (2 threads)
with the firmware's benchmark mode (`bench iterations=N`: N inferences after a warm-up,
median), and times onnxruntime on build/host/<model>/quantized.onnx with 1 and 2 intra-op
threads on the same float input (N runs after a warm-up, median).  Then, per thread count,
`rounds` (default 5) paired rounds: the firmware's benchmark mode (N inferences, median),
then onnxruntime (N runs, median), so that a machine whose speed drifts (other work on
shared cores) slows both sides of a pair alike.  Prints, per thread count, the median over
the rounds of each side's medians, the median of the rounds' ratios nnscons / onnxruntime and
the least and greatest of those ratios.
"""
from __future__ import annotations

import collections
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_mask  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def nnscons_bench(target, model, iterations, x_path, masked=False):
    """Build, check and bench; masked: the build under the CPU mask too (its planning reads a
    /proc/cpuinfo without AVX-512, so the kernels it times to choose are an AVX2-only CPU's)."""
    cmd = [os.path.join(ROOT, "nnscons"), "-j2", f"target={target}", f"model={model}", f"input={x_path}",
           "bench", f"iterations={iterations}"]
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=cpu_mask.env() if masked else None)
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}")
    with open(os.path.join(ROOT, "build", target, model, "bench.json"), encoding="utf-8") as f:
        return json.load(f)["median_ms"]


def firmware(target, model, masked):
    """(program, env) running the built firmware: a patched copy under the CPU mask, or itself."""
    prog = os.path.join(ROOT, "build", target, model, "firmware")
    if not masked:
        return prog, None
    return cpu_mask.masked_copy(prog, f"{target}-{model}-firmware"), cpu_mask.env()


def firmware_median(target, model, iterations, masked=False):
    """One more run of the built firmware's benchmark mode: its whole-inference median."""
    b = os.path.join(ROOT, "build", target, model)
    prog, env = firmware(target, model, masked)
    proc = subprocess.run([prog, os.path.join(b, "bin"), os.path.join(b, "bench_output.bin"), str(iterations)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=True, env=env)
    return float(next(l for l in proc.stdout.splitlines() if l.startswith("bench total")).split()[-1])


def firmware_variants(target, model, masked):
    """{variant: layers} the firmware's dispatch ran (its benchmark mode's warm-up prints one
    `bench variant` line per layer that has variants)."""
    b = os.path.join(ROOT, "build", target, model)
    prog, env = firmware(target, model, masked)
    proc = subprocess.run([prog, os.path.join(b, "bin"), os.path.join(b, "bench_output.bin"), "1"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=True, env=env)
    ran = collections.Counter(l.split()[4] for l in proc.stdout.splitlines() if l.startswith("bench variant "))
    if not ran:
        sys.exit(f"{prog}: its benchmark mode named no layer's kernel variant:\n{proc.stdout[-2000:]}")
    return ran


class MaskedOrt:
    """onnxruntime in a worker process under the CPU mask (its AVX2 kernels): one session,
    asked for N timed runs at a time, so rounds pair with the firmware's as in-process ones do."""

    def __init__(self, onnx_path, x_path, threads):
        self.report = os.path.join(cpu_mask.OUT, f"ort-{os.getpid()}.report")
        if os.path.exists(self.report):
            os.remove(self.report)
        env = cpu_mask.env(self.report)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [cpu_mask.masked_onnxruntime(), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--ort-worker", onnx_path, x_path,
                                      str(threads)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def median(self, iterations):
        self.proc.stdin.write(f"{iterations}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            sys.exit("the masked onnxruntime worker stopped (see its error above)")
        return float(line)

    def close(self):
        """Ends the worker; checks that its patched libraries' CPUID questions were answered."""
        self.proc.stdin.close()
        self.proc.wait()
        counts = cpu_mask.emulated(self.report).get(self.proc.pid, (0, 0))
        if not counts[0]:
            sys.exit("the masked onnxruntime asked no CPUID question through the mask: its figures "
                     "would be the unmasked CPU's")
        return counts


def ort_worker(onnx_path, x_path, threads):
    sess = ort_session(onnx_path, threads)
    x = np.load(x_path)
    for line in sys.stdin:
        print(f"{ort_median(onnx_path, x, threads, int(line), sess):.6f}", flush=True)


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
    if sys.argv[1:2] == ["--ort-worker"]:
        return ort_worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    args = [a for a in sys.argv[1:] if not a.startswith("--cpu=")]
    cpu = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--cpu=")), None)
    if cpu not in (None, "avx2"):
        sys.exit(f"--cpu={cpu}: the one mask there is is --cpu=avx2 (an AVX2-only x86-64)")
    masked = cpu == "avx2"
    model = args[0] if len(args) > 0 else "resnet18"
    iterations = int(args[1]) if len(args) > 1 else 20
    rounds = int(args[2]) if len(args) > 2 else 5
    onnx_path, x, x_path = benchmark_input(model)
    rows = []
    wanted = args[3].split(",") if len(args) > 3 else list(TARGETS)
    for target in wanted:
        threads = TARGETS.get(target, 1)
        nnscons_bench(target, model, iterations, x_path, masked)      # build, check, bench.json
        if masked:
            ran = firmware_variants(target, model, masked)
            print(f"{target} under the AVX2-only mask ran: " + ", ".join(f"{v} x{n}" for v, n in sorted(ran.items())))
            if any("512" in v or "vnni" in v for v in ran):
                sys.exit("the masked firmware still ran an AVX-512 or VNNI variant: the mask did not hold")
            ort = MaskedOrt(onnx_path, x_path, threads)
            ort_ms = ort.median
        else:
            sess = ort_session(onnx_path, threads)
            ort_ms = lambda n, sess=sess, threads=threads: ort_median(onnx_path, x, threads, n, sess)  # noqa: E731
        pairs = []
        for _ in range(rounds):
            nn = firmware_median(target, model, iterations, masked)
            pairs.append((nn, ort_ms(iterations)))
        if masked:
            print(f"onnxruntime under the mask: {ort.close()[0]} CPUID questions answered without AVX-512/AVX-VNNI")
        ratios = [p[0] / p[1] for p in pairs]
        rows.append((target, threads, statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs),
                     statistics.median(ratios), min(ratios), max(ratios)))
    print(f"{model}, {rounds} paired rounds of {iterations} iterations after a warm-up (same quantized.onnx "
          f"and input{'; both sides as on an AVX2-only CPU, benchmarks/cpu_mask.py' if masked else ''}); "
          f"medians over the rounds:")
    print(f"{'target':<14} {'threads':>7}  {'nnscons ms':>10}  {'onnxruntime ms':>14}  {'nnscons/ort':>11}  rounds' ratios")
    for target, threads, nn, ort_ms, ratio, lo, hi in rows:
        print(f"{target:<14} {threads:>7}  {nn:>10.2f}  {ort_ms:>14.2f}  {ratio:>11.2f}  {lo:.2f}-{hi:.2f}")


if __name__ == "__main__":
    main()
