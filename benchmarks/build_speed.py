"""Cold planning + codegen of one model, with where the time goes.

A copy of the project's sources in a temporary folder, as a fresh clone after `./nnscons`'s
set-up (which compiles the project's modules into the venv, `nnscons-pycache`), no build/ in
it: each run is `scons -Q model=M codegen` from nothing (the zoo model generated, imported,
calibrated, planned, every layer's source rendered; no compiler runs but the host's
`choose: auto` timing programs, and the zoo model's file is not written: that is the MODEL
step's, which codegen does not need). Then the same runs with build/ empty but for the host's
variant caches (`choose: auto`'s timings of this CPU's kernels, a one-time measurement per
CPU and build tree): what a cold build costs on a machine that has built the model before.
The copy's
set-up bytecode is removed from the venv at the end; `--no-setup` leaves it out (every run
also compiles the ~150 modules it imports into build/.pycache).

    .venv/bin/python benchmarks/build_speed.py [model] [runs] [--against CHECKOUT] [--no-setup]

Prints the median wall time of `runs` plain runs, then one run's phases under cProfile
(cumulative seconds of the functions that do each phase; the profiler adds its own
overhead, so they sum to more than a plain run; a phase that runs work on another thread
counts what the main thread did beside it: the frontends' and the target kind's imports and
templates beside the zoo generator, its share of onnxruntime's passes) and one run's imports (python
-X importtime: the heaviest top-level packages).  --against CHECKOUT: another checkout (e.g. a `git
worktree` of main) copied the same way; each round runs both, one after the other, and the
ratio of each round is printed (a shared machine's load moves both alike), with the median
CPU time (user + sys) of each checkout's runs, which a loaded machine moves less than wall.
"""
import glob
import json
import os
import pstats
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCONS = os.path.join(os.path.dirname(sys.executable), "scons")
COPY = ("site_scons", "models", "templates", "kernels", "targets.yaml", "SConstruct")

# phase: (file suffix, function name) whose cumulative time is the phase's
PHASES = (
    ("zoo generator started ahead (imports + thread start)", "nnscons/planning/zoo_cache.py", "prefetch"),
    ("zoo model generated (+ frontends, kind imported beside it)", "nnscons/planning/zoo_cache.py", "materialize_async"),
    ("zoo model written (the MODEL step: not in codegen)", "nnscons/planning/zoo_cache.py", "write"),
    ("model import (read, walk, passes)", "nnscons/frontends/__init__.py", "load_model"),
    ("  of which calibration", "nnscons/frontends/ptq.py", "calibrate"),
    ("  of which onnx shape inference", "nnscons/frontends/onnx_graph.py", "_static_shapes"),
    ("model cache (key, load or import)", "nnscons/planning/model_cache.py", "load_graph"),
    ("session: import + target plan + keys", "nnscons/builders/graph/session.py", "__init__"),
    ("  of which choose: auto's kernel timings", "nnscons/targets/host/autochoice.py", "_timed"),
    ("  of which choose: auto's avx2u8 / avx2 timings", "nnscons/targets/host/measure.py", "time_variants"),
    ("manifest (targets.yaml, the kinds' schemas)", "nnscons/manifest.py", "load_manifest"),
    ("declare nodes", "nnscons/builders/graph/network.py", "declare"),
    ("codegen: render sources", "nnscons/builders/graph/actions.py", "render_source"),
)
HEAVY = ("numpy", "onnx", "onnxruntime", "jinja2", "yaml", "SCons.Script", "nnscons.builders.main",
         "nnscons.frontends", "nnscons.kernelgen", "matplotlib")


def _env():
    return dict(os.environ, PYTHONDONTWRITEBYTECODE="1")


CPU = []     # (checkout, user + sys seconds) of every plain run, in order


