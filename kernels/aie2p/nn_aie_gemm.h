/* One call of a mapped layer on an AIE core: T output pixels x Cc output channels.
 *
 * Layouts (bytes, as the DMAs deliver them, see targets/aie2p/layerplan.py):
 *   a    {K/8}{T}{K8}                 activations, act_t (uint8 or int8), k in (ky, kx, ci)
 *   wp   per 8-channel block: {K/8}{K8}{C8} int8 weights, then bias'[NCLS][8], mult[8],
 *        shift[8] int32
 *   out  {C/8}{T}{C8}                 int8
 *   cls  the border class of each of the T pixels (NULL: class 0 for all, NCLS == 1)
 * acc = bias'[cls[t]] + sum_k a[t][k] * w[k][c]  (int32 sum, exact for K <= 65793), then
 * nnscons's requantization (numerics.py, nn_requant.h): the ONNX rule, clamp(zp + round(acc *
 * M / 2^s)) with ties to even, or TFLite's rules where the parameters carry them.
 * bias' already holds -zp_in * sum_valid w (the taps of the pixel's class that fall
 * inside the image; padded taps arrive as raw 0), so raw activation bytes are multiplied.
 */
#ifndef NN_AIE_GEMM_H
#define NN_AIE_GEMM_H

#include <stdint.h>

#include "nn_requant.h"

static inline int8_t nn_aie_requant(int64_t acc, int32_t mult, int32_t shift, int32_t zp,
                                    int32_t lo, int32_t hi)
{
    return nn_requantize(acc, mult, shift, zp, lo, hi);
}

template <typename act_t, int T, int K, int CC, int NCLS>
static inline void nn_aie_gemm_scalar(const act_t *a, const int8_t *wp, int8_t *out,
                                      int32_t zp, int32_t lo, int32_t hi, const uint8_t *cls)
{
    constexpr int BLOCK = 8 * K + 32 * (NCLS + 2);
    for (int cb = 0; cb < CC / 8; cb++) {
        const int8_t *w = wp + cb * BLOCK;
        const int32_t *biases = (const int32_t *)(w + 8 * K);
        const int32_t *mult = biases + 8 * NCLS, *shift = mult + 8;
        for (int t = 0; t < T; t++) {
            int32_t acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (int kk = 0; kk < K / 8; kk++) {
                const act_t *x = a + kk * 8 * T + t * 8;
                const int8_t *wk = w + kk * 64;
                for (int k8 = 0; k8 < 8; k8++)
                    for (int c8 = 0; c8 < 8; c8++)
                        acc[c8] += (int32_t)x[k8] * (int32_t)wk[k8 * 8 + c8];
            }
            int8_t *o = out + cb * 8 * T + t * 8;
            const int32_t *bias = biases + (cls ? 8 * cls[t] : 0);
            for (int c8 = 0; c8 < 8; c8++)
                o[c8] = nn_aie_requant((int64_t)acc[c8] + bias[c8], mult[c8], shift[c8], zp, lo, hi);
        }
    }
}

#if defined(__AIENGINE__) || defined(__chess__)
#include <aie_api/aie.hpp>

/* aie::mmul<8, 8, 8>: one 8x8 block of A (8 pixels x 8 k, 64 contiguous bytes) times one
 * 8x8 block of W (8 k x 8 channels) per step; the int32 accumulators are then requantized
 * element by element with the same 64-bit rule as the scalar kernel. */
template <typename act_t, int T, int K, int CC, int NCLS>
static inline void nn_aie_gemm_vector(const act_t *a, const int8_t *wp, int8_t *out,
                                      int32_t zp, int32_t lo, int32_t hi, const uint8_t *cls)
{
    static_assert(T % 8 == 0, "the vector kernel takes 8 pixels per mmul row block");
    using MMUL = aie::mmul<8, 8, 8, act_t, int8_t>;
    constexpr int BLOCK = 8 * K + 32 * (NCLS + 2);
    for (int cb = 0; cb < CC / 8; cb++) {
        const int8_t *w = wp + cb * BLOCK;
        const int32_t *biases = (const int32_t *)(w + 8 * K);
        const int32_t *mult = biases + 8 * NCLS, *shift = mult + 8;
        for (int tb = 0; tb < T / 8; tb++) {
            MMUL m;
            m.mul(aie::load_v<64>(a + tb * 64), aie::load_v<64>(w));
            for (int kk = 1; kk < K / 8; kk++)
                m.mac(aie::load_v<64>(a + kk * 8 * T + tb * 64), aie::load_v<64>(w + kk * 64));
            aie::vector<int32_t, 64> acc = m.template to_vector<int32_t>(0);
            int8_t *o = out + cb * 8 * T + tb * 64;
            /* element i is pixel tb*8 + i/8, channel i%8: its class picks the bias row */
            for (int i = 0; i < 64; i++) {
                const int32_t *bias = biases + (cls ? 8 * cls[tb * 8 + i / 8] : 0);
                o[i] = nn_aie_requant((int64_t)acc.get(i) + bias[i % 8], mult[i % 8], shift[i % 8],
                                      zp, lo, hi);
            }
        }
    }
}
#endif

#endif /* NN_AIE_GEMM_H */
