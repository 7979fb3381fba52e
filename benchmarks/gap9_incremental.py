"""GAP9 edit-build-run loop for resnet18: cold build, no-op build, one-layer l1_budget edit.

Runs in a scratch copy of the project (nothing in the work tree changes):

    .venv/bin/python benchmarks/gap9_incremental.py [platform] [runs] [input_hw]

platform: emul (default) | qemu | gvsoc; runs: no-op repetitions (median printed);
input_hw: 224 (default) or smaller for a quick look.
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCONS = os.path.join(os.path.dirname(sys.executable), "scons")
STEP = re.compile(r"^([A-Z][A-Z0-9_]*) (.+) \[gap9\]$")
LAYER = "layer3.0.conv2"


def scons(cwd, *args):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    t0 = time.perf_counter()
    proc = subprocess.run([SCONS, "-Q", "target=gap9", "model=resnet18", *args], cwd=cwd, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"scons failed:\n{proc.stdout[-3000:]}")
    return elapsed, [f"{m.group(1)} {m.group(2)}" for m in map(STEP.match, proc.stdout.splitlines()) if m]


def main():
    platform = sys.argv[1] if len(sys.argv) > 1 else "emul"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    hw = int(sys.argv[3]) if len(sys.argv) > 3 else 224
    with tempfile.TemporaryDirectory() as tmp:
        proj = os.path.join(tmp, "proj")
        skip = shutil.ignore_patterns(".git", ".venv", "__pycache__")

        def ignore(d, names):  # only the top-level build/: site_scons/nnscons/builders is code
            return set(skip(d, names)) | ({"build"} if os.path.abspath(d) == ROOT else set())
        shutil.copytree(ROOT, proj, ignore=ignore)
        manifest = os.path.join(proj, "targets.yaml")
        text = open(manifest).read()
        text = text.replace("    input_shape: [1, 3, 224, 224]", f"    input_shape: [1, 3, {hw}, {hw}]")
        open(manifest, "w").write(text)
        args = [f"platform={platform}", "-j2"]
        cold, _ = scons(proj, *args)
        noop = [scons(proj, *args)[0] for _ in range(runs)]
        # one layer's l1_budget, as a user edits it in targets.yaml
        open(manifest, "a").write(f"\n    targets:\n      gap9:\n        layers:\n          {LAYER}: {{l1_budget: 48KiB}}\n")
        edit, rebuilt = scons(proj, *args)
    print(f"resnet18 {hw}x{hw} on gap9 platform={platform} (2 jobs)")
    print(f"  cold build (model import, codegen, compile, weights, goldens, run, check): {cold:.2f} s")
    print(f"  no-op build: median {statistics.median(noop):.3f} s over {runs} runs "
          f"(min {min(noop):.3f}, max {max(noop):.3f})")
    print(f"  after editing {LAYER}'s l1_budget: {edit:.2f} s, {len(rebuilt)} nodes rebuilt:")
    for step in rebuilt:
        print(f"    {step}")


if __name__ == "__main__":
    main()
