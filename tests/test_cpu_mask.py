"""benchmarks/cpu_mask.py: a patched copy of a program sees this CPU without AVX-512 and
AVX-VNNI (CPUID through libgcc's __builtin_cpu_supports, XCR0 through xgetbv), keeps
AVX2 where the CPU has it, and says how many questions the mask answered; what cannot be
patched is refused in one line.  The AVX2-only figures in the README rest on this."""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import cpu_mask  # noqa: E402

pytestmark = pytest.mark.skipif(
    platform.machine() != "x86_64" or not (shutil.which("objdump") and shutil.which("gcc")),
    reason="needs an x86-64 Linux with gcc and objdump (binutils)")

PROBE = r"""
#include <stdio.h>
int main(void)
{
    unsigned lo, hi;
    __builtin_cpu_init();
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0u));
    printf("%d %d %d %u\n", !!__builtin_cpu_supports("avx2"), !!__builtin_cpu_supports("avx512f"),
           !!__builtin_cpu_supports("avx512vnni"), lo);
    return 0;
}
"""


def _compile(tmp_path, source, name):
    c = tmp_path / f"{name}.c"
    c.write_text(source)
    exe = tmp_path / name
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(c)], check=True)
    return str(exe)


def _answers(cmd, env=None):
    avx2, avx512f, vnni, xcr0 = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True,
                                                env=env).stdout.split()
    return int(avx2), int(avx512f), int(vnni), int(xcr0)


def test_patched_copy_sees_no_avx512(tmp_path):
    exe = _compile(tmp_path, PROBE, "probe")
    plain = _answers([exe])
    copy = str(tmp_path / "probe.masked")
    assert cpu_mask.patch_elf(exe, copy) >= 2           # libgcc's cpuid and our xgetbv at least
    report = str(tmp_path / "report")
    masked = _answers([copy], cpu_mask.env(report, out=str(tmp_path / "shim")))
    assert masked[0] == plain[0]                          # AVX2 as the CPU has it
    assert masked[1] == 0 and masked[2] == 0              # no AVX-512 F or VNNI
    assert masked[3] == plain[3] & ~0xE0                  # XCR0 without the opmask/zmm state
    (cpuid, xgetbv), = cpu_mask.emulated(report).values()
    assert cpuid > 0 and xgetbv >= 1
    assert _answers([exe], cpu_mask.env(None, out=str(tmp_path / "shim"))) == plain   # unpatched: untouched


