/* Support for the generated BRGEMM layer kernels (site_scons/nnscons/kernelgen/).
 *
 * A generated conv/linear layer converts its HWC int8 input once into a zero-point-padded
 * int16 buffer, then runs register-blocked microkernels over (pixel block, channel panel)
 * pairs.  Accumulators hold sum(w * x) over raw x; the bias in the weights .bin already
 * has -zp_in * sum(w) folded in, so padding reads zp_in and contributes nothing.
 *
 * The epilogue is nn_requant.h's rule exactly: out = clamp(zp + rne(v * M, s)), with
 * v = acc + bias' in int32 (the generator proves |v| < 2**31 for the vector paths),
 * 64-bit products and round half to even.  nn_epi_t holds one channel panel's
 * constants in the shapes the vector epilogues load.
 */
#ifndef NN_GEMM_H
#define NN_GEMM_H

#include <stdint.h>
#include <string.h>

#include "nn_requant.h"

#define NN_GEMM_NR_MAX 64

struct nn_res;

typedef struct {
    int32_t bias[NN_GEMM_NR_MAX], mult[NN_GEMM_NR_MAX], shift[NN_GEMM_NR_MAX];
    /* per 8-channel vector v, parity p (channel v*8 + 2*j + p): index [p][v*4 + j] */
    int64_t sh[2][NN_GEMM_NR_MAX / 2], hm1[2][NN_GEMM_NR_MAX / 2], off[2][NN_GEMM_NR_MAX / 2];
    int64_t lo, hi;             /* clamp bounds minus zp */
    double mf[NN_GEMM_NR_MAX];  /* mult / 2**shift, exact in double (the f64 epilogue) */
    double dlo, dhi;            /* clamp bounds minus zp */
    int32_t zp, act_min, act_max;
    const struct nn_res *res;   /* a residual add fused into the epilogue, or NULL */
    /* TFLite's rules (negative shifts, nn_requant.h): 1 = MultiplyByQuantizedMultiplier
     * with its left and right shifts and the rounding mask of the right shift; 2 = the
     * double-precision rule (per lane, nn_requantize) */
    int32_t tfl;
    int32_t tleft[NN_GEMM_NR_MAX], tright[NN_GEMM_NR_MAX], tmask[NN_GEMM_NR_MAX];
    /* every shift in [11, 62], no TFLite rule: the AVX-512 fma epilogue is exact
     * (nn_vnni_requant8); fmaoff = the bits of 1.5 * 2**52 minus zp */
    int32_t fma;
    int64_t fmaoff;
} nn_epi_t;

/* TFLite's ADD/SUB of two int8 operands: its parameters (the general fields, which the
 * scalar nn_res_add reads) and the same prepared for 8 lanes at a time (nn_avx2_tfl_add8).
 * Each operand's term RDBPOT(SRDHM((q - z) << 20, m), r) is one floor division:
 * SRDHM(x * 2**20, m) = floor((x*m + 2**10) / 2**11) (ties toward +inf, both signs), and
 * the rounding right shift after it folds into the same floor, with 2**11 less in the
 * constant where x < 0 (ties away from zero; t < 0 exactly when x < 0 since m >= 2**30):
 *     term = floor((x*m + c0 + (x < 0 ? nadj : 0)) / 2**k),  k = 11 + r,
 * computed in int32 as x*mh + ((x*ml + c) >> k) with m = mh * 2**k + ml (|x| <= 255, so
 * every product fits when r <= 10).  The output stage, RDBPOT(SRDHM(s, mo), ro), is the
 * same fold on the 64-bit product: floor((s*mo + 2**30 + 2**(ro+30)) / 2**31), minus 1
 * where s < 0 (ro > 0), then >> ro.  Parameters outside those bounds (fast == 0) take the
 * general path, three MultiplyByQuantizedMultiplier. */
typedef struct {
    int32_t fast, sub;                  /* sub: b's term is subtracted (TFLite's SUB) */
    int32_t za, zb, zp, act_min, act_max;
    int32_t ma, ea, mb, eb, mo, eo;     /* the general path: multipliers, exponents */
    int32_t mh[2], ml[2], c0[2], nadj[2], k[2];   /* the operands' terms (a, b) */
    long long c0o;                      /* the output stage */
    int32_t nadjo, ro;
} nn_tfl_add_t;

static inline void nn_tfl_add_init(nn_tfl_add_t *t, int32_t za, int32_t ma, int32_t ea, int32_t zb,
                                   int32_t mb, int32_t eb, int32_t mo, int32_t eo, int32_t zp,
                                   int32_t lo, int32_t hi)
{
    const int32_t m[2] = {ma, mb < 0 ? -mb : mb}, e[2] = {ea, eb};
    int i;
    memset(t, 0, sizeof *t);
    t->sub = mb < 0;
    t->za = za;
    t->zb = zb;
    t->zp = zp;
    t->act_min = lo;
    t->act_max = hi;
    t->ma = m[0];
    t->ea = ea;
    t->mb = m[1];
    t->eb = eb;
    t->mo = mo;
    t->eo = eo;
    t->fast = mo >= (1 << 30) && eo <= 0 && eo >= -30;
    for (i = 0; i < 2; ++i) {
        const int32_t r = -e[i], k = 11 + r;
        t->fast &= m[i] >= (1 << 30) && e[i] <= 0 && e[i] >= -10;
        if (!t->fast)
            return;
        t->k[i] = k;
        t->mh[i] = m[i] >> k;
        t->ml[i] = m[i] & ((1 << k) - 1);
        t->c0[i] = (1 << 10) + (r > 0 ? 1 << (r + 10) : 0);
        t->nadj[i] = r > 0 ? -(1 << 11) : 0;
    }
    t->ro = -eo;
    t->c0o = (1LL << 30) + (t->ro > 0 ? 1LL << (t->ro + 30) : 0);
    t->nadjo = t->ro > 0 ? -1 : 0;
}

/* A residual add fused into a conv's epilogue, exactly the add layer's rule
 * (nn_add_s8): q = the conv's int8 output (zero point za, multiplier ma), r = the other
 * operand (zb, mb); out = clamp(zp + rne(((q - za) * ma + (r - zb) * mb) / 2**s)).
 * e holds the add's rounding (one shift), zero point and clamp in nn_epi_t's shapes. */
typedef struct nn_res {
    nn_epi_t e;
    int32_t za, ma, zb, mb;
    double fa, fb;              /* ma / 2**s, mb / 2**s (exact: powers of two) */
    int32_t tfl;                /* TFLite's ADD instead: every parameter is in t */
    nn_tfl_add_t t;
} nn_res_t;

