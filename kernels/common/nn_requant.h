/* The one integer requantization rule (see site_scons/nnscons/numerics.py):
 *
 *     out = clamp(zp + rshift_round(acc * mult, shift), lo, hi)
 *     rshift_round(v, s) = floor((v + 2**(s-1)) / 2**s)        round half up, 1 <= s <= 62
 *
 * All arithmetic is 64-bit.  No overflow: callers keep |acc| < 2**32 and mult < 2**31,
 * so |acc * mult| + 2**61 < 2**63.
 */
#ifndef NN_REQUANT_H
#define NN_REQUANT_H

#include <stdint.h>

static inline int64_t nn_rshift_round(int64_t v, int32_t shift)
{
    /* (int64_t)1 << (shift-1): never shift a negative value. */
    const int64_t a = v + ((int64_t)1 << (shift - 1));
    if (a >= 0)
        return a >> shift;
    /* Right-shifting a negative value is implementation-defined in C99; floor it
     * portably via floor(a / 2**s) = -((-a - 1) >> s) - 1. */
    return -((-(a + 1)) >> shift) - 1;
}

static inline int8_t nn_requantize(int64_t acc, int32_t mult, int32_t shift, int32_t zp,
                                   int32_t lo, int32_t hi)
{
    int64_t v = nn_rshift_round(acc * mult, shift) + zp;
    if (v < lo)
        v = lo;
    if (v > hi)
        v = hi;
    return (int8_t)v;
}

#endif /* NN_REQUANT_H */
