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


def _vendored_app(project, tmp_path, export):
    """examples/export-make in tmp_path/app, with the export (its paths checked first) copied
    in as its nns/."""
    src = project.file(export)
    _no_paths(src, project.path)
    _no_paths(src, getattr(project, "origin", project.path))   # a prebuilt copy's first build
    app = tmp_path / "app"
    shutil.copytree(os.path.join(ROOT, "examples", "export-make"), app)
    shutil.copytree(src, app / "nns")
    return app


@pytest.mark.slow   # ~15 s of CPU after the shared build (24.3 s with it): make, the app, cmake
def test_host_export_builds_from_a_copy_and_matches_the_harness(prebuilt, tmp_path):
    project, first = prebuilt("target=host", "model=simplecnn")
    assert "Test PASSED [host] simplecnn" in first.stdout
    proc = project.scons("target=host", "model=simplecnn", "export")
    assert "EXPORT src/layers/conv1.c [host]" in proc.stdout and not [s for s in steps(proc.stdout)
                                                                      if s.startswith(("RUN", "CHECK"))]
    src = project.file("build/host/simplecnn/export")
    files = _snapshot(src)
    assert {"Makefile", "CMakeLists.txt", "include/nns_simplecnn.h", "src/layers/conv1.c",
            "weights/conv1.bin", "kernels/common/nn_gemm.h", "kernels/common/nn_threads.c"} <= set(files)
    assert "main.c" not in " ".join(files)            # the harness is not the library's

    app = _vendored_app(project, tmp_path, "build/host/simplecnn/export")
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
    app = _vendored_app(project, tmp_path, "build/arm64/simplecnn/export")
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
    app = _vendored_app(project, tmp_path, "build/k210/simplecnn/qemu/export")
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


def test_gap9_emul_export_builds_and_its_weights_are_the_readfs(prebuilt, tmp_path):
    """gap9 emul: the export's Makefile builds the archive (with the PMSIS emulation) from a
    copy; the shared library app, built against that copy, mounts the export's weights/ as
    its readfs and gives the harness's outputs bit for bit."""
    from test_libraries import GAP9_APP, _app, _same_as_harness
    b = "build/gap9/simplecnn"
    project, first = prebuilt("target=gap9", "model=simplecnn", "platform=emul", "-j2")
    assert "Test PASSED [gap9] simplecnn" in first.stdout
    project.scons("target=gap9", "model=simplecnn", "platform=emul", "export")
    src = project.file(f"{b}/emul/export")
    _no_paths(src, project.path)
    _no_paths(src, project.origin)         # where the prebuilt copy's first build ran
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


