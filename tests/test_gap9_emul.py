"""The GAP9 PMSIS emulation (kernels/gap9/emul) natively and on qemu.

C programs in tests/gap9_emul: emul_check.c exercises correct use (fork, barrier, DMA landing
only at wait, 2D DMA, L3, readfs) and must print EMUL-CHECK OK; emul_fail.c runs one misuse per
scenario, which the emulation must reject with exit status 3 and a PMSIS-EMUL ERROR message.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess

import pytest

from nnscons.targets.gap9 import qemu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMUL = os.path.join(ROOT, "kernels", "gap9", "emul")
PROGS = os.path.join(ROOT, "tests", "gap9_emul")
EMUL_SOURCES = sorted(glob.glob(os.path.join(EMUL, "*.c")))

CC = shutil.which("gcc") or shutil.which("cc")
# The emulation is strict C99 (+ pthreads); the test programs pass a function to
# pmsis_kickoff(void *) as PMSIS code does, which -pedantic rejects.
STRICT = ["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror"]
RELAXED = ["-std=gnu99", "-Wall", "-Wextra", "-Werror"]

pytestmark = [pytest.mark.skipif(CC is None, reason="no native C compiler"),
              pytest.mark.xdist_group("gap9-emul-build")]   # the module's fixture (compiled or built once) on one worker


def _compile(cc, out, prog, cflags, ldflags, defines=(), target=None):
    """Compile the emulation + tests/gap9_emul/<prog>.c into out (objects next to it)."""
    objs = []
    for src in EMUL_SOURCES + [os.path.join(PROGS, prog + ".c")]:
        obj = f"{out}.{os.path.basename(src)}.o"
        strict = STRICT if src in EMUL_SOURCES and target is None else RELAXED
        cmd = [cc, *cflags, *strict, *[f"-D{d}" for d in defines], "-I", EMUL, "-c", src, "-o", obj]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}"
        objs.append(obj)
    cmd = [cc, *ldflags, *objs, "-o", out] + (["-lm"] if target else [])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}"
    return out


def _input_file(directory):
    with open(os.path.join(directory, "emul_input.bin"), "wb") as f:
        f.write(bytes((i * 7 + 3) & 0xFF for i in range(1000)))
    return str(directory)


def _run(exe, *args, fs_dir=None, cwd=None, timeout=60, extra_env=None):
    env = dict(os.environ, **(extra_env or {}))
    env.pop("NN_EMUL_FS_DIR", None)
    if fs_dir is not None:
        env["NN_EMUL_FS_DIR"] = fs_dir
    proc = subprocess.run([exe, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=timeout, env=env, cwd=cwd)
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """build(prog, variant) -> path of a native executable, compiled once per module."""
    out_dir = tmp_path_factory.mktemp("gap9_emul")
    cache = {}
    variants = {
        "threads": (["-O2", "-pthread"], ["-pthread"], ()),
        "sequential": (["-O2"], [], ("NN_EMUL_SEQUENTIAL",)),
        "asan": (["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
                  "-fno-sanitize-recover=undefined", "-pthread"],
                 ["-fsanitize=address,undefined", "-pthread"], ()),
        "tsan": (["-O1", "-g", "-fsanitize=thread", "-pthread"], ["-fsanitize=thread", "-pthread"], ()),
    }

    def get(prog, variant="threads"):
        if (prog, variant) not in cache:
            cflags, ldflags, defines = variants[variant]
            cache[prog, variant] = _compile(CC, str(out_dir / f"{prog}_{variant}"), prog, cflags,
                                            ldflags, defines)
        return cache[prog, variant]
    return get


def _sanitizer_available(flag):
    probe = subprocess.run([CC, f"-fsanitize={flag}", "-x", "c", "-", "-o", os.devnull],
                           input=b"int main(void){return 0;}", stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    return probe.returncode == 0


# ---- correct use ------------------------------------------------------------------------------

def test_threads_backend_runs_the_check(build, tmp_path):
    """8 team threads with correct core ids and a real barrier, DMA that lands at the wait,
    2D DMA, L3 through pi_cl_ram_read, readfs; files come from NN_EMUL_FS_DIR, not the cwd."""
    os.makedirs(tmp_path / "bins")
    status, log = _run(build("emul_check"), fs_dir=_input_file(tmp_path / "bins"), cwd=str(tmp_path))
    assert status == 0 and "EMUL-CHECK OK" in log, log


def test_fs_reads_only_from_its_directory(build, tmp_path):
    """Without the file in NN_EMUL_FS_DIR, pi_fs_open returns NULL and the check says so."""
    _input_file(tmp_path)                  # in the cwd, but not where NN_EMUL_FS_DIR points
    os.makedirs(tmp_path / "empty")
    status, log = _run(build("emul_check"), fs_dir=str(tmp_path / "empty"), cwd=str(tmp_path))
    assert status == 1 and "emul_input.bin does not open" in log, log


def test_sequential_backend_runs_the_check(build, tmp_path):
    status, log = _run(build("emul_check", "sequential"), fs_dir=_input_file(tmp_path))
    assert status == 0 and "EMUL-CHECK OK" in log, log


@pytest.mark.parametrize("variant,flag", [("asan", "address,undefined"), ("tsan", "thread")])
def test_check_is_clean_under_sanitizers(build, tmp_path, variant, flag):
    if not _sanitizer_available(flag):
        pytest.skip(f"{CC} cannot link -fsanitize={flag} (runtime library missing)")
    status, log = _run(build("emul_check", variant), fs_dir=_input_file(tmp_path),
                       extra_env={"TSAN_OPTIONS": "halt_on_error=1", "ASAN_OPTIONS": "detect_leaks=0"})
    assert status == 0 and "EMUL-CHECK OK" in log and "Sanitizer" not in log, log


def test_asan_build_catches_an_l1_overrun(build):
    """Free arena space is poisoned under ASan: one byte past an L1 block is reported."""
    if not _sanitizer_available("address"):
        pytest.skip(f"{CC} cannot link -fsanitize=address (runtime library missing)")
    status, log = _run(build("emul_fail", "asan"), "l1_overrun")
    assert status != 0 and "use-after-poison" in log, log
    status, log = _run(build("emul_fail"), "l1_overrun")      # unsanitized: not visible
    assert status == 0 and "NOT DETECTED" in log, log


# ---- misuse fails loudly ------------------------------------------------------------------------

MISUSES = {
    "dma_inflight": "16 cluster-DMA commands are already in flight (NN_EMUL_DMA_MAX_INFLIGHT=16)",
    "l1_limit": "exceeds the L1 limit: 1824 bytes live + 400 requested = 2224 > limit 2048 bytes",
    "l1_arena": "pi_cl_l1_malloc(131072 bytes): L1 exhausted (NN_EMUL_L1_SIZE=131072)",
    "l2_overflow": "pi_l2_malloc(1048576 bytes): L2 exhausted (NN_EMUL_L2_SIZE=1572864): "
                   "1050624 bytes in use",
    "dma_ext_not_l2": "ext (L2) range",
    "dma_loc_not_l1": "loc (L1) range 0x1c010400..0x1c010440 (64 bytes) is not inside the L1 arena",
    "dma_ext_overflow": "is not inside one live L2 block: the block at 0x1c010000 has 1024 bytes",
    "dma_2d_overflow": "(964 bytes) is not inside one live L2 block",
    "dma_freed_l1": "is not inside a live L1 block (never allocated, or freed)",
    "dma_too_big": "size 65537 is not in 1..65536 (NN_EMUL_DMA_MAX_SIZE)",
    "dma_size_0": "size 0 is not in 1..65536",
    "dma_wait_twice": "no transfer is in flight on this struct (never issued, or already waited)",
    "dma_wait_never_issued": "no transfer is in flight on this struct",
    "dma_reused_cmd": "a struct cannot be reused before its wait",
    "dma_unwaited": "the cluster task returned with 1 transfer(s) never waited",
    "dma_src_race": "its source (L1 0x10002800) changed between the issue and the wait",
    "dma_dst_race": "its destination (L1 0x10002800) was written between the issue and the wait",
    "barrier_deadlock": "pi_cl_team_barrier can never complete: 1 core(s) of the team of 8",
    "barrier_on_cc": "pi_cl_team_barrier called from the cluster controller (core 8)",
    "nested_fork": "inside a fork: only the cluster controller (core 8) may do this (no nested "
                   "forks)",
    "fork_9": "pi_cl_team_fork(9): the team must have 1..8 cores",
    "fork_on_fc": "pi_cl_team_fork called from the FC",
    "cl_ram_read_to_l1": "is in cluster L1, which the uDMA cannot reach",
    "cl_ram_read_past_block": "RAM (L3) range 0x060000c8..0x06000108 (64 bytes) is not inside one "
                              "live L3 block",
    "cl_ram_wait_twice": "pi_cl_ram_read_wait",
    "ram_read_on_cluster": "pi_ram_read called from the cluster controller (core 8)",
    "ram_not_l3_address": "0x1c010000 is not an L3 address",
    "ram_overflow": "pi_ram_alloc(33554432 bytes): L3 exhausted",
    "l1_free_size": "pi_cl_l1_free(0x10002800, 1000): the block was allocated with 1024 bytes",
    "l2_free_size": "the block was allocated with 1024 bytes",
    "l2_double_free": "no live block there (never allocated, or already freed)",
    "l2_free_inside": "not the start of a block: it is 8 bytes into the block 0x1c010000",
    "l1_closed": "pi_cl_l1_malloc: the cluster is not open",
    "readfs_without_flash": "a readfs needs conf.fs.flash = an opened flash device",
}


@pytest.mark.parametrize("scenario", sorted(MISUSES))
def test_misuse_fails_loudly(build, scenario):
    status, log = _run(build("emul_fail"), scenario)
    assert status == 3, log
    assert "PMSIS-EMUL ERROR: " in log and MISUSES[scenario] in log, log
    assert "NOT DETECTED" not in log


def test_scenarios_are_real(build):
    """emul_fail.c with no misuse runs to the end (so each scenario's failure is its own)."""
    status, log = _run(build("emul_fail"), "none")
    assert status == 0 and "NOT DETECTED: none" in log, log


def test_sequential_backend_rejects_a_barrier_in_a_fork(build):
    status, log = _run(build("emul_fail", "sequential"), "barrier_sequential")
    assert status == 3 and "the sequential backend (NN_EMUL_SEQUENTIAL" in log, log
    status, log = _run(build("emul_fail"), "barrier_sequential")   # threads: a fine barrier
    assert status == 0 and "NOT DETECTED" in log, log


# ---- qemu ---------------------------------------------------------------------------------------

needs_qemu = pytest.mark.skipif(bool(qemu.missing_tools()),
                                reason=f"not on PATH: {', '.join(qemu.missing_tools())} (Debian: "
                                       "gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf "
                                       "qemu-system-misc)")


def _cross(tmp_path, prog, defines=()):
    x = qemu.cross_flags()
    return _compile(x["CC"], str(tmp_path / f"{prog}.elf"), prog, x["CFLAGS"] + ["-O2"],
                    x["LINKFLAGS"], defines, target="rv32")


def test_cross_flags_are_rv32imc_picolibc_semihosting():
    x = qemu.cross_flags()
    assert x["CC"] == "riscv64-unknown-elf-gcc"
    for flag in ("-march=rv32imc", "-mabi=ilp32", "--specs=picolibc.specs"):
        assert flag in x["CFLAGS"] and flag in x["LINKFLAGS"]
    assert "--oslib=semihost" in x["LINKFLAGS"] and "--crt0=semihost" in x["LINKFLAGS"]
    assert "-DNN_EMUL_SEQUENTIAL" in x["CFLAGS"]


@needs_qemu
def test_cross_flags_pick_picolibc_rv32_multilib():
    x = qemu.cross_flags()
    out = subprocess.run([x["CC"], *x["LINKFLAGS"], "-print-multi-directory"],
                         stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    assert out.startswith("rv32im") and out.endswith("/ilp32"), out


@needs_qemu
def test_qemu_runs_the_check(tmp_path):
    """The same program, cross-compiled: readfs from qemu's cwd, sequential fork, DMA, L3,
    printf through semihosting and the exit status back from qemu."""
    elf = _cross(tmp_path, "emul_check")
    run_dir = tmp_path / "run"
    os.makedirs(run_dir)
    status, log = qemu.run_qemu(elf, _input_file(run_dir), 60)
    assert status == 0 and "EMUL-CHECK OK" in log, log
    status, log = qemu.run_qemu(elf, str(tmp_path), 60)           # no input file there
    assert status == 1 and "emul_input.bin does not open" in log, log


@needs_qemu
def test_qemu_returns_the_failure_status(tmp_path):
    elf = _cross(tmp_path, "emul_fail", ['EMUL_SCENARIO="barrier_sequential"'])
    status, log = qemu.run_qemu(elf, str(tmp_path), 60)
    assert status == 3 and "PMSIS-EMUL ERROR: pi_cl_team_barrier on core 0" in log, log


@needs_qemu
def test_qemu_timeout_returns_none(tmp_path):
    src = tmp_path / "spin.c"
    src.write_text("int main(void) { for (;;) ; }\n")
    x = qemu.cross_flags()
    obj, elf = str(tmp_path / "spin.o"), str(tmp_path / "spin.elf")
    subprocess.run([x["CC"], *x["CFLAGS"], "-c", str(src), "-o", obj], check=True)
    subprocess.run([x["CC"], *x["LINKFLAGS"], obj, "-o", elf], check=True)
    status, log = qemu.run_qemu(elf, str(tmp_path), 1)
    assert status is None and "timed out" in log
