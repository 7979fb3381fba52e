"""The arm64 target: the NEON variants of the BRGEMM generator (Armv8.0 SMLAL, dotprod SDOT,
i8mm SMMLA) against a plain C reference under qemu-aarch64, the zoo models bit for bit
under qemu as a Cortex-A53, a Cortex-A76 and `max` (each picks its own variant at run
time, the run log says which), the variants really in the firmware, and platform=ssh's
command lines with fake ssh/scp.  Needs Debian's gcc-aarch64-linux-gnu and qemu-user."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT, SCONS, Project, _ignore
from nnscons import kernelgen

CC, QEMU, OBJDUMP = "aarch64-linux-gnu-gcc", "qemu-aarch64", "aarch64-linux-gnu-objdump"
pytestmark = pytest.mark.skipif(
    not (shutil.which(CC) and shutil.which(QEMU)),
    reason="needs aarch64-linux-gnu-gcc and qemu-aarch64 (Debian: apt-get install gcc-aarch64-linux-gnu qemu-user)")

# (isa, the qemu core that has it): a53 is Armv8.0, a76 has dotprod, max has i8mm too
VARIANTS = [("portable", "cortex-a53"), ("neon", "cortex-a53"), ("dotprod", "cortex-a76"), ("i8mm", "max")]
CPU_VARIANT = {"cortex-a53": "neon", "cortex-a76": "dotprod", "max": "i8mm"}
TARGET = {"cortex-a53": "arm64-a53", "cortex-a76": "arm64-a76", "max": "arm64"}
# (K, mr, nr, k_unroll): every K of the seed's set on the default blocking, and other blockings
# at K = 3 and 64. One driver holds them all, compiled once (it takes longer than a run): the
# fast test runs it on M, N <= 40 and K <= 64 with two fills, the slow sweep on everything.
CASES = [(k, 4, 16, 2) for k in (1, 3, 8, 16, 27, 64, 128, 576)] + [
    (k, mr, nr, ku) for k in (3, 64)
    for mr, nr, ku in ((4, 24, 1), (3, 32, 4), (12, 8, 3), (1, 8, 1), (5, 8, 1), (1, 24, 1))]


@pytest.fixture(scope="module")
def kerneltest(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("arm64k"))
    src = os.path.join(d, "kerneltest.c")
    with open(src, "w") as f:
        f.write(kernelgen.gemm_test_source(CASES, 64))
    exe = os.path.join(d, "kerneltest")
    subprocess.run([CC, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-march=armv8-a", "-static",
                    "-I", os.path.join(ROOT, "kernels", "common"), src, "-o", exe], check=True)
    return exe


def _check_kernel(exe, isa, cpu, *limits):
    """limits: FILLS [MAX_MN [MAX_K]] of the driver."""
    proc = subprocess.run([QEMU, "-cpu", cpu, exe, isa, *limits], stdout=subprocess.PIPE, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout
    assert f"{isa}: " in proc.stdout and " 0 mismatching" in proc.stdout


@pytest.mark.slow   # the driver's cross compile, then four sweeps under qemu-aarch64
@pytest.mark.xdist_group("arm64-kerneltest")   # one worker, one compile of the driver
@pytest.mark.parametrize("isa,cpu", VARIANTS)
def test_neon_variant_matches_the_reference(kerneltest, isa, cpu):
    """Every M, N in 1..40, K in {1, 3, 8, 16, 27, 64}, random data and -128/127 everywhere."""
    _check_kernel(kerneltest, isa, cpu, "2", "40", "64")


@pytest.mark.slow   # it needs the driver (compiled for the sweeps above)
@pytest.mark.xdist_group("arm64-kerneltest")
def test_variant_the_cpu_lacks_is_skipped(kerneltest):
    proc = subprocess.run([QEMU, "-cpu", "cortex-a53", kerneltest, "i8mm"], stdout=subprocess.PIPE, text=True)
    assert proc.returncode == 77 and "SKIP" in proc.stdout


@pytest.mark.slow
@pytest.mark.xdist_group("arm64-kerneltest")
@pytest.mark.parametrize("isa,cpu", VARIANTS[1:])
def test_neon_variant_full_sweep(kerneltest, isa, cpu):
    """The host kernel test's sweep: M, N in 1..64, K up to 576, all four fills."""
    _check_kernel(kerneltest, isa, cpu, "4")


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    dst = tmp_path_factory.mktemp("arm64") / "proj"
    shutil.copytree(ROOT, dst, ignore=_ignore)
    return Project(dst)


