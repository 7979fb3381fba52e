/* See nn_simd.h.  Requantization through nn_gemm.h's exact vector epilogue. */
#include <stddef.h>

#include "nn_gemm.h"
#include "nn_simd.h"
#include "nn_window.h"

static int use_avx2(int isa)
{
    return isa == 2 || isa == 3 || ((isa == 0 || isa == 4) && nn_cpu_has_avx2());
}

#if NN_HAVE_X86
/* 8 lanes of v = (a - za) * M1 + (b - zb) * M2 in 64 bits, rne(v / 2**s) + zp, clamped. */
static NN_AVX2 void add_avx2(int n, const int8_t *a, int32_t a_zp, const int8_t *b, int32_t b_zp,
                             const int32_t *mult, const int32_t *shift, int32_t out_zp,
                             int32_t act_min, int32_t act_max, int8_t *out)
{
    int32_t bias[8] = { 0 }, m8[8], s8[8];
    nn_epi_t e;
    int i;
    for (i = 0; i < 8; ++i) {
        m8[i] = 0;
        s8[i] = shift[0];
    }
    nn_epi_init(&e, bias, m8, s8, 8, out_zp, act_min, act_max);
    {
        const __m256i za = _mm256_set1_epi32(a_zp), zb = _mm256_set1_epi32(b_zp);
        const __m256i m1 = _mm256_set1_epi32(mult[0]), m2 = _mm256_set1_epi32(mult[1]);
        for (i = 0; i + 8 <= n; i += 8) {
            long long wa, wb, res;
            __m256i xa, xb, pe, po, r;
            memcpy(&wa, a + i, 8);
            memcpy(&wb, b + i, 8);
            xa = _mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(wa)), za);
            xb = _mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(wb)), zb);
            pe = _mm256_add_epi64(_mm256_mul_epi32(xa, m1), _mm256_mul_epi32(xb, m2));
            po = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(xa, 32), m1),
                                  _mm256_mul_epi32(_mm256_srli_epi64(xb, 32), m2));
            pe = nn_avx2_rne64(pe, &e, 0, 0);
            po = nn_avx2_rne64(po, &e, 1, 0);
            r = _mm256_blend_epi32(pe, _mm256_slli_epi64(po, 32), 0xAA);
            r = _mm256_add_epi32(r, _mm256_set1_epi32(out_zp));
            r = _mm256_packs_epi32(r, r);
            r = _mm256_packs_epi16(r, r);
            r = _mm256_permutevar8x32_epi32(r, _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
            res = _mm_cvtsi128_si64(_mm256_castsi256_si128(r));
            memcpy(out + i, &res, 8);
        }
    }
    if (i < n)
        nn_add_s8(n - i, a + i, a_zp, b + i, b_zp, mult, shift, out_zp, act_min, act_max, out + i);
}

/* TFLite's ADD/SUB (nn_add_s8's rule under negative shifts) on 8 lanes at a time. */
static NN_AVX2 void add_tfl_avx2(int n, const int8_t *a, int32_t a_zp, const int8_t *b, int32_t b_zp,
                                 const int32_t *mult, const int32_t *shift, int32_t out_zp,
                                 int32_t act_min, int32_t act_max, int8_t *out)
{
    nn_tfl_add_t t;
    int i;
    nn_tfl_add_init(&t, a_zp, mult[0], shift[0] + NN_TFL_SHIFT_BIAS, b_zp, mult[1], shift[1] + NN_TFL_SHIFT_BIAS,
                    mult[2], shift[2] + NN_TFL_SHIFT_BIAS, out_zp, act_min, act_max);
    for (i = 0; i + 8 <= n; i += 8) {
        long long wa, wb, res;
        memcpy(&wa, a + i, 8);
        memcpy(&wb, b + i, 8);
        res = nn_avx2_pack8(nn_avx2_tfl_add8(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(wa)),
                                             _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(wb)), &t));
        memcpy(out + i, &res, 8);
    }
    if (i < n)
        nn_add_s8(n - i, a + i, a_zp, b + i, b_zp, mult, shift, out_zp, act_min, act_max, out + i);
}

