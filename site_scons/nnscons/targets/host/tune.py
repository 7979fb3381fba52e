"""The `tune` alias: time candidate blockings of every generated layer on this machine.

Per conv/linear layer, the cost model's best candidates (plus the layer's current
blocking) are each generated as a standalone timing program: the layer's own source with
that blocking, its weights packed for it, a seeded random input, `reps` timed calls after
a warm-up; the median wins.  A peak probe (independent vpmaddwd chains, or the portable
loop) gives the fraction of peak.  The result is build/<target>/<model>/tuning.json:
{"layers": {name: {mr, nr, k_unroll, median_ms, gmac_per_s, fraction_of_peak}}, ...},
which `kernel: {tuning: <file>}` in targets.yaml names (copy it out of build/ to commit it).
"""
from __future__ import annotations

import copy
import json
import os
import statistics
import subprocess
import tempfile

from ... import kernelgen
from ...builders.run.hostrun import run_program
from ...fileio import write_if_changed
from . import gemm

N_CANDIDATES = 8

_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
int main(int argc, char **argv)
{
    static int8_t in[%(in_size)d], out[%(out_size)d], res[%(out_size)d];
    static uint8_t params[%(params)d + 1];
    double t[%(reps)d];
    const int8_t *ins[2] = { in, res };   /* res: a fused residual add's other operand */
    FILE *f = fopen(argv[1], "rb");
    unsigned r = 1;
    int i;
    if (argc != 2 || !f || fread(params, 1, %(params)d, f) != %(params)d)
        return 2;
    fclose(f);
    for (i = 0; i < %(in_size)d; ++i) {
        r = r * 1664525u + 1013904223u;
        in[i] = (int8_t)(r >> 24);
    }
    %(symbol)s(ins, out, params);
    for (i = 0; i < %(reps)d; ++i) {
        const double t0 = now_ms();
        %(symbol)s(ins, out, params);
        t[i] = now_ms() - t0;
    }
    qsort(t, %(reps)d, sizeof t[0], cmp);
    printf("median_ms %%.5f\n", t[%(reps)d / 2]);
    return 0;
}
"""

_PEAK = r"""
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <time.h>
#include "nn_gemm.h"
#if NN_HAVE_X86
static NN_AVX2 double peak_avx2(long n)
{
    /* 12 independent chains with distinct, opaque starting values: identical chains would be
     * merged by the compiler into one (gcc does), which counted 12 multiply-adds for one */
    __m256i w = _mm256_set1_epi16(1);
    __m256i c0 = _mm256_set1_epi32(1), c1 = _mm256_set1_epi32(2), c2 = _mm256_set1_epi32(3);
    __m256i c3 = _mm256_set1_epi32(4), c4 = _mm256_set1_epi32(5), c5 = _mm256_set1_epi32(6);
    __m256i c6 = _mm256_set1_epi32(7), c7 = _mm256_set1_epi32(8), c8 = _mm256_set1_epi32(9);
    __m256i c9 = _mm256_set1_epi32(10), c10 = _mm256_set1_epi32(11), c11 = _mm256_set1_epi32(12);
    struct timespec t0, t1;
    long i;
#define OPAQUE __asm__ volatile("" : "+x"(w), "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5), \
                                "+x"(c6), "+x"(c7), "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11))
    OPAQUE;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < n; ++i) {
#define STEP(c) c = _mm256_add_epi32(c, _mm256_madd_epi16(c, w))
        STEP(c0); STEP(c1); STEP(c2); STEP(c3); STEP(c4); STEP(c5);
        STEP(c6); STEP(c7); STEP(c8); STEP(c9); STEP(c10); STEP(c11);
        OPAQUE;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    c0 = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3)),
                          _mm256_add_epi32(_mm256_add_epi32(c4, c5), _mm256_add_epi32(c6, c7)));
    c0 = _mm256_add_epi32(c0, _mm256_add_epi32(_mm256_add_epi32(c8, c9), _mm256_add_epi32(c10, c11)));
    __asm__ volatile("" : : "x"(c0));
    return (double)n * 12 * 16 / ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec));
}
static NN_VNNI double peak_vnni(long n)
{
    /* as peak_avx2 with vpdpbusd (32 MACs per 256-bit op), 16 chains: its latency times
     * two issues per cycle on current cores */
    __m256i w = _mm256_set1_epi8(1);
    __m256i c0 = _mm256_set1_epi32(1), c1 = _mm256_set1_epi32(2), c2 = _mm256_set1_epi32(3);
    __m256i c3 = _mm256_set1_epi32(4), c4 = _mm256_set1_epi32(5), c5 = _mm256_set1_epi32(6);
    __m256i c6 = _mm256_set1_epi32(7), c7 = _mm256_set1_epi32(8), c8 = _mm256_set1_epi32(9);
    __m256i c9 = _mm256_set1_epi32(10), c10 = _mm256_set1_epi32(11), c11 = _mm256_set1_epi32(12);
    __m256i c12 = _mm256_set1_epi32(13), c13 = _mm256_set1_epi32(14), c14 = _mm256_set1_epi32(15);
    __m256i c15 = _mm256_set1_epi32(16);
    struct timespec t0, t1;
    long i;
#define OPAQUE_V __asm__ volatile("" : "+v"(w), "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5), \
                                  "+v"(c6), "+v"(c7), "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11), "+v"(c12))
#define OPAQUE_W __asm__ volatile("" : "+v"(c13), "+v"(c14), "+v"(c15))
    OPAQUE_V;
    OPAQUE_W;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < n; ++i) {
#define VSTEP(c) c = _mm256_dpbusd_epi32(c, c, w)
        VSTEP(c0); VSTEP(c1); VSTEP(c2); VSTEP(c3); VSTEP(c4); VSTEP(c5); VSTEP(c6); VSTEP(c7);
        VSTEP(c8); VSTEP(c9); VSTEP(c10); VSTEP(c11); VSTEP(c12); VSTEP(c13); VSTEP(c14); VSTEP(c15);
        OPAQUE_V;
        OPAQUE_W;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    c0 = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3)),
                          _mm256_add_epi32(_mm256_add_epi32(c4, c5), _mm256_add_epi32(c6, c7)));
    c8 = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c8, c9), _mm256_add_epi32(c10, c11)),
                          _mm256_add_epi32(_mm256_add_epi32(c12, c13), _mm256_add_epi32(c14, c15)));
    c0 = _mm256_add_epi32(c0, c8);
    __asm__ volatile("" : : "v"(c0));
    return (double)n * 16 * 32 / ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec));
}
#endif
int main(void)
{
#if NN_HAVE_X86
    if (nn_cpu_has_avx512vnni()) {   /* the variant `isa: auto` runs here: its peak */
        double best = 0;
        int r;
        for (r = 0; r < 200; ++r) {
            const double v = peak_vnni(250000L);
            best = v > best ? v : best;
        }
        printf("peak avx512vnni %.3f\n", best);
        return 0;
    }
    if (nn_cpu_has_avx2()) {
        /* the best of many short runs: on a shared machine a long run mostly measures the
         * time the other work takes */
        double best = 0;
        int r;
        for (r = 0; r < 200; ++r) {
            const double v = peak_avx2(250000L);
            best = v > best ? v : best;
        }
        printf("peak avx2 %.3f\n", best);
        return 0;
    }
#endif
    printf("peak none 0\n");
    return 0;
}
"""


# what a CPU whose best variant is the key runs too (the peak probe names the best)
_RUNS = {"avx512vnni": ("avx512vnni", "avx2u8", "avx2", "portable"), "avx2": ("avx2u8", "avx2", "portable"),
         "none": ("portable",)}


def running_variant(variants, best: str):
    """The variant a layer's `auto` dispatch picks on a CPU whose best is `best`."""
    return next((v for v in variants if v in _RUNS.get(best, ("portable",))), None)


