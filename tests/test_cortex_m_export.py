"""The cortex-m standalone export (the `export` alias) carries the CMSIS-NN sources the
model's layers call (and no others), CMSIS-NN's and CMSIS Core's headers and licenses: a
copy of it builds lib/libnns_<m>.a with its CMakeLists.txt (toolchain.cmake) and with its
Makefile, and that archive, linked with the project's harness and start-up, passes on qemu."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess

import pytest

import cmsis_project
from conftest import ROOT, Project, _ignore

CC, QEMU = "arm-none-eabi-gcc", "qemu-system-arm"
pytestmark = [
    pytest.mark.xdist_group("cortex-m-export-proj"),   # the module's fixture (compiled or built once) on one worker
    pytest.mark.skipif(not (shutil.which(CC) and shutil.which(QEMU) and shutil.which("cmake")),
                       reason="needs arm-none-eabi-gcc, cmake and qemu-system-arm (Debian: apt-get install "
                              "gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm cmake)"),
    pytest.mark.skipif(len(cmsis_project.ARCHIVES) != 2, reason=cmsis_project.MISSING),
]


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cmexport")
    dst = tmp / "proj"
    shutil.copytree(ROOT, dst, ignore=_ignore)
    with cmsis_project.environ(cmsis_project.unpack(tmp)):
        yield Project(dst)


@pytest.mark.parametrize("target, model, machine", [("cortex-m4", "simplecnn", "mps2-an386"),
                                                    ("cortex-m55", "ic_resnet8", "mps3-an547")])
def test_export_carries_cmsis_nn_builds_alone_and_passes(proj, tmp_path, target, model, machine):
    proj.scons(f"target={target}", f"model={model}", "export", "codegen", "weights", "goldens", timeout=1800)
    b = proj.file(f"build/{target}/{model}")
    copy = tmp_path / "nns"
    shutil.copytree(os.path.join(b, "export"), copy)
    srcs = sorted(os.path.relpath(p, copy) for p in glob.glob(str(copy / "cmsis-nn" / "Source" / "**" / "*.c"),
                                                               recursive=True))
    assert "cmsis-nn/Source/ConvolutionFunctions/arm_convolve_wrapper_s8.c" in srcs, srcs
    assert not any("transpose" in s or "lstm" in s or "svdf" in s for s in srcs), srcs   # only what is called
    assert (copy / "cmsis-nn" / "LICENSE").is_file() and (copy / "cmsis-core" / "Include" / "cmsis_compiler.h").is_file()
    for text in ((copy / "Makefile").read_text(), (copy / "CMakeLists.txt").read_text()):
        assert os.path.dirname(ROOT) not in text and "/tools/cmsis" not in text, text   # nothing outside the copy
    subprocess.run(["cmake", "-S", str(copy), "-B", str(tmp_path / "cm"),
                    f"-DCMAKE_TOOLCHAIN_FILE={copy / 'toolchain.cmake'}"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(tmp_path / "cm"), "-j2"], check=True, stdout=subprocess.DEVNULL)
    lib = tmp_path / "cm" / f"libnns_{model}.a"
    assert lib.is_file()
    subprocess.run(["make", "-C", str(copy), "-j2"], check=True, stdout=subprocess.DEVNULL)
    # the export's archive in the firmware: the harness and start-up as the qemu build links them
    import sys
    sys.path.insert(0, os.path.join(ROOT, "site_scons"))
    from nnscons.targets.cortex_m import CPUS
    flags = CPUS[target]["flags"] + ["-mthumb", "-O2"]
    kern = proj.file("kernels/cortex_m")
    elf = str(tmp_path / "fw.elf")
    subprocess.run([CC, *flags, "-I", os.path.join(b, "include"), "-I", kern, os.path.join(b, "src", "main.c"),
                    *[os.path.join(kern, s) for s in ("nn_cm_start.c", "nn_cm_semihost.c", "nn_cm_counter.c")],
                    str(lib), "-lm", "-nostartfiles", "-T", os.path.join(b, "link.ld"), "-Wl,--gc-sections",
                    "-Wl,--no-warn-execstack", "--specs=nano.specs", "-o", elf], check=True)
    out = subprocess.run([QEMU, "-M", machine, "-nographic", "-monitor", "none", "-serial", "none",
                          "-semihosting-config", f"enable=on,target=native,arg=firmware,arg=bin,arg={tmp_path}/out.bin",
                          "-kernel", elf], cwd=b, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=600).stdout
    assert "Test PASSED" in out, out[-3000:]
