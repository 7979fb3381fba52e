"""platform=board with the real Kendryte standalone SDK and a real compiler (issue 26).

The image is built as a user builds it: a copy of the project with ../shared/kendryte beside
it (the SDK tarball, unpacked by the build into build/k210/sdk/), Debian's
riscv64-unknown-elf-gcc + picolibc through the project's compatibility layer, cmake, -j2 from
clean, and no kflash anywhere. Only flashing is faked (tests/fixtures/k210_sdk: a kflash that
checks it was handed the .bin of a RISC-V ELF and prints a canned serial log); the fakes never
make a check pass by themselves: the canned log is the emul run's, and a wrong one fails."""
from __future__ import annotations

import glob
import json
import os
import shutil
import struct
import subprocess

import pytest

from conftest import SCONS, Project, _ignore, ROOT

OUT = "build/k210/simplecnn"
TARBALLS = sorted(glob.glob(os.path.join(os.path.dirname(ROOT), "shared", "kendryte",
                                         "kendryte-standalone-sdk-*.tar.xz")))
MISSING = [what for what, ok in (
    ("the SDK tarball ../shared/kendryte/kendryte-standalone-sdk-*.tar.xz", TARBALLS),
    ("riscv64-unknown-elf-gcc", shutil.which("riscv64-unknown-elf-gcc")),
    ("picolibc-riscv64-unknown-elf", os.path.isdir("/usr/lib/picolibc/riscv64-unknown-elf")),
    ("cmake", shutil.which("cmake"))) if not ok]
pytestmark = [pytest.mark.xdist_group("k210board"),
              pytest.mark.skipif(bool(MISSING), reason="needs " + ", ".join(MISSING))]
SRAM_END = 0x80000000 + 6 * 1024 * 1024


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    """A fresh clone's layout: <tmp>/proj and <tmp>/shared/kendryte/<the SDK tarball>."""
    top = tmp_path_factory.mktemp("k210board")
    shutil.copytree(ROOT, top / "proj", ignore=_ignore)
    os.makedirs(top / "shared" / "kendryte")
    os.symlink(TARBALLS[-1], top / "shared" / "kendryte" / os.path.basename(TARBALLS[-1]))
    return Project(top / "proj")


def scons(p: Project, *args, model="simplecnn", fake_kflash=False, log=None, calls=None, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("KENDRYTE_SDK", "KENDRYTE_TOOLCHAIN")}
    path = ["/usr/bin", "/bin"]
    if fake_kflash:
        path.insert(0, p.file("tests/fixtures/k210_sdk/bin"))
    env.update(PATH=os.pathsep.join(path), PYTHONDONTWRITEBYTECODE="1", **(env_extra or {}))
    if log is not None:
        p.write("build/canned.log", log)
        env["FAKE_KFLASH_LOG"] = p.file("build/canned.log")
    if calls is not None:
        env["FAKE_K210_LOG"] = calls
    return subprocess.run([SCONS, "-Q", "target=k210", f"model={model}", *args], cwd=p.path, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)


def set_goldens(p: Project, mode: str):
    """targets.k210.run.goldens in the copy's manifest (auto: the line removed)."""
    lines = [ln for ln in p.read("targets.yaml").splitlines(keepends=True) if not ln.startswith("      goldens: ")]
    run = lines.index("    run:\n", lines.index("  k210:\n"))
    if mode != "auto":
        lines.insert(run + 1, f"      goldens: {mode}\n")
    p.write("targets.yaml", "".join(lines))


def layer_words(p: Project, model: str) -> dict:
    """{layer file: its 12 KPU words} from the generated sources the image is built from."""
    out = {}
    folder = p.file(f"build/k210/{model}/src/layers")
    for f in sorted(os.listdir(folder)):
        text = open(os.path.join(folder, f)).read()
        if "static const uint64_t words[KPU_NUM_WORDS]" in text:
            body = text.split("static const uint64_t words[KPU_NUM_WORDS] = {", 1)[1].split("};", 1)[0]
            out[f] = [int(line.split("u,")[0], 16) for line in body.strip().splitlines()]
    return out


