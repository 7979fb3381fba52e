"""aie2p's real flow, proven with fake tools (fixtures that record their arguments and write
placeholders): command lines, tools found through MLIR_AIE_DIR / PEANO_INSTALL_DIR, the
incremental graph, and the message when tools are missing."""
from __future__ import annotations

import json
import os

import pytest

from aie2p_models import add_mix
from conftest import ROOT, steps

FIX = os.path.join(ROOT, "tests", "fixtures", "aie2p")
B = "build/aie2p/mix"


def fake_env(project, monkeypatch, compiler="peano"):
    log = project.file("fake.log")
    monkeypatch.setenv("MLIR_AIE_DIR", os.path.join(FIX, "mlir_aie"))
    monkeypatch.setenv("PEANO_INSTALL_DIR", os.path.join(FIX, "peano"))
    monkeypatch.setenv("PATH", os.path.join(FIX, "bin") + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("NNS_FAKE_LOG", log)
    text = project.read("targets.yaml").replace(
        "      python: python3 ", f"      python: {os.path.join(FIX, 'bin', 'python3-mlir-aie')} ")
    text = text.replace("kernel_compiler: peano ", f"kernel_compiler: {compiler} ")
    project.write("targets.yaml", text)
    return log


def records(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [json.loads(line) for line in f]


@pytest.mark.slow   # the whole NPU flow through the fake tools, then edits: 13.7 s of CPU
def test_npu_flow_command_lines_and_incremental_graph(project, monkeypatch):
    add_mix(project)
    log = fake_env(project, monkeypatch)
    proc = project.scons("-k", "target=aie2p", "model=mix", check=False)   # platform auto -> npu
    assert proc.returncode != 0     # placeholder outputs: the check must fail
    assert "CHECK FAILED [aie2p] mix: the run log has no result for layer #0 'conv1'" in proc.stdout
    s = steps(proc.stdout)
    mapped = ["conv1", "conv2", "conv3", "conv4", "fc1", "fc2"]
    for verb in ("MLIR", "KCC", "AIECC"):
        assert sorted(x for x in s if x.startswith(verb + " ")) == [f"{verb} {n}" for n in mapped]
    assert "RUN mix" in s and not any(x.startswith("CXX") for x in s)

    rec = records(log)
    mlir_aie, peano = os.path.join(FIX, "mlir_aie"), os.path.join(FIX, "peano")
    kcc = next(r for r in rec if r["tool"] == "peano-clang++" and r["argv"][-1].endswith("conv3.o"))
    assert kcc["argv"] == ["-O2", "-std=c++20", "--target=aie2p-none-unknown-elf", "-Wno-parentheses",
                           "-Wno-attributes", "-Wno-macro-redefined", "-DNDEBUG",
                           f"-I{mlir_aie}/include", "-Ikernels/aie2p", "-Ikernels/common", "-c",
                           f"{B}/src/layers/conv3.cc",
                           "-o", f"{B}/aie/conv3/conv3.o"]
    aiecc = next(r for r in rec if r["tool"] == "aiecc.py" and r["cwd"].endswith("aie/conv3"))
    assert aiecc["argv"] == ["--aie-generate-xclbin", "--aie-generate-npu-insts", "--no-compile-host",
                             "--no-xchesscc", "--no-xbridge", "--peano", peano,
                             "--xclbin-name=final.xclbin", "--npu-insts-name=insts.bin", "aie.mlir"]
    assert mlir_aie + "/python" in aiecc["pythonpath"]
    design = next(r for r in rec if r["tool"] == "python-design" and "conv3" in r["argv"][0])
    assert design["argv"] == [f"{B}/src/layers/conv3_design.py"] and mlir_aie + "/python" in design["pythonpath"]
    run = [r for r in rec if r["tool"] == "xrt-runner"]
    assert len(run) == 1 and run[0]["argv"][0].endswith("targets/aie2p/xrt_runner.py")
    assert run[0]["argv"][1:] == [B, f"{B}/output.bin"]
    for n in mapped:
        assert os.path.isfile(project.file(f"{B}/aie/{n}/final.xclbin"))
        assert project.read(f"{B}/aie/{n}/aie.mlir").startswith(f"// placeholder MLIR of {n}_design.py")

    # one layer's tiling edit: exactly that layer's design, MLIR, kernel and xclbin, then the run
    os.unlink(log)
    text = project.read("targets.yaml").replace("conv3: {tiles_per_call: 7}", "conv3: {tiles_per_call: 1}")
    project.write("targets.yaml", text)
    s = steps(project.scons("-k", "target=aie2p", "model=mix", check=False).stdout)
    assert sorted(s) == sorted(["CODEGEN conv3 (conv3.cc)", "CODEGEN conv3 (conv3_design.py)",
                                "CODEGEN conv3 (conv3_dma.json)", "MLIR conv3", "KCC conv3", "AIECC conv3",
                                "RUN mix", "CHECK mix", "REPORT mix"])
    assert sorted({r["tool"] for r in records(log)}) == ["aiecc.py", "peano-clang++", "python-design", "xrt-runner"]
    assert all("conv3" in json.dumps(r) for r in records(log) if r["tool"] != "xrt-runner")


def test_chess_kernel_compiler(project, monkeypatch):
    add_mix(project)
    log = fake_env(project, monkeypatch, compiler="chess")
    project.scons("-k", "target=aie2p", "model=mix", "platform=npu", check=False)
    rec = records(log)
    k = next(r for r in rec if r["tool"] == "xchesscc_wrapper" and r["argv"][-1].endswith("fc1.o"))
    assert k["argv"][:2] == ["aie2p", f"-I{FIX}/mlir_aie/include"] and "-c" in k["argv"]
    a = next(r for r in rec if r["tool"] == "aiecc.py")
    assert "--xchesscc" in a["argv"] and "--xbridge" in a["argv"] and "--peano" not in a["argv"]
    assert not any(r["tool"] == "peano-clang++" for r in rec)


def test_missing_tools_are_named(project, monkeypatch):
    monkeypatch.delenv("MLIR_AIE_DIR", raising=False)
    monkeypatch.delenv("PEANO_INSTALL_DIR", raising=False)
    proc = project.scons("target=aie2p", "model=conv2dk14", "platform=npu", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    msg = proc.stderr
    assert "aiecc.py (set MLIR_AIE_DIR" in msg and "PEANO_INSTALL_DIR" in msg and "platform=emul" in msg