/* One panel of nr channels starting at channel n0 of bias/mult/shift. */
static inline void nn_epi_init(nn_epi_t *e, const int32_t *bias, const int32_t *mult,
                               const int32_t *shift, int nr, int32_t zp, int32_t lo, int32_t hi)
{
    int n;
    memset(e, 0, sizeof *e);
    for (n = 0; n < nr; ++n) {
        const int s = shift[n];
        const int p = n & 1, j = (n >> 3) * 4 + ((n & 7) >> 1);
        e->bias[n] = bias[n];
        e->mult[n] = mult[n];
        e->shift[n] = s;
        if (s <= NN_TFL_F64_FLAG) {     /* TFLite's double-precision rule */
            e->tfl = 2;
            continue;
        }
        if (s < 0) {            /* TFLite's MultiplyByQuantizedMultiplier: exponent s + 32 */
            const int x = s + NN_TFL_SHIFT_BIAS;
            if (!e->tfl)
                e->tfl = 1;
            e->tleft[n] = x > 0 ? x : 0;
            e->tright[n] = x > 0 ? 0 : -x;
            e->tmask[n] = (int32_t)(((int64_t)1 << e->tright[n]) - 1);
            continue;
        }
        e->sh[p][j] = s;
        e->hm1[p][j] = ((int64_t)1 << (s - 1)) - 1;
        e->off[p][j] = (int64_t)((uint64_t)1 << (63 - s));
        {   /* mult * 2**-s: the power of two built from its exponent bits (exact, s <= 62);
             * a division per channel was most of a small layer's set-up */
            const uint64_t bits = (uint64_t)(1023 - s) << 52;
            double p2;
            memcpy(&p2, &bits, sizeof p2);
            e->mf[n] = (double)mult[n] * p2;
        }
    }
    e->fma = !e->tfl && nr > 0;
    for (n = 0; n < nr; ++n)
        e->fma &= shift[n] >= 11 && shift[n] <= 62;
    e->fmaoff = (int64_t)0x4338000000000000LL - zp;
    e->lo = (int64_t)lo - zp;
    e->hi = (int64_t)hi - zp;
    e->dlo = (double)lo - zp;
    e->dhi = (double)hi - zp;
    e->zp = zp;
    e->act_min = lo;
    e->act_max = hi;
    e->res = 0;
}

static inline void nn_res_init(nn_res_t *r, int32_t za, int32_t ma, int32_t zb, int32_t mb, int32_t shift,
                               int32_t zp, int32_t lo, int32_t hi)
{
    int32_t b[8], m[8], s[8];
    int i;
    memset(r, 0, sizeof *r);    /* the TFLite fields unused (r may be on the stack) */
    for (i = 0; i < 8; ++i) {
        b[i] = 0;
        m[i] = 0;
        s[i] = shift;
    }
    nn_epi_init(&r->e, b, m, s, 8, zp, lo, hi);
    r->za = za;
    r->ma = ma;
    r->zb = zb;
    r->mb = mb;
    r->fa = (double)ma / (double)((uint64_t)1 << shift);
    r->fb = (double)mb / (double)((uint64_t)1 << shift);
}

/* TFLite's residual ADD fused into a conv (ops/add.py: tflite_requant): the operands'
 * multipliers and exponents (the conv's first), the output's, its zero point and clamp. */
static inline void nn_res_init_tfl(nn_res_t *r, int32_t za, int32_t ma, int32_t ea, int32_t zb, int32_t mb,
                                   int32_t eb, int32_t mo, int32_t eo, int32_t zp, int32_t lo, int32_t hi)
{
    memset(r, 0, sizeof *r);
    r->tfl = 1;
    nn_tfl_add_init(&r->t, za, ma, ea, zb, mb, eb, mo, eo, zp, lo, hi);
}

/* The fused residual add of one element: q the conv's output, r the other operand. */
static inline int8_t nn_res_add(int8_t q, int8_t r, const nn_res_t *a)
{
    if (a->tfl) {
        const nn_tfl_add_t *t = &a->t;
        const int32_t s1 = nn_tfl_mbqm((int64_t)(q - t->za) * (1 << NN_TFL_ADD_LEFT_SHIFT), t->ma, t->ea);
        const int32_t s2 = nn_tfl_mbqm((int64_t)(r - t->zb) * (1 << NN_TFL_ADD_LEFT_SHIFT), t->mb, t->eb);
        return nn_clamp_s8((int64_t)nn_tfl_mbqm(t->sub ? (int64_t)s1 - s2 : (int64_t)s1 + s2, t->mo, t->eo)
                           + t->zp, t->act_min, t->act_max);
    }
    const int64_t acc = (int64_t)(q - a->za) * a->ma + (int64_t)(r - a->zb) * a->mb;
    return nn_clamp_s8(nn_rshift_round(acc, a->e.shift[0]) + a->e.zp, a->e.act_min, a->e.act_max);
}