/* Channels in steps of 32: byte max over the window, then (max - zp_in) requantized. */
static NN_AVX2 void maxpool_avx2(const nn_hwc_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult,
                                 const int32_t *shift, int8_t *out, int pix_begin, int pix_end)
{
    int32_t bias[8], m8[8], s8[8];
    nn_epi_t e;
    int p, i, c0, identity = 1;
    const int c = cfg->c, c32 = cfg->c / 32 * 32;
    /* The requantization of the max is a function of one int8; where it maps every int8 to
     * itself (the usual case: a max pool keeps its input's scale and zero point) the max
     * is the output and the per-vector requantization is skipped. */
    if (shift[0] >= 0 && shift[0] <= 30 && mult[0] == (int32_t)1 << shift[0] && cfg->in_zp == cfg->out_zp
        && cfg->act_min <= -128 && cfg->act_max >= 127)
        identity = 1;   /* scale 1 exactly: (i - zp) * 2**s / 2**s + zp = i, no rounding, no clamp */
    else
        for (i = -128; i <= 127 && identity; ++i)   /* 256 scalar requantizations: a band's worth */
            identity = nn_requantize(i - cfg->in_zp, mult[0], shift[0], cfg->out_zp, cfg->act_min, cfg->act_max) == i;
    for (i = 0; i < 8; ++i) {
        bias[i] = -cfg->in_zp;
        m8[i] = mult[0];
        s8[i] = shift[0];
    }
    nn_epi_init(&e, bias, m8, s8, 8, cfg->out_zp, cfg->act_min, cfg->act_max);
    for (p = pix_begin; p < pix_end; ++p) {
        const int y = p / cfg->out_w, x = p % cfg->out_w;
        const int top = y * cfg->stride_h - cfg->pad_top, left = x * cfg->stride_w - cfg->pad_left;
        int r0, r1, q0, q1;
        int8_t *o = out + (ptrdiff_t)p * c;
        nn_valid_range(top, 1, cfg->k_h, cfg->in_h, &r0, &r1);
        nn_valid_range(left, 1, cfg->k_w, cfg->in_w, &q0, &q1);
        if (r0 >= r1 || q0 >= q1 || c32 < c) {
            nn_hwc_maxpool_s8(cfg, in, mult, shift, out, p, p + 1);
            continue;
        }
        for (c0 = 0; c0 < c32; c0 += 32) {
            __m256i m = _mm256_set1_epi8(-128);
            int yy, xx;
            if (cfg->k_h == 3 && cfg->k_w == 3 && r1 - r0 == 3 && q1 - q0 == 3) {
                /* a whole 3x3 window (the usual max pool): unrolled, no loop overhead per load */
                const int8_t *b = in + ((ptrdiff_t)top * cfg->in_w + left) * c + c0;
                const ptrdiff_t rs = (ptrdiff_t)cfg->in_w * c;
#define NN_LD(o) _mm256_loadu_si256((const __m256i *)(const void *)(b + (o)))
                m = _mm256_max_epi8(_mm256_max_epi8(_mm256_max_epi8(NN_LD(0), NN_LD(c)), NN_LD(2 * c)),
                                    _mm256_max_epi8(_mm256_max_epi8(NN_LD(rs), NN_LD(rs + c)), NN_LD(rs + 2 * c)));
                m = _mm256_max_epi8(m, _mm256_max_epi8(_mm256_max_epi8(NN_LD(2 * rs), NN_LD(2 * rs + c)),
                                                       NN_LD(2 * rs + 2 * c)));
#undef NN_LD
            } else {
                for (yy = top + r0; yy < top + r1; ++yy)
                    for (xx = left + q0; xx < left + q1; ++xx)
                        m = _mm256_max_epi8(m, _mm256_loadu_si256((const __m256i *)(const void *)
                                                                  (in + ((ptrdiff_t)yy * cfg->in_w + xx) * c + c0)));
            }
            if (identity) {
                _mm256_storeu_si256((__m256i *)(void *)(o + c0), m);
            } else {
                long long q[4];
                _mm256_storeu_si256((__m256i *)(void *)q, m);
                for (i = 0; i < 4; ++i) {
                    const __m256i v = _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(q[i]));
                    const long long r = nn_avx2_requant8(v, &e, 0);
                    memcpy(o + c0 + i * 8, &r, 8);
                }
            }
        }
    }
}
/* Depthwise: per 64-channel chunk (one nn_epi_t), per pixel, per 8 channels: the taps of
 * the clipped window as int32 products (x - zp) * w, |x - zp| <= 255, |w| <= 128. */
