"""The GEMMs of Winograd F(4,3) (kernelgen.wino): per position, a block of r tiles x 16
output channels (one panel; the zmm variant two) over K = ICP/2 int16 pairs into wrapping
int32, stored to mb[position][tile][16] (per panel).

The blockings: on a Zen 4 (family 25 model 17) every one of r tiles x 16-32 channels, ymm
(12 x 2, 14 x 2, 6 x 4, 7 x 3) and zmm (7 x 1, 14 x 1, 7 x 2, 12 x 2 zmm), runs at 106-113
int16 GMAC/s with V and U in L1 (about two vpdpwssd ymm per cycle: the core's peak), so the
register blocking is not what a layer loses to; the zmm variant takes two panels per block
so that a band of 7 tiles still has 14 independent accumulators, what a core with two
512-bit vpdpwssd per cycle and a latency of 4 needs in flight."""
from __future__ import annotations

from .isa_x86 import _pin

NR = 16
# the zmm variant's input transform takes int16 lanes on zmm: avx512bw (NN_VNNI's targets and BW)
_ATTR = {"avx512vnni": "NN_VNNI ", "avx2": "NN_AVX2 ", "portable": "",
         "avx512vnni512": '__attribute__((target("avx2,fma,avx512f,avx512vl,avx512bw,avx512vnni"))) '}


def name(isa: str, r: int, panels: int = 1) -> str:
    return f"gemm_{isa}_{r}" + ("" if panels == 1 else f"x{panels}")


def gemm(isa: str, r: int, icp: int, panels: int = 1) -> list:
    """name(isa, r, panels)(v, w, mb): one position's r tiles x 16 channels of `panels` panels
    (the zmm variant's second panel's U and mb at w1, mb1; the others ignore them)."""
    L = [f"static {_ATTR[isa]}void {name(isa, r, panels)}(const int16_t *v, const int16_t *w, int32_t *mb, "
         "const int16_t *w1, int32_t *mb1)", "{"]
    if isa == "portable":
        L += ["    (void)w1; (void)mb1;", f"    uint32_t c[{r}][16];", "    memset(c, 0, sizeof c);",
              f"    for (int k = 0; k < {icp // 2}; ++k, w += 32)",
              f"        for (int m = 0; m < {r}; ++m) {{",
              f"            const int16_t *a = v + (long)m * {icp};",
              "            for (int j = 0; j < 16; ++j)",
              "                c[m][j] += (uint32_t)((int32_t)a[2 * k] * w[2 * j] + (int32_t)a[2 * k + 1] * w[2 * j + 1]);",
              "        }",
              "    memcpy(mb, c, sizeof c);", "}", ""]
        return L
    L += [f"    const int16_t *a{m} = v + {m * icp};" for m in range(r)]
    if isa == "avx512vnni512":
        return L + _zmm(r, icp, panels)
    L.append("    (void)w1; (void)mb1;")
    op = ("_mm256_dpwssd_epi32({c}, {b}, {w})" if isa == "avx512vnni"
          else "_mm256_add_epi32({c}, _mm256_madd_epi16({b}, {w}))")
    for m in range(r):
        L.append(f"    __m256i c{m}_0 = _mm256_setzero_si256(), c{m}_1 = _mm256_setzero_si256();")
    L += [f"    for (int k = 0; k < {icp // 2}; ++k, w += 32) {{",
          "        const __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)w), "
          "w1 = _mm256_loadu_si256((const __m256i *)(const void *)(w + 16));"]
    for m in range(r):
        L.append(f"        {{ const __m256i b = _mm256_set1_epi32(nn_load_pair(a{m} + 2 * k));")
        L.append(f"          c{m}_0 = {op.format(c=f'c{m}_0', b='b', w='w0')}; "
                 f"c{m}_1 = {op.format(c=f'c{m}_1', b='b', w='w1')}; }}")
    accs = [f"c{m}_{v}" for m in range(r) for v in range(2)]
    L += ["    " + a for a in _pin(accs, "v" if isa == "avx512vnni" else "x")]
    L.append("    }")
    for m in range(r):
        for v in range(2):
            L.append(f"    _mm256_storeu_si256((__m256i *)(void *)(mb + {m * 16 + v * 8}), c{m}_{v});")
    return L + ["}", ""]


def _zmm(r: int, icp: int, panels: int) -> list:
    """The zmm body: one 64-byte load per panel and K step (16 channels x a pair: the panel's
    [ICP/2][16][2] row), one broadcast pair per tile, r x panels vpdpwssd zmm."""
    L = [] if panels == 2 else ["    (void)w1; (void)mb1;"]
    for m in range(r):
        L.append("    __m512i " + ", ".join(f"c{m}_{p} = _mm512_setzero_si512()" for p in range(panels)) + ";")
    L.append(f"    for (int k = 0; k < {icp // 2}; ++k, w += 32{', w1 += 32' if panels == 2 else ''}) {{")
    L += [f"        const __m512i u{p} = _mm512_loadu_si512((const void *)w{'1' if p else ''});" for p in range(panels)]
    for m in range(r):
        L.append(f"        {{ const __m512i b = _mm512_set1_epi32(nn_load_pair(a{m} + 2 * k));")
        L.append("          " + " ".join(f"c{m}_{p} = _mm512_dpwssd_epi32(c{m}_{p}, b, u{p});" for p in range(panels)) + " }")
    L += ["    " + a for a in _pin([f"c{m}_{p}" for m in range(r) for p in range(panels)], "v")]
    L.append("    }")
    for p in range(panels):
        L += [f"    _mm512_storeu_si512((void *)(mb{'1' if p else ''} + {m * 16}), c{m}_{p});" for m in range(r)]
    return L + ["}", ""]