/* Unaligned, aliasing-safe 32-bit load of an int16 pair. */
static inline int32_t nn_load_pair(const int16_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Unaligned 32-bit load of 4 u8 activations (the avx2u8 microkernels). */
static inline int32_t nn_load_quad(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* d[0..n) = s[0..n) + 128 as u8 (x ^ 0x80): the avx2u8 variant's activations. */
static inline void nn_flip_s8(uint8_t *d, const int8_t *s, long n)
{
    long i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    typedef uint8_t v32 __attribute__((vector_size(32), aligned(1)));
    const v32 k = (v32){ 0 } + 0x80;
    for (; i + 32 <= n; i += 32) {
        v32 x;
        memcpy(&x, s + i, 32);
        x ^= k;
        memcpy(d + i, &x, 32);
    }
#endif
    for (; i < n; ++i)
        d[i] = (uint8_t)((uint8_t)s[i] ^ 0x80u);
}

#if defined(__x86_64__)
#include <immintrin.h>
#define NN_HAVE_X86 1
/* AVX2 with FMA (every AVX2 CPU has it; nn_cpu_has_avx2 checks both): the exact fma
 * requantization (nn_avx2_fma8) needs it */
#define NN_AVX2 __attribute__((target("avx2,fma")))
#define NN_ALWAYS_INLINE __attribute__((always_inline))
/* vpdpbusd on 256-bit vectors (AVX-512 VNNI + VL, which also gives 32 vector registers) */
#define NN_VNNI __attribute__((target("avx2,fma,avx512f,avx512vl,avx512vnni")))
/* AVX-VNNI: the VEX vpdpbusd on ymm, 16 registers, no AVX-512 (the compiler must not use EVEX);
 * gcc 11 and clang 12 have its intrinsics (_mm256_dpbusd_avx_epi32) */
#if (defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11)
#define NN_HAVE_AVXVNNI 1
#define NN_AVXVNNI __attribute__((target("avx2,fma,avxvnni")))
#else
#define NN_HAVE_AVXVNNI 0
#endif

/* rne(p / 2**s) on four signed 64-bit lanes (|p| < 2**62), clamped to [lo, hi]:
 * u = p + 2**63 is non-negative, so logical shifts floor; adding 2**(s-1) - 1 plus the
 * parity of floor(u / 2**s) rounds half to even; 2**63 / 2**s is even for s <= 62. */
static inline NN_AVX2 __m256i nn_avx2_rne64(__m256i p, const nn_epi_t *e, int par, int v)
{
    const __m256i s = _mm256_loadu_si256((const __m256i *)(const void *)&e->sh[par][v * 4]);
    const __m256i hm1 = _mm256_loadu_si256((const __m256i *)(const void *)&e->hm1[par][v * 4]);
    const __m256i off = _mm256_loadu_si256((const __m256i *)(const void *)&e->off[par][v * 4]);
    const __m256i one = _mm256_set1_epi64x(1);
    const __m256i lo = _mm256_set1_epi64x(e->lo), hi = _mm256_set1_epi64x(e->hi);
    __m256i u = _mm256_xor_si256(p, _mm256_set1_epi64x((long long)0x8000000000000000ULL));
    __m256i t = _mm256_add_epi64(_mm256_add_epi64(u, hm1), _mm256_and_si256(_mm256_srlv_epi64(u, s), one));
    __m256i q = _mm256_sub_epi64(_mm256_srlv_epi64(t, s), off);
    q = _mm256_blendv_epi8(q, lo, _mm256_cmpgt_epi64(lo, q));
    q = _mm256_blendv_epi8(q, hi, _mm256_cmpgt_epi64(q, hi));
    return q;
}

/* x = acc + bias of channels v*8 .. v*8+7 (int32: the generator checks it fits). */
static inline NN_AVX2 __m256i nn_avx2_biased8(__m256i acc, const nn_epi_t *e, int v)
{
    return _mm256_add_epi32(acc, _mm256_loadu_si256((const __m256i *)(const void *)&e->bias[v * 8]));
}

/* The 8 lanes of x = acc + bias requantized one by one (nn_requantize): the exact path
 * behind the vector epilogues. */
static inline NN_AVX2 __m256i nn_avx2_requant8_lanes(__m256i x, const nn_epi_t *e, int v)
{
    int32_t xs[8], r[8];
    int i;
    _mm256_storeu_si256((__m256i *)(void *)xs, x);
    for (i = 0; i < 8; ++i)
        r[i] = nn_requantize(xs[i], e->mult[v * 8 + i], e->shift[v * 8 + i], e->zp, e->act_min, e->act_max);
    return _mm256_loadu_si256((const __m256i *)(const void *)r);
}

/* TFLite's MultiplyByQuantizedMultiplier on 8 int32 lanes x = acc + bias (wrapping as
 * TFLite's int32 does): t = round(x * 2**left * M / 2**31), ties toward +inf (M > 0, so the
 * saturating case never occurs: bits 31..62 of the 64-bit product plus 2**30), then
 * t / 2**right with ties away from zero; + zp, clamped.  Every channel under this rule
 * (the generator's "tfl" epilogue); always inlined: a call per vector costs more than
 * the arithmetic. */
static inline NN_AVX2 NN_ALWAYS_INLINE __m256i nn_avx2_mbqm8_pc(__m256i x, const nn_epi_t *e, int v)
{
    const __m256i m = _mm256_loadu_si256((const __m256i *)(const void *)&e->mult[v * 8]);
    const __m256i left = _mm256_loadu_si256((const __m256i *)(const void *)&e->tleft[v * 8]);
    const __m256i right = _mm256_loadu_si256((const __m256i *)(const void *)&e->tright[v * 8]);
    const __m256i mask = _mm256_loadu_si256((const __m256i *)(const void *)&e->tmask[v * 8]);
    const __m256i nudge = _mm256_set1_epi64x((long long)1 << 30), zero = _mm256_setzero_si256();
    __m256i pe, po, t, rem, thr;
    x = _mm256_sllv_epi32(x, left);
    pe = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(x, m), nudge), 31);
    po = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(m, 32)), nudge), 31);
    t = _mm256_blend_epi32(pe, _mm256_slli_epi64(po, 32), 0xAA);
    rem = _mm256_and_si256(t, mask);
    thr = _mm256_sub_epi32(_mm256_srli_epi32(mask, 1), _mm256_cmpgt_epi32(zero, t));
    t = _mm256_sub_epi32(_mm256_srav_epi32(t, right), _mm256_cmpgt_epi32(rem, thr));
    t = _mm256_add_epi32(t, _mm256_set1_epi32(e->zp));
    t = _mm256_max_epi32(t, _mm256_set1_epi32(e->act_min));
    return _mm256_min_epi32(t, _mm256_set1_epi32(e->act_max));
}

/* The same for any TFLite layer: the double-precision rule (tfl == 2) lane by lane. */
static inline NN_AVX2 __m256i nn_avx2_tfl8_i32(__m256i x, const nn_epi_t *e, int v)
{
    if (e->tfl == 2)
        return nn_avx2_requant8_lanes(x, e, v);
    return nn_avx2_mbqm8_pc(x, e, v);
}

/* TFLite's MultiplyByQuantizedMultiplier(x, m, e) on 8 int32 lanes with one m and e for
 * all (the add's three steps): as nn_avx2_tfl8_i32, without zero point and clamp. */
static inline NN_AVX2 NN_ALWAYS_INLINE __m256i nn_avx2_mbqm8(__m256i x, int32_t m, int32_t e)
{
    const __m256i mv = _mm256_set1_epi32(m), zero = _mm256_setzero_si256();
    const __m256i nudge = _mm256_set1_epi64x((long long)1 << 30);
    const int32_t right = e > 0 ? 0 : -e;
    const __m256i mask = _mm256_set1_epi32((int32_t)(((int64_t)1 << right) - 1));
    const __m128i r = _mm_cvtsi32_si128(right);
    __m256i pe, po, t, rem, thr;
    x = _mm256_sll_epi32(x, _mm_cvtsi32_si128(e > 0 ? e : 0));
    pe = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(x, mv), nudge), 31);
    po = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), mv), nudge), 31);
    t = _mm256_blend_epi32(pe, _mm256_slli_epi64(po, 32), 0xAA);
    rem = _mm256_and_si256(t, mask);
    thr = _mm256_sub_epi32(_mm256_srli_epi32(mask, 1), _mm256_cmpgt_epi32(zero, t));
    return _mm256_sub_epi32(_mm256_sra_epi32(t, r), _mm256_cmpgt_epi32(rem, thr));
}

