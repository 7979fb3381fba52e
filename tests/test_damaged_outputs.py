"""A built file damaged or edited after its step wrote it is rebuilt, never trusted
(builders/graph/damaged.py); every file a run writes is a declared target (cached and cleaned)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import ROOT, Project, _ignore, steps

OUT = "build/host/simplecnn"


def _truncate(project, rel, size=10):
    with open(project.file(rel), "r+b") as f:
        f.truncate(size)


def test_damaged_outputs_are_rebuilt_by_their_step(prebuilt):
    project, first = prebuilt("target=host", "model=simplecnn")
    assert "Test PASSED [host] simplecnn" in first.stdout
    good = {rel: project.read(f"{OUT}/{rel}", "rb")
            for rel in ("output.npy", "output.bin", "lib/libnns_simplecnn.a", "report.json")}

    # a run log cut short: RUN again, not a failed check on every later build
    _truncate(project, f"{OUT}/run.log")
    proc = project.scons("model=simplecnn")
    assert "RUN simplecnn" in steps(proc.stdout), proc.stdout
    assert "Test PASSED [host] simplecnn" in proc.stdout
    assert f"{OUT}/run.log changed since it was built" in proc.stdout
    assert "Test PASSED" in project.read(f"{OUT}/run.log")

    # an output.npy that does not load: RUN again (no step reads it, yet it is rebuilt)
    _truncate(project, f"{OUT}/output.npy")
    proc = project.scons("model=simplecnn")
    assert "RUN simplecnn" in steps(proc.stdout), proc.stdout
    assert project.read(f"{OUT}/output.npy", "rb") == good["output.npy"]
    np.load(project.file(f"{OUT}/output.npy"))

    # output.bin is the run's too
    _truncate(project, f"{OUT}/output.bin", 3)
    proc = project.scons("model=simplecnn")
    assert "RUN simplecnn" in steps(proc.stdout), proc.stdout
    assert project.read(f"{OUT}/output.bin", "rb") == good["output.bin"]

    # an archive `ar t` rejects: AR again, then LINK passes
    _truncate(project, f"{OUT}/lib/libnns_simplecnn.a")
    proc = project.scons("model=simplecnn")
    assert "AR libnns_simplecnn.a" in steps(proc.stdout), proc.stdout
    assert "Test PASSED [host] simplecnn" in proc.stdout
    assert project.read(f"{OUT}/lib/libnns_simplecnn.a", "rb") == good["lib/libnns_simplecnn.a"]
    if shutil.which("ar"):
        subprocess.run(["ar", "t", project.file(f"{OUT}/lib/libnns_simplecnn.a")], check=True,
                       capture_output=True)

    # a report edited to another verdict: REPORT again from the run log
    rep = json.loads(project.read(f"{OUT}/report.json"))
    rep["passed"] = False
    project.write(f"{OUT}/report.json", json.dumps(rep, indent=2, sort_keys=True) + "\n")
    proc = project.scons("model=simplecnn")
    assert "REPORT simplecnn" in steps(proc.stdout), proc.stdout
    assert "Test PASSED [host] simplecnn" in proc.stdout and proc.returncode == 0
    assert json.loads(project.read(f"{OUT}/report.json"))["passed"] is True

    # and a build with nothing damaged runs nothing, on the full path as well (no record)
    shutil.rmtree(project.file("build/.noop"))
    proc = project.scons("model=simplecnn")
    assert steps(proc.stdout) == [], proc.stdout
    assert "changed since it was built" not in proc.stdout


def test_output_bin_is_cleaned(prebuilt):
    project, _ = prebuilt("target=host", "model=simplecnn")
    assert os.path.isfile(project.file(f"{OUT}/output.bin"))
    project.scons("model=simplecnn", "-c")
    assert not os.path.exists(project.file(f"{OUT}/output.bin"))


def _entry(cache, data: bytes) -> str:
    """The cache entry holding data (found by its content)."""
    found = [os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs
             if not f.endswith(".sha256") and f != "config" and open(os.path.join(d, f), "rb").read() == data]
    assert found, "no cache entry with these bytes"
    return found[0]


@pytest.mark.slow   # a cold build into a cache, then rebuilds from it: 15.8 s of CPU
def test_corrupt_cache_entries_of_a_run_do_not_survive_a_rebuild(project, tmp_path):
    cache = str(tmp_path / "c")
    project.scons("model=simplecnn", f"cache={cache}")
    good = {rel: project.read(f"{OUT}/{rel}", "rb") for rel in ("run.log", "output.npy", "output.bin")}
    entries = {rel: _entry(cache, data) for rel, data in good.items()}
    for rel in ("run.log", "output.npy"):           # both entries of the run's step corrupt
        with open(entries[rel], "r+b") as f:
            f.truncate(7)
    other = Project(tmp_path / "second" / "proj")
    shutil.copytree(ROOT, other.path, ignore=_ignore)
    proc = other.scons("model=simplecnn", f"cache={cache}")
    assert "RUN simplecnn" in steps(proc.stdout), proc.stdout
    assert "Test PASSED [host] simplecnn" in proc.stdout
    for rel, data in good.items():
        assert other.read(f"{OUT}/{rel}", "rb") == data, rel
        assert open(entries[rel], "rb").read() == data, f"the cache entry of {rel} is still corrupt"
    # a third checkout retrieves the whole run, output.bin included, and runs nothing
    third = Project(tmp_path / "third" / "proj")
    shutil.copytree(ROOT, third.path, ignore=_ignore)
    proc = third.scons("model=simplecnn", f"cache={cache}")
    assert "RUN simplecnn" not in steps(proc.stdout), proc.stdout
    for rel, data in good.items():
        assert third.read(f"{OUT}/{rel}", "rb") == data, rel


class _Node:
    def __init__(self, path):
        self.path = str(path)

    def __str__(self):
        return self.path


def _check(tmp_path, text):
    """actions.run_check on a report.json holding text: (status, printed, check.txt exists)."""
    import contextlib
    import io
    from types import SimpleNamespace

    from nnscons.builders.graph import actions
    (tmp_path / "report.json").write_text(text)
    session = SimpleNamespace(report_written=False, verdict_printed=False,
                              target_cfg=SimpleNamespace(name="host"), model_cfg=SimpleNamespace(name="m"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = actions.run_check([_Node(tmp_path / "check.txt")], [_Node(tmp_path / "report.json")],
                                   {"NNS_SESSION": session})
    return status, out.getvalue(), (tmp_path / "check.txt").exists()


def test_the_check_follows_report_json_and_says_why(tmp_path):
    """A report that contradicts itself, does not parse or lacks its verdict fails the check
    with the reason, never `Test PASSED` followed by a bare `Error 1`."""
    rep = {"passed": True, "verdict": "Test PASSED [host] m: all 1 layers match", "layers": [],
           "total_macs": 0, "total_param_bytes": 0, "activation_arena_bytes": 0, "target": "host", "model": "m"}
    status, out, made = _check(tmp_path, json.dumps(rep))
    assert (status, made) == (0, True) and "Test PASSED" in out
    edited = dict(rep, passed=False)
    status, out, made = _check(tmp_path, json.dumps(edited))
    assert status == 1 and not made
    assert "Test PASSED" not in out.replace("its verdict reads 'Test PASSED", "")
    assert 'says "passed": false' in out and "remove it and build again" in out
    status, out, made = _check(tmp_path, '{"passed": tr')
    assert status == 1 and not made and "cannot be read" in out
    status, out, made = _check(tmp_path, '{"passed": true}')
    assert status == 1 and "lacks its verdict" in out
    # a failing verdict over a report without its table: the verdict, not a KeyError
    status, out, made = _check(tmp_path, json.dumps({"passed": False, "verdict": "CHECK FAILED [host] m: x",
                                                     "layers": [{"name": "a"}]}))
    assert status == 1 and "CHECK FAILED [host] m: x" in out and "no complete per-layer table" in out