def candidates(lp) -> list:
    g = lp.spec["gemm"]["geom"]
    m, n, k2 = g["oh"] * g["ow"], g["oc"], kernelgen.padded(g)["k2"]
    ranked = sorted(kernelgen.candidates(limits=kernelgen.core_limits()), key=lambda c: (kernelgen.cost(m, n, k2, *c), c))
    out = [dict(lp.spec["gemm"]["blocking"])]
    for mr, nr in ranked:
        for ku in (2, 4):
            for order in ("panel", "block"):
                cand = {"mr": mr, "nr": nr, "k_unroll": ku, "order": order}
                if cand not in out and len(out) < N_CANDIDATES:
                    out.append(cand)
    return out


def _compile(cc, cflags, src, exe, root):
    from ...resources import data_path
    common = os.path.abspath(data_path("kernels", "common"))     # root: unused, kept for callers
    cmd = [cc, *cflags, "-I", common, src, os.path.join(common, "nn_threads.c"), "-o", exe, "-lpthread"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)}\n{proc.stdout}")


def time_candidate(session, lp, blk, work, reps, opts) -> float:
    graph = session.graph
    # the model's own layer (a layer with a fused add has its conv's weights and requantization)
    layer = next((l for l in graph.layers if l.name == lp.layer.name), lp.layer)
    g = gemm.plan_layer(layer, graph, opts, dict(blk), {}, lambda *k: "tune")
    spec = copy.deepcopy(lp.spec)
    spec["gemm"]["blocking"] = dict(blk)
    spec["gemm"]["threads"] = lp.spec["gemm"]["threads"]
    spec["gemm"]["u8"] = g["spec"]["u8"]     # the u8 variants' blockings follow the candidate's
    spec["params"] = {s: {"dtype": d, "count": c, "offset": o} for s, d, c, o in g["layout"]}
    blob = g["pack"](layer, graph, g["layout"])
    tag = f"{lp.cname}_{blk['mr']}x{blk['nr']}u{blk['k_unroll']}"
    with open(os.path.join(work, tag + ".bin"), "wb") as f:
        f.write(blob)
    gm = spec["gemm"]["geom"]
    src = "#define _POSIX_C_SOURCE 200809L\n" + kernelgen.layer_source(spec) + _MAIN % {
        "in_size": gm["ih"] * gm["iw"] * gm["ic"], "out_size": gm["oh"] * gm["ow"] * gm["oc"],
        "params": len(blob), "reps": reps, "symbol": spec.get("symbol", f"layer_{lp.cname}")}
    path = os.path.join(work, tag + ".c")
    with open(path, "w") as f:
        f.write(src)
    exe = os.path.join(work, tag)
    _compile(opts["toolchain"]["cc"], [c for c in opts["toolchain"]["cflags"] if c != "-Werror"], path, exe,
             session.root)
    status, text = run_program([exe, os.path.join(work, tag + ".bin")], opts["run"]["timeout"])
    if status != 0:
        raise RuntimeError(f"{exe}: status {status}\n{text}")
    return float(text.split()[-1])


