"""`./nnscons -j2`: the build steps run on SCons' worker threads and import modules on first
use. Before builders.main.import_packages_before_threads, two steps importing
export/ort_oracle (the consistency check) and the frontends package at once failed with
`cannot import name 'OnnxWalker' from partially initialized module` (a package's __init__
importing its submodules while the other thread holds a submodule's lock). After it, any
mix of step-time imports on threads completes; each trial is a fresh interpreter."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TRIAL = r"""
import importlib, sys, threading
import nnscons.builders.main as main
import nnscons.targets.host                      # the planning imports the build's kind
{preload}
errors = []
def load(name):
    try:
        importlib.import_module(name)
    except Exception as e:                       # the failure this test is about
        errors.append(f"{{name}}: {{type(e).__name__}}: {{e}}")
names = {names!r}
threads = [threading.Thread(target=load, args=(n,)) for n in names]
for t in threads: t.start()
for t in threads: t.join()
print("\n".join(errors) or "ok")
"""

# this order failed about every second trial without the preload
STEP_IMPORTS = ["nnscons.frontends", "nnscons.export.ort_oracle", "nnscons.frontends.tflite_graph",
                "nnscons.passes.lower", "nnscons.reference.tflite_kernels",
                "nnscons.builders.reports.consistency", "nnscons.frontends.onnx_graph"]


def _trial(preload: bool) -> str:
    code = TRIAL.format(preload="main.import_packages_before_threads()" if preload else "",
                        names=STEP_IMPORTS)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"), PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_step_imports_on_threads_complete_after_the_packages_are_imported():
    for _ in range(6):
        assert _trial(preload=True) == "ok"


def test_every_package_but_the_target_kinds_is_imported():
    code = ("import sys, nnscons.builders.main as m; m.import_packages_before_threads(); "
            "print(' '.join(sorted(n for n in sys.modules if n.startswith('nnscons'))))")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"), PYTHONDONTWRITEBYTECODE="1")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                env=env, check=True, timeout=120).stdout.split())
    pkg = os.path.join(ROOT, "site_scons", "nnscons")
    for folder, dirs, files in os.walk(pkg):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        rel = os.path.relpath(folder, os.path.dirname(pkg)).replace(os.sep, ".")
        if "__init__.py" in files and not rel.startswith("nnscons.targets"):
            assert rel in loaded, f"{rel} not imported before the steps' threads start"
