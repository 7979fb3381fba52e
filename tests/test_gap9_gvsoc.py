"""platform=gvsoc proven with fake GAP SDK tools (tests/fixtures/gap_sdk).

The fakes record their command lines (FAKE_GAP_LOG) and the fake gapy prints a canned log
(FAKE_GVSOC_LOG) with a chosen exit status, so these tests check the commands nnscons
issues and how it reads gvsoc's log; they never make a check pass by themselves: the
canned logs are built from the golden files and a wrong one fails (test_mismatch_...).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import SCONS, Project, _ignore, ROOT

MODEL = "simplecnn"
OUT = f"build/gap9/{MODEL}"
ARCH = ["-march=rv32imcxgap9", "-mPE=8", "-mFC=1", "-mint64"]


pytestmark = pytest.mark.xdist_group("gap9-gvsoc-proj")   # the module's fixture (compiled or built once) on one worker


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    """One project copy for the module (the fake-SDK builds share codegen and goldens)."""
    dst = tmp_path_factory.mktemp("gvsoc") / "proj"
    shutil.copytree(ROOT, dst, ignore=_ignore)
    return Project(dst)


def fake(p: Project):
    return {"sdk": p.file("tests/fixtures/gap_sdk/sdk"), "tc": p.file("tests/fixtures/gap_sdk/toolchain")}


def scons(p: Project, *args, sdk=True, log=None, status=0, calls=None, path_extra=()):
    env = {k: v for k, v in os.environ.items()
           if k not in ("GAP_SDK_HOME", "GAP_RISCV_GCC_TOOLCHAIN", "FAKE_GVSOC_LOG", "FAKE_GVSOC_STATUS")}
    env["PATH"] = os.pathsep.join(list(path_extra) + ["/usr/bin", "/bin"])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if sdk:
        f = fake(p)
        env.update(GAP_SDK_HOME=f["sdk"], GAP_RISCV_GCC_TOOLCHAIN=f["tc"])
    if log is not None:
        p.write("build/canned.log", log)
        env.update(FAKE_GVSOC_LOG=p.file("build/canned.log"), FAKE_GVSOC_STATUS=str(status))
    if calls is not None:
        env["FAKE_GAP_LOG"] = calls
    return subprocess.run([SCONS, "-Q", "target=gap9", f"model={MODEL}", *args], cwd=p.path, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)


def recorded(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def layer_order(p: Project) -> list:
    return re.findall(r'\{ "(\w+)", "[^"]*", \d+, layer_', p.read(f"{OUT}/src/nns_{MODEL}.c"))


def canned_log(p: Project, wrong=None) -> str:
    """A gvsoc log as the firmware prints it, its output lines taken from the last golden."""
    order = layer_order(p)
    lines = ["[GVSOC] starting gap9.evk", f"nnscons run: {len(order)} layers"]
    for i, c in enumerate(order):
        lines.append(f"layer {i} {c}: MISMATCH 3/784 elements, max |diff| 2, first at 5 (got 1, want 3)"
                     if c == wrong else f"layer {i} {c}: OK")
    out = p.read(f"{OUT}/bin/{order[-1]}_golden.bin", "rb")
    lines += [f"output {k} {out[k:k + 32].hex()}" for k in range(0, len(out), 32)]
    lines.append("Test FAILED: 1 layer(s) wrong" if wrong else "Test PASSED")
    return "\n".join(lines) + "\n"


def fresh_run(p: Project):
    for f in ("run.log", "check.txt"):
        if os.path.exists(p.file(f"{OUT}/gvsoc/{f}")):
            os.remove(p.file(f"{OUT}/gvsoc/{f}"))


def test_gvsoc_compile_link_run_commands_and_passing_log(proj):
    r = scons(proj, "platform=gvsoc", "codegen", "weights", "goldens")
    assert r.returncode == 0, r.stdout
    calls = proj.file("build/calls.jsonl")
    r = scons(proj, "platform=gvsoc", log=canned_log(proj), calls=calls)
    assert r.returncode == 0, r.stdout
    assert f"Test PASSED [gap9] {MODEL}" in r.stdout
    sdk = fake(proj)["sdk"]
    rel = "tests/fixtures/gap_sdk/sdk"      # SCons writes paths under the project relative
    rec = recorded(calls)
    cc = [c["argv"] for c in rec if c["tool"] == "cc"]
    compiles = {a[a.index("-o") + 1]: a for a in cc if "-c" in a}
    # one compile node per layer, with the SDK's compiler, arch, defines and include dirs
    for cname in layer_order(proj):
        obj = f"{OUT}/gvsoc/obj/layers/{cname}.o"
        argv = compiles[obj]
        assert argv[-1] == f"{OUT}/src/layers/{cname}.c"
        for flag in ARCH + ["-D__riscv__", "-D__GAP9__", "-DCHIP_VERSION=2", "-D__PLATFORM_GVSOC__",
                            "-D__PLATFORM__=ARCHI_PLATFORM_GVSOC", "-DNN_NUM_CORES=8",
                            "-DNN_XPULP_BUILTIN", f"-I{rel}/rtos/pmsis/api/include", "-Ikernels/gap9", f"-I{OUT}/src"]:
            assert flag in argv, (flag, argv)
        assert "-Werror" not in argv
    # the SDK runtime from its src.mk lists: conditionals, comments, filter-out, foreach honoured
    sources = {a[-1] for a in compiles.values()}
    g = f"{rel}/rtos/freeRTOS/vendors/gwt"
    for src in (f"{rel}/rtos/freeRTOS/freertos_kernel/tasks.c", f"{g}/gap9/src/device/system_gap9.c",
                f"{g}/gap9/pmsis/cluster/cl_team.c", f"{g}/pmsis/rtos/pi_log.c",
                f"{rel}/rtos/pmsis/bsp/fs/read_fs/read_fs.c", f"{g}/libs/printf/printf.c"):
        assert src in sources, src
    for src in (f"{g}/gap9/pmsis/drivers/pwm/pwm.c", f"{rel}/rtos/pmsis/bsp/camera/camera.c"):
        assert src not in sources, src
    # the link: the SDK's link script, no start files, libgcc, every object
    link = [a for a in cc if "-c" not in a]
    assert len(link) == 1
    link = link[0]
    assert link[:2] == ["-o", f"{OUT}/gvsoc/firmware"]
    ga = f"{sdk}/rtos/freeRTOS/vendors/gwt"
    for flag in ARCH + [f"-T{ga}/gap9/src/device/ld/GAP9.ld", "-nostartfiles", "-nostdlib", "-lgcc"]:
        assert flag in link, flag
    # every object in the link, directly or through the library's archive (the SDK's ar)
    ars = [c["argv"] for c in rec if c["tool"] == "ar"]
    assert len(ars) == 1 and ars[0][1] == f"{OUT}/gvsoc/lib/lib{'nns_' + MODEL}.a" and ars[0][1] in link
    assert f"{OUT}/gvsoc/obj/main.o" in link and f"{OUT}/gvsoc/obj/nns_{MODEL}.o" in ars[0]
    assert set(compiles) <= set(link) | set(ars[0][2:])
    # the runtime's assembly: compile nodes of their own, preprocessed with the SDK's flags
    for asm in (f"{g}/gap9/src/device/crt0_gap9.S",
                f"{rel}/rtos/freeRTOS/freertos_kernel/portable/GCC/RI5CY-GAP9/port_asm.S"):
        (argv,) = [a for a in compiles.values() if a[-1] == asm]
        assert "-DASSEMBLY_LANGUAGE" in argv and f"-I{rel}/rtos/pmsis/api/include" in argv
        assert all(flag in argv for flag in ARCH) and argv[argv.index("-o") + 1] in link
    # the run: gapy booting from MRAM with bin/*.bin as the readfs partition
    runs = [c for c in rec if c["tool"] == "gapy"]
    assert len(runs) == 1
    fw, work = proj.file(f"{OUT}/gvsoc/firmware"), proj.file(f"{OUT}/gvsoc/gvsoc_work")
    bins = sorted(f for f in os.listdir(proj.file(f"{OUT}/bin")) if f.endswith(".bin"))
    assert runs[0]["argv"] == (
        ["--target=gap9.evk", "--platform=gvsoc", f"--work-dir={work}",
         f"--target-dir={sdk}/install/workstation/generators", f"--model-dir={sdk}/install/workstation/models",
         "--target-property=boot.flash_device=mram", "--target-property=boot.mode=flash",
         f"--multi-flash-content={sdk}/utils/layouts/default_layout_multi_readfs.json",
         f"--flash-property={fw}@mram:app:binary"]
        + [f"--flash-property={proj.file(f'{OUT}/bin/{b}')}@flash:readfs_flash:files" for b in bins]
        + [f"--flash-property={sdk}/install/target/bin/fsbl@mram:fsbl:binary",
           f"--flash-property={sdk}/install/target/bin/ssbl@mram:ssbl:binary",
           "--py-stack", "image", "flash", "run", f"--binary={fw}"])
    assert runs[0]["cwd"] == work
    # the log's output lines became output.bin: the last layer's golden bytes
    order = layer_order(proj)
    assert proj.read(f"{OUT}/gvsoc/output.bin", "rb") == proj.read(f"{OUT}/bin/{order[-1]}_golden.bin", "rb")


@pytest.mark.parametrize("line,what", [("[pe3] stack overflow detected (sp=0x10000ffc)", "stack overflow"),
                                       ("[fc] Invalid access (pc: 0x1c010a2, addr: 0x0)",
                                        "invalid memory access")])
def test_fatal_pattern_with_exit_status_zero_fails_the_run(proj, line, what):
    assert scons(proj, "platform=gvsoc", "codegen", "weights", "goldens").returncode == 0
    fresh_run(proj)
    log = canned_log(proj).replace("Test PASSED", line + "\nTest PASSED")
    r = scons(proj, "platform=gvsoc", log=log, status=0)
    assert r.returncode != 0
    assert f"RUN FAILED [gap9] on gvsoc: {what}: {line}" in r.stdout
    assert "Traceback" not in r.stdout
    assert not os.path.exists(proj.file(f"{OUT}/gvsoc/check.txt"))


def test_mismatch_in_the_log_fails_the_check(proj):
    assert scons(proj, "platform=gvsoc", "codegen", "weights", "goldens").returncode == 0
    fresh_run(proj)
    wrong = layer_order(proj)[2]
    r = scons(proj, "platform=gvsoc", log=canned_log(proj, wrong=wrong), status=0)
    assert r.returncode != 0
    assert f"CHECK FAILED [gap9] {MODEL}: first wrong layer #2 '{wrong}'" in r.stdout


def test_gvsoc_without_the_sdk_is_one_clear_error(proj):
    before = proj.snapshot()
    r = scons(proj, "platform=gvsoc", sdk=False)
    assert r.returncode == 2, r.stdout
    assert "Traceback" not in r.stdout
    msg = [line for line in r.stdout.splitlines() if "platform=gvsoc" in line]
    assert len(msg) == 1, r.stdout
    for word in ("GAP_SDK_HOME", "GAP_RISCV_GCC_TOOLCHAIN", "source", "platform=emul"):
        assert word in msg[0]
    assert proj.snapshot() == before


def test_gvsoc_with_sdk_but_no_compiler_names_the_compiler(proj):
    r = subprocess.run([SCONS, "-Q", "target=gap9", f"model={MODEL}", "platform=gvsoc"], cwd=proj.path,
                       env=dict(os.environ, PATH="/usr/bin:/bin", GAP_SDK_HOME=fake(proj)["sdk"],
                                GAP_RISCV_GCC_TOOLCHAIN=proj.file("nowhere")),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 2
    assert "riscv32-unknown-elf-gcc" in r.stdout and "Traceback" not in r.stdout


def test_auto_picks_gvsoc_with_the_sdk_and_emul_without_in_one_line(proj):
    for sdk, chosen in ((True, "gvsoc"), (False, "emul")):
        r = scons(proj, "codegen", sdk=sdk)
        assert r.returncode == 0, r.stdout
        lines = [line for line in r.stdout.splitlines() if "platform=auto" in line]
        assert len(lines) == 1 and f"platform=auto -> {chosen}" in lines[0], r.stdout
    # gvsoc/gapy on PATH is enough to be found
    r = scons(proj, "codegen", sdk=False, path_extra=[os.path.dirname(fake(proj)["sdk"] + "/utils/gapy_v2/bin/")])
    assert "platform=auto -> gvsoc" in r.stdout


def test_generated_makefile_builds_and_runs_with_the_sdk_rules(proj):
    assert scons(proj, "platform=gvsoc", "codegen", "weights", "goldens").returncode == 0
    mk = proj.read(f"{OUT}/Makefile")
    assert "include $(RULES_DIR)/pmsis_rules.mk" in mk
    srcs = re.findall(r"^APP_SRCS \+= (\S+)$", mk, re.M)
    expect = (["$(CURDIR)/src/main.c", f"$(CURDIR)/src/nns_{MODEL}.c", f"$(CURDIR)/src/nns_{MODEL}_api.c"]
              + [f"$(CURDIR)/src/layers/{c}.c" for c in layer_order(proj)])
    assert srcs[:len(expect)] == expect
    assert "$(NNSCONS_ROOT)/kernels/gap9/nn_gap9.c" in srcs
    bins = sorted(f for f in os.listdir(proj.file(f"{OUT}/bin")) if f.endswith(".bin"))
    assert sorted(re.findall(r"^READFS_FILES \+= \$\(CURDIR\)/bin/(\S+)$", mk, re.M)) == bins
    # `make all run platform=gvsoc` in the output folder with the (fake) SDK rules
    calls = proj.file("build/make_calls.jsonl")
    f = fake(proj)
    env = dict(os.environ, PATH=os.pathsep.join([f["sdk"] + "/utils/gapy_v2/bin", "/usr/bin", "/bin"]),
               GAP_SDK_HOME=f["sdk"], GAP_RISCV_GCC_TOOLCHAIN=f["tc"], FAKE_GAP_LOG=calls,
               FAKE_GVSOC_LOG=proj.file("build/canned.log"))
    proj.write("build/canned.log", canned_log(proj))
    r = subprocess.run(["make", "-C", proj.file(OUT), "all", "run", "platform=gvsoc"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert r.returncode == 0, r.stdout
    assert "Test PASSED" in r.stdout
    rec = recorded(calls)
    compiled = {c["argv"][c["argv"].index("-c") + 1] for c in rec if c["tool"] == "cc" and "-c" in c["argv"]}
    assert {os.path.realpath(s) for s in compiled} >= {
        os.path.realpath(proj.file(f"{OUT}/src/layers/{c}.c")) for c in layer_order(proj)} | {
        os.path.realpath(proj.file("kernels/gap9/nn_gap9.c"))}
    run = [c["argv"] for c in rec if c["tool"] == "gapy"][-1]
    readfs = sorted(os.path.basename(a.split("@")[0]) for a in run if a.endswith("@flash:readfs_flash:files"))
    assert readfs == bins
    shutil.rmtree(proj.file(f"{OUT}/BUILD"))


def test_tiling_edit_does_not_regenerate_the_makefile(proj):
    assert scons(proj, "platform=gvsoc", "codegen").returncode == 0
    y = proj.read("targets.yaml")
    proj.write("targets.yaml", y.replace("      host:\n        layers:\n          conv1: {l1_budget: 8KiB}",
                                         "      host:\n        layers:\n          conv1: {l1_budget: 8KiB}\n"
                                         "      gap9:\n        layers:\n          conv1: {l1_budget: 4KiB}"))
    try:
        r = scons(proj, "platform=gvsoc", "codegen")
        assert r.returncode == 0, r.stdout
        assert "CODEGEN conv1 [gap9]" in r.stdout
        assert "CODEGEN Makefile" not in r.stdout
    finally:
        proj.write("targets.yaml", y)
