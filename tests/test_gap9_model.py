"""target=gap9 on GVSoC's GAP9 model (platform=gvsoc-gap9): GreenWaves' own model of the chip
(9 cluster cores, 128 KiB L1 in 16 banks with bank conflicts, mchan DMA) runs the generated code
on the bare-metal runtime of kernels/gap9/open, every layer checked bit for bit, cycles and TCDM
contention per layer from the performance counters.

The runs need the model (GAP9_GVSOC=DIR, `bash ../shared/gap9-gvsoc/install.sh DIR`; .ci/run
installs it) and Debian's riscv64-unknown-elf-gcc with picolibc; without them they skip, saying
which is missing. The choice of platform=auto and the missing-model message need neither.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from conftest import GAP9_MODEL, ROOT, SCONS, Project, _ignore

from nnscons.targets.gap9 import baremetal

HAVE_CC = bool(shutil.which(baremetal.CC)) and os.path.isdir("/usr/lib/picolibc/riscv64-unknown-elf")
MODEL_OK = bool(GAP9_MODEL) and os.access(os.path.join(GAP9_MODEL, "run.sh"), os.X_OK)
needs_model = pytest.mark.skipif(
    not (HAVE_CC and MODEL_OK),
    reason="GVSoC's GAP9 model or the riscv compiler is missing: apt-get install gcc-riscv64-unknown-elf "
           "picolibc-riscv64-unknown-elf; bash ../shared/gap9-gvsoc/install.sh DIR; GAP9_GVSOC=DIR")


def scons(p: Project, *args, model=GAP9_MODEL, timeout=900):
    env = {k: v for k, v in os.environ.items() if k not in ("GAP9_GVSOC", "GAP_SDK_HOME")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if model is not None:
        env["GAP9_GVSOC"] = model
    # no GAP SDK's gvsoc on PATH: auto must not find one
    env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                                  if not os.path.exists(os.path.join(d, "gvsoc")))
    return subprocess.run([SCONS, "-Q", *args], cwd=p.path, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)


def test_a_missing_model_is_one_error_naming_the_installer_and_the_variable(project):
    proc = scons(project, "target=gap9", "model=simplecnn", "platform=gvsoc-gap9", model=None)
    assert proc.returncode == 2, proc.stdout[-2000:]
    assert "Traceback" not in proc.stdout
    assert "GVSoC's GAP9 model not found (GAP9_GVSOC is unset and no ../shared/gap9-gvsoc" in proc.stdout
    assert "../shared/gap9-gvsoc/install.sh" in proc.stdout and "platform=emul" in proc.stdout
    wrong = scons(project, "target=gap9", "model=simplecnn", "platform=gvsoc-gap9", model=project.file("nowhere"))
    assert wrong.returncode == 2 and "holds no executable run.sh" in wrong.stdout


def test_auto_falls_back_to_the_emulation_without_sdk_or_model(project):
    proc = scons(project, "target=gap9", "model=simplecnn", "firmware", model=None)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "platform=auto -> emul" in proc.stdout and "GAP9_GVSOC unset, no ../shared/gap9-gvsoc" in proc.stdout


SHARED_MODEL = os.path.join(os.path.dirname(ROOT), "shared", "gap9-gvsoc")


@pytest.mark.skipif(not (HAVE_CC and os.path.isfile(os.path.join(SHARED_MODEL, "install.sh"))),
                    reason="no ../shared/gap9-gvsoc beside the checkout, or no riscv64-unknown-elf-gcc")
def test_a_fresh_clone_beside_shared_installs_the_model_into_build_and_uses_it(tmp_path):
    """`./nnscons target=gap9` in a fresh clone with ../shared beside it: no variable to set."""
    dst = tmp_path / "work" / "proj"
    shutil.copytree(ROOT, dst, ignore=_ignore)
    os.symlink(os.path.dirname(SHARED_MODEL), tmp_path / "work" / "shared")
    p = Project(dst)
    first = scons(p, "target=gap9", "model=simplecnn", "firmware", model=None)
    assert first.returncode == 0, first.stdout[-3000:]
    assert "installing GVSoC's GAP9 model" in first.stdout and "platform=auto -> gvsoc-gap9" in first.stdout
    assert os.path.isfile(p.file("build/tools/gap9-gvsoc/.installed"))
    again = scons(p, "target=gap9", "model=simplecnn", "firmware", model=None)
    assert "installing" not in again.stdout and "platform=auto -> gvsoc-gap9" in again.stdout


@pytest.mark.skipif(not HAVE_CC, reason="riscv64-unknown-elf-gcc + picolibc not installed")
def test_auto_picks_the_model_when_the_sdk_is_absent(project, tmp_path):
    # a stand-in install folder: resolving the platform only looks for its run.sh
    fake = tmp_path / "gap9-gvsoc"
    fake.mkdir()
    (fake / "run.sh").write_text("#!/bin/sh\nexit 1\n")
    (fake / "run.sh").chmod(0o755)
    proc = scons(project, "target=gap9", "model=simplecnn", "firmware", model=str(fake))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "platform=auto -> gvsoc-gap9 (GAP SDK not found; GVSoC's GAP9 model at" in proc.stdout
    assert os.path.isfile(project.file("build/gap9/simplecnn/gvsoc-gap9/firmware.elf"))


def _report(p, model):
    with open(p.file(f"build/gap9/{model}/gvsoc-gap9/report.json")) as f:
        return json.load(f)


@needs_model
def test_simplecnn_runs_on_the_gap9_model_with_cycles_and_contention(project):
    proc = scons(project, "target=gap9", "model=simplecnn")
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "platform=auto -> gvsoc-gap9" in proc.stdout
    assert "Test PASSED [gap9] simplecnn" in proc.stdout
    r = _report(project, "simplecnn")
    assert "GVSoC model of GAP9" in r["cycles_source"]
    measured = [lay for lay in r["layers"] if lay.get("measured")]
    assert len(measured) == len(r["layers"])
    conv = next(lay for lay in r["layers"] if lay["op"] == "conv2d")
    m = conv["measured"]
    assert m["cycles"] > 0 and m["instructions"] > 0
    # nine cores on sixteen banks: the model counts the cycles lost to conflicts
    assert "tcdm_contention" in m and 0 < m["tcdm_contention"] < m["cycles"] * 9
    log = project.read("build/gap9/simplecnn/gvsoc-gap9/run.log")
    assert "Test PASSED" in log


@needs_model
@pytest.mark.slow
def test_a_small_resnet_runs_on_the_gap9_model(project):
    proc = scons(project, "target=gap9", "model=ic_resnet8", "platform=gvsoc-gap9", timeout=1500)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "Test PASSED [gap9] ic_resnet8" in proc.stdout
    r = _report(project, "ic_resnet8")
    assert all(lay["measured"]["cycles"] > 0 for lay in r["layers"] if lay["op"] == "conv2d")
