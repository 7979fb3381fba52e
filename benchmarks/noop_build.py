"""Time a no-op `scons` call (planning + up-to-date check) for a model; prints the median.

    .venv/bin/python benchmarks/noop_build.py [model] [runs]
"""
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCONS = os.path.join(os.path.dirname(sys.executable), "scons")


def main():
    model = sys.argv[1] if len(sys.argv) > 1 else "resnet18"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    subprocess.run([SCONS, "-Q", f"model={model}"], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = subprocess.run([SCONS, "-Q", f"model={model}"], cwd=ROOT, env=env, check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        times.append(time.perf_counter() - t0)
        assert "[host]" not in out, f"not a no-op build:\n{out}"
    print(f"no-op scons model={model}: median {statistics.median(times):.3f} s over {runs} runs "
          f"(min {min(times):.3f}, max {max(times):.3f})")


if __name__ == "__main__":
    main()
