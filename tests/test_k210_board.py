"""platform=board proven with fake Kendryte tools (tests/fixtures/k210_sdk): the SDK CMake
project nnscons writes, the cmake and kflash command lines, and how the serial log is read.
The fakes never make a check pass by themselves: the canned serial log is the emul run's
log, and a wrong one fails the check."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from conftest import SCONS, Project, _ignore, ROOT

OUT = "build/k210/simplecnn"


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    dst = tmp_path_factory.mktemp("k210board") / "proj"
    shutil.copytree(ROOT, dst, ignore=_ignore)
    return Project(dst)


def scons(p: Project, *args, sdk=True, log=None, calls=None):
    fx = p.file("tests/fixtures/k210_sdk")
    env = {k: v for k, v in os.environ.items() if k not in ("KENDRYTE_SDK", "KENDRYTE_TOOLCHAIN")}
    env["PATH"] = os.pathsep.join([os.path.join(fx, "bin"), "/usr/bin", "/bin"])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if sdk:
        env.update(KENDRYTE_SDK=os.path.join(fx, "sdk"), KENDRYTE_TOOLCHAIN=os.path.join(fx, "toolchain", "bin"))
    if log is not None:
        p.write("build/canned.log", log)
        env["FAKE_KFLASH_LOG"] = p.file("build/canned.log")
    if calls is not None:
        env["FAKE_K210_LOG"] = calls
    return subprocess.run([SCONS, "-Q", "target=k210", "model=simplecnn", *args], cwd=p.path, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)


def test_board_without_sdk_is_one_clear_error(proj):
    r = scons(proj, "platform=board", sdk=False)
    assert r.returncode == 2, r.stdout
    assert "KENDRYTE_SDK" in r.stdout and "Traceback" not in r.stdout


def test_board_flow_commands_and_serial_log(proj, tmp_path):
    r = scons(proj, "platform=emul")
    assert r.returncode == 0, r.stdout
    serial = proj.read(f"{OUT}/emul/run.log")
    calls = str(tmp_path / "calls.jsonl")
    r = scons(proj, "platform=board", log=serial, calls=calls)
    assert r.returncode == 0, r.stdout
    assert "Test PASSED [k210] simplecnn" in r.stdout
    rec = [json.loads(line) for line in open(calls)]
    assert [c["tool"] for c in rec] == ["cmake", "cmake", "kflash"]
    conf = rec[0]["argv"]
    bdir = os.path.join(proj.path, OUT, "board")
    assert conf[:4] == ["-S", os.path.join(OUT, "board"), "-B", os.path.join(OUT, "board", "cmake")]
    assert f"-DSDK={proj.file('tests/fixtures/k210_sdk/sdk')}" in conf and "-DPROJ=nns_simplecnn" in conf
    assert rec[1]["argv"] == ["--build", os.path.join(OUT, "board", "cmake")]
    assert rec[2]["argv"] == ["-p", "/dev/ttyUSB0", "-b", "1500000", "-B", "goE", "-t",
                              os.path.join(bdir, "cmake", "nns_simplecnn.bin")]
    cm = proj.read(f"{OUT}/board/CMakeLists.txt")
    assert 'include("${SDK}/cmake/common.cmake")' in cm and 'include("${SDK}/cmake/executable.cmake")' in cm
    assert "kernels/k210/kpu_board.c" in cm and "kernels/k210/kpu_emul.c" not in cm
    assert proj.path not in cm                              # relative paths only
    # the weights are linked in through the library's .S files; bins.S holds what the harness reads
    bins = proj.read(f"{OUT}/board/bins.S")
    assert '.incbin "golden/conv1.bin"' in bins and "weights/" not in bins
    assert "src/weights/conv1.S" in cm and "src/nns_simplecnn.c" in cm and "src/nns_simplecnn_api.c" in cm


def test_board_wrong_serial_log_fails_the_check(proj):
    assert scons(proj, "platform=emul").returncode == 0
    serial = proj.read(f"{OUT}/emul/run.log")
    assert scons(proj, "platform=board", log=serial).returncode == 0
    bad = serial.replace("layer 2 conv2: OK", "layer 2 conv2: MISMATCH 3/3136 elements, max |diff| 1, "
                                                "first at 0 (got 1, want 0)")
    os.remove(proj.file(f"{OUT}/board/run.log"))    # the canned log is no dependency: run again
    r = scons(proj, "platform=board", log=bad)
    assert r.returncode != 0
    assert "first wrong layer #2 'conv2'" in r.stdout


def test_board_program_with_embedded_bins_runs_on_qemu(proj, tmp_path):
    """The board's program (the library's sources, main.c with NN_BINS_EMBEDDED, bins.S) built
    for rv64 with the KPU emulator instead of kpu_board.c, on qemu: the embedded-data path the
    board uses is bit exact."""
    from nnscons.targets.k210 import board, platforms
    assert scons(proj, "platform=emul").returncode == 0
    p = lambda rel: proj.file(rel)  # noqa: E731
    layers = sorted(f for f in os.listdir(p(f"{OUT}/src/layers")) if f.endswith(".c"))
    names = ["input"] + [f"golden/{os.path.splitext(f)[0]}" for f in layers]
    (tmp_path / "bins.S").write_text(board.bins_asm(names))
    x = platforms.cross_flags("riscv64-unknown-elf-gcc")
    weights = sorted(os.listdir(p(f"{OUT}/src/weights")))
    srcs = ([p(f"{OUT}/src/layers/{f}") for f in layers] + [p(f"{OUT}/src/weights/{f}") for f in weights]
            + [p(f"{OUT}/src/{f}") for f in ("nns_simplecnn.c", "nns_simplecnn_api.c", "main.c")]
            + [p(f"kernels/common/{k}") for k in ("nn_conv2d.c", "nn_linear.c", "nn_pool.c", "nn_eltwise.c")]
            + [p("kernels/k210/kpu_layout.c"), p("kernels/k210/kpu_emul.c"), str(tmp_path / "bins.S")])
    elf = str(tmp_path / "board.elf")
    link = [f for f in x["LINKFLAGS"] if f not in x["CFLAGS"]]        # the target flags once
    subprocess.run(["riscv64-unknown-elf-gcc", *x["CFLAGS"], *link, "-DNN_BINS_EMBEDDED",
                    f"-I{p('kernels/common')}", f"-I{p('kernels/k210')}", f"-I{p(OUT + '/include')}",
                    f"-Wa,-I{p(OUT + '/bin')}", f"-Wa,-I{p(OUT + '/bin/weights')}", *srcs, "-o", elf], check=True)
    r = subprocess.run(platforms.qemu_command(elf), cwd=str(tmp_path), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    assert "Test PASSED" in r.stdout and r.returncode == 0, r.stdout[-2000:]


def test_board_image_too_big_for_the_sram_is_a_clear_error(proj):
    r = subprocess.run([SCONS, "-Q", "target=k210", "model=mobilenetv1", "platform=board"], cwd=proj.path,
                       env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 2 and "Traceback" not in r.stdout
    assert "platform=board: the firmware image with every layer's golden does not fit" in r.stdout
    assert "goldens 3,784,552 B" in r.stdout
