"""The network as a library on the targets that are not host: k210 (emul, qemu), aie2p
(emul) and gap9 (emul, qemu: a PMSIS program that mounts the readfs and opens the library).  The `library` alias builds the archive and the header (and the .cmake/.mk); a tiny
C program linked against the archive through the .mk (the machine's gcc where the library
is host-compiled, the cross compiler + qemu for k210 qemu) gives the harness's output bit
for bit: run() on the harness's input.bin equals its output.bin, run_float() on that input
dequantized equals its output.npy."""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

import libcheck
from conftest import steps

APP = r"""
#include <stdio.h>
#include <stdlib.h>
#include "nns_simplecnn.h"

static int calls;

static void count(const nns_simplecnn_layer_report *r, void *user)
{
    (void)user;
    if (r->index == calls && r->size > 0 && r->output)
        ++calls;
}

static int io(const char *path, void *buf, size_t n, int write)
{
    FILE *f = fopen(path, write ? "wb" : "rb");
    size_t got;
    if (!f)
        return 1;
    got = write ? fwrite(buf, 1, n, f) : fread(buf, 1, n, f);
    fclose(f);
    return got != n;
}

int main(void)
{
    static float xf[NNS_SIMPLECNN_INPUT_INPUT_ELEMENTS], yf[NNS_SIMPLECNN_OUTPUT_OUTPUT_ELEMENTS];
    static int8_t x[NNS_SIMPLECNN_INPUT_INPUT_BYTES], y[NNS_SIMPLECNN_OUTPUT_OUTPUT_BYTES];
    const float *xfs[] = { xf };
    float *yfs[] = { yf };
    const int8_t *xs[] = { x };
    int8_t *ys[] = { y };
    nns_simplecnn_t net;
    void *arena = malloc(NNS_SIMPLECNN_ARENA_SIZE);
    int status;
    if (!arena || io("x.f32", xf, sizeof xf, 0) || io("input.bin", x, sizeof x, 0))
        return 2;
    if (nns_simplecnn_init(&net, arena, NNS_SIMPLECNN_ARENA_SIZE - 1) != NNS_SIMPLECNN_ERR_ARENA_TOO_SMALL
        || net.required_size != NNS_SIMPLECNN_ARENA_SIZE)
        return 7;
    if (nns_simplecnn_run(&net, xs, ys) != NNS_SIMPLECNN_ERR_NOT_INITIALIZED)
        return 8;
    if ((status = nns_simplecnn_init(&net, arena, NNS_SIMPLECNN_ARENA_SIZE)) != NNS_SIMPLECNN_OK) {
        printf("init: %s\n", nns_simplecnn_strerror(status));
        return 9;
    }
    APP_OPEN
    if ((status = nns_simplecnn_run_float(&net, xfs, yfs)) != NNS_SIMPLECNN_OK) {
        printf("run_float: %s\n", nns_simplecnn_strerror(status));
        return 3;
    }
    if (nns_simplecnn_run_with_callback(&net, xs, ys, count, NULL) != NNS_SIMPLECNN_OK)
        return 4;
    if (io("y.f32", yf, sizeof yf, 1) || io("y.bin", y, sizeof y, 1))
        return 2;
    printf("app: %d of %d layers called back, first %s\n", calls, NNS_SIMPLECNN_NUM_LAYERS,
           nns_simplecnn_layer_name(0));
    APP_CLOSE
    nns_simplecnn_deinit(&net);
    return 0;
}
"""

