/* Depthwise conv on AVX-512 VNNI (see nn_simd.h, nn_dwconv_vnni).
 *
 * vpdpbusd sums four u8 x s8 products into an int32 lane, so each lane must hold four taps
 * of one channel.  The kernel keeps, per input row and per group of four taps along a
 * kernel row ("quad"), a quad row: for output column ox and channel c the dword
 * {u(s*ox + 4q*d), u(s*ox + (4q+1)*d), u(s*ox + (4q+2)*d), u(s*ox + (4q+3)*d)} of channel c,
 * u = x + 128 as u8 (x ^ 0x80), padding u = zp_in + 128 (x = zp_in: contributes nothing).
 * A quad row is laid out like an output row (ox-major, channels inner), so an output row
 * is, for every 16 consecutive (ox, c) values of it, kh * nq vpdpbusd of quad rows against
 * the weights tiled to the same positions: layers with 8 (or any) channels fill whole
 * vectors.  The weights' slots past k_w are 0; the bias carries -(128 + zp_in) * sum(w).
 *
 * The requantization is exact without a proof per layer: v = acc + bias (int32, the
 * planner checks |v| < 2**31) times mult / 2**shift (exact in double) plus 1.5 * 2**52 in
 * one fma with round-to-nearest-even (embedded rounding, independent of MXCSR) is the true
 * v * mult / 2**shift + 1.5 * 2**52 rounded once to a double whose ulp is 1: that is
 * rne(v * mult / 2**shift) + 1.5 * 2**52 (1.5 * 2**52 is even) when |v * mult / 2**shift| <
 * 2**51, which shift >= 11 guarantees (|mult| < 2**31).  Clamped in double to the bounds
 * minus zp (integers: clamping commutes with the rounding), its low byte is the rounded
 * value (vpmovqb), and zp is added in bytes (the sum is in [act_min, act_max]). */
#include <stddef.h>
#include <string.h>

#include "nn_gemm.h"
#include "nn_simd.h"

#if NN_HAVE_X86
/* vpdpbusd on zmm, the byte stores and vpmovqb, the fma with embedded rounding */
#define NN_DWVNNI __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni")))
#endif

static long al64(long n)
{
    return (n + 63) / 64 * 64;
}

/* The geometry every part of the kernel derives from the layer. */
typedef struct {
    int nq, nr, pw, L;          /* quads per kernel row, ring rows, padded row columns, table lanes */
    long r, qs;                 /* output row (flat), quad row stride (dwords) */
    long q_at, bytes;           /* the scratch: the padded row at 0, the quad rows' ring at q_at */
    long w_at, b_at, m_at, tbytes;   /* the tables (nn_dwconv_vnni_pack) */
} dw_geo_t;

static void geometry(const nn_hwc_conv_cfg_t *cfg, dw_geo_t *g)
{
    const int c = cfg->in_c;
    g->nq = (cfg->k_w + 3) / 4;
    g->nr = (cfg->k_h - 1) * cfg->dil_h + 1;
    g->pw = (cfg->out_w - 1) * cfg->stride_w + (4 * g->nq - 1) * cfg->dil_w + 1;
    g->L = nn_dw_lanes(c);
    g->r = (long)cfg->out_w * c;
    g->qs = (g->r + 15) / 16 * 16 + 16;
    g->q_at = al64((long)g->pw * c + 64);
    g->bytes = g->q_at + (long)g->nr * g->nq * g->qs * 4 + 64;   /* + 64: buf may be unaligned */
    g->w_at = 64;               /* after the header: int32 1 when the tables are valid */
    g->b_at = g->w_at + (long)cfg->k_h * g->nq * g->L * 4;
    g->m_at = g->b_at + (long)g->L * 4;
    g->tbytes = g->m_at + (long)g->L * 8;
}

long nn_dwconv_vnni_bytes(const nn_hwc_conv_cfg_t *cfg)
{
    dw_geo_t g;
    geometry(cfg, &g);
    return g.bytes;
}

