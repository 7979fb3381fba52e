"""A verdict the tool prints is never stale; build folders belong to one model each; builds
of different targets do not disturb each other; outputs get the modes a user expects."""
from __future__ import annotations

import json
import os
import stat
import subprocess

from conftest import SCONS, adhoc, steps

B = "build/host/simplecnn"


_POOL = "kernels/common/nn_hwc_pool.c"          # the host's max pooling too
_MAX = "o[i] = px[i] > o[i] ? px[i] : o[i];"


def test_a_failed_check_never_leaves_a_passing_report(prebuilt):
    project, first = prebuilt("target=host", "model=simplecnn")
    assert "Test PASSED [host] simplecnn" in first.stdout
    assert "#  layer" in first.stdout                      # the table, with a fresh report
    assert json.loads(project.read(f"{B}/report.json"))["passed"] is True

    # a no-op build still prints its verdict (from the report), but not the table again:
    # SCons's full path first (the copy's folder is new to the no-op record), then the record's
    for _ in range(2):
        again = project.scons("model=simplecnn")
        assert steps(again.stdout) == [] and "Test PASSED [host] simplecnn" in again.stdout
        assert "#  layer" not in again.stdout

    # a kernel bug (max pooling takes the minimum): pool1 is wrong (a damaged built file would
    # be rebuilt, builders/graph/damaged.py: the bug is in a source)
    kernel = project.read(_POOL)
    project.write(_POOL, kernel.replace(_MAX, _MAX.replace(">", "<")))
    for _ in range(2):       # the failure is the verdict of every build until fixed
        proc = project.scons("model=simplecnn", check=False)
        assert proc.returncode != 0
        assert "CHECK FAILED [host] simplecnn: first wrong layer #1 'pool1'" in proc.stdout
        assert "Test PASSED" not in proc.stdout
        report = json.loads(project.read(f"{B}/report.json"))
        assert report["passed"] is False and report["first_wrong_layer"] == "pool1"
        assert report["layers"][1]["status"] == "mismatch"
        assert not os.path.exists(project.file(f"{B}/check.txt"))

    project.write(_POOL, kernel)                          # the kernel is fixed: passes again
    assert "Test PASSED [host] simplecnn" in project.scons("model=simplecnn").stdout
    assert json.loads(project.read(f"{B}/report.json"))["passed"] is True


def test_a_run_that_does_not_finish_leaves_no_verdict(prebuilt):
    project, _ = prebuilt("target=host", "model=simplecnn")
    # a program that dies before printing its verdict (a trap in a kernel): the run node fails
    kernel = project.read(_POOL)
    project.write(_POOL, kernel.replace(_MAX, "__builtin_trap();\n" + _MAX))
    proc = project.scons("model=simplecnn", check=False)
    assert proc.returncode != 0 and "Test PASSED" not in proc.stdout
    for rel in ("report.json", "check.txt"):
        path = project.file(f"{B}/{rel}")
        assert not os.path.exists(path) or not json.loads(open(path).read()).get("passed"), rel


def test_an_adhoc_model_gets_its_own_folder_and_stale_files_go(prebuilt):
    project, _ = prebuilt("target=host", "model=simplecnn")
    manifest_files = sorted(os.listdir(project.file(f"{B}/bin/golden")))
    project.write("elsewhere/simplecnn.onnx", project.read(f"{B}/model.onnx", "rb"))
    assert "Test PASSED" in project.scons("model=elsewhere/simplecnn.onnx").stdout
    folder = adhoc(project, "host", "simplecnn")
    assert folder != B and os.path.isfile(project.file(f"{folder}/report.json"))
    assert sorted(os.listdir(project.file(f"{B}/bin/golden"))) == manifest_files

    # per-layer files that belong to no current layer are removed; others stay
    project.write(f"{B}/bin/golden/ghost.bin", b"x")
    project.write(f"{B}/src/layers/ghost.c", "int ghost;\n")
    project.write(f"{B}/notes.txt", "mine")
    project.scons("model=simplecnn")
    assert not os.path.exists(project.file(f"{B}/bin/golden/ghost.bin"))
    assert not os.path.exists(project.file(f"{B}/src/layers/ghost.c"))
    assert project.read(f"{B}/notes.txt") == "mine"


def test_builds_of_different_targets_at_once_keep_their_signatures(prebuilt):
    # gap9's first build is the shared one; the host's first build is this project's own
    project, _ = prebuilt("target=gap9", "model=simplecnn", "platform=emul", "-j2")
    project.scons("target=host", "model=simplecnn")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    # both edited so that both rebuild, concurrently, in two processes
    text = project.read("targets.yaml")
    project.write("targets.yaml", text.replace("conv1: {l1_budget: 8KiB}", "conv1: {l1_budget: 7KiB}"))
    procs = [subprocess.Popen([SCONS, "-Q", f"target={t}", "model=simplecnn", *extra], cwd=project.path,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for t, extra in (("host", []), ("gap9", ["platform=emul"]), ("host", []))]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert steps(project.scons("target=host", "model=simplecnn").stdout) == []
    assert steps(project.scons("target=gap9", "model=simplecnn", "platform=emul").stdout) == []
    # one signature database per target folder, none elsewhere (sources included)
    assert os.path.isfile(project.file("build/host/.sconsign.dblite"))
    assert os.path.isfile(project.file("build/gap9/.sconsign.dblite"))
    assert not os.path.exists(project.file("build/.sconsign.dblite"))
    for dirpath, _, files in os.walk(project.path):
        if not os.path.relpath(dirpath, project.path).startswith("build"):
            assert not [f for f in files if f.startswith(".sconsign")], dirpath


def test_generated_files_have_the_usual_modes(project):
    old = os.umask(0o022)
    try:
        project.scons("model=simplecnn")
    finally:
        os.umask(old)
    mode = lambda rel: stat.S_IMODE(os.stat(project.file(rel)).st_mode)  # noqa: E731
    for rel in ("src/layers/conv1.c", "report.json", "check.txt", "run.log", "output.npy",
                "quantized.onnx"):
        assert mode(f"{B}/{rel}") == 0o644, rel
    weights = os.listdir(project.file(f"{B}/bin/weights"))[0]
    assert mode(f"{B}/bin/weights/{weights}") == 0o644
    assert mode(f"{B}/firmware") == 0o755