static NN_AVX2 void dw_avx2(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                            const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                            int pix_begin, int pix_end, int c_end)
{
    const int c = cfg->in_c;
    int32_t b64[64];
    nn_epi_t e;
    int c0, p, i, v;
    for (c0 = 0; c0 < c_end; c0 += 64) {
        const int nc = c_end - c0 < 64 ? c_end - c0 : 64;
        const __m256i zp = _mm256_set1_epi32(cfg->in_zp);
        for (i = 0; i < nc; ++i)
            b64[i] = bias ? bias[c0 + i] : 0;
        nn_epi_init(&e, b64, mult + c0, shift + c0, nc, cfg->out_zp, cfg->act_min, cfg->act_max);
        for (p = pix_begin; p < pix_end; ++p) {
            const int y = p / cfg->out_w, x = p % cfg->out_w;
            const int top = y * cfg->stride_h - cfg->pad_top, left = x * cfg->stride_w - cfg->pad_left;
            int r0, r1, q0, q1;
            nn_valid_range(top, cfg->dil_h, cfg->k_h, cfg->in_h, &r0, &r1);
            nn_valid_range(left, cfg->dil_w, cfg->k_w, cfg->in_w, &q0, &q1);
            for (v = 0; v < nc / 8; ++v) {
                __m256i acc = _mm256_setzero_si256();
                int ky, kx;
                long long r;
                for (ky = r0; ky < r1; ++ky) {
                    const int8_t *row = in + ((ptrdiff_t)(top + ky * cfg->dil_h) * cfg->in_w) * c + c0 + v * 8;
                    const int8_t *wr = weight + (ptrdiff_t)ky * cfg->k_w * c + c0 + v * 8;
                    for (kx = q0; kx < q1; ++kx) {
                        long long xb, wb;
                        __m256i xv, wv;
                        memcpy(&xb, row + (ptrdiff_t)(left + kx * cfg->dil_w) * c, 8);
                        memcpy(&wb, wr + (ptrdiff_t)kx * c, 8);
                        xv = _mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(xb)), zp);
                        wv = _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(wb));
                        acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(xv, wv));
                    }
                }
                r = nn_avx2_requant8(acc, &e, v);
                memcpy(out + (ptrdiff_t)p * c + c0 + v * 8, &r, 8);
            }
        }
    }
}
/* Depthwise on a zero-point-free int16 band: buf holds x - zp_in of the band's input rows
 * (wp columns, c channels, 0 in the padding), so every window is whole.  Per output pixel
 * and 16 channels, taps in pairs: the two taps' values interleaved (unpacklo/hi_epi16) and
 * multiplied with the pair-interleaved int16 weights wq by vpmaddwd, exact (|x - zp| <=
 * 255, |w| <= 128: a pair sum is far from int16 x int16 saturation); the two int32 halves
 * hold channels {0-3, 8-11} and {4-7, 12-15}, put in order by one lane permute each. */
static NN_AVX2 void dw_band_avx2(const nn_hwc_conv_cfg_t *cfg, const int16_t *buf, int wp, int rows,
                                 const long *off, int pairs, const int16_t *wq, const nn_epi_t *epi,
                                 int8_t *out, int c16, int f64)
{
    const int c = cfg->in_c;
    int y, x, c0, p;
    for (y = 0; y < rows; ++y)
        for (x = 0; x < cfg->out_w; ++x) {
            const int16_t *base = buf + ((long)y * cfg->stride_h * wp + (long)x * cfg->stride_w) * c;
            int8_t *o = out + ((long)y * cfg->out_w + x) * c;
            for (c0 = 0; c0 < c16; c0 += 16) {
                const int16_t *wv = wq + (long)(c0 / 16) * pairs * 32;
                const nn_epi_t *e = &epi[c0 / 64];
                const int v = (c0 % 64) / 8;
                __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
                long long r0, r1;
                for (p = 0; p < pairs; ++p, wv += 32) {
                    const __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(base + off[2 * p] + c0));
                    const __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(base + off[2 * p + 1] + c0));
                    lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1),
                                                                _mm256_loadu_si256((const __m256i *)(const void *)wv)));
                    hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1),
                                                                _mm256_loadu_si256((const __m256i *)(const void *)(wv + 16))));
                }
                if (f64) {
                    r0 = nn_avx2_requant8_f64(_mm256_permute2x128_si256(lo, hi, 0x20), e, v);
                    r1 = nn_avx2_requant8_f64(_mm256_permute2x128_si256(lo, hi, 0x31), e, v + 1);
                } else {
                    r0 = nn_avx2_requant8(_mm256_permute2x128_si256(lo, hi, 0x20), e, v);
                    r1 = nn_avx2_requant8(_mm256_permute2x128_si256(lo, hi, 0x31), e, v + 1);
                }
                memcpy(o + c0, &r0, 8);
                memcpy(o + c0 + 8, &r1, 8);
            }
        }
}