long nn_dwconv_vnni_table_bytes(const nn_hwc_conv_cfg_t *cfg)
{
    dw_geo_t g;
    geometry(cfg, &g);
    return g.tbytes;
}

int nn_dwconv_vnni_pack(const nn_hwc_conv_cfg_t *cfg, const int8_t *weight, const int32_t *bias,
                        const int32_t *mult, const int32_t *shift, uint8_t *tables)
{
    const int c = cfg->in_c;
    dw_geo_t g;
    int ch, j, ky, k;
    geometry(cfg, &g);
    memset(tables, 0, 64);
    for (ch = 0; ch < c; ++ch)          /* the fma's range (above); TFLite's rules elsewhere */
        if (shift[ch] < 11 || shift[ch] > 62)
            return 0;
    tables[0] = 1;
    for (j = 0; j < g.L; ++j) {         /* lane j of the tables: channel j % c */
        int64_t sum = 0;
        int32_t b;
        double m;
        ch = j % c;
        for (ky = 0; ky < cfg->k_h; ++ky)
            for (k = 0; k < g.nq; ++k) {
                uint32_t word = 0;
                int t;
                for (t = 0; t < 4; ++t) {
                    const int kx = 4 * k + t;
                    const int8_t w = kx < cfg->k_w ? weight[(long)(ky * cfg->k_w + kx) * c + ch] : 0;
                    sum += w;
                    word |= (uint32_t)(uint8_t)w << (8 * t);
                }
                memcpy(tables + g.w_at + ((long)(ky * g.nq + k) * g.L + j) * 4, &word, 4);
            }
        /* wraps like the accumulator: the true acc + bias fits (the planner's check) */
        b = (int32_t)(uint32_t)((uint64_t)(int64_t)(bias ? bias[ch] : 0)
                                - (uint64_t)((int64_t)(128 + cfg->in_zp) * sum));
        m = (double)mult[ch] / (double)((uint64_t)1 << shift[ch]);
        memcpy(tables + g.b_at + (long)j * 4, &b, 4);
        memcpy(tables + g.m_at + (long)j * 8, &m, 8);
    }
    return 1;
}

#if NN_HAVE_X86
/* dst[f] = the four bytes p[f], p[f + step], p[f + 2 step], p[f + 3 step] as one dword,
 * f in [0, n) with n a multiple of 16 (the unpacks interleave in 128-bit lanes; the
 * stores put the lanes in order). */
static NN_AVX2 void interleave4(uint32_t *dst, const uint8_t *p, long step, long n)
{
    long f = 0;
    for (; f + 32 <= n; f += 32) {
        const __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)(p + f));
        const __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + f + step));
        const __m256i x2 = _mm256_loadu_si256((const __m256i *)(const void *)(p + f + 2 * step));
        const __m256i x3 = _mm256_loadu_si256((const __m256i *)(const void *)(p + f + 3 * step));
        const __m256i al = _mm256_unpacklo_epi8(x0, x1), ah = _mm256_unpackhi_epi8(x0, x1);
        const __m256i bl = _mm256_unpacklo_epi8(x2, x3), bh = _mm256_unpackhi_epi8(x2, x3);
        const __m256i q0 = _mm256_unpacklo_epi16(al, bl), q1 = _mm256_unpackhi_epi16(al, bl);
        const __m256i q2 = _mm256_unpacklo_epi16(ah, bh), q3 = _mm256_unpackhi_epi16(ah, bh);
        __m256i *d = (__m256i *)(void *)(dst + f);
        _mm256_storeu_si256(d, _mm256_permute2x128_si256(q0, q1, 0x20));
        _mm256_storeu_si256(d + 1, _mm256_permute2x128_si256(q2, q3, 0x20));
        _mm256_storeu_si256(d + 2, _mm256_permute2x128_si256(q0, q1, 0x31));
        _mm256_storeu_si256(d + 3, _mm256_permute2x128_si256(q2, q3, 0x31));
    }
    for (; f < n; f += 16) {
        const __m128i x0 = _mm_loadu_si128((const __m128i *)(const void *)(p + f));
        const __m128i x1 = _mm_loadu_si128((const __m128i *)(const void *)(p + f + step));
        const __m128i x2 = _mm_loadu_si128((const __m128i *)(const void *)(p + f + 2 * step));
        const __m128i x3 = _mm_loadu_si128((const __m128i *)(const void *)(p + f + 3 * step));
        const __m128i al = _mm_unpacklo_epi8(x0, x1), ah = _mm_unpackhi_epi8(x0, x1);
        const __m128i bl = _mm_unpacklo_epi8(x2, x3), bh = _mm_unpackhi_epi8(x2, x3);
        __m128i *d = (__m128i *)(void *)(dst + f);
        _mm_storeu_si128(d, _mm_unpacklo_epi16(al, bl));
        _mm_storeu_si128(d + 1, _mm_unpackhi_epi16(al, bl));
        _mm_storeu_si128(d + 2, _mm_unpacklo_epi16(ah, bh));
        _mm_storeu_si128(d + 3, _mm_unpackhi_epi16(ah, bh));
    }
}