def _run(proj, cpu, model):
    t = TARGET[cpu]
    proc = proj.scons(f"target={t}", f"model={model}", timeout=3000)
    log = proj.read(f"build/{t}/{model}/run.log")
    assert "Test PASSED" in log, proc.stdout[-3000:] + log
    assert "MISMATCH" not in log
    variants = {line.split()[1]: line.split()[2] for line in log.splitlines() if line.startswith("variant ")}
    assert variants, log
    if cpu == "max":     # i8mm, but dotprod where its static figure is better (mr = 1: fc)
        assert "i8mm" in variants.values() and set(variants.values()) <= {"i8mm", "dotprod"}, log
        if "fc" in variants:
            assert variants["fc"] == "dotprod"
    else:
        assert set(variants.values()) == {CPU_VARIANT[cpu]}, log
    return proc


@pytest.mark.xdist_group("arm64-proj")   # one worker: the module's project is built once
@pytest.mark.parametrize("cpu", sorted(CPU_VARIANT))
def test_simplecnn_bit_exact_on_every_core(proj, cpu):
    _run(proj, cpu, "simplecnn")


@pytest.mark.xdist_group("arm64-proj")
# ResNet-8 under qemu, 12-14 s of CPU per core: `max` (i8mm) stays quick, the other two run in CI
@pytest.mark.parametrize("cpu", [c if c == "max" else pytest.param(c, marks=pytest.mark.slow)
                                 for c in sorted(CPU_VARIANT)])
def test_fused_residual_add_on_every_core(proj, cpu):
    """ResNet-8: the residual adds run in the NEON variants' epilogue (nn_epi_scalar)."""
    _run(proj, cpu, "ic_resnet8")
    layers = json.loads(proj.read(f"build/{TARGET[cpu]}/ic_resnet8/report.json"))["layers"]
    assert sum(1 for l in layers if l.get("gemm", {}).get("residual")) == 3
    assert not any(l["op"] == "add" for l in layers)


@pytest.mark.xdist_group("arm64-proj")
@pytest.mark.slow
@pytest.mark.parametrize("cpu", sorted(CPU_VARIANT))
def test_resnet18_bit_exact_on_every_core(proj, cpu):
    _run(proj, cpu, "resnet18")