/* The AVX2 depthwise tables (targets/host/dwtables.py, dw_avx2_tables): a 64-byte header
 * (byte 0 is 1 when the double-precision epilogue is exact for every channel, byte 1 when
 * the fma one is, a2_requant16_fma), then for
 * lcm(c, 16) lanes (lane j: channel j % c) in chunks of 16 the weights of each tap pair in
 * the lane order of unpacklo/hi_epi16 (lanes 0-3, 8-11, then 4-7, 12-15; a last odd tap's
 * partner 0), then per lane the bias (int32) and mult / 2**shift (double). */
typedef struct {
    int pairs, L;
    long w_at, b_at, m_at;
} dw_a2_geo_t;

static void a2_geometry(const nn_hwc_conv_cfg_t *cfg, dw_a2_geo_t *g)
{
    g->pairs = (cfg->k_h * cfg->k_w + 1) / 2;
    g->L = nn_dw_lanes(cfg->in_c);
    g->w_at = 64;
    g->b_at = g->w_at + (long)(g->L / 16) * g->pairs * 64;
    g->m_at = g->b_at + (long)g->L * 4;
}

/* 4 lanes times mult / 2**shift in double, rounded to nearest even, clamped: int32 */
static inline NN_AVX2 NN_ALWAYS_INLINE __m128i a2_round4(__m128i v, const double *m, __m256d dlo, __m256d dhi)
{
    const __m256d d = _mm256_round_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(v), _mm256_loadu_pd(m)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm256_cvtpd_epi32(_mm256_min_pd(_mm256_max_pd(d, dlo), dhi));
}

/* 16 lanes (lo: 0-3, 8-11; hi: 4-7, 12-15) + bias, times mult / 2**shift in double (exact:
 * the build checked |acc + bias| * |mult| < 2**53), rounded to nearest even, clamped to the
 * bounds less zp, + zp: 16 int8 in order. */
static inline NN_AVX2 NN_ALWAYS_INLINE __m128i a2_requant16(__m256i lo, __m256i hi, const int32_t *b, const double *m,
                                                            __m256d dlo, __m256d dhi, __m256i zp)
{
    const __m256i v0 = _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x20),
                                        _mm256_loadu_si256((const __m256i *)(const void *)b));
    const __m256i v1 = _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x31),
                                        _mm256_loadu_si256((const __m256i *)(const void *)(b + 8)));
    const __m256i r0 = _mm256_set_m128i(a2_round4(_mm256_extracti128_si256(v0, 1), m + 4, dlo, dhi),
                                        a2_round4(_mm256_castsi256_si128(v0), m, dlo, dhi));
    const __m256i r1 = _mm256_set_m128i(a2_round4(_mm256_extracti128_si256(v1, 1), m + 12, dlo, dhi),
                                        a2_round4(_mm256_castsi256_si128(v1), m + 8, dlo, dhi));
    const __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(_mm256_add_epi32(r0, zp), _mm256_add_epi32(r1, zp)), 0xd8);
    return _mm_packs_epi16(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
}

/* The epilogue's constants: the double path's bounds less zp and zp (int32 lanes), or the
 * fma path's (nn_avx2_fma8): 1.5 * 2**52, it plus the bounds less zp, zp (int16 lanes). */