/* The quad rows of input row iy (nq of them, qs dwords apart) through the padded u8 row p. */
static NN_AVX2 void quad_rows(const nn_hwc_conv_cfg_t *cfg, const dw_geo_t *g, const int8_t *in, int iy,
                              uint8_t *p, uint32_t *q)
{
    const int c = cfg->in_c, pad = (uint8_t)(cfg->in_zp + 128);
    const long dc = (long)cfg->dil_w * c, rows16 = (g->r + 15) / 16 * 16;
    int k, ox;
    if (iy < 0 || iy >= cfg->in_h) {    /* a padding row: every byte the padding's */
        memset(q, pad, (size_t)g->nq * g->qs * 4);
        return;
    }
    {   /* p: columns -pad_left .. pw - pad_left of the row as u8, the padding's value outside */
        const long left = (long)cfg->pad_left * c, total = (long)g->pw * c + 64;
        long run = (long)cfg->in_w * c, i;
        const int8_t *s = in + (long)iy * run;
        const __m256i flip = _mm256_set1_epi8((char)0x80);
        if (left + run > total)
            run = total - left;
        memset(p, pad, (size_t)left);
        for (i = 0; i + 32 <= run; i += 32)
            _mm256_storeu_si256((__m256i *)(void *)(p + left + i),
                                _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)(s + i)), flip));
        for (; i < run; ++i)
            p[left + i] = (uint8_t)((uint8_t)s[i] ^ 0x80u);
        memset(p + left + run, pad, (size_t)(total - left - run));
    }
    for (k = 0; k < g->nq; ++k) {
        uint32_t *d = q + (long)k * g->qs;
        const uint8_t *pk = p + 4L * k * dc;
        if (cfg->stride_w == 1) {       /* output columns read consecutive input columns */
            interleave4(d, pk, dc, rows16);
        } else {
            const long c16 = (c + 15) / 16 * 16;
            for (ox = 0; ox < cfg->out_w; ++ox)   /* each writes up to 15 dwords into the next */
                interleave4(d + (long)ox * c, pk + (long)ox * cfg->stride_w * c, dc, c16);
        }
    }
}