# gap9: a GAP9 application: the weights come from the readfs (the files the header names),
# the arena is in L2; a run before nns_simplecnn_open says so.  On the PMSIS emulation (emul,
# qemu) the app checks the header's memory macros against what the library took: open
# allocates exactly L2_LIB_SIZE bytes of L2 and L3_SIZE of L3 RAM (freed by close), and no
# layer went over L1_SIZE.
GAP9_APP = APP.replace('#include "nns_simplecnn.h"', '''#include "pmsis.h"
#include "nn_gap9.h"
#include "nns_simplecnn.h"

static const char *const files[] = NNS_SIMPLECNN_READFS_FILES;

#ifdef PMSIS_EMUL
static struct pmsis_emul_stats stats(void)
{
    struct pmsis_emul_stats s;
    pmsis_emul_get_stats(&s);
    return s;
}
#endif''').replace("int main(void)", "static int app(void)").replace(
    "    void *arena = malloc(NNS_SIMPLECNN_ARENA_SIZE);", '''    static struct pi_device flash, fs;
    void *arena = pi_l2_malloc(NNS_SIMPLECNN_ARENA_SIZE);''').replace("    APP_OPEN\n", '''    if (nns_simplecnn_run(&net, xs, ys) != NNS_SIMPLECNN_ERR_NOT_OPEN)
        return 6;
#ifdef PMSIS_EMUL
    const struct pmsis_emul_stats before = stats();
#endif
    if (nn_readfs_mount(&flash, &fs) || (status = nns_simplecnn_open(&net, &fs)) != NNS_SIMPLECNN_OK) {
        printf("open: %s (layer %d)\\n", nns_simplecnn_strerror(status), net.failed_layer);
        return 5;
    }
#ifdef PMSIS_EMUL
    const struct pmsis_emul_stats opened = stats();
    if (opened.l2_live - before.l2_live != NNS_SIMPLECNN_L2_LIB_SIZE
        || opened.l3_live - before.l3_live != NNS_SIMPLECNN_L3_SIZE) {
        printf("open took %u B of L2 and %u B of L3, the header says %d and %d\\n",
               (unsigned)(opened.l2_live - before.l2_live), (unsigned)(opened.l3_live - before.l3_live),
               NNS_SIMPLECNN_L2_LIB_SIZE, NNS_SIMPLECNN_L3_SIZE);
        return 10;
    }
#endif
    printf("app: %d readfs files, first %s, L2 %d B, L3 %d B\\n", NNS_SIMPLECNN_NUM_READFS_FILES, files[0],
           NNS_SIMPLECNN_L2_SIZE, NNS_SIMPLECNN_L3_SIZE);
''').replace("    APP_CLOSE\n", '''    nns_simplecnn_close(&net);
    if (nns_simplecnn_run(&net, xs, ys) != NNS_SIMPLECNN_ERR_NOT_OPEN)
        return 11;
#ifdef PMSIS_EMUL
    const struct pmsis_emul_stats closed = stats();
    if (closed.l2_live != before.l2_live || closed.l3_live != before.l3_live || closed.l1_peak > NNS_SIMPLECNN_L1_SIZE
        || NNS_SIMPLECNN_L2_SIZE != NNS_SIMPLECNN_ARENA_SIZE + NNS_SIMPLECNN_L2_LIB_SIZE) {
        printf("close left %u B of L2, %u B of L3; L1 peak %u B (L1_SIZE %d)\\n",
               (unsigned)(closed.l2_live - before.l2_live), (unsigned)(closed.l3_live - before.l3_live),
               (unsigned)closed.l1_peak, NNS_SIMPLECNN_L1_SIZE);
        return 12;
    }
#endif
''') + '''
static void app_main(void)
{
    pmsis_exit(app());
}

int main(void)
{
    return pmsis_kickoff((void *)app_main);
}
'''

# Two contexts of one model, each on its own arena: with THREADS, each runs the network 20 times
# on its own thread at once (aie2p: no state outside the contexts); without, they take turns on
# the one KPU (k210), one taken down in between.  Every output equals the harness's.
TWO_CONTEXTS_APP = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef THREADS
#include <pthread.h>
#endif
#include "nns_simplecnn.h"

static int8_t x[NNS_SIMPLECNN_INPUT_INPUT_BYTES], want[NNS_SIMPLECNN_OUTPUT_OUTPUT_BYTES];

typedef struct {
    nns_simplecnn_t net;
    int8_t y[NNS_SIMPLECNN_OUTPUT_OUTPUT_BYTES];
    int bad;
} job_t;

static void *work(void *arg)
{
    job_t *j = arg;
    const int8_t *xs[] = { x };
    int8_t *ys[] = { j->y };
    for (int i = 0; i < 20; ++i) {
        memset(j->y, 0, sizeof j->y);
        if (nns_simplecnn_run(&j->net, xs, ys) != NNS_SIMPLECNN_OK || memcmp(j->y, want, sizeof want))
            ++j->bad;
    }
    return NULL;
}

static int load(const char *path, void *buf, size_t n)
{
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(buf, 1, n, f) : 0;
    if (f)
        fclose(f);
    return got != n;
}