/* One operand's term of TFLite's ADD on 8 lanes of x = q - z (nn_tfl_add_t). */
static inline NN_AVX2 NN_ALWAYS_INLINE __m256i nn_avx2_tfl_term8(__m256i x, const nn_tfl_add_t *t, int i)
{
    const __m256i c = _mm256_add_epi32(_mm256_set1_epi32(t->c0[i]),
                                       _mm256_and_si256(_mm256_srai_epi32(x, 31), _mm256_set1_epi32(t->nadj[i])));
    const __m256i low = _mm256_sra_epi32(_mm256_add_epi32(_mm256_mullo_epi32(x, _mm256_set1_epi32(t->ml[i])), c),
                                         _mm_cvtsi32_si128(t->k[i]));
    return _mm256_add_epi32(_mm256_mullo_epi32(x, _mm256_set1_epi32(t->mh[i])), low);
}

/* TFLite's ADD/SUB of 8 lanes of int8 codes qa, qb (as int32): the clamped output codes. */
static inline NN_AVX2 NN_ALWAYS_INLINE __m256i nn_avx2_tfl_add8(__m256i qa, __m256i qb, const nn_tfl_add_t *t)
{
    const __m256i xa = _mm256_sub_epi32(qa, _mm256_set1_epi32(t->za));
    const __m256i xb = _mm256_sub_epi32(qb, _mm256_set1_epi32(t->zb));
    __m256i s, r;
    if (t->fast) {
        const __m256i mo = _mm256_set1_epi32(t->mo), c = _mm256_set1_epi64x(t->c0o);
        __m256i pe, po;
        s = t->sub ? _mm256_sub_epi32(nn_avx2_tfl_term8(xa, t, 0), nn_avx2_tfl_term8(xb, t, 1))
                   : _mm256_add_epi32(nn_avx2_tfl_term8(xa, t, 0), nn_avx2_tfl_term8(xb, t, 1));
        pe = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(s, mo), c), 31);
        po = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(s, 32), mo), c), 31);
        r = _mm256_blend_epi32(pe, _mm256_slli_epi64(po, 32), 0xAA);
        r = _mm256_add_epi32(r, _mm256_and_si256(_mm256_srai_epi32(s, 31), _mm256_set1_epi32(t->nadjo)));
        r = _mm256_sra_epi32(r, _mm_cvtsi32_si128(t->ro));
    } else {
        const __m256i ta = nn_avx2_mbqm8(_mm256_slli_epi32(xa, NN_TFL_ADD_LEFT_SHIFT), t->ma, t->ea);
        const __m256i tb = nn_avx2_mbqm8(_mm256_slli_epi32(xb, NN_TFL_ADD_LEFT_SHIFT), t->mb, t->eb);
        s = t->sub ? _mm256_sub_epi32(ta, tb) : _mm256_add_epi32(ta, tb);
        r = nn_avx2_mbqm8(s, t->mo, t->eo);
    }
    r = _mm256_add_epi32(r, _mm256_set1_epi32(t->zp));
    r = _mm256_max_epi32(r, _mm256_set1_epi32(t->act_min));
    return _mm256_min_epi32(r, _mm256_set1_epi32(t->act_max));
}

/* Channels v*8 .. v*8+7 of one pixel: int32 accumulators -> the 8 requantized values
 * (zero point added, clamped) in int32 lanes, by the rule the parameters carry. */
static inline NN_AVX2 __m256i nn_avx2_requant8_i32(__m256i acc, const nn_epi_t *e, int v)
{
    const __m256i x = nn_avx2_biased8(acc, e, v);
    const __m256i m = _mm256_loadu_si256((const __m256i *)(const void *)&e->mult[v * 8]);
    __m256i pe, po, r;
    if (e->tfl)
        return nn_avx2_tfl8_i32(x, e, v);
    pe = _mm256_mul_epi32(x, m);
    po = _mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(m, 32));
    pe = nn_avx2_rne64(pe, e, 0, v);
    po = nn_avx2_rne64(po, e, 1, v);
    r = _mm256_blend_epi32(pe, _mm256_slli_epi64(po, 32), 0xAA);
    return _mm256_add_epi32(r, _mm256_set1_epi32(e->zp));
}

/* x * (mult / 2**shift) in double, rounded to an integer with ties to even (vroundpd,
 * mode 0): lanes 0-3 in *ra, 4-7 in *rb.  Returns nonzero when a lane's product lies
 * within 2**-30 of a tie (exact ties included): the checked path's test below; a caller
 * proven exact ignores it (and the compiler drops it). */