def peak(session, work, opts) -> tuple:
    """(GMAC/s, isa): one core's multiply-add peak of the best generated variant this CPU
    runs (avx512vnni's vpdpbusd, else avx2's vpmaddwd; isa "none" and 0 without either)."""
    src = os.path.join(work, "peak.c")
    with open(src, "w") as f:
        f.write(_PEAK)
    exe = os.path.join(work, "peak")
    _compile(opts["toolchain"]["cc"], ["-std=c99", "-O2"], src, exe, session.root)
    vals, isa = [], "none"
    for _ in range(3):
        status, text = run_program([exe], 120)
        vals.append(float(text.split()[-1]))
        isa = text.split()[-2]
    return max(vals), isa


def run_tune(target, source, env):
    session = env["NNS_SESSION"]
    opts = session.options
    reps = max(3, min(env["NNS_ITERATIONS"], 50))
    layers = {}
    with tempfile.TemporaryDirectory(prefix="nnscons-tune-") as work:
        pk, pk_isa = peak(session, work, opts)
        for lp in session.plan.layers:
            if "gemm" not in lp.spec:
                continue
            results = []
            for blk in candidates(lp):
                ms = time_candidate(session, lp, blk, work, reps, opts)
                results.append((ms, blk["mr"], blk["nr"], blk["k_unroll"], blk["order"]))
            ms, mr, nr, ku, order = min(results)
            gmacs = lp.macs / (ms * 1e6)
            layers[lp.layer.name] = {"mr": mr, "nr": nr, "k_unroll": ku, "order": order,
                                     "median_ms": round(ms, 4), "gmac_per_s": round(gmacs, 2),
                                     "fraction_of_peak": round(gmacs / pk, 3) if pk > 0 else None,
                                     "candidates": [{"mr": r[1], "nr": r[2], "k_unroll": r[3], "order": r[4],
                                                     "median_ms": round(r[0], 4)} for r in sorted(results)]}
            print(f"  {lp.layer.name:<24} {mr:>2}x{nr:<2} u{ku} {order:<5}  {ms:8.3f} ms  {gmacs:6.1f} GMAC/s  "
                  f"{gmacs / pk if pk else 0:5.0%} of peak")
    doc = {"model": session.model_cfg.name, "target": session.target_cfg.name,
           "peak_gmac_per_s": round(pk, 2), "repetitions": reps, "layers": layers}
    write_if_changed(str(target[0]), json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"TUNE [{session.target_cfg.name}] {session.model_cfg.name}: {len(layers)} layers, peak "
          f"{pk:.1f} GMAC/s ({pk_isa}) -> {target[0]}; name it in targets.yaml: "
          f"targets.{session.target_cfg.name}.kernel.tuning")
    return 0
