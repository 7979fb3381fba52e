"""The build tool's own speed, against SCons itself, measured in the same run:

  * an empty SConstruct (SCons's own floor),
  * a no-op `scons model=M` (planning + up-to-date check of every per-layer node),
  * a no-op 2 x 3 matrix (target=host,gap9 model=simplecnn,resnet18,mobilenetv1),
  * cold planning + codegen of M (no build/ folder: zoo model, import, PTQ, plan, render).

    .venv/bin/python benchmarks/noop_build.py [model] [runs]

Prints medians and the ratios to the empty SConstruct.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCONS = os.path.join(os.path.dirname(sys.executable), "scons")
MATRIX = ("target=host,gap9", "model=simplecnn,resnet18,mobilenetv1", "platform=emul")


def timed(cmd, cwd, runs, check_noop=True, before=None):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    times = []
    for _ in range(runs):
        if before:
            before()
        t0 = time.perf_counter()
        out = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True).stdout
        times.append(time.perf_counter() - t0)
        if check_noop:
            assert not any(line.endswith("]") and line.split()[0].isupper() for line in out.splitlines()
                           if not line.startswith(("Test PASSED", "CHECK FAILED", "target", "matrix"))), out
    return statistics.median(times)


def main():
    model = sys.argv[1] if len(sys.argv) > 1 else "resnet18"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as cold:
        open(os.path.join(empty, "SConstruct"), "w").close()
        subprocess.run([SCONS, "-Q", f"model={model}"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([SCONS, "-Q", "-k", *MATRIX], cwd=ROOT, stdout=subprocess.DEVNULL)
        t_empty = timed([SCONS, "-Q"], empty, runs)
        t_noop = timed([SCONS, "-Q", f"model={model}"], ROOT, runs)
        t_matrix = timed([SCONS, "-Q", "-k", *MATRIX], ROOT, runs)
        for name in ("site_scons", "models", "templates", "kernels", "targets.yaml", "SConstruct"):
            src = os.path.join(ROOT, name)
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(cold, name))
        t_cold = timed([SCONS, "-Q", f"model={model}", "codegen"], cold, max(1, runs // 2), check_noop=False,
                       before=lambda: shutil.rmtree(os.path.join(cold, "build"), ignore_errors=True))
    print(f"empty SConstruct:               median {t_empty:.3f} s")
    print(f"no-op model={model}:        median {t_noop:.3f} s  ({t_noop / t_empty:.1f}x the empty SConstruct)")
    print(f"no-op 2 x 3 matrix:             median {t_matrix:.3f} s  ({t_matrix / t_empty:.1f}x)")
    print(f"cold planning + codegen {model}: median {t_cold:.3f} s")


if __name__ == "__main__":
    main()