def _cold(cwd, cmd, timings=None):
    """One run from nothing: no build/, or (timings: a saved copy of build/) none but the host's
    variant caches (`choose: auto`'s kernel timings on this CPU, build/<target>/<model>/variants)."""
    shutil.rmtree(os.path.join(cwd, "build"), ignore_errors=True)
    if timings:
        shutil.copytree(timings, os.path.join(cwd, "build"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=_env(), check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append((cwd, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime))
    return wall


def _timings(cwd):
    """A copy of build/ holding only its host variant caches (None: the run timed nothing)."""
    found = glob.glob(os.path.join(cwd, "build", "*", "*", "variants", "*.json"))
    if not found:
        return None
    keep = tempfile.mkdtemp(prefix="build-timings-")
    for path in found:
        rel = os.path.relpath(path, os.path.join(cwd, "build"))
        os.makedirs(os.path.join(keep, os.path.dirname(rel)), exist_ok=True)
        shutil.copy(path, os.path.join(keep, rel))
    return keep


def _timed_count(keep) -> int:
    """Kernel timings (cache entries) in a copy made by _timings."""
    count = 0
    for path in glob.glob(os.path.join(keep, "*", "*", "variants", "*.json")):
        with open(path, encoding="utf-8") as f:
            count += len(json.load(f)["layers"])
    return count


def _phases(prof_path):
    stats = pstats.Stats(prof_path).stats
    out = []
    for label, suffix, func in PHASES:
        cum = sum(ct for (path, _, name), (_, _, _, ct, _) in stats.items()
                  if name == func and path.replace(os.sep, "/").endswith(suffix))
        out.append((label, cum))
    total = max(ct for (_, _, _, ct, _) in stats.values())
    return out, total


def _imports(text):
    """(seconds of every top-level import, {heavy package: seconds of its own first import})
    from -X importtime's cumulative column (a package is listed where it is first imported)."""
    total, heavy = 0.0, {}
    for line in text.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| ( *)(\S+)$", line)
        if not m:
            continue
        if not m.group(2):
            total += int(m.group(1)) / 1e6
        if m.group(3) in HEAVY:
            heavy[m.group(3)] = int(m.group(1)) / 1e6
    return total, heavy


def _copy(root, dest, setup):
    for name in COPY:
        src = os.path.join(root, name)
        (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(dest, name))
    if setup:       # what ./nnscons's set-up does for a clone
        subprocess.run([sys.executable, os.path.join(ROOT, "site_scons", "precompile.py"), dest],
                       check=True, stdout=subprocess.DEVNULL)


SETUP_PYC = os.path.join(sys.prefix, "nnscons-pycache")     # site_scons/precompile.py's


def _drop_setup(dest):
    shutil.rmtree(os.path.join(SETUP_PYC, os.path.abspath(dest).lstrip(os.sep)), ignore_errors=True)


def main():
    args = sys.argv[1:]
    against = None
    if "--against" in args:
        i = args.index("--against")
        against = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    setup = "--no-setup" not in args
    args = [a for a in args if a != "--no-setup"]
    model = args[0] if args else "resnet18"
    runs = int(args[1]) if len(args) > 1 else 3
    cmd = [SCONS, "-Q", f"model={model}", "codegen"]
    with tempfile.TemporaryDirectory() as cold, tempfile.TemporaryDirectory() as other:
        try:
            _measure(cold, other, against, setup, model, runs, cmd)
        finally:
            _drop_setup(cold)
            _drop_setup(other)


def _measure(cold, other, against, setup, model, runs, cmd):
    _copy(ROOT, cold, setup)
    if against:
        _copy(against, other, setup)
        pairs = [(_cold(other, cmd), _cold(cold, cmd)) for _ in range(runs)]
        base = [b for b, _ in pairs]
        times = [t for _, t in pairs]
        print(f"cold planning + codegen {model}, paired rounds (this checkout / {against}):")
        for b, t in pairs:
            print(f"  {t:.3f} s / {b:.3f} s = {t / b:.2f}")
        print(f"  medians {statistics.median(times):.3f} s / {statistics.median(base):.3f} s; "
              f"median ratio {statistics.median(t / b for b, t in pairs):.2f}")
        mine = [c for d, c in CPU if d == cold]
        theirs = [c for d, c in CPU if d == other]
        print(f"  CPU time (user + sys) medians {statistics.median(mine):.3f} s / "
              f"{statistics.median(theirs):.3f} s; median ratio "
              f"{statistics.median(m / o for m, o in zip(mine, theirs)):.2f}")
    else:
        times = [_cold(cold, cmd) for _ in range(runs)]
    # the same runs with this CPU's kernel timings kept from the last one: what every cold build
    # after the first on this machine pays (a one-time measurement, as `tune`)
    timings = _timings(cold)
    cached = [_cold(cold, cmd, timings) for _ in range(runs)] if timings else []
    prof = os.path.join(cold, "..", os.path.basename(cold) + ".prof")
    _cold(cold, [sys.executable, "-m", "cProfile", "-o", prof] + cmd)
    phases, total = _phases(prof)
    os.unlink(prof)
    shutil.rmtree(os.path.join(cold, "build"), ignore_errors=True)
    imp = subprocess.run([sys.executable, "-X", "importtime"] + cmd, cwd=cold, env=_env(), check=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True).stderr
    print(f"cold planning + codegen {model}{'' if setup else ' (no set-up bytecode)'}: median "
          f"{statistics.median(times):.3f} s ({', '.join(f'{t:.3f}' for t in times)}); CPU time "
          f"(user + sys) median {statistics.median(c for d, c in CPU[:len(CPU) - 1] if d == cold):.3f} s; "
          f"load average {os.getloadavg()[0]:.1f}")
    if cached:
        print(f"  the same with this CPU's kernel timings cached ({_timed_count(timings)} timed by `choose: auto` "
              f"from nothing; build/ otherwise empty): median {statistics.median(cached):.3f} s "
              f"({', '.join(f'{t:.3f}' for t in cached)})")
        shutil.rmtree(timings, ignore_errors=True)
    print(f"one run under cProfile: {total:.3f} s")
    for label, cum in phases:
        print(f"  {label:<40} {cum:6.3f} s")
    total, heavy = _imports(imp)
    print(f"imports (-X importtime, one run): {total:.3f} s, of which (each where first imported):")
    for name in sorted(heavy, key=heavy.get, reverse=True):
        print(f"  {name:<40} {heavy[name]:6.3f} s")


if __name__ == "__main__":
    main()
