"""cortex-m platform=board: the generated firmware project (Makefile and CMakeLists.txt
over the model's library, the harness, the start-up and a linker script, the user's or the
project's), built by make or cmake; the `flash` alias through a fake openocd that runs the
programmed ELF on qemu's MPS2 Cortex-M4 board (the board's stand-in, semihosting as
openocd serves it) and a fake pyocd that records its commands; clear errors for a missing
flasher configuration or linker script."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

import cmsis_project
from conftest import ROOT, Project, _ignore

CC, QEMU = "arm-none-eabi-gcc", "qemu-system-arm"
FAKES = os.path.join(ROOT, "tests", "cortex_m")
pytestmark = [
    pytest.mark.xdist_group("cortex-m-board-proj"),   # the module's fixture (compiled or built once) on one worker
    pytest.mark.skipif(not (shutil.which(CC) and shutil.which(QEMU) and shutil.which("make")),
                       reason="needs arm-none-eabi-gcc, make and qemu-system-arm (Debian: apt-get install "
                              "gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm make)"),
    pytest.mark.skipif(len(cmsis_project.ARCHIVES) != 2, reason=cmsis_project.MISSING),
]

TARGETS = {
    "cmb-ocd": "    board: {openocd: %(fakes)s/fake_openocd, openocd_config: [board/fake.cfg]}\n",
    "cmb-cmake": "    board: {build: cmake, linker_script: boards/mine.ld}\n",
    "cmb-pyocd": "    board: {flasher: pyocd, pyocd: %(fakes)s/fake_pyocd, pyocd_target: stm32f429xi}\n",
    "cmb-noconf": "    board: {openocd: %(fakes)s/fake_openocd}\n",
    "cmb-noscript": "    board: {linker_script: boards/missing.ld}\n",
}


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cmboard")
    dst = tmp / "proj"
    shutil.copytree(ROOT, dst, ignore=_ignore)
    env = dict(cmsis_project.unpack(tmp), FAKE_OPENOCD_LOG=tmp / "openocd.log", FAKE_PYOCD_LOG=tmp / "pyocd.log")
    with cmsis_project.environ(env):
        yield _project(dst), tmp


def _project(dst) -> Project:
    """The copy with the board targets (fake flashers) in its manifest."""
    p = Project(dst)
    text = p.read("targets.yaml")
    entries = "".join(f"  {name}:\n    kind: cortex-m\n    toolchain: {{cpu: cortex-m4}}\n    run: {{platform: board}}\n"
                      + body % {"fakes": FAKES} for name, body in TARGETS.items())
    p.write("targets.yaml", text.replace("\ntargets:\n", "\ntargets:\n" + entries, 1))
    return p


def test_default_build_is_the_image_from_the_generated_makefile(proj):
    p, _ = proj
    proc = p.scons("target=cmb-ocd", "model=simplecnn")
    assert "BOARD-BUILD firmware.elf [cmb-ocd]" in proc.stdout and "FLASH" not in proc.stdout, proc.stdout
    b = "build/cmb-ocd/simplecnn/board"
    make = p.read(f"{b}/Makefile")
    assert "LDSCRIPT ?= ../link.ld" in make and "LIB = ../lib/libnns_simplecnn.a" in make, make
    assert os.path.isfile(p.file(f"{b}/firmware.elf"))
    # the same project builds by hand, outside nnscons, into the same kind of image
    out = subprocess.run(["make", "-B", "-C", p.file(b), "firmware.elf"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    assert out.returncode == 0, out.stdout
    syms = subprocess.run(["arm-none-eabi-nm", p.file(f"{b}/firmware.elf")], stdout=subprocess.PIPE, text=True).stdout
    assert "arm_convolve_wrapper_s8" in syms and "nn_cm_reset" in syms


def test_flash_through_openocd_runs_and_checks_the_board(proj):
    p, tmp = proj
    proc = p.scons("target=cmb-ocd", "model=simplecnn", "check")
    assert "Test PASSED [cmb-ocd] simplecnn" in proc.stdout, proc.stdout[-3000:]
    log = p.read("build/cmb-ocd/simplecnn/board/run.log")
    assert "Test PASSED" in log and "measure 0 ticks=" in log, log
    args = (tmp / "openocd.log").read_text().splitlines()[-1]
    assert "'program board/firmware.elf verify reset'" in args and "'-f', 'board/fake.cfg'" in args, args
    report = json.loads(p.read("build/cmb-ocd/simplecnn/board/report.json"))
    assert report["passed"] and report["platform"] == "board"


@pytest.mark.skipif(not shutil.which("cmake"), reason="needs cmake (Debian: apt-get install cmake)")
def test_cmake_project_with_the_users_linker_script(proj):
    p, _ = proj
    p.scons("target=cmb-ocd", "model=simplecnn")       # the project's script, as a start for the user's
    script = p.read("build/cmb-ocd/simplecnn/link.ld").replace("16 KiB stack", "16 KiB stack (mine)")
    p.write("boards/mine.ld", script)
    proc = p.scons("target=cmb-cmake", "model=simplecnn")
    assert "BOARD-BUILD" in proc.stdout
    b = "build/cmb-cmake/simplecnn/board"
    assert 'set(LDSCRIPT "${CMAKE_CURRENT_SOURCE_DIR}/../../../../boards/mine.ld"' in p.read(f"{b}/CMakeLists.txt")
    out = subprocess.run([QEMU, "-M", "mps2-an386", "-nographic", "-monitor", "none", "-serial", "none",
                          "-semihosting-config", "enable=on,target=native,arg=firmware,arg=bin,arg=board/out.bin",
                          "-kernel", "board/firmware.elf"], cwd=p.file("build/cmb-cmake/simplecnn"),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300).stdout
    assert "Test PASSED" in out, out


def test_flash_through_pyocd_programs_and_resets(proj):
    p, tmp = proj
    p.scons("target=cmb-pyocd", "model=simplecnn", "flash")
    calls = (tmp / "pyocd.log").read_text().splitlines()
    assert calls == ["load -t stm32f429xi board/firmware.elf", "reset -t stm32f429xi"], calls


@pytest.mark.parametrize("target, words", [
    ("cmb-noconf", ["flash: no openocd configuration: set targets.cmb-noconf.board.openocd_config"]),
    ("cmb-noscript", ["targets.cmb-noscript.board.linker_script: 'boards/missing.ld' is not a file",
                      "__stack_top"]),
])
def test_clear_errors(proj, target, words):
    p, _ = proj
    proc = p.scons(f"target={target}", "model=simplecnn", "flash", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out[-3000:]
    for w in words:
        assert w in out, out[-3000:]


def test_flash_runs_several_inputs_and_outputs_as_on_qemu(proj):
    """The board's harness is qemu's: two_by_three's two inputs from input.bin, its three outputs
    cut into board/output.npz, equal to the reference that computes the CMSIS-NN layers by
    TFLite's rule (tests/test_multi_io.py: the same on qemu)."""
    import numpy as np
    from conftest import adhoc
    from test_multi_io import OUTPUTS, _inputs, two_by_three
    from nnscons import reference
    from nnscons.frontends import load_model
    from nnscons.targets.cortex_m import rules
    p, _ = proj
    f = two_by_three(p.file("mio.onnx"))
    x = _inputs(13)
    np.savez(p.file("mio.npz"), **x)
    proc = p.scons("target=cmb-ocd", f"model={f}", "input=mio.npz", "check")
    assert "Test PASSED [cmb-ocd] mio: all 8 layers match" in proc.stdout, proc.stdout[-3000:]
    b = os.path.join(adhoc(p, "cmb-ocd", "mio"), "board")
    out = np.load(p.file(os.path.join(b, "output.npz")))
    assert out.files == OUTPUTS
    g = load_model(f, name="mio")
    report = json.loads(p.read(os.path.join(b, "report.json")))
    switched = {layer["name"] for layer in report["layers"] if layer.get("rule") == "tflite"}
    assert {"conv_img", "conv_aux", "fuse"} <= switched
    ref = rules.reference(switched, rules.tflite_view(g))(g, reference.quantize_input(g, x))
    for t in OUTPUTS:
        np.testing.assert_array_equal(out[t], reference.dequantize(g.tensor(t), ref[t]), err_msg=t)