def assert_nncase_words(p: Project, model: str) -> int:
    """Every KPU layer's words equal nncase 1.x's rules (tests/test_k210_nncase_words.py) for its
    shape, with the addresses the source leaves 0; returns the number of KPU layers."""
    from nnscons.targets.k210 import kpu
    from test_k210_nncase_words import IOMEM, nncase_words
    words = layer_words(p, model)
    for f, w in words.items():
        u = kpu.unpack_words(w)
        shape = (u["i_ch_num"] + 1, u["i_col_high"] + 1, u["i_row_wid"] + 1, u["o_ch_num"] + 1,
                 u["o_col_high"] + 1, u["o_row_wid"] + 1, 3 if u["kernel_type"] == 1 else 1,
                 bool(u["depth_wise_layer"]), u["pool_type"])
        quant = {n: u[n] for n in ("shr_w", "shr_x", "arg_w", "arg_x", "arg_add", "pad_value")}
        assert w == nncase_words(*shape, quant, 0, 0, IOMEM, 0, 0), f
    return len(words)


def elf_header(path):
    with open(path, "rb") as f:
        h = f.read(64)
    machine, = struct.unpack_from("<H", h, 18)
    entry, = struct.unpack_from("<Q", h, 24)
    flags, = struct.unpack_from("<I", h, 48)
    return h[:4], machine, entry, flags


def test_board_image_is_built_with_the_real_sdk_from_clean_with_j2(proj):
    """A real ELF/.bin/map from the SDK's CMake project; -j2 from clean with the real compiler:
    the SDK build must wait for the generated header and sources (issue 26's dependency bug)."""
    shutil.rmtree(proj.file("build"), ignore_errors=True)     # from clean, SDK unpack included
    r = scons(proj, "platform=board", "-j2")
    assert r.returncode == 0, r.stdout[-3000:]
    assert "UNPACK kendryte-standalone-sdk-" in r.stdout and "SDK-BUILD nns_simplecnn" in r.stdout
    assert "FLASH" not in r.stdout and not os.path.exists(proj.file(f"{OUT}/board/run.log"))
    assert os.path.isfile(proj.file("build/k210/sdk/kendryte-standalone-sdk/lib/drivers/include/kpu.h"))
    magic, machine, entry, flags = elf_header(proj.file(f"{OUT}/board/firmware.elf"))
    assert magic == b"\x7fELF" and machine == 0xF3 and entry == 0x80000000
    assert flags & 0x6 == 0x2                          # EF_RISCV_FLOAT_ABI_SINGLE: lp64f throughout
    img = json.loads(proj.read(f"{OUT}/board/image.json"))["board_image"]
    assert img["bin_bytes"] == os.path.getsize(proj.file(f"{OUT}/board/firmware.bin")) > 20000
    assert img["contents"]["embedded"] == ["input"] and not img["contents"]["goldens_embedded"]
    assert int(img["sram"]["image_end"], 16) < SRAM_END
    assert img["sram"]["heap_bytes"] >= img["sram"]["heap_needed_bytes"]
    assert "IMAGE simplecnn: firmware.bin" in r.stdout
    mapf = proj.read(f"{OUT}/board/firmware.map")
    for symbol in ("kpu_hal_run", "uarths_putchar", "nns_simplecnn_run", "sysctl_clock_enable"):
        assert symbol in mapf, symbol
    assert "kpu.c.obj" not in mapf                      # nncase's kmodel runtime is not built
    cm = proj.read(f"{OUT}/board/CMakeLists.txt")
    assert 'include("${SDK}/cmake/macros.internal.cmake")' in cm and "kernels/k210/kpu_board.c" in cm
    assert "kernels/k210/kpu_emul.c" not in cm and proj.path not in cm
    assert assert_nncase_words(proj, "simplecnn") == 5
    # no-op: nothing rebuilds
    r = scons(proj, "platform=board", "-j2")
    assert r.returncode == 0 and "SDK-BUILD" not in r.stdout and "UNPACK" not in r.stdout, r.stdout


