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
from . import gemm, measure

N_CANDIDATES = 8       # kept for callers: the int16 variants' count before the per-variant search
N_PER_VARIANT = 6      # blockings timed per variant (its cost model's best two or three)

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
/* vpdpbusd's peak on one vector type: 16 independent chains (its latency times two issues
 * per cycle on current cores), distinct opaque starting values as in peak_avx2; one body
 * for ymm (avx512vnni, 32 MACs per op) and zmm (avx512vnni512, 64) */
#define OPAQUE_V __asm__ volatile("" : "+v"(w), "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5), \
                                  "+v"(c6), "+v"(c7), "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11), "+v"(c12))
#define OPAQUE_W __asm__ volatile("" : "+v"(c13), "+v"(c14), "+v"(c15))
#define PEAK_DPBUSD(name, T, set8, set32, dpbusd, add, macs)                                           \
static NN_VNNI double name(long n)                                                                      \
{                                                                                                       \
    T w = set8(1);                                                                                      \
    T c0 = set32(1), c1 = set32(2), c2 = set32(3), c3 = set32(4), c4 = set32(5), c5 = set32(6);         \
    T c6 = set32(7), c7 = set32(8), c8 = set32(9), c9 = set32(10), c10 = set32(11), c11 = set32(12);    \
    T c12 = set32(13), c13 = set32(14), c14 = set32(15), c15 = set32(16);                               \
    struct timespec t0, t1;                                                                             \
    long i;                                                                                             \
    OPAQUE_V;                                                                                           \
    OPAQUE_W;                                                                                           \
    clock_gettime(CLOCK_MONOTONIC, &t0);                                                                \
    for (i = 0; i < n; ++i) {                                                                           \
        c0 = dpbusd(c0, c0, w); c1 = dpbusd(c1, c1, w); c2 = dpbusd(c2, c2, w); c3 = dpbusd(c3, c3, w); \
        c4 = dpbusd(c4, c4, w); c5 = dpbusd(c5, c5, w); c6 = dpbusd(c6, c6, w); c7 = dpbusd(c7, c7, w); \
        c8 = dpbusd(c8, c8, w); c9 = dpbusd(c9, c9, w); c10 = dpbusd(c10, c10, w);                      \
        c11 = dpbusd(c11, c11, w); c12 = dpbusd(c12, c12, w); c13 = dpbusd(c13, c13, w);                \
        c14 = dpbusd(c14, c14, w); c15 = dpbusd(c15, c15, w);                                           \
        OPAQUE_V;                                                                                       \
        OPAQUE_W;                                                                                       \
    }                                                                                                   \
    clock_gettime(CLOCK_MONOTONIC, &t1);                                                                \
    c0 = add(add(add(c0, c1), add(c2, c3)), add(add(c4, c5), add(c6, c7)));                             \
    c8 = add(add(add(c8, c9), add(c10, c11)), add(add(c12, c13), add(c14, c15)));                       \
    c0 = add(c0, c8);                                                                                   \
    __asm__ volatile("" : : "v"(c0));                                                                   \
    return (double)n * 16 * (macs) / ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec));      \
}
PEAK_DPBUSD(peak_vnni, __m256i, _mm256_set1_epi8, _mm256_set1_epi32, _mm256_dpbusd_epi32, _mm256_add_epi32, 32)
PEAK_DPBUSD(peak_vnni512, __m512i, _mm512_set1_epi8, _mm512_set1_epi32, _mm512_dpbusd_epi32, _mm512_add_epi32, 64)
#endif
#if NN_HAVE_X86 && NN_HAVE_AVXVNNI
static NN_AVXVNNI double peak_avxvnni(long n)
{
    /* the VEX vpdpbusd (avxvnni): 12 chains within its 16 registers */
    __m256i w = _mm256_set1_epi8(1);
    __m256i c0 = _mm256_set1_epi32(1), c1 = _mm256_set1_epi32(2), c2 = _mm256_set1_epi32(3);
    __m256i c3 = _mm256_set1_epi32(4), c4 = _mm256_set1_epi32(5), c5 = _mm256_set1_epi32(6);
    __m256i c6 = _mm256_set1_epi32(7), c7 = _mm256_set1_epi32(8), c8 = _mm256_set1_epi32(9);
    __m256i c9 = _mm256_set1_epi32(10), c10 = _mm256_set1_epi32(11), c11 = _mm256_set1_epi32(12);
    struct timespec t0, t1;
    long i;
    OPAQUE;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < n; ++i) {
#define ASTEP(c) c = _mm256_dpbusd_avx_epi32(c, c, w)
        ASTEP(c0); ASTEP(c1); ASTEP(c2); ASTEP(c3); ASTEP(c4); ASTEP(c5);
        ASTEP(c6); ASTEP(c7); ASTEP(c8); ASTEP(c9); ASTEP(c10); ASTEP(c11);
        OPAQUE;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    c0 = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3)),
                          _mm256_add_epi32(_mm256_add_epi32(c4, c5), _mm256_add_epi32(c6, c7)));
    c0 = _mm256_add_epi32(c0, _mm256_add_epi32(_mm256_add_epi32(c8, c9), _mm256_add_epi32(c10, c11)));
    __asm__ volatile("" : : "x"(c0));
    return (double)n * 12 * 32 / ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec));
}
#endif
#if NN_HAVE_X86
static NN_AVX2 double peak_avx2u8(long n)
{
    /* avx2u8's inner step (isa_x86.Avx2U8): vpmaddubsw (32 MACs), then its widening without a
     * second multiply (xor, add; shift, add) into two accumulators, 6 independent chains */
    __m256i w = _mm256_set1_epi8(1), lo = _mm256_set1_epi32(0x8000);
    __m256i b0 = _mm256_set1_epi32(1), b1 = _mm256_set1_epi32(2), b2 = _mm256_set1_epi32(3);
    __m256i b3 = _mm256_set1_epi32(4), b4 = _mm256_set1_epi32(5), b5 = _mm256_set1_epi32(6);
    __m256i d0 = b0, d1 = b1, d2 = b2, d3 = b3, d4 = b4, d5 = b5;
    __m256i h0 = b0, h1 = b1, h2 = b2, h3 = b3, h4 = b4, h5 = b5;
    struct timespec t0, t1;
    long i;
#define OPAQUE_U __asm__ volatile("" : "+x"(w), "+x"(d0), "+x"(d1), "+x"(d2), "+x"(d3), "+x"(d4), "+x"(d5), \
                                  "+x"(h0), "+x"(h1), "+x"(h2), "+x"(h3), "+x"(h4), "+x"(h5))
    OPAQUE_U;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < n; ++i) {
#define USTEP(b, d, h) { const __m256i t = _mm256_maddubs_epi16(b, w); \
        d = _mm256_add_epi32(d, _mm256_xor_si256(t, lo)); h = _mm256_add_epi32(h, _mm256_srai_epi32(t, 16)); }
        USTEP(b0, d0, h0); USTEP(b1, d1, h1); USTEP(b2, d2, h2);
        USTEP(b3, d3, h3); USTEP(b4, d4, h4); USTEP(b5, d5, h5);
        OPAQUE_U;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    d0 = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(d0, d1), _mm256_add_epi32(d2, d3)),
                          _mm256_add_epi32(_mm256_add_epi32(d4, d5), _mm256_add_epi32(h0, h1)));
    d0 = _mm256_add_epi32(d0, _mm256_add_epi32(_mm256_add_epi32(h2, h3), _mm256_add_epi32(h4, h5)));
    __asm__ volatile("" : : "x"(d0), "x"(b0), "x"(b1), "x"(b2), "x"(b3), "x"(b4), "x"(b5));
    return (double)n * 6 * 32 / ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec));
}
#endif
/* the best of many short runs: on a shared machine a long run mostly measures the time the
 * other work takes */