typedef struct {
    int fma;
    __m256d big, dlo, dhi;
    __m256i zp;
} dw_a2_epi_t;

/* 16 lanes as a2_requant16 by the exact fma (nn_avx2_fma8_pd): any shift in [2, 62] with
 * |acc + bias| * mult / 2**shift < 2**51 (the tables' byte 1) */
static inline NN_AVX2 NN_ALWAYS_INLINE __m128i a2_requant16_fma(__m256i lo, __m256i hi, const int32_t *b, const double *m,
                                                                const dw_a2_epi_t *ep)
{
    const __m256i v0 = _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x20),
                                        _mm256_loadu_si256((const __m256i *)(const void *)b));
    const __m256i v1 = _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x31),
                                        _mm256_loadu_si256((const __m256i *)(const void *)(b + 8)));
    return nn_avx2_fma_pack16(nn_avx2_fma8_pd(v0, m, ep->big, ep->dlo, ep->dhi),
                              nn_avx2_fma8_pd(v1, m + 8, ep->big, ep->dlo, ep->dhi), ep->zp);
}

/* 16 (pixel, channel) positions: the taps from xs + off[t], weights and epilogue from the
 * tables' lanes [lane, lane + 16); n of them stored at o. */
static inline NN_AVX2 NN_ALWAYS_INLINE void a2_chunk(const int16_t *xs, const long *off, int pairs,
                                                     const int16_t *wv, const int32_t *b, const double *m,
                                                     const dw_a2_epi_t *ep, int8_t *o, long n)
{
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
    __m128i q;
    int p;
    for (p = 0; p < pairs; ++p, wv += 32) {
        const __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(xs + off[2 * p]));
        const __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(xs + off[2 * p + 1]));
        lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1),
                                                    _mm256_loadu_si256((const __m256i *)(const void *)wv)));
        hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1),
                                                    _mm256_loadu_si256((const __m256i *)(const void *)(wv + 16))));
    }
    q = ep->fma ? a2_requant16_fma(lo, hi, b, m, ep) : a2_requant16(lo, hi, b, m, ep->dlo, ep->dhi, ep->zp);
    if (n >= 16) {
        _mm_storeu_si128((__m128i *)(void *)o, q);
    } else {
        int8_t last[16];
        _mm_storeu_si128((__m128i *)(void *)last, q);
        memcpy(o, last, (size_t)n);
    }
}

/* Output rows of a band from its int16 buffer (as dw_band_avx2's), 16 (pixel, channel)
 * positions of a row at a time: with stride 1 they are 16 consecutive values of the
 * buffer's row for every tap (any channel count: small ones fill the vector with several
 * pixels), with a larger stride 16 channels of one pixel (c a multiple of 16).  A row's
 * last positions read up to 15 values past it (the buffer has them; those lanes are not
 * stored). */
static NN_AVX2 void dw_rows_avx2(const nn_hwc_conv_cfg_t *cfg, const int16_t *buf, int wp, int rows,
                                 const long *off, const uint8_t *t, int8_t *out)
{
    const int c = cfg->in_c;
    const long r = (long)cfg->out_w * c;
    const int fma = t[1] && nn_mxcsr_nearest();      /* the tables allow it, MXCSR rounds to nearest */
    const double big = fma ? 0x1.8p52 : 0.0;
    const dw_a2_epi_t ep = {fma, _mm256_set1_pd(big), _mm256_set1_pd(big + cfg->act_min - cfg->out_zp),
                            _mm256_set1_pd(big + cfg->act_max - cfg->out_zp),
                            fma ? _mm256_set1_epi16((short)cfg->out_zp) : _mm256_set1_epi32(cfg->out_zp)};
    dw_a2_geo_t g;
    const int16_t *wt;
    const int32_t *bt;
    const double *mt;
    int y;
    a2_geometry(cfg, &g);
    wt = (const int16_t *)(const void *)(t + g.w_at);
    bt = (const int32_t *)(const void *)(t + g.b_at);
    mt = (const double *)(const void *)(t + g.m_at);
    for (y = 0; y < rows; ++y) {
        const int16_t *row = buf + (long)y * cfg->stride_h * wp * c;
        int8_t *o = out + (long)y * r;
        if (cfg->stride_w == 1) {
            long f;
            int lane = 0;        /* the tables' lane of position f: f mod lcm(c, 16) */
            for (f = 0; f < r; f += 16) {
                a2_chunk(row + f, off, g.pairs, wt + (long)(lane / 16) * g.pairs * 32, bt + lane, mt + lane,
                         &ep, o + f, r - f);
                lane = lane + 16 == g.L ? 0 : lane + 16;
            }
        } else {
            int ox, c0;
            for (ox = 0; ox < cfg->out_w; ++ox)
                for (c0 = 0; c0 < c; c0 += 16)
                    a2_chunk(row + (long)ox * cfg->stride_w * c + c0, off, g.pairs, wt + (long)(c0 / 16) * g.pairs * 32,
                             bt + c0, mt + c0, &ep, o + (long)ox * c + c0, 16);
        }
    }
}