static inline NN_AVX2 int nn_avx2_round8_pd(__m256i x, const nn_epi_t *e, int v, __m256d *ra, __m256d *rb)
{
    const __m256d near = _mm256_set1_pd(0.5 - 0x1p-30), sign = _mm256_set1_pd(-0.0);
    const __m256d a = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(x)), _mm256_loadu_pd(&e->mf[v * 8]));
    const __m256d b = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(x, 1)), _mm256_loadu_pd(&e->mf[v * 8 + 4]));
    *ra = _mm256_round_pd(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    *rb = _mm256_round_pd(b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm256_movemask_pd(_mm256_or_pd(
        _mm256_cmp_pd(_mm256_andnot_pd(sign, _mm256_sub_pd(a, *ra)), near, _CMP_GT_OQ),
        _mm256_cmp_pd(_mm256_andnot_pd(sign, _mm256_sub_pd(b, *rb)), near, _CMP_GT_OQ)));
}

/* Rounded values clamped to the bounds (minus zp, so exact in double), to int32, + zp. */
static inline NN_AVX2 __m256i nn_avx2_clamp8_i32(__m256d ra, __m256d rb, const nn_epi_t *e)
{
    const __m256d lo = _mm256_set1_pd(e->dlo), hi = _mm256_set1_pd(e->dhi);
    ra = _mm256_min_pd(_mm256_max_pd(ra, lo), hi);
    rb = _mm256_min_pd(_mm256_max_pd(rb, lo), hi);
    return _mm256_add_epi32(_mm256_set_m128i(_mm256_cvtpd_epi32(rb), _mm256_cvtpd_epi32(ra)),
                            _mm256_set1_epi32(e->zp));
}

/* The same in double, for a layer whose every |acc + bias| * mult < 2**53 (the generator
 * checks it from the layer's weights, bias and multipliers: kernelgen.f64_safe): then
 * (acc + bias) * (mult / 2**shift) is exact in double, and rounding it to an integer with
 * ties to even is exactly rne(v * mult / 2**shift); clamped in double, so the conversion
 * to int32 is exact too.  About half the operations of the 64-bit path. */
static inline NN_AVX2 __m256i nn_avx2_requant8_f64_i32(__m256i acc, const nn_epi_t *e, int v)
{
    __m256d ra, rb;
    (void)nn_avx2_round8_pd(nn_avx2_biased8(acc, e, v), e, v, &ra, &rb);
    return nn_avx2_clamp8_i32(ra, rb, e);
}

/* The double-precision requantization for any layer (|acc + bias| < 2**31), exact by a
 * check: (acc + bias) * (mult / 2**shift) in double is the true product times (1 + d),
 * |d| <= 2**-53, so below 2**22 in magnitude (where it is not clamped away) it is within
 * 2**-31 of the true value and rounds to the same integer unless it lies within 2**-30
 * of a tie (exact ties included).  Such a vector (about one in 2**28 for random
 * values; exact ties occur with small shifts) is redone by the exact integer path. */
static inline NN_AVX2 __m256i nn_avx2_requant8_f64c_i32(__m256i acc, const nn_epi_t *e, int v)
{
    const __m256i x = nn_avx2_biased8(acc, e, v);
    __m256d ra, rb;
    if (__builtin_expect(nn_avx2_round8_pd(x, e, v, &ra, &rb), 0))
        return nn_avx2_requant8_lanes(x, e, v);
    return nn_avx2_clamp8_i32(ra, rb, e);
}

/* 8 int32 lanes already in [-128, 127] -> 8 int8 in a 64-bit word. */
static inline NN_AVX2 long long nn_avx2_pack8(__m256i r)
{
    r = _mm256_packs_epi32(r, r);
    r = _mm256_packs_epi16(r, r);
    r = _mm256_permutevar8x32_epi32(r, _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
    return _mm_cvtsi128_si64(_mm256_castsi256_si128(r));
}

/* TFLite's conv epilogue with its residual ADD fused (nn_res_add's TFLite rule on 8 lanes):
 * q the conv's codes (requantized by its own rule, clamped: the generator picks
 * nn_avx2_mbqm8_pc or, under the double rule, nn_avx2_requant8_lanes), r the other
 * operand's n codes. */
static inline NN_AVX2 NN_ALWAYS_INLINE long long nn_avx2_tfl_res8(__m256i q, const int8_t *r, int n,
                                                                  const nn_res_t *ad)
{
    long long wb = 0;
    memcpy(&wb, r, n == 8 ? 8 : (size_t)n);
    return nn_avx2_pack8(nn_avx2_tfl_add8(q, _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(wb)), &ad->t));
}

/* TFLite's "tfl" epilogue: int32 accumulators -> 8 int8 in a 64-bit word. */
static inline NN_AVX2 NN_ALWAYS_INLINE long long nn_avx2_tfl8(__m256i acc, const nn_epi_t *e, int v)
{
    return nn_avx2_pack8(nn_avx2_mbqm8_pc(nn_avx2_biased8(acc, e, v), e, v));
}

/* Channels v*8 .. v*8+7 of one pixel: int32 accumulators -> 8 int8 in a 64-bit word. */
static inline NN_AVX2 long long nn_avx2_requant8(__m256i acc, const nn_epi_t *e, int v)
{
    return nn_avx2_pack8(nn_avx2_requant8_i32(acc, e, v));
}

static inline NN_AVX2 long long nn_avx2_requant8_f64(__m256i acc, const nn_epi_t *e, int v)
{
    return nn_avx2_pack8(nn_avx2_requant8_f64_i32(acc, e, v));
}

static inline NN_AVX2 long long nn_avx2_requant8_f64c(__m256i acc, const nn_epi_t *e, int v)
{
    return nn_avx2_pack8(nn_avx2_requant8_f64c_i32(acc, e, v));
}

/* The fused residual add on 8 lanes: q the conv's requantized values (int32 lanes), r the
 * n (<= 8) int8 values of the other operand; the result as 8 int8 in a 64-bit word.
 * In double, always exact: |q - za|, |r - zb| <= 255 and |ma|, |mb| < 2**31, so
 * (q - za) * ma + (r - zb) * mb is an integer below 2**41 and each product and the sum,
 * scaled by 2**-s, are exact in double; vroundpd (ties to even) is then exactly the
 * rne of nn_res_add, and the clamp in double makes the conversion exact too. */
static inline NN_AVX2 long long nn_avx2_res_add8_f64(__m256i q, const int8_t *r, int n, const nn_res_t *a)
{
    long long wb = 0;
    __m256i xa, xb;
    __m256d l, h;
    const __m256d fa = _mm256_set1_pd(a->fa), fb = _mm256_set1_pd(a->fb);
    const __m256d lo = _mm256_set1_pd(a->e.dlo), hi = _mm256_set1_pd(a->e.dhi);
    memcpy(&wb, r, n == 8 ? 8 : (size_t)n);
    xa = _mm256_sub_epi32(q, _mm256_set1_epi32(a->za));
    xb = _mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(wb)), _mm256_set1_epi32(a->zb));
    l = _mm256_add_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(xa)), fa),
                      _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(xb)), fb));
    h = _mm256_add_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(xa, 1)), fa),
                      _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(xb, 1)), fb));
    l = _mm256_min_pd(_mm256_max_pd(_mm256_round_pd(l, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), lo), hi);
    h = _mm256_min_pd(_mm256_max_pd(_mm256_round_pd(h, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), lo), hi);
    return nn_avx2_pack8(_mm256_add_epi32(_mm256_set_m128i(_mm256_cvtpd_epi32(h), _mm256_cvtpd_epi32(l)),
                                          _mm256_set1_epi32(a->e.zp)));
}

/* Requantization and the fused residual add in one pass, the conv's result kept in
 * double between them (it is an integer there, so nothing is lost): the same values as
 * nn_avx2_res_add8_f64(nn_avx2_requant8_f64[c]_i32(acc, e, v), r, n, a) without the
 * round trip through int32 lanes.  checked: the layer is not proven exact in double
 * (nn_avx2_requant8_f64c_i32's near-tie test; such a vector takes that path). */
