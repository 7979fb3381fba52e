"""Int8 .tflite files from the field through nnscons, against LiteRT's reference kernels.

    .venv/bin/python benchmarks/tflite_vs_litert.py DIR_OR_FILES... [--targets host,arm64,...]

For every .tflite file given (a folder is searched recursively): one random input in the
model's own type and layout (int8/uint8 codes, or float32 for a model that starts with
QUANTIZE), `./nnscons target=T model=FILE input=x.npy` on each target, then the build's
output.npy against LiteRT's output on the same input (BUILTIN_REF kernels, dequantized
as output.npy is).  Prints one line per model and target: the build's verdict, the share
of output elements equal to LiteRT's and within 1 LSB, the largest difference in LSB.
Float-only and dynamic-range models are reported with nnscons's own error message.
Exits 1 when a supported model does not build or its host output is not bit for bit.
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from litert_oracle import HAVE_LITERT, SKIP_REASON, make_interpreter, run_litert  # noqa: E402


def model_files(paths):
    for p in paths:
        if os.path.isdir(p):
            yield from sorted(glob.glob(os.path.join(p, "**", "*.tflite"), recursive=True))
        else:
            yield p


def random_input(path, rng):
    d = make_interpreter(path).get_input_details()[0]
    if d["dtype"] == np.float32:
        return rng.standard_normal(d["shape"]).astype(np.float32)
    info = np.iinfo(d["dtype"])
    return rng.integers(info.min, info.max + 1, d["shape"]).astype(d["dtype"])


def litert_output(path, x):
    (out,), _ = run_litert(path, [x])
    if out.dtype == np.float32:
        return out
    scale, zp = make_interpreter(path).get_output_details()[0]["quantization"]
    return ((out.astype(np.int32) - zp) * np.float32(scale)).astype(np.float32), scale


def run_one(path, target, x, work):
    """(verdict line, output.npy or None, error text or None)."""
    np.save(os.path.join(work, "x.npy"), x)
    proc = subprocess.run([os.path.join(ROOT, "nnscons"), f"target={target}", f"model={path}",
                           f"input={os.path.join(work, 'x.npy')}"], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = proc.stdout.splitlines()
    verdict = next((l for l in lines if l.startswith(("Test PASSED", "Test FAILED", "PLAN FAILED"))), None)
    if proc.returncode or verdict is None or not verdict.startswith("Test PASSED"):
        err = next((l for l in lines if "error:" in l or "FAILED" in l), lines[-1] if lines else "")
        return verdict, None, err
    stem = os.path.splitext(os.path.basename(path))[0]
    outs = glob.glob(os.path.join(ROOT, "build", target, f"file-{stem}-*", "**", "output.npy"), recursive=True)
    newest = max(outs, key=os.path.getmtime) if outs else None
    return verdict, newest and np.load(newest), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--targets", default="host")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not HAVE_LITERT:
        sys.exit(SKIP_REASON)
    rng = np.random.default_rng(args.seed)
    bad = 0
    with tempfile.TemporaryDirectory() as work:
        for src in model_files(args.paths):
            path = os.path.join(work, os.path.basename(src))
            shutil.copy(src, path)
            x = random_input(path, rng)
            want = litert_output(path, x)
            want, lsb = want if isinstance(want, tuple) else (want, None)
            for target in args.targets.split(","):
                _, out, err = run_one(path, target, x, work)
                name = f"{os.path.basename(src)[:40]:40s} {target:10s}"
                if out is None:
                    print(f"{name} not built: {err}")
                    bad += target == "host" and "not supported" not in (err or "")
                    continue
                d = np.abs(out.astype(np.float64).reshape(-1) - want.astype(np.float64).reshape(-1))
                steps = d / lsb if lsb else d
                exact, within = float((d == 0).mean()), float((steps <= 1 + 1e-9).mean())
                print(f"{name} PASSED  equal {100 * exact:6.2f}%  within 1 LSB {100 * within:6.2f}%  "
                      f"max {steps.max():.3g} {'LSB' if lsb else '(float)'}")
                bad += target == "host" and exact < 1.0
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