def _make_vars(makefile_dir, fragment, names) -> dict:
    """{name: words} of the Make variables an application Makefile in makefile_dir gets from
    `include <fragment>` (make's own reading: the fragment's $(MAKEFILE_LIST) path)."""
    app = os.path.join(makefile_dir, "Makefile")
    with open(app, "w") as f:
        f.write(f"include {fragment}\n\nprint:\n" + "".join(f"\t@echo '{n}=$({n})'\n" for n in names))
    out = subprocess.run(["make", "-s", "-f", app, "print"], cwd=makefile_dir, stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    return {line.split("=", 1)[0]: line.split("=", 1)[1].split() for line in out.splitlines()}


def test_gap9_export_gap_sdk_fragment_lists_a_real_gap9_build(project, tmp_path):
    """gap_sdk.mk, included from a GAP SDK application Makefile elsewhere: the library's
    sources (the ones the gvsoc platform compiles, no PMSIS emulation), its include folders,
    the defines of a real GAP9 build and the weights as READFS_FILES, every path in the
    copied export.  (No GAP SDK here: make reads the fragment, pmsis_rules.mk is not run.)"""
    from nnscons.targets.gap9 import platforms
    project.scons("target=gap9", "model=simplecnn", "platform=emul", "export")
    src = project.file("build/gap9/simplecnn/emul/export")
    _no_paths(src, project.path)
    nns = tmp_path / "vendor" / "nns"
    shutil.copytree(src, nns)
    app = tmp_path / "app"
    app.mkdir()
    v = _make_vars(str(app), "../vendor/nns/gap_sdk.mk", ["APP_SRCS", "APP_INC", "APP_CFLAGS", "READFS_FILES"])
    root = os.path.realpath(nns)
    for name in ("APP_SRCS", "APP_INC", "READFS_FILES"):
        assert v[name] and all(os.path.realpath(p).startswith(root + os.sep) and os.path.exists(p)
                               for p in v[name]), (name, v[name])
    rel = lambda name: {os.path.relpath(os.path.realpath(p), root) for p in v[name]}
    srcs = rel("APP_SRCS")
    for stand_in in ("kernels/gap9/emul", "kernels/gap9/open", "kernels/gap9/qemu"):
        assert not [s for s in srcs | rel("APP_INC") if s.startswith(stand_in)], stand_in
    # the emul archive's sources but the emulation's: the Makefile lists them as objects
    mk = (nns / "Makefile").read_text()
    lib = {line.strip().rstrip(" \\")[len("obj/"):-2] for line in mk.splitlines() if line.startswith("\tobj/")}
    emul = {os.path.splitext(os.path.relpath(f, platforms.EMUL_DIR))[0] for f in platforms.emul_sources("emul")}
    assert {os.path.splitext(s)[0] for s in srcs} == {x for x in lib if not x.startswith("kernels/gap9/emul/")}
    assert emul and all(f"kernels/gap9/emul/{e}" in lib for e in emul)
    assert {"src/nns_simplecnn.c", "src/nns_simplecnn_api.c", "src/layers/conv1.c", "kernels/gap9/nn_gap9.c"} <= srcs
    assert rel("APP_INC") == {"include", "src", "kernels/common", "kernels/gap9"}
    assert rel("READFS_FILES") == {f"weights/{w}" for w in os.listdir(nns / "weights")}
    flags = v["APP_CFLAGS"]
    assert "-DNN_XPULP_BUILTIN" in flags and "-DNN_NUM_CORES=8" in flags
    assert not [f for f in flags if f.startswith(("-DNN_EMUL", "-m", "-pthread", "--specs", "-Werror"))], flags


def _kendryte_sdk():
    """The Kendryte standalone SDK: $KENDRYTE_SDK, or the archive next to the checkout
    (../shared/kendryte, as tests/test_k210_board.py's notes describe); None when neither."""
    sdk = os.environ.get("KENDRYTE_SDK", "")
    if os.path.isfile(os.path.join(sdk, "cmake", "common.cmake")):
        return sdk, None
    import glob
    found = sorted(glob.glob(os.path.join(ROOT, "..", "shared", "kendryte", "kendryte-standalone-sdk-*.tar.xz")))
    return None, (found[0] if found else None)


def test_k210_export_kendryte_sdk_fragment_builds_in_an_sdk_project(project, tmp_path):
    """kendryte_sdk.cmake: nns_<m> from the export's sources with the board's KPU HAL
    (kpu_board.c, never the emulator's kpu_emul.c), the weights' .S files with their include
    path; every listed file in the copy.  With the real Kendryte SDK (its archive beside the
    checkout) and riscv64-unknown-elf-gcc, a minimal SDK project (the SDK's common.cmake)
    includes it and builds the library: single-float objects throughout, and what the archive
    leaves undefined is libc's or the SDK drivers'."""
    import re
    project.scons("target=k210", "model=simplecnn", "platform=emul", "export")
    src = project.file("build/k210/simplecnn/emul/export")
    _no_paths(src, project.path)
    nns = tmp_path / "app" / "nns"
    shutil.copytree(src, nns)
    text = (nns / "kendryte_sdk.cmake").read_text()
    listed = re.findall(r"\$\{NNS_SIMPLECNN_DIR\}/(\S+?)(?=[\s)\"])", text)
    assert listed and all((nns / p).exists() for p in listed), [p for p in listed if not (nns / p).exists()]
    sources = set(re.search(r"add_library\(nns_simplecnn STATIC\n(.*?)\n\)", text, re.S).group(1).split())
    sources = {s.replace("${NNS_SIMPLECNN_DIR}/", "") for s in sources}
    assert "kernels/k210/kpu_board.c" in sources and "kernels/k210/kpu_emul.c" not in sources
    assert "kpu_emul" not in text and "kernels/k210/kpu_hal.h" in _snapshot(nns)
    mk = (nns / "Makefile").read_text()
    lib = {line.strip().rstrip(" \\")[len("obj/"):-2] for line in mk.splitlines() if line.startswith("\tobj/")}
    assert {os.path.splitext(s)[0] for s in sources} == (lib - {"kernels/k210/kpu_emul"}) | {"kernels/k210/kpu_board"}
    assert "-Wa,-I${NNS_SIMPLECNN_DIR}/weights" in text

    sdk, archive = _kendryte_sdk()
    tools = [t for t in ("riscv64-unknown-elf-gcc", "cmake") if not shutil.which(t)]
    if tools or not (sdk or archive):
        pytest.skip(f"content checked; no SDK build: {', '.join(tools) or 'no Kendryte SDK (KENDRYTE_SDK, ../shared/kendryte)'}")
    if not sdk:
        subprocess.run(["tar", "-xJf", archive, "-C", str(tmp_path)], check=True)
        sdk = str(tmp_path / "kendryte-standalone-sdk")
    app = tmp_path / "app"
    (app / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.13)\n"
        "include(${SDK}/cmake/common.cmake)\n"
        "project(app C ASM)\n"
        "# Debian's riscv64-unknown-elf-gcc, not the Kendryte toolchain: picolibc's headers, gcc 12's ISA names\n"
        "add_compile_flags(BOTH --specs=picolibc.specs -march=rv64imafc_zicsr_zifencei)\n"
        "include(${SDK}/cmake/macros.internal.cmake)\n"
        "header_directories(${SDK_ROOT}/lib/drivers/include)\n"
        "header_directories(${SDK_ROOT}/lib/bsp/include)\n"
        "header_directories(${SDK_ROOT}/lib/utils/include)\n"
        "include(${CMAKE_CURRENT_SOURCE_DIR}/nns/kendryte_sdk.cmake)\n")
    gcc = shutil.which("riscv64-unknown-elf-gcc")
    subprocess.run(["cmake", "-S", str(app), "-B", str(app / "b"), f"-DSDK={sdk}",
                    f"-DTOOLCHAIN={os.path.dirname(gcc)}"], check=True, stdout=subprocess.DEVNULL)
    r = subprocess.run(["cmake", "--build", str(app / "b")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    assert r.returncode == 0, r.stdout[-3000:]
    a = app / "b" / "libnns_simplecnn.a"
    assert a.is_file()
    flags = subprocess.run(["riscv64-unknown-elf-readelf", "-h", str(a)], stdout=subprocess.PIPE, text=True,
                           check=True).stdout
    abis = {line.split(":", 1)[1].strip() for line in flags.splitlines() if "Flags:" in line}
    assert len(abis) == 1 and "single-float ABI" in abis.pop()
    nm = subprocess.run(["riscv64-unknown-elf-nm", str(a)], stdout=subprocess.PIPE, text=True, check=True).stdout
    undefined = {w[1] for w in (l.split() for l in nm.splitlines()) if len(w) == 2 and w[0] == "U"}
    defined = {w[2] for w in (l.split() for l in nm.splitlines()) if len(w) == 3}
    drivers = "".join(open(os.path.join(sdk, "lib", "drivers", f)).read()
                      for f in os.listdir(os.path.join(sdk, "lib", "drivers")) if f.endswith(".c"))
    libc = {"memcpy", "memset", "memmove", "memcmp"}
    missing = [s for s in undefined - defined - libc if not re.search(rf"\b{s}\s*\([^;]*\)\s*\{{", drivers)]
    assert not missing, missing