static inline NN_AVX2 NN_ALWAYS_INLINE long long nn_avx2_requant_res8(__m256i acc, const nn_epi_t *e, int v, int checked,
                                                     const int8_t *r, int n, const nn_res_t *ad)
{
    __m256d ra, rb, a, b, l, h;
    long long wb = 0;
    __m256i xb;
    if (__builtin_expect(nn_avx2_round8_pd(nn_avx2_biased8(acc, e, v), e, v, &ra, &rb) && checked, 0))
        return nn_avx2_res_add8_f64(nn_avx2_requant8_f64c_i32(acc, e, v), r, n, ad);
    {   /* q - za, q = clamp(round(.)) + zp */
        const __m256d dz = _mm256_set1_pd((double)(e->zp - ad->za));
        const __m256d lo = _mm256_set1_pd(e->dlo), hi = _mm256_set1_pd(e->dhi);
        a = _mm256_add_pd(_mm256_min_pd(_mm256_max_pd(ra, lo), hi), dz);
        b = _mm256_add_pd(_mm256_min_pd(_mm256_max_pd(rb, lo), hi), dz);
    }
    memcpy(&wb, r, n == 8 ? 8 : (size_t)n);
    xb = _mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(wb)), _mm256_set1_epi32(ad->zb));
    {
        const __m256d fa = _mm256_set1_pd(ad->fa), fb = _mm256_set1_pd(ad->fb);
        const __m256d lo = _mm256_set1_pd(ad->e.dlo), hi = _mm256_set1_pd(ad->e.dhi);
        l = _mm256_add_pd(_mm256_mul_pd(a, fa), _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(xb)), fb));
        h = _mm256_add_pd(_mm256_mul_pd(b, fa), _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(xb, 1)), fb));
        l = _mm256_min_pd(_mm256_max_pd(_mm256_round_pd(l, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), lo), hi);
        h = _mm256_min_pd(_mm256_max_pd(_mm256_round_pd(h, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), lo), hi);
    }
    return nn_avx2_pack8(_mm256_add_epi32(_mm256_set_m128i(_mm256_cvtpd_epi32(h), _mm256_cvtpd_epi32(l)),
                                          _mm256_set1_epi32(ad->e.zp)));
}

/* The requantization on AVX-512 (the vnni variants' epilogue where e->fma), exact for any
 * v = acc + bias in int32: v * (mult / 2**shift) + 1.5 * 2**52 in one fma with embedded
 * round-to-nearest-even (independent of MXCSR) is the true value rounded once to a double
 * whose ulp is 1 while |v * mult / 2**shift| < 2**51 (shift >= 11, |mult| < 2**31): that is
 * rne(v * mult / 2**shift) + 1.5 * 2**52, 1.5 * 2**52 being even.  Its bits minus those of
 * 1.5 * 2**52 are the rounded value as int64; minus zp more, vpmovsqb saturates it to int8
 * (the clamp to [-128, 127]; act_min/act_max by nn_vnni_store16c).  Five instructions per 8
 * channels against the f64c path's nineteen: small-K layers are bound by this. */
static inline NN_VNNI __m128i nn_vnni_requant8(__m256i acc, const nn_epi_t *e, int v)
{
    const __m512d x = _mm512_cvtepi32_pd(_mm256_add_epi32(acc, _mm256_loadu_si256((const __m256i *)(const void *)&e->bias[v * 8])));
    const __m512d r = _mm512_fmadd_round_pd(x, _mm512_loadu_pd(&e->mf[v * 8]), _mm512_set1_pd(0x1.8p52),
                                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm512_cvtsepi64_epi8(_mm512_sub_epi64(_mm512_castpd_si512(r), _mm512_set1_epi64(e->fmaoff)));
}

/* nn_vnni_requant8 with the fused residual add (nn_res_add's rule, not TFLite's) after it,
 * exact like it: the conv's rounded value r = rne(v * mult / 2**shift) + 1.5 * 2**52 is
 * clamped in double to its bounds (integers near 2**52.6: exact), and r - (1.5 * 2**52 -
 * zp + za) is q - za exactly (both in [2**52, 2**53), ulp 1).  Then (q - za) * fa + (rb -
 * zb) * fb, one multiply and one fma, is exact (an integer below 2**41 times 2**-s, as in
 * nn_avx2_res_add8_f64), and adding 1.5 * 2**52 with round-to-nearest-even rounds it to an
 * integer, ties to even (|.| < 2**51); minus the add's fmaoff and saturated by vpmovsqb,
 * as nn_vnni_requant8.  rb: the other operand's 8 codes in the low 8 bytes.  About twelve
 * instructions per 8 channels against the AVX2 path's thirty (nn_avx2_requant_res8). */
static inline NN_VNNI __m128i nn_vnni_requant_res8(__m256i acc, const nn_epi_t *e, int v, __m128i rb,
                                                   const nn_res_t *ad)
{
    const __m512d big = _mm512_set1_pd(0x1.8p52);
    const __m512d x = _mm512_cvtepi32_pd(_mm256_add_epi32(acc, _mm256_loadu_si256((const __m256i *)(const void *)&e->bias[v * 8])));
    __m512d r = _mm512_fmadd_round_pd(x, _mm512_loadu_pd(&e->mf[v * 8]), big, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_min_pd(_mm512_max_pd(r, _mm512_set1_pd(0x1.8p52 + e->dlo)), _mm512_set1_pd(0x1.8p52 + e->dhi));
    r = _mm512_sub_pd(r, _mm512_set1_pd(0x1.8p52 - (double)(e->zp - ad->za)));
    {
        const __m512d xb = _mm512_cvtepi32_pd(_mm256_sub_epi32(_mm256_cvtepi8_epi32(rb), _mm256_set1_epi32(ad->zb)));
        const __m512d d = _mm512_fmadd_pd(r, _mm512_set1_pd(ad->fa), _mm512_mul_pd(xb, _mm512_set1_pd(ad->fb)));
        const __m512d y = _mm512_add_round_pd(d, big, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        return _mm512_cvtsepi64_epi8(_mm512_sub_epi64(_mm512_castpd_si512(y), _mm512_set1_epi64(ad->e.fmaoff)));
    }
}

/* The other operand's n (<= 8) codes in the low bytes (nn_vnni_requant_res8's rb). */
static inline NN_VNNI __m128i nn_vnni_load8(const int8_t *r, int n)
{
    long long w = 0;
    memcpy(&w, r, n == 8 ? 8 : (size_t)n);
    return _mm_cvtsi64_si128(w);
}

/* Two nn_vnni_requant8 results (8 codes each) -> 16 codes clamped to [lo, hi] (act_min,
 * act_max in every byte) and stored; store8c: n (<= 8) codes of one.  The bounds come in
 * registers, set once per microkernel call: an int8 store may alias nn_epi_t, so the
 * compiler would reload e->act_min/act_max after every store. */
static inline NN_VNNI void nn_vnni_store16c(int8_t *dst, __m128i a, __m128i b, __m128i lo, __m128i hi)
{
    _mm_storeu_si128((__m128i *)(void *)dst, _mm_min_epi8(_mm_max_epi8(_mm_unpacklo_epi64(a, b), lo), hi));
}

static inline NN_VNNI void nn_vnni_store8c(int8_t *dst, __m128i a, int n, __m128i lo, __m128i hi)
{
    const long long v = _mm_cvtsi128_si64(_mm_min_epi8(_mm_max_epi8(a, lo), hi));
    memcpy(dst, &v, n == 8 ? 8 : (size_t)n);
}


/* The exact requantization on AVX2 (e->fma: every shift in [11, 62], no TFLite rule; and
 * MXCSR rounding to nearest even, the default, which the caller checks once per call with
 * nn_mxcsr_nearest): nn_vnni_requant8's fma without AVX-512's embedded rounding.  (acc +
 * bias) * (mult / 2**shift) + 1.5 * 2**52 in one fma is rne(v * mult / 2**shift) + 1.5 *
 * 2**52 (ulp 1, |.| < 2**51); clamped in double to 1.5 * 2**52 + [act_min - zp, act_max -
 * zp] (exact integers), each double's low dword is the clamped value less zp as int32
 * (its fraction is 2**51 + value).  Returns those 8 dwords in the lane order of channels
 * 0 1 4 5 2 3 6 7 (one vshufps gathers them; nn_avx2_fma_store16/8 restore the order and
 * add zp on 16-bit lanes).  Eleven operations per 8 channels against nineteen for
 * nn_avx2_requant8_f64: small-K layers are bound by the epilogue. */
static inline NN_AVX2 NN_ALWAYS_INLINE void nn_avx2_fma_halves(__m256i x, const double *m, __m256d big, __m256d lo,
                                                                __m256d hi, __m256d *a, __m256d *b)
{   /* lanes 0-3 and 4-7 of x, each rounded by one fma and clamped in double */
    *a = _mm256_min_pd(_mm256_max_pd(_mm256_fmadd_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(x)),
                                                     _mm256_loadu_pd(m), big), lo), hi);
    *b = _mm256_min_pd(_mm256_max_pd(_mm256_fmadd_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(x, 1)),
                                                     _mm256_loadu_pd(m + 4), big), lo), hi);
}

