"""The fma epilogues -- AVX-512's with the fused residual add (nn_vnni_requant_res8), AVX2's
with it (nn_avx2_fma_res8) and without (nn_avx2_fma8) -- against the scalar rule,
nn_requantize (then nn_res_add), on random and tie-heavy parameters: the conv's shifts over
the fma range [11, 62] (2**(shift-1) multipliers make every odd value a tie), the add's
shifts small enough that ties are common, zero points and clamps at their extremes, and
partial vectors (n < 8).  Built as a ctypes library; a CPU without the kernel's features
skips with the reason."""
from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from conftest import kernel_library

ROOT = Path(__file__).resolve().parents[1]

SOURCE = r"""
#include <stdint.h>
#include <string.h>
#include "nn_gemm.h"

static uint64_t rs = 88172645463325252ULL;
static uint32_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return (uint32_t)rs; }
static int32_t pick(int32_t lo, int32_t hi) { return lo + (int32_t)(rnd() % (uint32_t)(hi - lo + 1)); }

#if NN_HAVE_X86
static NN_VNNI int run(const int32_t *acc, const nn_epi_t *e, const int8_t *r, int n, const nn_res_t *ad,
                       int8_t *out)
{
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)acc);
    nn_vnni_store8c(out, nn_vnni_requant_res8(a, e, 0, nn_vnni_load8(r, n), ad), n,
                    _mm_set1_epi8((char)ad->e.act_min), _mm_set1_epi8((char)ad->e.act_max));
    return 0;
}

/* the AVX2 fma epilogues: with the add (nn_avx2_fma_res8) or without (nn_avx2_fma8) */
static NN_AVX2 int run_avx2(const int32_t *acc, const nn_epi_t *e, const int8_t *r, int n, const nn_res_t *ad,
                            int8_t *out)
{
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)acc);
    if (ad) {
        nn_avx2_fres_t fc;
        nn_avx2_fres_init(&fc, e, ad);
        nn_avx2_fma_store8(out, nn_avx2_fma_res8(a, e, 0, r, n, &fc), n, _mm256_set1_epi16((short)ad->e.zp));
    } else {
        nn_avx2_fma_store8(out, nn_avx2_fma8(a, e, 0, _mm256_set1_pd(0x1.8p52), _mm256_set1_pd(0x1.8p52 + e->dlo),
                                             _mm256_set1_pd(0x1.8p52 + e->dhi)), n, _mm256_set1_epi16((short)e->zp));
    }
    return 0;
}
#endif

/* cases x 8 lanes; returns the mismatches (-1: this CPU cannot run the kernel).  kernel 0:
 * AVX-512's with the add, 1: AVX2's with the add, 2: AVX2's without */
long check(int cases, uint64_t seed, int kernel)
{
    long bad = 0;
    if (!(kernel ? nn_cpu_has_avx2() : nn_cpu_has_avx512vnni()))
        return -1;
#if NN_HAVE_X86
    rs ^= seed;
    for (int c = 0; c < cases; ++c) {
        int32_t bias[8], mult[8], shift[8], acc[8];
        int8_t r[8], out[8];
        nn_epi_t e;
        nn_res_t ad;
        const int tie = c % 3 == 0;
        const int32_t zp = pick(-128, 127), za = pick(-128, 127), zb = pick(-128, 127), zo = pick(-128, 127);
        const int32_t lo = c % 2 ? -128 : pick(-128, 0), hi = c % 2 ? 127 : pick(lo, 127);
        const int32_t olo = c % 5 ? -128 : pick(-128, 0), ohi = c % 5 ? 127 : pick(olo, 127);
        const int32_t s = tie ? pick(1, 4) : pick(10, 40);
        const int32_t ma = tie ? pick(-20, 20) : pick(-(1 << 30), 1 << 30), mb = tie ? pick(-20, 20) : pick(-(1 << 30), 1 << 30);
        const int n = c % 4 == 1 ? pick(1, 8) : 8;
        for (int i = 0; i < 8; ++i) {
            shift[i] = pick(11, c % 7 ? 40 : 62);
            mult[i] = tie ? 1 << (shift[i] - 1) >> pick(0, 3) : pick(1 << 29, 0x7fffffff);
            bias[i] = pick(-(1 << 20), 1 << 20);
            acc[i] = c % 11 ? pick(-(1 << 24), 1 << 24) : (int32_t)rnd() / 2;
            if (tie)
                acc[i] = pick(-400, 400);
            r[i] = (int8_t)pick(-128, 127);
        }
        nn_epi_init(&e, bias, mult, shift, 8, zp, lo, hi);
        nn_res_init(&ad, za, ma, zb, mb, s, zo, olo, ohi);
        if (!e.fma)
            continue;
        memset(out, 0x55, sizeof out);
        if (kernel)
            run_avx2(acc, &e, r, n, kernel == 1 ? &ad : NULL, out);
        else
            run(acc, &e, r, n, &ad, out);
        for (int i = 0; i < 8; ++i) {
            const int8_t q = nn_requantize((int64_t)acc[i] + bias[i], mult[i], shift[i], zp, lo, hi);
            const int8_t want = kernel == 2 ? q : nn_res_add(q, r[i], &ad);
            bad += i < n ? out[i] != want : out[i] != 0x55;
        }
    }
#endif
    return bad;
}
"""


@pytest.mark.parametrize("kernel", [0, 1, 2], ids=["avx512-res", "avx2-fma-res", "avx2-fma"])
def test_fma_epilogues_match_the_scalar_rule(tmp_path_factory, kernel):
    src = tmp_path_factory.mktemp("vnni_res_src") / "vnni_res.c"
    src.write_text(SOURCE)
    lib = kernel_library(tmp_path_factory, f"vnni_res{kernel}", [str(src)],
                         [str(ROOT / "kernels" / "common"), str(ROOT / "kernels" / "host")])
    lib.check.restype = ctypes.c_long
    lib.check.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_int]
    bad = lib.check(200000, 12345, kernel)
    if bad == -1:
        pytest.skip(f"built, but this CPU cannot run {'avx512vnni' if kernel == 0 else 'avx2 + fma'} (CPUID)")
    assert bad == 0
