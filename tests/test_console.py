"""What a user sees on the console: through ./nnscons as the README runs it, one line per
step that ran (each once), then the table and the verdict, nothing of SCons's own unless
verbose=1."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections import Counter

import pytest

from conftest import ROOT, steps


def nnscons(project, *args):
    """./nnscons in the project copy, on this test run's virtual environment."""
    stamp = os.path.join(sys.prefix, ".requirements.sha256")
    with open(os.path.join(ROOT, "requirements.txt"), "rb") as f:
        want = hashlib.sha256(f.read()).hexdigest()
    if not os.path.isfile(stamp) or open(stamp).read().strip() != want:
        pytest.skip(f"{sys.prefix} is not the bootstrap's venv for this requirements.txt (./nnscons would "
                    f"reinstall it)")
    if not os.path.exists(project.file(".venv")):
        os.symlink(sys.prefix, project.file(".venv"))
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([project.file("nnscons"), *args], cwd=project.path, env=env, timeout=900,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _check_console(out: str, model: str, target: str) -> list:
    """The shape every build's console has; returns its step lines."""
    lines = out.splitlines()
    assert not [l for l in lines if l.startswith("scons:")], out
    assert "Building compilation database" not in out, out
    got = steps(out)
    twice = [s for s, n in Counter(got).items() if n > 1]
    assert not twice, f"printed more than once: {twice}\n{out}"
    assert lines[-1].startswith(f"Test PASSED [{target}] {model}"), out   # the verdict comes last
    return got


@pytest.mark.slow   # 16.1 s of CPU
def test_one_layer_rebuild_prints_the_steps_that_ran_then_the_verdict(project):
    first = nnscons(project, "target=host", "model=simplecnn")
    got = _check_console(first, "simplecnn", "host")
    assert "MODEL simplecnn" in got and os.path.isfile(project.file("build/host/simplecnn/compile_commands.json"))
    assert got.index("MODEL simplecnn") < got.index("CHECK simplecnn")

    # nothing changed: the verdict alone
    assert nnscons(project, "target=host", "model=simplecnn").splitlines() == [first.splitlines()[-1]]

    text = project.read("targets.yaml")
    project.write("targets.yaml", text.replace("conv1: {l1_budget: 8KiB}", "conv1: {l1_budget: 4KiB}"))
    out = nnscons(project, "target=host", "model=simplecnn", "-j2")
    assert _check_console(out, "simplecnn", "host") == [
        "CODEGEN conv1", "CC conv1", "AR libnns_simplecnn.a", "LINK firmware", "RUN simplecnn",
        "REPORT simplecnn", "CHECK simplecnn"]
    lines = out.splitlines()
    assert lines[:7] == [f"{s} [host]" for s in steps(out)]     # the steps first, then table and verdict
    assert lines[7].startswith("#  layer")

    # verbose=1: SCons's own lines are back
    text = project.read("targets.yaml")
    project.write("targets.yaml", text.replace("conv1: {l1_budget: 4KiB}", "conv1: {l1_budget: 8KiB}"))
    out = nnscons(project, "target=host", "model=simplecnn", "verbose=1")
    assert "scons: Reading SConscript files" in out and "is up to date." in out
    assert "Building compilation database" in out


def test_gap9_library_files_of_each_platform_are_named_once(project):
    out = nnscons(project, "target=gap9", "model=simplecnn", "platform=emul")
    got = _check_console(out, "simplecnn", "gap9")
    cmake = sorted(s for s in got if s.endswith(".cmake"))
    assert len(cmake) > 1 and all(s.startswith("CODEGEN ") and s.endswith("/lib/nns_simplecnn.cmake")
                                  for s in cmake), cmake