static inline NN_AVX2 NN_ALWAYS_INLINE __m256i nn_avx2_fma8_pd(__m256i x, const double *m, __m256d big, __m256d lo,
                                                               __m256d hi)
{
    __m256d a, b;
    nn_avx2_fma_halves(x, m, big, lo, hi, &a, &b);
    return _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castpd_ps(a), _mm256_castpd_ps(b), 0x88));
}

static inline NN_AVX2 NN_ALWAYS_INLINE __m256i nn_avx2_fma8(__m256i acc, const nn_epi_t *e, int v, __m256d big,
                                                            __m256d lo, __m256d hi)
{
    return nn_avx2_fma8_pd(_mm256_add_epi32(acc, _mm256_loadu_si256((const __m256i *)(const void *)&e->bias[v * 8])),
                           &e->mf[v * 8], big, lo, hi);
}

/* nn_avx2_fma8 with a fused residual add (nn_res_add's rule, not TFLite's) after it, as
 * nn_vnni_requant_res8 does on AVX-512: the conv's rounded value clamped in double, less
 * 1.5 * 2**52 - zp + za, is q - za exactly; (q - za) * fa + (r - zb) * fb in a multiply and
 * an fma is exact (an integer below 2**41 times 2**-s); adding 1.5 * 2**52 rounds it to an
 * integer ties to even (MXCSR to nearest, which the caller checked); clamped to the add's
 * bounds less its zp.  The same lane order and result as nn_avx2_fma8 (the store adds the
 * add's zp).  The constants are set once per call (nn_avx2_fres_init). */
typedef struct {
    __m256d big, lo, hi, dz, fa, fb, rlo, rhi;
    __m256i zb;
} nn_avx2_fres_t;

static inline NN_AVX2 NN_ALWAYS_INLINE void nn_avx2_fres_init(nn_avx2_fres_t *c, const nn_epi_t *e, const nn_res_t *ad)
{
    c->big = _mm256_set1_pd(0x1.8p52);
    c->lo = _mm256_set1_pd(0x1.8p52 + e->dlo);
    c->hi = _mm256_set1_pd(0x1.8p52 + e->dhi);
    c->dz = _mm256_set1_pd(0x1.8p52 - (double)(e->zp - ad->za));
    c->fa = _mm256_set1_pd(ad->fa);
    c->fb = _mm256_set1_pd(ad->fb);
    c->rlo = _mm256_set1_pd(0x1.8p52 + ad->e.dlo);
    c->rhi = _mm256_set1_pd(0x1.8p52 + ad->e.dhi);
    c->zb = _mm256_set1_epi32(ad->zb);
}

static inline NN_AVX2 NN_ALWAYS_INLINE __m256i nn_avx2_fma_res8(__m256i acc, const nn_epi_t *e, int v, const int8_t *r,
                                                                int n, const nn_avx2_fres_t *c)
{
    const __m256i x = _mm256_add_epi32(acc, _mm256_loadu_si256((const __m256i *)(const void *)&e->bias[v * 8]));
    long long wb = 0;
    __m256i xb;
    __m256d a, b;
    nn_avx2_fma_halves(x, &e->mf[v * 8], c->big, c->lo, c->hi, &a, &b);
    a = _mm256_sub_pd(a, c->dz);
    b = _mm256_sub_pd(b, c->dz);
    memcpy(&wb, r, n == 8 ? 8 : (size_t)n);
    xb = _mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(wb)), c->zb);
    a = _mm256_add_pd(_mm256_fmadd_pd(a, c->fa, _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(xb)), c->fb)), c->big);
    b = _mm256_add_pd(_mm256_fmadd_pd(b, c->fa, _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(xb, 1)), c->fb)), c->big);
    a = _mm256_min_pd(_mm256_max_pd(a, c->rlo), c->rhi);
    b = _mm256_min_pd(_mm256_max_pd(b, c->rlo), c->rhi);
    return _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castpd_ps(a), _mm256_castpd_ps(b), 0x88));
}

/* MXCSR's rounding control is round to nearest even (nn_avx2_fma8's rounding) */
static inline NN_AVX2 int nn_mxcsr_nearest(void)
{
    return (_mm_getcsr() & 0x6000u) == 0;
}

/* Two nn_avx2_fma8 results (channels 0-7 and 8-15 of a pixel) + zp -> 16 int8 in order
 * (pack16), stored (store16); store8: the first n (<= 8) of one. */