def test_the_sdk_build_depends_on_the_header_and_every_generated_source(proj):
    r = subprocess.run([SCONS, "-Q", "-n", "--tree=prune", "target=k210", "model=simplecnn", "platform=board",
                        f"{OUT}/board/firmware.elf"], cwd=proj.path, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300,
                       env=dict(os.environ, PATH="/usr/bin:/bin", PYTHONDONTWRITEBYTECODE="1"))
    assert r.returncode == 0, r.stdout[-2000:]
    tree = r.stdout
    for f in ("include/nns_simplecnn.h", "src/main.c", "src/nns_simplecnn.c", "src/nns_simplecnn_api.c",
              "src/layers/conv1.c", "src/weights/conv1.S", "bin/weights/conv1.bin", "bin/input.bin",
              "board/bins.S", "kernels/k210/kpu_hal.h", "sdk_compat/picolibc.cmake",
              "sdk/kendryte-standalone-sdk/cmake/common.cmake"):
        assert f in tree, f


def test_board_and_emul_build_the_same_library(proj):
    """One library, two harnesses: the board's project compiles exactly the sources the emul
    archive compiles (the KPU HAL aside: kpu_board.c for kpu_emul.c; bins.S added), and
    building the board image after emul rewrites none of them."""
    import re
    assert scons(proj, "platform=emul").returncode == 0

    def sources():
        return {os.path.relpath(os.path.join(d, f), proj.path): open(os.path.join(d, f), "rb").read()
                for d, _, fs in os.walk(proj.file(f"{OUT}/src")) for f in fs}
    before = sources()
    assert scons(proj, "platform=board").returncode == 0
    assert sources() == before
    emul = {e["file"] for e in json.loads(proj.read(f"{OUT}/emul/compile_commands.json"))}
    cm = proj.read(f"{OUT}/board/CMakeLists.txt").split("add_source_files(", 1)[1].split(")", 1)[0]
    board = {os.path.normpath(os.path.join(OUT, "board", p))
             for p in re.findall(r"\$\{CMAKE_CURRENT_SOURCE_DIR\}/(\S+)", cm)}
    assert len(emul) >= 10 and "kernels/k210/kpu_board.c" in board
    assert board - {f"{OUT}/board/bins.S", "kernels/k210/kpu_board.c"} == emul - {"kernels/k210/kpu_emul.c"}


def test_a_kernel_edit_rebuilds_the_image_and_explain_says_so(proj):
    assert scons(proj, "platform=board").returncode == 0
    hal = proj.file("kernels/k210/kpu_board.c")
    text = open(hal).read()
    try:
        with open(hal, "a") as f:
            f.write("/* edited */\n")
        r = scons(proj, "platform=board", "explain")
        assert "SDK-BUILD nns_simplecnn: kpu_board.c changed" in r.stdout, r.stdout
        r = scons(proj, "platform=board")
        assert r.returncode == 0 and "SDK-BUILD nns_simplecnn" in r.stdout and "CODEGEN" not in r.stdout
    finally:
        with open(hal, "w") as f:
            f.write(text)


def test_flash_alone_needs_kflash_and_a_port_one_clear_error(proj):
    r = scons(proj, "platform=board", "flash")
    assert r.returncode != 0 and "Traceback" not in r.stdout
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("FLASH FAILED"))
    assert "pip install kflash" in line and "port=" in line and "baud=" in line


def test_check_without_goldens_in_the_image_is_one_clear_error(proj):
    r = scons(proj, "platform=board", "check", "port=/dev/ttyFAKE0")
    assert r.returncode == 2 and "Traceback" not in r.stdout
    assert "the image holds no goldens (run.goldens: none" in r.stdout and "`flash` runs it" in r.stdout


