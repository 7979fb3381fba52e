"""The C API as a firmware team uses it on the host kinds: instances, each over its own
arena, run concurrently on threads (two of one model and one of another, in one program,
under ThreadSanitizer) bit-exact with the harness's output; the library keeps no writable
static memory (every byte it needs is the arena's, ARENA_SIZE); errors are codes with texts."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from libcheck import mutable_static_bytes

TSAN = ("  host-tsan:\n    kind: host\n    description: the host target under ThreadSanitizer, 2 threads per instance\n"
        "    toolchain:\n      cc: gcc\n"
        "      cflags: [-std=c99, -O1, -g, -Wall, -Wextra, -Werror, -fsanitize=thread]\n"
        "      ldflags: [-fsanitize=thread]\n"
        "    kernel: {threads: 2, min_macs_per_thread: 1000}\n    run: {timeout: 1200}\n\n")

APP = r"""
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nns_simplecnn.h"
#include "nns_ic_resnet8.h"

static void *load(const char *path, size_t n)
{
    FILE *f = fopen(path, "rb");
    void *b = malloc(n);
    if (!f || !b || fread(b, 1, n, f) != n) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    return b;
}

typedef struct {
    const char *dir;
    int rounds, bad, status;
} job_t;

/* one instance of model m over its own arena: `rounds` inferences, each compared with the
   harness's output */
#define WORKER(m, M, IN, OUT)                                                                  \
static void *run_##m(void *p)                                                                   \
{                                                                                               \
    job_t *j = (job_t *)p;                                                                      \
    char path[512];                                                                             \
    nns_##m##_t net;                                                                            \
    void *arena = malloc(NNS_##M##_ARENA_SIZE);                                                 \
    int8_t y[NNS_##M##_OUTPUT_##OUT##_BYTES];                                                   \
    int8_t *want, *x;                                                                           \
    snprintf(path, sizeof path, "%s/bin/input.bin", j->dir);                                    \
    x = load(path, NNS_##M##_INPUT_##IN##_BYTES);                                               \
    snprintf(path, sizeof path, "%s/output.bin", j->dir);                                       \
    want = load(path, sizeof y);                                                                \
    const int8_t *const xs[] = { x };                                                           \
    int8_t *const ys[] = { y };                                                                 \
    if ((j->status = nns_##m##_init(&net, arena, NNS_##M##_ARENA_SIZE)) != 0)                   \
        return NULL;                                                                            \
    for (int r = 0; r < j->rounds; ++r) {                                                       \
        memset(y, 0, sizeof y);                                                                 \
        if ((j->status = nns_##m##_run(&net, xs, ys)) != 0)                                     \
            break;                                                                              \
        j->bad += memcmp(y, want, sizeof y) != 0;                                               \
    }                                                                                           \
    nns_##m##_deinit(&net);                                                                     \
    free(arena); free(x); free(want);                                                           \
    return NULL;                                                                                \
}
WORKER(simplecnn, SIMPLECNN, INPUT, OUTPUT)
WORKER(ic_resnet8, IC_RESNET8, INPUT, OUTPUT)

int main(int argc, char **argv)
{
    job_t jobs[3] = { { argv[1], 4, 0, 0 }, { argv[1], 4, 0, 0 }, { argv[2], 2, 0, 0 } };
    pthread_t t[3];
    (void)argc;
    pthread_create(&t[0], NULL, run_simplecnn, &jobs[0]);
    pthread_create(&t[1], NULL, run_simplecnn, &jobs[1]);
    pthread_create(&t[2], NULL, run_ic_resnet8, &jobs[2]);
    for (int i = 0; i < 3; ++i)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 3; ++i)
        printf("instance %d: status %d (%s), %d wrong of %d\n", i, jobs[i].status,
               i < 2 ? nns_simplecnn_strerror(jobs[i].status) : nns_ic_resnet8_strerror(jobs[i].status),
               jobs[i].bad, jobs[i].rounds);
    return 0;
}
"""


@pytest.mark.slow
def test_instances_run_concurrently_under_threadsanitizer(project, tmp_path):
    y = project.read("targets.yaml")
    project.write("targets.yaml", y.replace("  host-asan:\n", TSAN + "  host-asan:\n", 1))
    for model in ("simplecnn", "ic_resnet8"):
        proc = project.scons("target=host-tsan", f"model={model}")
        assert f"Test PASSED [host-tsan] {model}" in proc.stdout, proc.stdout[-3000:]
    b = {m: project.file(f"build/host-tsan/{m}") for m in ("simplecnn", "ic_resnet8")}
    (tmp_path / "app.c").write_text(APP)
    cmd = ["gcc", "-std=c99", "-O1", "-g", "-fsanitize=thread", "-Wall", "-Werror",
           "-I", os.path.join(b["simplecnn"], "include"), "-I", os.path.join(b["ic_resnet8"], "include"),
           "app.c", os.path.join(b["simplecnn"], "lib", "libnns_simplecnn.a"),
           os.path.join(b["ic_resnet8"], "lib", "libnns_ic_resnet8.a"), "-lpthread", "-lm", "-o", "app"]
    subprocess.run(cmd, cwd=tmp_path, check=True)
    r = subprocess.run(["./app", os.path.join(b["simplecnn"]), os.path.join(b["ic_resnet8"])], cwd=tmp_path,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
                       env=dict(os.environ, TSAN_OPTIONS="halt_on_error=1 exitcode=66"))
    assert r.returncode == 0 and "ThreadSanitizer" not in r.stdout, r.stdout[-4000:]
    for i, rounds in enumerate((4, 4, 2)):
        assert f"instance {i}: status 0 (success), 0 wrong of {rounds}" in r.stdout, r.stdout


def test_the_library_keeps_no_writable_static_memory(prebuilt):
    """Every byte is the arena's: the archive has no .data/.bss, on one thread and with a
    worker pool per instance (host-2t), and on arm64 when its cross tools are here.  From the
    shared host build (its archive is already there); host-2t and arm64 build theirs."""
    project, _ = prebuilt("target=host", "model=simplecnn")
    builds = [("host", "objdump"), ("host-2t", "objdump")]
    if shutil.which("aarch64-linux-gnu-gcc"):
        builds.append(("arm64", "aarch64-linux-gnu-objdump"))
    for target, objdump in builds:
        project.scons(f"target={target}", "model=simplecnn", "library")
        archive = project.file(f"build/{target}/simplecnn/lib/libnns_simplecnn.a")
        assert mutable_static_bytes(archive, objdump) == {}, target
    header = project.read("build/host-2t/simplecnn/include/nns_simplecnn.h")
    assert "struct nn_pool *pool;" in header