/* x - zp of input rows [r_first, r_first + n) into buf (wp columns from -pad_left), 0 outside. */
static NN_AVX2 void dw_fill_avx2(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, int16_t *buf, int wp,
                                 int r_first, int n)
{
    const int c = cfg->in_c;
    const __m256i zp = _mm256_set1_epi16((int16_t)cfg->in_zp);
    int y;
    for (y = 0; y < n; ++y) {
        const int iy = r_first + y;
        int16_t *d = buf + (long)y * wp * c;
        if (iy < 0 || iy >= cfg->in_h) {
            memset(d, 0, sizeof *d * (size_t)wp * c);
            continue;
        }
        {
            const long left = (long)cfg->pad_left * c, run = (long)cfg->in_w * c;
            const long right = (long)wp * c - left - run;
            const int8_t *s = in + (long)iy * run;
            long i;
            memset(d, 0, sizeof *d * (size_t)left);
            for (i = 0; i + 16 <= run; i += 16)
                _mm256_storeu_si256((__m256i *)(void *)(d + left + i),
                                    _mm256_sub_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(s + i))), zp));
            for (; i < run; ++i)
                d[left + i] = (int16_t)(s[i] - cfg->in_zp);
            if (right > 0)
                memset(d + left + run, 0, sizeof *d * (size_t)right);
        }
    }
}
#endif

/* The portable depthwise kernel, channels [c_begin, c_end). */
static void dw_portable(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                        const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                        int pix_begin, int pix_end, int c_begin, int c_end)
{
    const int c = cfg->in_c;
    int p, ch, ky, kx;
    for (p = pix_begin; p < pix_end; ++p) {
        const int y = p / cfg->out_w, x = p % cfg->out_w;
        const int top = y * cfg->stride_h - cfg->pad_top, left = x * cfg->stride_w - cfg->pad_left;
        int r0, r1, q0, q1;
        nn_valid_range(top, cfg->dil_h, cfg->k_h, cfg->in_h, &r0, &r1);
        nn_valid_range(left, cfg->dil_w, cfg->k_w, cfg->in_w, &q0, &q1);
        for (ch = c_begin; ch < c_end; ++ch) {
            int32_t acc = 0;
            for (ky = r0; ky < r1; ++ky)
                for (kx = q0; kx < q1; ++kx)
                    acc += ((int32_t)in[((ptrdiff_t)(top + ky * cfg->dil_h) * cfg->in_w + left + kx * cfg->dil_w) * c + ch]
                            - cfg->in_zp) * weight[(ptrdiff_t)(ky * cfg->k_w + kx) * c + ch];
            out[(ptrdiff_t)p * c + ch] = nn_requantize((int64_t)acc + (bias ? bias[ch] : 0), mult[ch], shift[ch],
                                                       cfg->out_zp, cfg->act_min, cfg->act_max);
        }
    }
}

#if NN_HAVE_ARM64
/* Max pooling on NEON (any Armv8): 16 channels per SMAX over the clipped window, then the
 * exact scalar requantization of (max - in_zp), as nn_hwc_maxpool_s8. */
