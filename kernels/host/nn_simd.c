/* See nn_simd.h.  Requantization through nn_gemm.h's exact vector epilogue. */
#include <stddef.h>

#include "nn_gemm.h"
#include "nn_simd.h"
#include "nn_window.h"

static int use_avx2(int isa)
{
    return isa == 2 || (isa == 0 && nn_cpu_has_avx2());
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

/* Channels in steps of 32: byte max over the window, then (max - zp_in) requantized. */
static NN_AVX2 void maxpool_avx2(const nn_hwc_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult,
                                 const int32_t *shift, int8_t *out, int pix_begin, int pix_end)
{
    int32_t bias[8], m8[8], s8[8];
    nn_epi_t e;
    int p, i, c0;
    const int c = cfg->c, c32 = cfg->c / 32 * 32;
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
            for (yy = top + r0; yy < top + r1; ++yy)
                for (xx = left + q0; xx < left + q1; ++xx)
                    m = _mm256_max_epi8(m, _mm256_loadu_si256((const __m256i *)(const void *)
                                                              (in + ((ptrdiff_t)yy * cfg->in_w + xx) * c + c0)));
            {
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