static NN_DWVNNI void rows_vnni(const nn_hwc_conv_cfg_t *cfg, const dw_geo_t *g, const int8_t *in, int8_t *out,
                                const uint8_t *tables, uint8_t *base)
{
    uint8_t *const p = base;
    uint32_t *const q = (uint32_t *)(void *)(base + g->q_at);
    const int32_t *const wv = (const int32_t *)(const void *)(tables + g->w_at);
    const int32_t *const bv = (const int32_t *)(const void *)(tables + g->b_at);
    const double *const mf = (const double *)(const void *)(tables + g->m_at);
    const __m512d magic = _mm512_set1_pd(0x1.8p52);
    const __m512d lo = _mm512_set1_pd(0x1.8p52 + (cfg->act_min - cfg->out_zp));
    const __m512d hi = _mm512_set1_pd(0x1.8p52 + (cfg->act_max - cfg->out_zp));
    const __m128i zp = _mm_set1_epi8((char)cfg->out_zp);
    const long rq = (long)g->nq * g->qs;          /* a ring slot: one input row's quad rows */
    const int taps = cfg->k_h * g->nq;
    const uint32_t *rowp[4 * NN_DW_MAX_TAPS];
    int oy, built = -cfg->pad_top - 1, t;         /* the last input row built */
    for (oy = 0; oy < cfg->out_h; ++oy) {
        const int top = oy * cfg->stride_h - cfg->pad_top;
        long f;
        int fl = 0, iy;
        int8_t *o = out + (long)oy * g->r;
        for (iy = top > built + 1 ? top : built + 1; iy <= top + g->nr - 1; ++iy)
            quad_rows(cfg, g, in, iy, p, q + (long)((iy + cfg->pad_top) % g->nr) * rq);
        built = top + g->nr - 1;
        for (t = 0; t < taps; ++t) {
            const int ky = t / g->nq, k = t % g->nq;
            rowp[t] = q + (long)((top + ky * cfg->dil_h + cfg->pad_top) % g->nr) * rq + (long)k * g->qs;
        }
        for (f = 0; f < g->r; f += 16) {
            __m512i acc = _mm512_loadu_si512(bv + fl);
            __m512d a, b;
            __m128i r;
            for (t = 0; t < taps; ++t)
                acc = _mm512_dpbusd_epi32(acc, _mm512_loadu_si512(rowp[t] + f),
                                          _mm512_loadu_si512(wv + (long)t * g->L + fl));
            a = _mm512_cvtepi32_pd(_mm512_castsi512_si256(acc));
            b = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(acc, 1));
            a = _mm512_fmadd_round_pd(a, _mm512_loadu_pd(mf + fl), magic, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            b = _mm512_fmadd_round_pd(b, _mm512_loadu_pd(mf + fl + 8), magic, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            a = _mm512_min_pd(_mm512_max_pd(a, lo), hi);
            b = _mm512_min_pd(_mm512_max_pd(b, lo), hi);
            r = _mm_add_epi8(_mm_unpacklo_epi64(_mm512_cvtepi64_epi8(_mm512_castpd_si512(a)),
                                                _mm512_cvtepi64_epi8(_mm512_castpd_si512(b))), zp);
            if (f + 16 <= g->r)
                _mm_storeu_si128((__m128i *)(void *)(o + f), r);
            else
                _mm_mask_storeu_epi8(o + f, (__mmask16)((1u << (g->r - f)) - 1), r);
            fl = fl + 16 == g->L ? 0 : fl + 16;
        }
    }
}
#endif

int nn_dwconv_vnni(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, int8_t *out, const uint8_t *tables,
                   uint8_t *buf, long bytes)
{
#if NN_HAVE_X86
    dw_geo_t g;
    if (!tables || tables[0] != 1 || !nn_cpu_has_avx512vnni() || !__builtin_cpu_supports("avx512bw")
        || cfg->k_h * ((cfg->k_w + 3) / 4) > 4 * NN_DW_MAX_TAPS)
        return 0;
    geometry(cfg, &g);
    if (g.bytes > bytes)
        return 0;
    rows_vnni(cfg, &g, in, out, tables, (uint8_t *)(((uintptr_t)buf + 63) / 64 * 64));
    return 1;
#else
    (void)cfg; (void)in; (void)out; (void)tables; (void)buf; (void)bytes;
    return 0;
#endif
}
