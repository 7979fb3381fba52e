"""The same network from .tflite (TFLite's arithmetic) and from ONNX (the QDQ rule), on the host.

    .venv/bin/python benchmarks/tflite_vs_onnx.py [model] [iterations] [rounds]

Builds the TFLite zoo model (default tfl_resnet8) for target=host with the firmware's
benchmark mode, then the very same network as ONNX: its own build/host/<model>/quantized.onnx
(the same weights, scales and layers as a QDQ graph) copied to build/bench-tflite/ and built
as an ad-hoc model (the ONNX rule: the double-precision epilogue, residual adds fused into
the convs).  Then `rounds` (default 7) paired rounds, each the TFLite firmware's benchmark
(N inferences, median) then the ONNX one's, and prints the medians and the median ratio.
"""
from __future__ import annotations

import glob
import os
import platform
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from host_latency import ROOT, firmware_median  # noqa: E402


def build(model, iterations):
    """Build, check and benchmark `model`, and write its quantized.onnx (a fresh build/ has
    none after the bench alias alone)."""
    cmd = [os.path.join(ROOT, "nnscons"), "-j2", "target=host", f"model={model}", "bench",
           f"iterations={iterations}", "quantized"]
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}")


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            info = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in f if ":" in line)}
        name = info.get("model name", platform.processor())
        return f"{name} (family {info.get('cpu family', '?')} model {info.get('model', '?')})"
    except OSError:
        return platform.processor()


def main():
    model = sys.argv[1] if len(sys.argv) > 1 else "tfl_resnet8"
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    build(model, iterations)
    onnx_dir = os.path.join(ROOT, "build", "bench-tflite")
    os.makedirs(onnx_dir, exist_ok=True)
    onnx_path = os.path.join(onnx_dir, f"{model}_onnx.onnx")
    shutil.copyfile(os.path.join(ROOT, "build", "host", model, "quantized.onnx"), onnx_path)
    build(os.path.relpath(onnx_path, ROOT), iterations)
    (onnx_build,) = glob.glob(os.path.join(ROOT, "build", "host", f"file-{model}_onnx-*"))
    onnx_model = os.path.relpath(onnx_build, os.path.join(ROOT, "build", "host"))
    pairs = []
    for _ in range(rounds):
        t = firmware_median("host", model, iterations)
        o = firmware_median("host", onnx_model, iterations)
        pairs.append((t, o))
    print(f"{model} on {cpu_name()}: {rounds} paired rounds of {iterations} inferences (1 thread), "
          f"medians over the rounds")
    print(f"{'from .tflite ms':>16}  {'from ONNX ms':>13}  {'tflite/onnx':>11}")
    print(f"{statistics.median(p[0] for p in pairs):>16.4f}  {statistics.median(p[1] for p in pairs):>13.4f}  "
          f"{statistics.median(p[0] / p[1] for p in pairs):>11.3f}")


if __name__ == "__main__":
    main()