static void maxpool_neon(const nn_hwc_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult,
                         const int32_t *shift, int8_t *out, int pix_begin, int pix_end)
{
    int p, i, c0;
    const int c = cfg->c;
    for (p = pix_begin; p < pix_end; ++p) {
        const int y = p / cfg->out_w, x = p % cfg->out_w;
        const int top = y * cfg->stride_h - cfg->pad_top, left = x * cfg->stride_w - cfg->pad_left;
        int r0, r1, q0, q1;
        int8_t *o = out + (ptrdiff_t)p * c;
        nn_valid_range(top, 1, cfg->k_h, cfg->in_h, &r0, &r1);
        nn_valid_range(left, 1, cfg->k_w, cfg->in_w, &q0, &q1);
        if (r0 >= r1 || q0 >= q1 || c % 16) {
            nn_hwc_maxpool_s8(cfg, in, mult, shift, out, p, p + 1);
            continue;
        }
        for (c0 = 0; c0 < c; c0 += 16) {
            int8x16_t m = vdupq_n_s8(-128);
            int8_t t[16];
            int yy, xx;
            for (yy = top + r0; yy < top + r1; ++yy)
                for (xx = left + q0; xx < left + q1; ++xx)
                    m = vmaxq_s8(m, vld1q_s8(in + ((ptrdiff_t)yy * cfg->in_w + xx) * c + c0));
            vst1q_s8(t, m);
            for (i = 0; i < 16; ++i)
                o[c0 + i] = nn_requantize((int32_t)t[i] - cfg->in_zp, mult[0], shift[0], cfg->out_zp,
                                          cfg->act_min, cfg->act_max);
        }
    }
}
#endif

void nn_dwconv_hwc_fast(int isa, const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                        const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                        int pix_begin, int pix_end)
{
    int done = 0;
    (void)isa;
#if NN_HAVE_X86
    if (use_avx2(isa)) {
        done = cfg->in_c / 8 * 8;
        dw_avx2(cfg, in, weight, bias, mult, shift, out, pix_begin, pix_end, done);
    }
#endif
    if (done < cfg->in_c)
        dw_portable(cfg, in, weight, bias, mult, shift, out, pix_begin, pix_end, done, cfg->in_c);
}

void nn_add_s8_fast(int isa, int n, const int8_t *a, int32_t a_zp, const int8_t *b, int32_t b_zp,
                    const int32_t *mult, const int32_t *shift, int32_t out_zp, int32_t act_min,
                    int32_t act_max, int8_t *out)
{
    (void)isa;
#if NN_HAVE_X86
    if (use_avx2(isa)) {
        if (shift[0] < 0)                     /* TFLite's add recipe */
            add_tfl_avx2(n, a, a_zp, b, b_zp, mult, shift, out_zp, act_min, act_max, out);
        else
            add_avx2(n, a, a_zp, b, b_zp, mult, shift, out_zp, act_min, act_max, out);
        return;
    }
#endif
    (void)use_avx2;
    nn_add_s8(n, a, a_zp, b, b_zp, mult, shift, out_zp, act_min, act_max, out);
}

void nn_maxpool_hwc_fast(int isa, const nn_hwc_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult,
                         const int32_t *shift, int8_t *out, int pix_begin, int pix_end)
{
    (void)isa;
    if (cfg->dil_h != 1 || cfg->dil_w != 1) {     /* the vector paths read dense windows */
        nn_hwc_maxpool_s8(cfg, in, mult, shift, out, pix_begin, pix_end);
        return;
    }
#if NN_HAVE_X86
    if (use_avx2(isa) && cfg->c % 32 == 0) {
        maxpool_avx2(cfg, in, mult, shift, out, pix_begin, pix_end);
        return;
    }
#endif
#if NN_HAVE_ARM64
    if (isa != 1) {
        maxpool_neon(cfg, in, mult, shift, out, pix_begin, pix_end);
        return;
    }
#endif
    nn_hwc_maxpool_s8(cfg, in, mult, shift, out, pix_begin, pix_end);
}

