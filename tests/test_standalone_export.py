"""The standalone export (`export` alias): build/<t>/<m>/export/ copied out of the tree
builds with make alone (and CMake), holds no absolute path and no path into the checkout,
and the application built on it gives the harness's output bit for bit; a one-layer edit
rewrites that layer's files in it and nothing else."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from conftest import ROOT, steps


def _snapshot(folder) -> dict:
    out = {}
    for d, _, files in os.walk(folder):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, folder)] = fh.read()
    return out


def _no_paths(folder, project_root):
    for name, data in _snapshot(folder).items():
        text = data.decode("latin-1")
        for bad in (str(project_root), ROOT):
            assert bad not in text, f"{name} holds {bad}"


def test_host_export_builds_from_a_copy_and_matches_the_harness(project, tmp_path):
    assert "Test PASSED [host] simplecnn" in project.scons("target=host", "model=simplecnn").stdout
    proc = project.scons("target=host", "model=simplecnn", "export")
    assert "EXPORT src/layers/conv1.c [host]" in proc.stdout and not [s for s in steps(proc.stdout)
                                                                      if s.startswith(("RUN", "CHECK"))]
    src = project.file("build/host/simplecnn/export")
    files = _snapshot(src)
    assert {"Makefile", "CMakeLists.txt", "include/nns_simplecnn.h", "src/layers/conv1.c",
            "weights/conv1.bin", "kernels/common/nn_gemm.h", "kernels/common/nn_threads.c"} <= set(files)
    assert "main.c" not in " ".join(files)            # the harness is not the library's
    _no_paths(src, project.path)

    app = tmp_path / "app"
    shutil.copytree(os.path.join(ROOT, "examples", "export-make"), app)
    shutil.copytree(src, app / "nns")
    shutil.copy(project.file("build/host/simplecnn/bin/input.bin"), app / "input.bin")
    subprocess.run(["make", "-s"], cwd=app, check=True)
    r = subprocess.run(["./app", "input.bin", "y.bin"], cwd=app, stdout=subprocess.PIPE, text=True, check=True)
    assert "best: class" in r.stdout
    assert (app / "y.bin").read_bytes() == project.read("build/host/simplecnn/output.bin", "rb")

    if shutil.which("cmake"):
        subprocess.run(["cmake", "-S", str(app / "nns"), "-B", str(tmp_path / "cm")], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", str(tmp_path / "cm")], check=True, stdout=subprocess.DEVNULL)
        assert (tmp_path / "cm" / "libnns_simplecnn.a").is_file()


def test_a_one_layer_edit_rewrites_that_layers_files_only(project):
    project.scons("target=host", "model=simplecnn", "export")
    folder = project.file("build/host/simplecnn/export")
    before = _snapshot(folder)
    y = project.read("targets.yaml")
    project.write("targets.yaml", y.replace("conv1: {l1_budget: 8KiB}", "conv1: {l1_budget: 6KiB}"))
    project.scons("target=host", "model=simplecnn", "export")
    after = _snapshot(folder)
    assert set(after) == set(before)
    assert {k for k in after if after[k] != before[k]} == {"src/layers/conv1.c"}


@pytest.mark.slow
def test_arm64_export_cross_builds_and_runs_under_qemu(project, tmp_path):
    if not (shutil.which("aarch64-linux-gnu-gcc") and shutil.which("qemu-aarch64")):
        pytest.skip("aarch64-linux-gnu-gcc / qemu-aarch64 not installed")
    assert "Test PASSED [arm64] simplecnn" in project.scons("target=arm64", "model=simplecnn").stdout
    project.scons("target=arm64", "model=simplecnn", "export")
    src = project.file("build/arm64/simplecnn/export")
    _no_paths(src, project.path)
    app = tmp_path / "app"
    shutil.copytree(os.path.join(ROOT, "examples", "export-make"), app)
    shutil.copytree(src, app / "nns")
    shutil.copy(project.file("build/arm64/simplecnn/bin/input.bin"), app / "input.bin")
    subprocess.run(["make", "-s", "CC=aarch64-linux-gnu-gcc", "LDFLAGS=-static"], cwd=app, check=True)
    r = subprocess.run(["qemu-aarch64", "./app", "input.bin", "y.bin"], cwd=app, stdout=subprocess.PIPE,
                       text=True, check=True)
    assert "best: class" in r.stdout
    assert (app / "y.bin").read_bytes() == project.read("build/arm64/simplecnn/output.bin", "rb")


@pytest.mark.slow
def test_k210_export_cross_builds_and_runs_on_qemu(project, tmp_path):
    if not (shutil.which("riscv64-unknown-elf-gcc") and shutil.which("qemu-system-riscv64")):
        pytest.skip("riscv64-unknown-elf-gcc / qemu-system-riscv64 not installed")
    from nnscons.targets.k210 import platforms
    assert "Test PASSED [k210] simplecnn" in project.scons("target=k210", "model=simplecnn",
                                                           "platform=qemu").stdout
    project.scons("target=k210", "model=simplecnn", "platform=qemu", "export")
    src = project.file("build/k210/simplecnn/qemu/export")
    _no_paths(src, project.path)
    app = tmp_path / "app"
    shutil.copytree(os.path.join(ROOT, "examples", "export-make"), app)
    shutil.copytree(src, app / "nns")
    shutil.copy(project.file("build/k210/simplecnn/bin/input.bin"), app / "input.bin")
    subprocess.run(["make", "-s", "-C", "nns"], cwd=app, check=True)      # the export's own compiler and flags
    x = platforms.cross_flags("riscv64-unknown-elf-gcc")
    link = [f for f in x["LINKFLAGS"] if f not in x["CFLAGS"]]
    # bare metal has no command line: main.c called with its arguments by a wrapper
    (app / "wrap.c").write_text('#define main app_main\n#include "main.c"\n#undef main\n'
                                'int main(void) { char *argv[] = { "app", "input.bin", "y.bin", 0 };'
                                ' return app_main(3, argv); }\n')
    subprocess.run(["riscv64-unknown-elf-gcc", *x["CFLAGS"], "-Inns/include", "wrap.c", "nns/lib/libnns_simplecnn.a",
                    *link, "-o", "app.elf"], cwd=app, check=True)
    r = subprocess.run(platforms.qemu_command(str(app / "app.elf")), cwd=app, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    assert "best: class" in r.stdout, r.stdout
    assert (app / "y.bin").read_bytes() == project.read("build/k210/simplecnn/qemu/output.bin", "rb")


def test_gap9_emul_export_builds_and_its_weights_are_the_readfs(project, tmp_path):
    """gap9 emul: the export's Makefile builds the archive (with the PMSIS emulation) from a
    copy; the shared library app, built against that copy, mounts the export's weights/ as
    its readfs and gives the harness's outputs bit for bit."""
    from test_libraries import GAP9_APP, _app, _same_as_harness
    b = "build/gap9/simplecnn"
    assert "Test PASSED [gap9] simplecnn" in project.scons("target=gap9", "model=simplecnn",
                                                           "platform=emul").stdout
    project.scons("target=gap9", "model=simplecnn", "platform=emul", "export")
    src = project.file(f"{b}/emul/export")
    _no_paths(src, project.path)
    nns = tmp_path / "nns"
    shutil.copytree(src, nns)
    subprocess.run(["make", "-s"], cwd=nns, check=True)
    # the app's Make variables point at the copy, not at the build
    inc = " ".join(f"-I{nns / d}" for d in ("include", "kernels/common", "kernels/gap9", "kernels/gap9/emul"))
    project.write(f"{b}/emul/vendored/nns_simplecnn.mk",
                  f"NNS_SIMPLECNN_CFLAGS := {inc} -pthread\n"
                  f"NNS_SIMPLECNN_LIBS := {nns / 'lib' / 'libnns_simplecnn.a'} -lpthread -lm\n")
    d = tmp_path / "run"
    d.mkdir()
    app = _app(project, d, b, "emul/vendored", "emul/", source=GAP9_APP)
    r = subprocess.run([app], cwd=d, stdout=subprocess.PIPE, text=True, timeout=120,
                       env=dict(os.environ, NN_EMUL_FS_DIR=str(nns / "weights")))
    assert r.returncode == 0, r.stdout
    _same_as_harness(project, d, b, "emul/", r.stdout)


def test_gap9_qemu_export_builds_with_make_and_cmake(project, tmp_path):
    """The cross-compiled export (riscv64-unknown-elf-gcc, the PMSIS emulation for qemu):
    `make` and CMake with its toolchain.cmake build the archive from a copy."""
    from nnscons.targets.gap9 import qemu
    if qemu.missing_tools() or not shutil.which("cmake"):
        pytest.skip(f"{', '.join(qemu.missing_tools()) or 'cmake'} not installed")
    project.scons("target=gap9", "model=simplecnn", "platform=qemu", "export")
    src = project.file("build/gap9/simplecnn/qemu/export")
    _no_paths(src, project.path)
    nns = tmp_path / "nns"
    shutil.copytree(src, nns)
    subprocess.run(["make", "-s"], cwd=nns, check=True)
    assert (nns / "lib" / "libnns_simplecnn.a").is_file()
    subprocess.run(["cmake", "-S", str(nns), "-B", str(tmp_path / "cm"),
                    f"-DCMAKE_TOOLCHAIN_FILE={nns / 'toolchain.cmake'}"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(tmp_path / "cm")], check=True, stdout=subprocess.DEVNULL)
    assert (tmp_path / "cm" / "libnns_simplecnn.a").is_file()