@pytest.mark.slow   # 11.6 s of CPU
def test_flash_commands_and_serial_log_with_embedded_goldens(proj, tmp_path):
    assert scons(proj, "platform=emul").returncode == 0
    serial = proj.read(f"{OUT}/emul/run.log")
    set_goldens(proj, "embedded")
    try:
        calls = str(tmp_path / "calls.jsonl")
        r = scons(proj, "platform=board", "flash", "port=/dev/ttyFAKE0", "baud=115200", fake_kflash=True,
                  log=serial, calls=calls)
        assert r.returncode == 0, r.stdout[-3000:]
        assert "SDK-BUILD" in r.stdout              # goldens embedded: another image
        rec = [json.loads(line) for line in open(calls)]
        assert [c["tool"] for c in rec] == ["kflash"]
        assert rec[0]["argv"] == ["-p", "/dev/ttyFAKE0", "-b", "115200", "-B", "goE", "-t",
                                  proj.file(f"{OUT}/board/firmware.bin")]
        bins = proj.read(f"{OUT}/board/bins.S")
        assert '.incbin "golden/conv1.bin"' in bins and "weights/" not in bins
        img = json.loads(proj.read(f"{OUT}/board/image.json"))["board_image"]
        assert img["contents"]["goldens_embedded"] and len(img["contents"]["embedded"]) > 1
        r = scons(proj, "platform=board", "check", "port=/dev/ttyFAKE0", fake_kflash=True, log=serial)
        assert r.returncode == 0 and "Test PASSED [k210] simplecnn" in r.stdout, r.stdout[-3000:]
        rep = json.loads(proj.read(f"{OUT}/board/report.json"))
        assert rep["board_image"]["bin_bytes"] == os.path.getsize(proj.file(f"{OUT}/board/firmware.bin"))
        assert any(line.startswith("IMAGE simplecnn") for line in rep["summary_lines"])
        bad = serial.replace("layer 2 conv2: OK", "layer 2 conv2: MISMATCH 3/3136 elements, max |diff| 1, "
                                                    "first at 0 (got 1, want 0)")
        os.remove(proj.file(f"{OUT}/board/run.log"))    # the canned log is no dependency: flash again
        r = scons(proj, "platform=board", "check", "port=/dev/ttyFAKE0", fake_kflash=True, log=bad)
        assert r.returncode != 0 and "first wrong layer #2 'conv2'" in r.stdout, r.stdout[-3000:]
    finally:
        set_goldens(proj, "auto")


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


@pytest.mark.slow
def test_mobilenet_v1_075_at_224_board_image_fits_the_k210(proj):
    r = scons(proj, "platform=board", "-j2", model="mobilenetv1")
    assert r.returncode == 0, r.stdout[-3000:]
    img = json.loads(proj.read("build/k210/mobilenetv1/board/image.json"))["board_image"]
    c, sr = img["contents"], img["sram"]
    assert c["kpu_and_cpu_parameters"] == 2_647_752 and c["embedded"] == ["input"]
    assert img["sections"]["rodata"] >= c["kpu_and_cpu_parameters"] + c["embedded_bins"]
    assert int(sr["image_end"], 16) < SRAM_END and sr["heap_bytes"] >= sr["heap_needed_bytes"]
    assert img["ai_ram"]["peak_bytes"] <= img["ai_ram"]["bytes"] == 2 * 1024 * 1024
    assert assert_nncase_words(proj, "mobilenetv1") == 28      # all 27 convs and the fc


def test_mobilenet_with_embedded_goldens_is_refused_clearly(proj):
    set_goldens(proj, "embedded")
    try:
        r = scons(proj, "platform=board", model="mobilenetv1")
    finally:
        set_goldens(proj, "auto")
    assert r.returncode == 2 and "Traceback" not in r.stdout
    assert "run.goldens: embedded: the firmware image with every layer's golden does not fit" in r.stdout
    assert "goldens 3,784,552 B" in r.stdout and "run.goldens: none" in r.stdout


def test_a_folder_that_is_not_the_sdk_is_one_clear_error(proj, tmp_path):
    r = scons(proj, "platform=board", env_extra={"KENDRYTE_SDK": str(tmp_path)})
    assert r.returncode == 2 and "Traceback" not in r.stdout
    assert "is not the Kendryte standalone SDK" in r.stdout and "cmake/common.cmake" in r.stdout


def test_goldens_none_is_for_the_board_only(proj):
    set_goldens(proj, "none")
    try:
        r = scons(proj, "platform=emul")
    finally:
        set_goldens(proj, "auto")
    assert r.returncode == 2 and "run.goldens: none applies to platform=board only" in r.stdout
