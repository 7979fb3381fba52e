"""The host firmware under qemu-x86_64 as another x86-64 CPU (run.platform: qemu, run.cpu):
the kernels a CPU without AVX-512 (EPYC-Rome: AVX2) or without AVX2 (qemu64: SSE2) dispatches
to, checked bit for bit on whatever this machine is; qemu's feature warnings kept out of
run.log (a dispatch feature qemu cannot emulate is said); a CPU model qemu does not know
named in one line.  Needs qemu-user (qemu >= 7.2 emulates AVX2)."""
from __future__ import annotations

import platform
import re
import shutil

import pytest

from conftest import steps
from nnscons.targets.host.tool import without_tcg_warnings

needs_qemu = pytest.mark.skipif(
    not shutil.which("qemu-x86_64") or platform.machine() != "x86_64",
    reason="needs qemu-x86_64 on an x86-64 machine (Debian: apt-get install qemu-user)")


def _ran(project, target, model) -> set:
    """The variants the firmware's dispatch took (run.log's `variant <layer> <isa>` lines)."""
    text = project.read(f"build/{target}/{model}/run.log")
    return {m.group(1) for m in re.finditer(r"^variant \S+ (\S+)$", text, re.M)}


def test_tcg_warnings_are_not_the_programs_output():
    text = ("qemu-x86_64: warning: TCG doesn't support requested feature: CPUID.07H:EBX.rdseed [bit 18]\n"
            "variant conv1 avx2\n"
            "qemu-x86_64: warning: TCG doesn't support requested feature: CPUID.07H:EBX.avx512f [bit 16]\n"
            "qemu-x86_64: warning: TCG doesn't support requested feature: CPUID.07H:ECX.avx512vnni [bit 11]\n"
            "qemu-x86_64: warning: TCG doesn't support requested feature: CPUID.80000001H:EDX.fxsr-opt [bit 25]\n"
            "layer 3 ok\n")
    out, missing = without_tcg_warnings(text)
    assert out == "variant conv1 avx2\nlayer 3 ok\n"
    assert missing == ["avx512f", "avx512vnni"]       # the dispatch's; rdseed, fxsr-opt are not


@needs_qemu
@pytest.mark.slow   # a cold ResNet-8 host build (~15 s of CPU)
def test_an_avx2_only_cpu_runs_the_avx2_kernels_bit_exact(project):
    """host-avx2 (targets.yaml): ResNet-8's direct and Winograd convs and its fused residual
    adds, on the AVX2 kernels, whatever this machine has."""
    proc = project.scons("target=host-avx2", "model=ic_resnet8")
    assert "Test PASSED [host-avx2] ic_resnet8" in proc.stdout, proc.stdout[-3000:]
    ran = _ran(project, "host-avx2", "ic_resnet8")
    assert ran and ran <= {"avx2", "wino-avx2", "avx2u8"} and "wino-avx2" in ran, ran
    assert "TCG doesn't support" not in project.read("build/host-avx2/ic_resnet8/run.log")
    # the firmware does not change with where it runs: no bench/tune steps for a qemu run
    assert "bench" not in proc.stdout.lower()


@needs_qemu
def test_a_cpu_without_avx2_runs_the_portable_kernels(project):
    project.write("targets.yaml", project.read("targets.yaml").replace(
        "  host-avx2:\n", "  host-sse2:\n    kind: host\n    run: {platform: qemu, cpu: qemu64}\n\n  host-avx2:\n", 1))
    proc = project.scons("target=host-sse2", "model=simplecnn")
    assert "Test PASSED [host-sse2] simplecnn" in proc.stdout, proc.stdout[-3000:]
    assert _ran(project, "host-sse2", "simplecnn") == {"portable"}
    # another CPU for the same firmware: it runs again (the verdict is never another CPU's)
    project.write("targets.yaml", project.read("targets.yaml").replace("cpu: qemu64", "cpu: EPYC-Rome", 1))
    proc = project.scons("target=host-sse2", "model=simplecnn")
    assert "RUN simplecnn" in steps(proc.stdout) and not [s for s in steps(proc.stdout) if s.startswith("CC ")]
    assert _ran(project, "host-sse2", "simplecnn") == {"avx2"}, proc.stdout[-3000:]


@needs_qemu
def test_an_avx512_cpu_qemu_cannot_emulate_is_said(project):
    project.write("targets.yaml", project.read("targets.yaml").replace(
        "  host-avx2:\n", "  host-icx:\n    kind: host\n    run: {platform: qemu, cpu: Icelake-Server}\n\n"
        "  host-avx2:\n", 1))
    proc = project.scons("target=host-icx", "model=simplecnn")
    assert "Test PASSED [host-icx] simplecnn" in proc.stdout, proc.stdout[-3000:]
    note = [line for line in proc.stdout.splitlines() if line.startswith("note [host-icx]: qemu-x86_64")]
    assert note and "avx512vnni" in note[0] and "without them" in note[0], proc.stdout[-3000:]
    assert "avx512vnni" not in _ran(project, "host-icx", "simplecnn")


@needs_qemu
def test_an_unknown_cpu_model_is_named(project):
    project.write("targets.yaml", project.read("targets.yaml").replace(
        "      cpu: EPYC-Rome\n", "      cpu: epyc-rome\n", 1))
    proc = project.scons("target=host-avx2", "model=simplecnn", check=False)
    assert proc.returncode != 0
    err = proc.stderr.strip().splitlines()[-1]
    assert "has no CPU model 'epyc-rome'" in err and "did you mean: EPYC-Rome" in err, proc.stderr
    assert "Traceback" not in proc.stderr


@needs_qemu
def test_bench_on_a_qemu_target_is_one_line(project):
    proc = project.scons("target=host-avx2", "model=simplecnn", "bench", check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    err = proc.stderr.strip().splitlines()[-1]
    assert "'bench': no target of this build has a bench step" in err and "qemu" in err, proc.stderr