int main(void)
{
    static job_t jobs[2];
    if (load("input.bin", x, sizeof x) || load("y.bin", want, sizeof want))
        return 2;
    for (int k = 0; k < 2; ++k)
        if (nns_simplecnn_init(&jobs[k].net, malloc(NNS_SIMPLECNN_ARENA_SIZE), NNS_SIMPLECNN_ARENA_SIZE))
            return 3;
#ifdef THREADS
    pthread_t t[2];
    for (int k = 0; k < 2; ++k)
        if (pthread_create(&t[k], NULL, work, &jobs[k]))
            return 4;
    for (int k = 0; k < 2; ++k)
        pthread_join(t[k], NULL);
#else
    work(&jobs[0]);
    work(&jobs[1]);
    nns_simplecnn_deinit(&jobs[0].net);
    work(&jobs[1]);
#endif
    printf("two contexts: %d %d wrong\n", jobs[0].bad, jobs[1].bad);
    return jobs[0].bad || jobs[1].bad;
}
"""

MAKEFILE = """include {mk}
app: app.c
\t$(CC) $(APPFLAGS) $(NNS_SIMPLECNN_CFLAGS) -o $@ app.c $(NNS_SIMPLECNN_LIBS) $(APPLDFLAGS)
"""


def _macro(header, name):
    import re
    m = re.search(rf"#define NNS_SIMPLECNN_{name} (.+)", header)
    return m.group(1).strip()


def _library(project, target, platform, lib_dir):
    """The `library` alias alone: the archive, the header, .cmake, .mk; nothing runs."""
    b = f"build/{target}/simplecnn"
    r = project.scons(f"target={target}", "model=simplecnn", f"platform={platform}", "library")
    s = steps(r.stdout)
    assert "AR libnns_simplecnn.a" in s and not [x for x in s if x.startswith(("RUN", "LINK", "CHECK"))], s
    for f in ("libnns_simplecnn.a", "nns_simplecnn.cmake", "nns_simplecnn.mk"):
        assert os.path.isfile(project.file(f"{b}/{lib_dir}/{f}")), f
    header = project.read(f"{b}/include/nns_simplecnn.h")
    assert "int nns_simplecnn_run_float(nns_simplecnn_t *ctx, const float *const inputs[], float *const outputs[]);" in header
    assert "nns_simplecnn_layer_callback callback" in header
    return b


def _members(project, archive):
    """The object names in an archive (ar t)."""
    return set(subprocess.run(["ar", "t", project.file(archive)], stdout=subprocess.PIPE, text=True,
                              check=True).stdout.split())


def _app(project, tmp_path, b, lib_dir, run_dir, cc="gcc", cflags="-O2", ldflags="", source=APP):
    """app.c built by make through the library's .mk, beside the harness's input.bin and the
    same input dequantized to float32 in the model's layout (x.f32)."""
    header = project.read(f"{b}/include/nns_simplecnn.h")
    dims = [int(v) for v in _macro(header, "INPUT_INPUT_DIMS").strip("{} ").split(",")]
    scale = np.float32(float(_macro(header, "INPUT_INPUT_SCALE").rstrip("f")))
    zp = int(_macro(header, "INPUT_INPUT_ZERO_POINT"))
    q = np.fromfile(project.file(f"{b}/bin/input.bin"), dtype=np.int8).reshape(dims)
    layout, model = _macro(header, "INPUT_INPUT_LAYOUT").strip('"'), _macro(header, "INPUT_INPUT_FLOAT_LAYOUT").strip('"')
    q = q.transpose([layout.index(d) for d in model])     # into the model's layout (run_float's)
    x = (q.astype(np.float32) - np.float32(zp)) * scale
    shutil.copy(project.file(f"{b}/bin/input.bin"), tmp_path / "input.bin")
    x.astype(np.float32).tofile(tmp_path / "x.f32")
    if "APP_OPEN" in source:      # an application without a target-specific open/close
        source = source.replace("    APP_OPEN\n", "").replace("    APP_CLOSE\n", "")
    (tmp_path / "app.c").write_text(source)
    (tmp_path / "Makefile").write_text(MAKEFILE.format(mk=project.file(f"{b}/{lib_dir}/nns_simplecnn.mk")))
    subprocess.run(["make", "-s", f"CC={cc}", f"APPFLAGS={cflags}", f"APPLDFLAGS={ldflags}", "app"], cwd=tmp_path,
                   check=True)
    return str(tmp_path / "app")