@pytest.mark.xdist_group("arm64-proj")
def test_firmware_holds_every_variant(proj):
    if not shutil.which(OBJDUMP):
        pytest.skip(f"needs {OBJDUMP}")
    proj.scons("target=arm64", "model=simplecnn", timeout=1200)
    dis = subprocess.run([OBJDUMP, "-d", proj.file("build/arm64/simplecnn/firmware")],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    for insn in ("sdot", "smmla", "smlal"):
        assert f"\t{insn}\t" in dis, insn


def _add_target(proj, text):
    """A target in the copy's targets.yaml (its `targets:` section)."""
    path = proj.file("targets.yaml")
    with open(path) as f:
        doc = f.read()
    with open(path, "w") as f:
        f.write(doc.replace("\ntargets:\n", "\ntargets:\n" + text + "\n", 1))


FAKE_SSH = """#!/bin/sh
# fake ssh: records its arguments, runs the remote command here (the firmware under qemu)
echo "ssh $*" >> "$FAKE_SSH_LOG"
host="$1"; shift
cmd=$(printf '%s' "$*" | sed 's|\\./firmware|qemu-aarch64 -cpu max ./firmware|')
exec sh -c "$cmd"
"""
FAKE_SCP = """#!/bin/sh
# fake scp: records its arguments, copies with host: prefixes dropped
echo "scp $*" >> "$FAKE_SSH_LOG"
shift   # -q
args=""
[ "$1" = -r ] && shift
for a in "$@"; do args="$args $(printf '%s' "$a" | sed 's|^[^/]*@[^:]*:||')"; done
exec cp -r $args
"""


@pytest.mark.xdist_group("arm64-proj")
def test_ssh_platform_commands(proj, tmp_path):
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    for name, text in (("ssh", FAKE_SSH), ("scp", FAKE_SCP)):
        (bindir / name).write_text(text)
        os.chmod(bindir / name, 0o755)
    remote = tmp_path / "remote"
    log = tmp_path / "calls.log"
    _add_target(proj, f"  arm64-board:\n    kind: arm64\n    run:\n      platform: ssh\n      host: pi@board\n"
                      f"      dir: {remote}\n      ssh: {bindir}/ssh\n      scp: {bindir}/scp\n")
    env = dict(os.environ, FAKE_SSH_LOG=str(log), PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([SCONS, "-Q", "target=arm64-board", "model=simplecnn"], cwd=proj.path, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "Test PASSED" in proj.read("build/arm64-board/simplecnn/run.log")
    calls = log.read_text().splitlines()
    assert calls[0] == f"ssh pi@board rm -rf {remote} && mkdir -p {remote}/bin"
    assert calls[1].startswith("scp -q ") and calls[1].endswith(f"/firmware pi@board:{remote}/firmware")
    assert calls[2].startswith("scp -q -r ") and calls[2].endswith(f"pi@board:{remote}/bin/")
    assert "/bin/golden" in calls[2] and "/bin/weights" not in calls[2]
    assert calls[3] == f"ssh pi@board cd {remote} && ./firmware bin output.bin"
    assert calls[4].startswith(f"scp -q pi@board:{remote}/output.bin ")


@pytest.mark.xdist_group("arm64-proj")
def test_ssh_without_host_is_one_clear_error(proj):
    _add_target(proj, "  arm64-nohost:\n    kind: arm64\n    run: {platform: ssh}\n")
    proc = proj.scons("target=arm64-nohost", "model=simplecnn", check=False)
    assert proc.returncode == 2
    assert "run.host" in proc.stdout + proc.stderr


@pytest.mark.xdist_group("arm64-proj")
def test_forced_isa_compiles_and_runs_that_variant_only(proj):
    _add_target(proj, "  arm64-dot:\n    kind: arm64\n    kernel: {isa: dotprod}\n    run: {cpu: max}\n")
    proc = proj.scons("target=arm64-dot", "model=simplecnn", timeout=1200)
    log = proj.read("build/arm64-dot/simplecnn/run.log")
    assert "Test PASSED" in log, proc.stdout[-3000:]
    assert {line.split()[2] for line in log.splitlines() if line.startswith("variant ")} == {"dotprod"}
    src = proj.read("build/arm64-dot/simplecnn/src/layers/conv2.c")
    assert "vdotq_lane_s32" in src and "vmmlaq_s32" not in src


@pytest.mark.xdist_group("arm64-proj")
def test_report_gives_variant_and_macs_per_instruction(proj):
    import json
    proj.scons("target=arm64-a76", "model=simplecnn", timeout=1200)
    report = json.loads(proj.read("build/arm64-a76/simplecnn/report.json"))
    conv2 = next(l for l in report["layers"] if l["name"] == "conv2")
    assert conv2["variant"] == "dotprod"
    assert conv2["variant_macs_per_insn"] == conv2["macs_per_insn"]["dotprod"] > conv2["macs_per_insn"]["neon"]
    assert report["a76_estimate_ms"] > 0
    assert any(line.startswith("estimate (not measured)") for line in report["summary_lines"])


@pytest.mark.xdist_group("arm64-proj")
def test_native_on_another_machine_is_one_clear_error(proj):
    import platform
    if platform.machine() in ("aarch64", "arm64"):
        pytest.skip("this machine is aarch64: platform=native runs here")
    proc = proj.scons("target=arm64", "model=simplecnn", "platform=native", check=False)
    assert proc.returncode == 2
    out = proc.stdout + proc.stderr
    assert "aarch64" in out and "platform=qemu" in out and "Traceback" not in out