static double best_of(double (*f)(long))
{
    double best = 0;
    int r;
    for (r = 0; r < 200; ++r) {
        const double v = f(250000L);
        best = v > best ? v : best;
    }
    return best;
}
int main(void)
{
    /* one line per variant this CPU runs, the one `isa: auto` prefers by CPUID first */
#if NN_HAVE_X86
    int any = 0;
    if (nn_cpu_has_avx512vnni()) {
        printf("peak avx512vnni %.3f\n", best_of(peak_vnni));
        printf("peak avx512vnni512 %.3f\n", best_of(peak_vnni512));
        any = 1;
    }
#if NN_HAVE_AVXVNNI
    if (nn_cpu_has_avxvnni()) {
        printf("peak avxvnni %.3f\n", best_of(peak_avxvnni));
        any = 1;
    }
#endif
    if (nn_cpu_has_avx2()) {
        printf("peak avx2 %.3f\n", best_of(peak_avx2));
        printf("peak avx2u8 %.3f\n", best_of(peak_avx2u8));
        any = 1;
    }
    if (any)
        return 0;
#endif
    printf("peak none 0\n");
    return 0;
}
"""


def candidates(lp) -> list:
    """The blockings to time for a layer: its current one, then per variant this CPU runs
    (of those the layer can hold, measure.ORDER) the best of that variant's own cost model
    within its registers (the vnni ones' 32 registers and zmm widths: kernelgen.vnni_candidates),
    each with that variant forced (`isa`)."""
    g = lp.spec["gemm"]["geom"]
    m, n, k2 = g["oh"] * g["ow"], g["oc"], kernelgen.padded(g)["k2"]
    q = kernelgen.u8_steps(g)
    info = measure.cpu_info()
    out = [dict(lp.spec["gemm"]["blocking"])]
    # portable C only where it is the layer's only variant (elsewhere 5-20x slower)
    cands = lp.spec["gemm"]["variants"] if lp.spec["gemm"]["isa"] != "auto" else \
        ["portable"] if lp.spec["gemm"]["variants"] == ["portable"] else [v for v in measure.ORDER if v != "portable"]
    for v in cands:
        if measure.cannot_run(v, info) or (v in kernelgen.U8_ISAS and not kernelgen.u8_supported(g)):
            continue
        if v in kernelgen.VNNI_ISAS:
            lanes = kernelgen.VNNI_SEARCH[v][1]
            ranked = sorted(kernelgen.vnni_candidates(v), key=lambda c: (
                kernelgen.vnni_blocking(m, n, q, "panel", v) != {"mr": c[0], "nr": c[1], "k_unroll": 2, "order": "panel"},
                -(-m // c[0]) * -(-n // c[1]) * max((c[0] * c[1] // lanes + c[0]) / 2.0, kernelgen.VNNI_LATENCY), c))
        elif v == "avx2u8":
            ranked = [(kernelgen.U8_BLOCKING["mr"], kernelgen.U8_BLOCKING["nr"])]
        else:
            ranked = sorted(kernelgen.candidates(limits=kernelgen.core_limits()),
                            key=lambda c: (kernelgen.cost(m, n, k2, *c), c))
        # its model's best at both unrolls and orders, the next ones at k_unroll 2
        mine = [{"mr": mr, "nr": nr, "k_unroll": ku, "order": order, "isa": v}
                for i, (mr, nr) in enumerate(ranked) for order in ("panel", "block") for ku in ((2, 4) if i == 0 else (2,))]
        out += mine[:N_PER_VARIANT]
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
    # the direct kernel's blockings (a Winograd layer's transform has none of these keys)
    g = gemm.plan_layer(layer, graph, opts, dict(blk, winograd=False), {}, lambda *k: "tune")
    spec = copy.deepcopy(lp.spec)
    spec["gemm"].pop("wino", None)
    spec["gemm"]["isa"] = g["spec"]["isa"]
    spec["gemm"]["variants"] = g["spec"]["variants"]
    spec["gemm"]["blocking"] = dict(blk)
    spec["gemm"]["threads"] = lp.spec["gemm"]["threads"]
    spec["gemm"]["u8"] = g["spec"]["u8"]     # the u8 variants' blockings follow the candidate's
    spec["params"] = {s: {"dtype": d, "count": c, "offset": o} for s, d, c, o in g["layout"]}
    spec["gemm"]["geom"] = g["spec"]["geom"]
    blob = g["pack"](layer, graph, g["layout"])
    tag = f"{lp.cname}_{blk['mr']}x{blk['nr']}u{blk['k_unroll']}{blk.get('order', '')}"
    # the layer's standalone timing program (measure.program: one thread's CPU time)
    spec["gemm"]["threads"] = 1
    cmd = measure.program(spec, blob, kernelgen.scratch(spec)["bytes"], work, tag, opts["toolchain"]["cc"])
    times = []
    for _ in range(max(1, reps // measure.REPS)):
        status, text = run_program(cmd, opts["run"]["timeout"])
        if status != 0 or not text.startswith("variant ") or text.startswith("variant none"):
            raise RuntimeError(f"{cmd[0]}: status {status}\n{text}")
        times.append(float(text.split()[-1]))
    return statistics.median(times)


def peaks(session, work, opts) -> dict:
    """{variant: GMAC/s}: one core's multiply-add peak of each generated variant this CPU
    runs (avx512vnni's vpdpbusd on ymm and on zmm, avxvnni's, avx2's vpmaddwd, avx2u8's vpmaddubsw and its widening), the
    CPUID-preferred first; {"none": 0} without any.  The best of three probe runs each."""
    src = os.path.join(work, "peak.c")
    with open(src, "w") as f:
        f.write(_PEAK)
    exe = os.path.join(work, "peak")
    _compile(opts["toolchain"]["cc"], ["-std=c99", "-O2"], src, exe, session.root)
    out = {}
    for _ in range(3):
        status, text = run_program([exe], 120)
        for line in text.splitlines():
            f = line.split()
            if len(f) == 3 and f[0] == "peak":
                out[f[1]] = max(out.get(f[1], 0.0), float(f[2]))
    return out or {"none": 0.0}


def run_tune(target, source, env):
    session = env["NNS_SESSION"]
    opts = session.options
    reps = max(3, min(env["NNS_ITERATIONS"], 50))
    layers = {}
    with tempfile.TemporaryDirectory(prefix="nnscons-tune-") as work:
        pks = peaks(session, work, opts)
        pk_isa = next(iter(pks))
        pk = pks[pk_isa]
        info = measure.cpu_info()
        for lp in session.plan.layers:
            if "gemm" not in lp.spec:
                continue
            results = []
            for blk in candidates(lp):
                ms = time_candidate(session, lp, blk, work, reps, opts)
                results.append((ms, blk["mr"], blk["nr"], blk["k_unroll"], blk["order"], blk.get("isa", "")))
            ms, mr, nr, ku, order, isa = min(results)
            gmacs = lp.macs / (ms * 1e6)
            # against the peak of the variant the winner ran (a Winograd layer's: its direct MACs)
            vpk = pks.get(isa or measure.running(lp.spec["gemm"]["variants"], info), pk)
            layers[lp.layer.name] = {"mr": mr, "nr": nr, "k_unroll": ku, "order": order,
                                     "median_ms": round(ms, 4), "gmac_per_s": round(gmacs, 2),
                                     "fraction_of_peak": round(gmacs / vpk, 3) if vpk > 0 else None,
                                     "candidates": [{"mr": r[1], "nr": r[2], "k_unroll": r[3], "order": r[4],
                                                     **({"isa": r[5]} if r[5] else {}),
                                                     "median_ms": round(r[0], 4)} for r in sorted(results)]}
            if isa:       # the variant the winner ran (the layer's dispatch order otherwise)
                layers[lp.layer.name]["isa"] = isa
            print(f"  {lp.layer.name:<24} {isa or 'auto':<13} {mr:>2}x{nr:<2} u{ku} {order:<5}  {ms:8.3f} ms  "
                  f"{gmacs:6.1f} GMAC/s  {gmacs / vpk if vpk else 0:5.0%} of its peak")
    doc = {"model": session.model_cfg.name, "target": session.target_cfg.name,
           "peak_gmac_per_s": round(pk, 2), "repetitions": reps, "layers": layers}
    write_if_changed(str(target[0]), json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"TUNE [{session.target_cfg.name}] {session.model_cfg.name}: {len(layers)} layers, peak "
          f"{pk:.1f} GMAC/s ({pk_isa}) -> {target[0]}; name it in targets.yaml: "
          f"targets.{session.target_cfg.name}.kernel.tuning")
    return 0