def test_what_cannot_be_masked_is_said(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a program\n")
    with pytest.raises(cpu_mask.MaskError, match="not a 64-bit little-endian ELF"):
        cpu_mask.patch_elf(str(text), str(tmp_path / "out"))
    exe = _compile(tmp_path, "int main(void) { return 0; }\n", "plain")
    assert cpu_mask.patch_elf(exe, str(tmp_path / "plain.masked")) == 0


def _masked_run(firmware, b, tmp_path, *iterations):
    report = str(tmp_path / f"report{iterations}")
    out = subprocess.run([firmware, os.path.join(b, "bin"), str(tmp_path / "out.bin"), *iterations],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=cpu_mask.env(report, out=str(tmp_path / "shim"))).stdout
    (counts,) = cpu_mask.emulated(report).values()
    return out, counts


def test_firmware_asks_cpuid_at_start_only(project, tmp_path):
    """Under the mask the firmware takes its AVX2 kernels, bit exact at this core's speed, and
    asks CPUID only while starting: a cpuid instruction per layer call (the AVX-VNNI check an
    AVX2-only CPU reaches) leaves a VM for the hypervisor every time."""
    project.scons("target=host", "model=simplecnn")
    b = os.path.join(project.path, "build", "host", "simplecnn")
    firmware = str(tmp_path / "firmware.masked")
    assert cpu_mask.patch_elf(os.path.join(b, "firmware"), firmware) > 0
    out, _ = _masked_run(firmware, b, tmp_path)
    ran = {line.split()[2] for line in out.splitlines() if line.startswith("variant ")}
    assert "Test PASSED" in out and ran and ran <= {"avx2", "wino-avx2", "avx2u8", "portable"}, out
    _, once = _masked_run(firmware, b, tmp_path, "1")
    _, many = _masked_run(firmware, b, tmp_path, "40")
    assert once == many, (once, many)


def _u8_model(path):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(5)

    def w(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.05).astype(np.float32), name)
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["a"], "big", pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Conv", ["r", "w1"], ["y"], "small")]
    graph = helper.make_graph(nodes, "u8", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])],
                              [w("w0", 64, 64, 3, 3), w("b0", 64), w("w1", 8, 64, 1, 1)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    return path


@pytest.mark.slow    # three builds of a two-layer model and one timing of it (about 20 s)
def test_a_build_on_an_avx2_only_cpu_times_avx2u8_against_avx2(project, tmp_path):
    """`kernel.choose: auto` on a CPU without VNNI (here: the build under the mask, whose
    /proc/cpuinfo has no AVX-512 flags): a direct layer of at least 5M MACs has its avx2u8
    and avx2 variants timed (one line), the faster first in its dispatch order, cached; a
    small layer is not timed; the next build times nothing."""
    import json
    from conftest import adhoc
    from modelgen import quantize_qdq
    from nnscons.targets.host import autochoice, measure
    env = cpu_mask.env()
    if "avx2" not in measure.cpu_info().get("flags", []):
        pytest.skip("this CPU has no AVX2: its dispatch runs portable C, nothing to time")
    q = quantize_qdq(_u8_model(str(tmp_path / "f.onnx")), str(tmp_path / "u8pick.onnx"))
    proc = project.scons("target=host", f"model={q}", env=env)
    assert "the integer reference bit for bit" in proc.stdout, proc.stdout[-3000:]
    line = next(l for l in proc.stdout.splitlines() if l.startswith("VARIANTS "))
    assert proc.stdout.count("VARIANTS ") == 1 and line.startswith("VARIANTS big: avx2u8 ")
    best = line.split("-> ")[1].strip()
    assert best in ("avx2u8", "avx2") and autochoice.MIN_MACS <= 16 * 16 * 64 * 576
    def layers():
        return {l["name"]: l for l in json.loads(project.read(f"{adhoc(project, 'host', 'u8pick')}/report.json"))["layers"]}
    rep = layers()
    assert "choice" not in rep["small"]["gemm"]
    cache = os.path.join(project.path, adhoc(project, "host", "u8pick"), rep["big"]["gemm"]["choice"]["cache"])
    with open(cache, encoding="utf-8") as f:
        data = json.load(f)
    masked = data["flags"]
    assert "avx512_vnni" not in masked                      # the masked CPU's cache
    # what the masked CPU's dispatch runs is the faster one (the VNNI variants stay listed before it)
    masked_cpu = {"flags": masked, "model_name": "the masked CPU"}
    assert measure.running(rep["big"]["gemm"]["variants"], masked_cpu) == best
    proc = project.scons("target=host", f"model={q}", env=env)
    assert "VARIANTS" not in proc.stdout and "the integer reference bit for bit" in proc.stdout
    # an edited cache decides: the other one wins, is run, and nothing is timed
    entry = next(e for k, e in data["layers"].items() if k.startswith("u8-"))
    other = "avx2" if best == "avx2u8" else "avx2u8"
    entry["median_ms"] = {best: 2.0, other: 1.0}
    entry["best"] = other
    with open(cache, "w") as f:
        json.dump(data, f)
    proc = project.scons("target=host", f"model={q}", env=env)
    assert "VARIANTS" not in proc.stdout and "the integer reference bit for bit" in proc.stdout
    assert measure.running(layers()["big"]["gemm"]["variants"], masked_cpu) == other
    # the machine as it is (VNNI here or not): its own cache, and with VNNI nothing timed
    proc = project.scons("target=host", f"model={q}")
    assert "the integer reference bit for bit" in proc.stdout
    if measure.running(["avx512vnni", "avxvnni", "avx2"], measure.cpu_info()) != "avx2":
        assert "VARIANTS" not in proc.stdout
