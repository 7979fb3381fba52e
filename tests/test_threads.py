"""The host's threads: how a generated layer's threads share it (kernelgen.thread_split: rows,
channel panels, each output computed once, bands that fit the buffer), the worker pool's
hand-overs under ThreadSanitizer (polling and sleeping, parts of fewer threads than the
pool), and the `spin_us` key's check.  The builds' bit-exactness on several threads is
test_kernelgen.py's and test_c_api.py's."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from nnscons import kernelgen
from nnscons.kernelgen.packing import panels

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def conv(hw, ic, oc, k=3, s=1):
    """The GEMM view (kernelgen.geometry) of a square conv with 'same' padding."""
    o = (hw + 2 * (k // 2) - k) // s + 1
    return dict(ic=ic, ih=hw, iw=hw, oc=oc, oh=o, ow=o, kh=k, kw=k, sh=s, sw=s, dh=1, dw=1,
                pt=k // 2, pl=k // 2, pb=k // 2, pr=k // 2)


def gemm_spec(g, threads, band, mr=5, nr=32):
    return {"geom": g, "threads": threads, "band": band, "variants": ["avx512vnni", "avx2", "portable"],
            "blocking": {"mr": 6, "nr": 16}, "u8": {"avx512vnni": {"mr": mr, "nr": nr}}}


SHAPES = [conv(56, 64, 64), conv(28, 128, 128), conv(14, 256, 256), conv(7, 512, 512),
          conv(56, 64, 128, k=1, s=2), conv(224, 3, 64, k=7, s=2), conv(9, 16, 24), conv(3, 8, 40),
          dict(conv(1, 512, 1000, k=1), pt=0, pl=0, pb=0, pr=0)]


@pytest.mark.parametrize("g", SHAPES, ids=lambda g: f"{g['oh']}x{g['ow']}x{g['oc']}k{g['kh']}s{g['sh']}")
@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_every_output_is_computed_once(g, threads):
    """Each (row, panel) of every variant's panel width falls in exactly one cell, in bands no
    taller than the buffer's; one cell per thread."""
    for band in sorted({1, 2, 5, g["oh"]}):
        split = kernelgen.thread_split(gemm_spec(g, threads, band))
        cells = split["cells"]
        assert len(cells) == threads and split["rows"] * split["panels"] == threads
        for nr in (8, 16, 32):       # the C takes share c % panels of each variant's own panels
            npan = panels(g["oc"], nr)
            seen = {}
            for c, bands in enumerate(cells):
                q, t = c % split["panels"], split["panels"]
                for oh0, rows in bands:
                    assert 1 <= rows <= band
                    for r in range(oh0, oh0 + rows):
                        for pn in range(npan * q // t, npan * (q + 1) // t):
                            seen[(r, pn)] = seen.get((r, pn), 0) + 1
            assert seen == {(r, pn): 1 for r in range(g["oh"]) for pn in range(npan)}
        assert set(kernelgen.band_heights(split)) == {r for bands in cells for _, r in bands}


def test_split_follows_the_layer_shape():
    # few pixels, many channels (ResNet-18's layer4: 7 rows would split 4/3): channel panels
    assert kernelgen.thread_split(gemm_spec(conv(7, 512, 512), 2, 7))["panels"] == 2
    # many rows, few channels (layer1: 56 rows, 2 panels): rows, 28 each, in even bands
    s = kernelgen.thread_split(gemm_spec(conv(56, 64, 64), 2, 8))
    assert (s["rows"], s["panels"]) == (2, 1)
    assert [sum(r for _, r in c) for c in s["cells"]] == [28, 28]
    assert kernelgen.band_heights(s) == [7]
    # one thread: the plain band loop (bands of `band` rows from row 0, the last shorter)
    s = kernelgen.thread_split(gemm_spec(conv(14, 256, 256), 1, 5))
    assert s["cells"] == [[(0, 5), (5, 5), (10, 4)]]
    # a Linear (one pixel) on two threads: the channels
    assert kernelgen.thread_split(gemm_spec(SHAPES[-1], 2, 1))["panels"] == 2


POOL_TEST = r"""#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "nn_threads.h"

static int hits[8];

static void part(void *arg, int i, int n)
{
    int *job = (int *)arg;
    if (n != job[1] || i < 0 || i >= n) {
        printf("bad part %d of %d\n", i, n);
        exit(2);
    }
    hits[i] += job[0];
}

int main(int argc, char **argv)
{
    static char memory[NN_POOL_BYTES] __attribute__((aligned(64)));
    const int spin = atoi(argv[1]);
    (void)argc;
    for (int round = 0; round < 3; ++round) {      /* start, run, stop, and again */
        struct nn_pool *pool;
        long expect[8] = { 0 };
        if (nn_pool_start(memory, 3, spin, &pool) != 0)
            return 3;
        for (int i = 0; i < 8; ++i)
            hits[i] = 0;
        for (int k = 0; k < 400; ++k) {
            int job[2] = { 1 + k % 5, 2 + k % 2 };     /* 2 or 3 parts on a pool of 3 */
            if (k % 50 == 0) {                         /* a gap: the workers go to sleep */
                struct timespec ts = { 0, 2000000 };
                nanosleep(&ts, NULL);
            }
            nn_parallel_for(pool, job[1], part, job);
            for (int i = 0; i < job[1]; ++i)
                expect[i] += job[0];
        }
        for (int i = 0; i < 3; ++i)
            if (hits[i] != expect[i]) {
                printf("part %d: %d, expected %ld\n", i, hits[i], expect[i]);
                return 1;
            }
        nn_pool_stop(pool);
    }
    printf("ok\n");
    return 0;
}
"""


@pytest.mark.parametrize("spin_us", [0, 30, 1000])
def test_pool_hand_overs_under_threadsanitizer(tmp_path, spin_us):
    """Every part of every job runs once, on the part's thread, whether the workers poll or
    sleep (a gap longer than the spin), with jobs of fewer parts than the pool; TSan sees
    no race; stop joins every worker (the pool restarts in the same memory)."""
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    src = tmp_path / "pool.c"
    src.write_text(POOL_TEST)
    exe = str(tmp_path / "pool")
    common = os.path.join(ROOT, "kernels", "common")
    subprocess.run(["gcc", "-std=c99", "-O1", "-g", "-fsanitize=thread", "-Wall", "-Wextra", "-Werror",
                    "-I", common, str(src), os.path.join(common, "nn_threads.c"), "-o", exe, "-lpthread"],
                   check=True)
    proc = subprocess.run([exe, str(spin_us)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300, env=dict(os.environ, TSAN_OPTIONS="halt_on_error=1"))
    assert proc.returncode == 0 and "ok" in proc.stdout and "ThreadSanitizer" not in proc.stdout, proc.stdout


def test_spin_key_is_checked(project):
    text = project.read("targets.yaml")
    project.write("targets.yaml", text.replace("  host-asan:\n", "  host-spin:\n    kind: host\n"
                                               "    kernel: {threads: 2, spin_us: -5}\n\n  host-asan:\n"))
    proc = project.scons("target=host-spin", "model=simplecnn", check=False)
    assert proc.returncode == 2 and "kernel.spin_us" in proc.stderr and "between 0" in proc.stderr, proc.stderr