/* Depthwise conv of a whole layer in row bands of band_rows output rows (see nn_simd.h). */
const char *nn_dwconv_band_fast(int isa, const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                         const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                         int band_rows, int16_t *buf, int wp, int16_t *wq, nn_epi_t *epi,
                         const uint8_t *vtables, const uint8_t *atables, uint8_t *vbuf, long vbytes)
{
    if ((isa == 0 || isa == 3) && nn_dwconv_vnni(cfg, in, out, vtables, vbuf, vbytes))
        return "avx512vnni";
#if NN_HAVE_X86
    const int c = cfg->in_c, taps = cfg->k_h * cfg->k_w;
    /* the build's tables (stride 1, or whole groups of 16 channels): nothing to prepare here */
    const int tabled = atables && atables[0] == 1 && (cfg->stride_w == 1 || c % 16 == 0);
    if (use_avx2(isa) && (tabled || c >= 16) && taps <= NN_DW_MAX_TAPS) {
        const int pairs = (taps + 1) / 2, c16 = tabled ? c : c / 16 * 16;
        long off[NN_DW_MAX_TAPS + 1];
        int32_t b64[64];
        int t, ch, k, oh0, f64 = shift[0] >= 0;   /* not under TFLite's rule (negative shifts) */
        off[0] = 0;
        for (t = 1; t < taps; ++t)
            off[t] = ((long)(t / cfg->k_w) * cfg->dil_h * wp + (long)(t % cfg->k_w) * cfg->dil_w) * c;
        off[taps] = off[0];                /* an odd tap count: the last pair's second tap has weight 0 */
        if (!tabled) {
            for (ch = 0; ch < c16; ch += 16)   /* [c/16][pairs][32]: the lane order of unpacklo/hi_epi16 */
                for (t = 0; t < pairs; ++t)
                    for (k = 0; k < 16; ++k) {
                        const int j = ch + (k & 3) + (k & 4 ? 8 : 0) + (k & 8 ? 4 : 0);
                        int16_t *d = wq + ((long)(ch / 16) * pairs + t) * 32 + (k & 8 ? 16 : 0) + (k & 4 ? 8 : 0) + (k & 3) * 2;
                        d[0] = weight[(long)(2 * t) * c + j];
                        d[1] = 2 * t + 1 < taps ? weight[(long)(2 * t + 1) * c + j] : 0;
                    }
            /* the double-precision epilogue when |acc + bias| * mult < 2**53 for every channel
             * and input (|x - zp| <= 255): exact, about half the operations */
            for (ch = 0; ch < c16 && f64; ++ch) {
                uint64_t bound = (uint64_t)(bias ? (bias[ch] < 0 ? -(int64_t)bias[ch] : bias[ch]) : 0);
                for (t = 0; t < taps; ++t)
                    bound += 255u * (uint64_t)(weight[(long)t * c + ch] < 0 ? -weight[(long)t * c + ch] : weight[(long)t * c + ch]);
                f64 = bound < ((uint64_t)1 << 31) && bound * (uint64_t)mult[ch] < ((uint64_t)1 << 53);
            }
            for (ch = 0; ch < c16; ch += 64) {
                const int nc = c16 - ch < 64 ? c16 - ch : 64;
                for (k = 0; k < nc; ++k)
                    b64[k] = bias ? bias[ch + k] : 0;
                nn_epi_init(&epi[ch / 64], b64, mult + ch, shift + ch, nc, cfg->out_zp, cfg->act_min, cfg->act_max);
            }
        }
        for (oh0 = 0; oh0 < cfg->out_h; oh0 += band_rows) {
            const int rows = cfg->out_h - oh0 < band_rows ? cfg->out_h - oh0 : band_rows;
            int8_t *o = out + (long)oh0 * cfg->out_w * c;
            dw_fill_avx2(cfg, in, buf, wp, oh0 * cfg->stride_h - cfg->pad_top,
                         (rows - 1) * cfg->stride_h + (cfg->k_h - 1) * cfg->dil_h + 1);
            if (tabled)
                dw_rows_avx2(cfg, buf, wp, rows, off, atables, o);
            else
                dw_band_avx2(cfg, buf, wp, rows, off, pairs, wq, epi, o, c16, f64);
        }
        if (c16 < c)
            dw_portable(cfg, in, weight, bias, mult, shift, out, 0, cfg->out_h * cfg->out_w, c16, c);
        return "avx2";
    }
#endif
    (void)band_rows; (void)buf; (void)wp; (void)wq; (void)epi; (void)atables;
    nn_dwconv_hwc_fast(isa, cfg, in, weight, bias, mult, shift, out, 0, cfg->out_h * cfg->out_w);
    return use_avx2(isa) && cfg->in_c >= 8 ? "avx2" : "portable";
}