static inline NN_AVX2 NN_ALWAYS_INLINE __m128i nn_avx2_fma_pack16(__m256i r0, __m256i r1, __m256i zp16)
{
    /* int16: r0 0 1 4 5, r1 0 1 4 5 | r0 2 3 6 7, r1 2 3 6 7; as pairs (dwords) in order */
    __m256i p = _mm256_permutevar8x32_epi32(_mm256_packs_epi32(r0, r1), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    p = _mm256_add_epi16(p, zp16);
    return _mm_packs_epi16(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
}

static inline NN_AVX2 NN_ALWAYS_INLINE void nn_avx2_fma_store16(int8_t *dst, __m256i r0, __m256i r1, __m256i zp16)
{
    _mm_storeu_si128((__m128i *)(void *)dst, nn_avx2_fma_pack16(r0, r1, zp16));
}

static inline NN_AVX2 NN_ALWAYS_INLINE void nn_avx2_fma_store8(int8_t *dst, __m256i r, int n, __m256i zp16)
{
    __m256i p = _mm256_permutevar8x32_epi32(_mm256_packs_epi32(r, r), _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5));
    const long long w = _mm_cvtsi128_si64(_mm_packs_epi16(_mm256_castsi256_si128(_mm256_add_epi16(p, zp16)),
                                                          _mm256_castsi256_si128(p)));
    memcpy(dst, &w, n == 8 ? 8 : (size_t)n);
}

/* 2 (4) vectors of 8 int32 lanes already in [-128, 127], channels in order -> 16 (32) int8
 * in one store: a microkernel's full 8-channel vectors of a pixel, stored together (one
 * pack and permute per 16 or 32 channels instead of per 8: small-K layers are bound by it) */
static inline NN_AVX2 void nn_avx2_store16(int8_t *dst, __m256i r0, __m256i r1)
{
    __m256i p = _mm256_packs_epi32(r0, r1);         /* r0 0-3, r1 0-3 | r0 4-7, r1 4-7 */
    p = _mm256_packs_epi16(p, p);
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5));
    _mm_storeu_si128((__m128i *)(void *)dst, _mm256_castsi256_si128(p));
}

static inline NN_AVX2 void nn_avx2_store32(int8_t *dst, __m256i r0, __m256i r1, __m256i r2, __m256i r3)
{
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(r0, r1), _mm256_packs_epi32(r2, r3));
    _mm256_storeu_si256((__m256i *)(void *)dst,
                        _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

static inline NN_AVX2 void nn_avx2_store8(int8_t *dst, long long v, int n)
{
    if (n == 8)
        memcpy(dst, &v, 8);
    else
        memcpy(dst, &v, (size_t)n);
}

/* CPUID's answers, read each call (libgcc fills them once, at start-up): no state here */
static inline int nn_cpu_has_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
}

/* AVX-512 VNNI with VL (libgcc also checks that the OS saves the AVX-512 state) */
static inline int nn_cpu_has_avx512vnni(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") ? 1 : 0;
}

/* AVX-VNNI (CPUID.(7,1):EAX bit 4) with AVX2 and the OS saving the ymm state (XCR0 bits 1, 2).
 * Asked on every layer call where AVX-512 VNNI is not (an AVX2-only CPU): GCC 12's libgcc
 * answers from what it read at start-up, as for the other features; a cpuid instruction per
 * call would leave a VM for the hypervisor each time (microseconds per layer) */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
static inline int nn_cpu_has_avxvnni(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avxvnni") && __builtin_cpu_supports("avx2") ? 1 : 0;
}
#else
static inline int nn_cpu_has_avxvnni(void)
{
    unsigned a, b, c, d, lo, hi;
    if (!nn_cpu_has_avx2())
        return 0;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0u), "c"(0u));
    if (a < 7)
        return 0;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7u), "c"(1u));
    if (!(a & (1u << 4)))
        return 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0u));
    (void)hi; (void)b; (void)c; (void)d;
    return (lo & 6u) == 6u;
}
#endif
static inline NN_AVX2 void nn_avx2_widen(int16_t *d, const int8_t *s, long n)
{
    const long blocks = n / 16;
    long b, i;
    for (b = 0; b < blocks; ++b)
        _mm256_storeu_si256((__m256i *)(void *)(d + b * 16),
                            _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(s + b * 16))));
    for (i = 0; i < n % 16; ++i)
        d[blocks * 16 + i] = s[blocks * 16 + i];
}

static inline NN_AVX2 void nn_avx2_fill(int16_t *d, int16_t v, long n)
{
    const __m256i x = _mm256_set1_epi16(v);
    const long blocks = n / 16;
    long b, i;
    for (b = 0; b < blocks; ++b)
        _mm256_storeu_si256((__m256i *)(void *)(d + b * 16), x);
    for (i = 0; i < n % 16; ++i)
        d[blocks * 16 + i] = v;
}
#else
#define NN_HAVE_X86 0
static inline int nn_cpu_has_avx2(void) { return 0; }
static inline int nn_cpu_has_avx512vnni(void) { return 0; }
static inline int nn_cpu_has_avxvnni(void) { return 0; }
#define NN_HAVE_AVXVNNI 0
#endif

#if defined(__aarch64__)
/* 64-bit Arm: NEON is architectural (Armv8.0); dotprod (SDOT, Armv8.2) and i8mm (SMMLA,
 * Armv8.6) per function with target attributes, chosen at run time from the kernel's
 * hardware capabilities (getauxval, also in static binaries and under qemu-user). */
#include <arm_neon.h>
#include <sys/auxv.h>
#define NN_HAVE_ARM64 1
#define NN_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#define NN_I8MM __attribute__((target("arch=armv8.6-a+i8mm")))
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1UL << 13)
#endif
static inline int nn_cpu_has_neon(void) { return 1; }
static inline int nn_cpu_has_dotprod(void) { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }
static inline int nn_cpu_has_i8mm(void) { return (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0; }
#else
#define NN_HAVE_ARM64 0
static inline int nn_cpu_has_neon(void) { return 0; }
static inline int nn_cpu_has_dotprod(void) { return 0; }
static inline int nn_cpu_has_i8mm(void) { return 0; }
#endif

/* The scalar epilogue of the NEON microkernels: accumulators spilled to c (row stride
 * ldc), out[m * ostride + j] for j < n; with e->res, the fused residual add of
 * res[m * ostride + j]. */
static inline void nn_epi_scalar(const int32_t *c, int ldc, int rows, int n, const nn_epi_t *e,
                                 int8_t *out, int ostride, const int8_t *res)
{
    int m, j;
    for (m = 0; m < rows; ++m)
        for (j = 0; j < n; ++j) {
            const int8_t q = nn_requantize((int64_t)c[m * ldc + j] + e->bias[j], e->mult[j],
                                           e->shift[j], e->zp, e->act_min, e->act_max);
            out[m * ostride + j] = e->res ? nn_res_add(q, res[m * ostride + j], e->res) : q;
        }
}

/* d[0..n) = s[0..n) widened to int16 (the layer's input into its int16 buffer). */
static inline void nn_widen_s8(int16_t *d, const int8_t *s, long n, int avx2)
{
    long i;
#if NN_HAVE_X86
    if (avx2) {
        nn_avx2_widen(d, s, n);
        return;
    }
#endif
    (void)avx2;
    for (i = 0; i < n; ++i)
        d[i] = s[i];
}

static inline void nn_fill_s16(int16_t *d, int16_t v, long n, int avx2)
{
    long i;
#if NN_HAVE_X86
    if (avx2) {
        nn_avx2_fill(d, v, n);
        return;
    }
#endif
    (void)avx2;
    for (i = 0; i < n; ++i)
        d[i] = v;
}

#endif /* NN_GEMM_H */