def _same_as_harness(project, tmp_path, b, run_dir, stdout):
    assert "app: 6 of 6 layers called back, first conv1" in stdout, stdout
    assert (tmp_path / "y.bin").read_bytes() == project.read(f"{b}/{run_dir}output.bin", "rb")
    want = np.load(project.file(f"{b}/{run_dir}output.npy"))
    got = np.fromfile(tmp_path / "y.f32", dtype=np.float32).reshape(want.shape)
    assert got.tobytes() == want.astype(np.float32).tobytes()


# The K210's KPU and its AI RAM are one device: on emul and qemu the emulator object stands in
# for it (its 2 MiB AI RAM and its table of mapped parameter regions are static there as they
# are hardware on a K210), so the static-state check leaves it out; everything else is the
# library's and keeps nothing.
K210_DEVICE = ("kpu_emul.o",)


def test_k210_library_emul_and_qemu(project, tmp_path):
    from libcheck import mutable_static_bytes
    b = _library(project, "k210", "emul", "emul/lib")
    assert "kpu_emul.o" in _members(project, f"{b}/emul/lib/libnns_simplecnn.a")
    assert mutable_static_bytes(project.file(f"{b}/emul/lib/libnns_simplecnn.a"), skip=K210_DEVICE) == {}
    header = project.read(f"{b}/include/nns_simplecnn.h")
    assert int(_macro(header, "AI_RAM_SIZE").split()[0]) == 2 * 1024 * 1024
    assert "uint32_t kpu_params[5];" in header and "inference at a time may use the KPU" in header
    assert "Test PASSED [k210] simplecnn" in project.scons("target=k210", "model=simplecnn").stdout
    emul = tmp_path / "emul"
    emul.mkdir()
    app = _app(project, emul, b, "emul/lib", "emul/")
    r = subprocess.run([app], cwd=emul, stdout=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 0, r.stdout
    _same_as_harness(project, emul, b, "emul/", r.stdout)
    app = _app(project, emul, b, "emul/lib", "emul/", source=TWO_CONTEXTS_APP)
    r = subprocess.run([app], cwd=emul, stdout=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 0 and "two contexts: 0 0 wrong" in r.stdout, r.stdout

    if not (shutil.which("riscv64-unknown-elf-gcc") and shutil.which("qemu-system-riscv64")):
        pytest.skip("riscv64-unknown-elf-gcc / qemu-system-riscv64 not installed")
    from nnscons.targets.k210 import platforms
    _library(project, "k210", "qemu", "qemu/lib")
    assert mutable_static_bytes(project.file(f"{b}/qemu/lib/libnns_simplecnn.a"), objdump="riscv64-unknown-elf-objdump",
                                skip=K210_DEVICE) == {}
    assert "Test PASSED [k210] simplecnn" in project.scons("target=k210", "model=simplecnn", "platform=qemu").stdout
    qemu = tmp_path / "qemu"
    qemu.mkdir()
    x = platforms.cross_flags("riscv64-unknown-elf-gcc")
    link = [f for f in x["LINKFLAGS"] if f not in x["CFLAGS"]]
    app = _app(project, qemu, b, "qemu/lib", "qemu/", cc="riscv64-unknown-elf-gcc", cflags=" ".join(x["CFLAGS"]),
               ldflags=" ".join(link))
    r = subprocess.run(platforms.qemu_command(app), cwd=qemu, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout
    _same_as_harness(project, qemu, b, "qemu/", r.stdout)


@pytest.mark.slow   # 10.4 s of CPU (a cold host build, then the app)
def test_host_library(project, tmp_path):
    """The host's archive through its .mk: init's arena check (too small: the code and the
    size it needs), run before init refused, then run_float and run_with_callback equal the
    harness's output."""
    b = _library(project, "host", "native", "lib")
    assert "Test PASSED [host] simplecnn" in project.scons("target=host", "model=simplecnn").stdout
    app = _app(project, tmp_path, b, "lib", "")
    r = subprocess.run([app], cwd=tmp_path, stdout=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 0, r.stdout
    _same_as_harness(project, tmp_path, b, "", r.stdout)


def test_aie2p_library_emul(project, tmp_path):
    """aie2p-hybrid: the convs and the fc on the emulated NPU, the pools on the host CPU, all
    in one host-compiled library."""
    from libcheck import mutable_static_bytes
    b = _library(project, "aie2p-hybrid", "emul", "lib")
    names = _members(project, f"{b}/lib/libnns_simplecnn.a")
    assert {"conv1_aie.o", "conv1.o", "pool1.o", "nn_aie_emul.o", "conv1.o"} <= names, names
    # the emulated NPU keeps nothing either: its DDR buffers and scratch are in the arena
    assert mutable_static_bytes(project.file(f"{b}/lib/libnns_simplecnn.a")) == {}
    header = project.read(f"{b}/include/nns_simplecnn.h")
    assert "aie/L/final.xclbin" in header and '"NHWC"' in header
    assert "Test PASSED [aie2p-hybrid] simplecnn" in project.scons("target=aie2p-hybrid", "model=simplecnn",
                                                                   "platform=emul").stdout
    app = _app(project, tmp_path, b, "lib", "")
    r = subprocess.run([app], cwd=tmp_path, stdout=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 0, r.stdout
    _same_as_harness(project, tmp_path, b, "", r.stdout)
    app = _app(project, tmp_path, b, "lib", "", cflags="-O2 -DTHREADS -pthread", ldflags="-pthread",
               source=TWO_CONTEXTS_APP)
    r = subprocess.run([app], cwd=tmp_path, stdout=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 0 and "two contexts: 0 0 wrong" in r.stdout, r.stdout


@pytest.mark.slow   # 15.5 s of CPU
def test_gap9_library_emul_and_qemu(project, tmp_path):
    """The archive holds the PMSIS emulation of its platform; the application flashes the
    weights (here: the readfs is a folder) and opens the library on its mounted readfs."""
    b = _library(project, "gap9", "emul", "emul/lib")
    names = _members(project, f"{b}/emul/lib/libnns_simplecnn.a")
    assert {"conv1.o", "nns_simplecnn.o", "nns_simplecnn_api.o", "nn_gap9.o", "emul_fs.o"} <= names, names
    # no mutable static state in the library.  Skipped: the PMSIS emulation's objects (emul_*,
    # team_*), the device model standing in for the chip and the GAP SDK's runtime (the L1, L2
    # and L3 memories, the cluster and its DMA, the flash and readfs); a GAP9 application gets
    # those from the hardware and the SDK, not from this library
    chip = {n for n in names if n.startswith(("emul_", "team_"))}
    assert libcheck.mutable_static_bytes(project.file(f"{b}/emul/lib/libnns_simplecnn.a"), skip=chip) == {}
    # and it prints nothing: no member but the emulation and nn_gap9.o (whose printing helpers,
    # nn_fs_open_exact and nn_check_golden, are the harness's and the application's) calls stdio
    nm = subprocess.run(["nm", "-u", project.file(f"{b}/emul/lib/libnns_simplecnn.a")], stdout=subprocess.PIPE,
                        text=True, check=True).stdout
    printing, member = set(), None
    for line in nm.splitlines():
        if line.endswith(".o:"):
            member = line[:-1]
        elif line.split()[-1:] and line.split()[-1] in ("printf", "puts", "putchar", "fprintf", "vprintf", "fputs"):
            printing.add(member)
    assert printing - chip - {"nn_gap9.o"} == set(), printing
    header = project.read(f"{b}/include/nns_simplecnn.h")
    assert "int nns_simplecnn_open(nns_simplecnn_t *ctx, struct pi_device *fs);" in header and '"NHWC"' in header
    assert '#define NNS_SIMPLECNN_READFS_FILES { "conv1_weights.bin",' in header
    for macro in ("L1_SIZE", "L2_SIZE", "L2_LIB_SIZE", "L3_SIZE"):
        assert int(_macro(header, macro).split()[0]) >= 0, macro
    assert "Test PASSED [gap9] simplecnn" in project.scons("target=gap9", "model=simplecnn",
                                                           "platform=emul").stdout

    def readfs(d):
        d.mkdir()
        for f in os.listdir(project.file(f"{b}/bin")):
            if f.endswith("_weights.bin"):
                shutil.copy(project.file(f"{b}/bin/{f}"), d / f)
        return d

    def on_emul(d):
        app = _app(project, d, b, "emul/lib", "emul/", source=GAP9_APP)
        r = subprocess.run([app], cwd=d, stdout=subprocess.PIPE, text=True, timeout=120,
                           env=dict(os.environ, NN_EMUL_FS_DIR=str(d)))
        assert r.returncode == 0, r.stdout
        assert "app: 5 readfs files, first conv1_weights.bin" in r.stdout, r.stdout
        _same_as_harness(project, d, b, "emul/", r.stdout)
        return r.stdout

    assert ", L3 0 B" in on_emul(readfs(tmp_path / "emul"))
    # a weights file missing from the readfs: open says so in its status and failed_layer (the
    # library prints nothing), the emulation's readfs names the host path it tried
    app, empty = str(tmp_path / "emul" / "app"), tmp_path / "empty-readfs"
    empty.mkdir()
    r = subprocess.run([app], cwd=tmp_path / "emul", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120, env=dict(os.environ, NN_EMUL_FS_DIR=str(empty)))
    assert r.returncode == 5 and "open: a weights file is missing from the readfs" in r.stdout, r.stdout
    assert "(layer 0)" in r.stdout and f"no file {empty}/conv1_weights.bin" in r.stderr, r.stderr
    # conv2 and fc staged from L3 RAM slab by slab: the open copies them there, and two runs
    # (run_float, run_with_callback) each stage every slab again
    y = project.read("targets.yaml").replace("      l3_threshold: 36KiB", "      l3_threshold: 1KiB")
    project.write("targets.yaml", y.replace("      l1_budget: 112KiB    # per-layer default",
                                            "      l1_budget: 4KiB    # per-layer default"))
    assert "Test PASSED [gap9] simplecnn" in project.scons("target=gap9", "model=simplecnn",
                                                           "platform=emul").stdout
    assert "L3 0 B" not in on_emul(readfs(tmp_path / "emul-l3"))

    from nnscons.targets.gap9 import qemu
    if qemu.missing_tools():
        pytest.skip(f"{', '.join(qemu.missing_tools())} not installed")
    _library(project, "gap9", "qemu", "qemu/lib")
    assert "Test PASSED [gap9] simplecnn" in project.scons("target=gap9", "model=simplecnn", "platform=qemu").stdout
    q = readfs(tmp_path / "qemu")
    x = qemu.cross_flags()
    link = [f for f in x["LINKFLAGS"] if f not in x["CFLAGS"]]
    app = _app(project, q, b, "qemu/lib", "qemu/", cc=qemu.CC, cflags=" ".join(x["CFLAGS"] + ["-O2"]),
               ldflags=" ".join(link), source=GAP9_APP)
    r = subprocess.run(qemu.qemu_command(app), cwd=q, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    _same_as_harness(project, q, b, "qemu/", r.stdout)


def test_the_mk_example_relinks_the_app_when_the_archive_changes(project, tmp_path):
    """The usage the generated .mk documents (its comment) makes the app depend on the archive:
    a rebuilt network relinks the app."""
    import re
    b = _library(project, "host", "native", "lib")
    mk = project.file(f"{b}/lib/nns_simplecnn.mk")
    text = open(mk).read()
    rules = [line[len("#   "):] for line in text.splitlines() if re.match(r"#   \S", line) and "include" not in line]
    assert any(r.startswith("app:") for r in rules), text
    (tmp_path / "main.c").write_text('#include "nns_simplecnn.h"\nint main(void) { return NNS_SIMPLECNN_ARENA_SIZE == 0; }\n')
    (tmp_path / "Makefile").write_text(f"include {mk}\n" + "\n".join(rules) + "\n")
    subprocess.run(["make", "-s", "app"], cwd=tmp_path, check=True, capture_output=True)
    assert subprocess.run(["make", "-q", "app"], cwd=tmp_path).returncode == 0      # up to date
    archive = project.file(f"{b}/lib/libnns_simplecnn.a")
    later = os.stat(tmp_path / "app").st_mtime + 5
    os.utime(archive, (later, later))                                             # a new library
    assert subprocess.run(["make", "-q", "app"], cwd=tmp_path).returncode == 1, "app not relinked"
