/* The one integer requantization rule (see site_scons/nnscons/numerics.py):
 *
 *     out = clamp(zp + rshift_round(acc * mult, shift), lo, hi)
 *     rshift_round(v, s) = v / 2**s rounded to nearest, ties to even     1 <= s <= 62
 *
 * and for averages over a window of `count` elements (the division is exact, so a mean
 * that is halfway in real arithmetic is a tie here too):
 *
 *     out = clamp(zp + div_round(acc * mult, count * 2**shift), lo, hi)
 *
 * Ties go to even as in ONNX's QuantizeLinear.  All arithmetic is 64-bit.  No overflow:
 * callers keep |acc| < 2**32 and mult < 2**31, so |acc * mult| < 2**63.
 *
 * A negative shift selects TFLite's rule instead (a graph imported from TFLite; its
 * exponent e is shift + 32): TFLite's MultiplyByQuantizedMultiplier on the int32
 * accumulator with LiteRT's two roundings; at or below NN_TFL_F64_FLAG, its double-
 * precision rule (FULLY_CONNECTED) with the double multiplier packed in (mult, shift); and
 * for averages the division of the raw sum with ties away from zero.  Every kernel that calls nn_requantize / nn_requantize_avg follows the rule
 * its parameters carry.
 */
#ifndef NN_REQUANT_H
#define NN_REQUANT_H

#include <stdint.h>

/* floor(v / 2**s); right-shifting a negative value is implementation-defined in C99. */
static inline int64_t nn_floor_shift(int64_t v, int32_t s)
{
    return v >= 0 ? v >> s : -((-(v + 1)) >> s) - 1;
}

/* Round q + frac up when frac > 1/2, or frac == 1/2 and q is odd; `r` is frac * 2**s,
 * `exact` says whether frac == r / 2**s exactly (false: a little more). */
static inline int64_t nn_round_even(int64_t q, int64_t r, int32_t s, int exact)
{
    const int64_t half = (int64_t)1 << (s - 1);
    return q + (r > half || (r == half && (!exact || (q & 1))));
}

static inline int64_t nn_rshift_round(int64_t v, int32_t shift)
{
    const int64_t q = nn_floor_shift(v, shift);
    return nn_round_even(q, v - q * ((int64_t)1 << shift), shift, 1);
}

/* v / (count * 2**shift), ties to even, count >= 1: floor-divide by count first (the
 * remainder only matters at an exact half), then round the shift. */
static inline int64_t nn_div_round(int64_t v, int32_t count, int32_t shift)
{
    int64_t q = v / count, rem = v % count, big;
    if (rem < 0) {
        q -= 1;
        rem += count;
    }
    big = nn_floor_shift(q, shift);
    return nn_round_even(big, q - big * ((int64_t)1 << shift), shift, rem == 0);
}

/* ---- TFLite's rule (site_scons/nnscons/numerics.py, "TFLite's rule") ---- */
#define NN_TFL_SHIFT_BIAS 32
#define NN_TFL_ADD_LEFT_SHIFT 20    /* TFLite's int8 ADD/SUB (ops/add.py) */

/* SaturatingRoundingDoublingHighMul: round(a * b / 2**31), ties toward +inf. */
static inline int32_t nn_tfl_srdhm(int32_t a, int32_t b)
{
    const int64_t ab = (int64_t)a * b;
    const int64_t nudge = ab >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
    if (a == INT32_MIN && b == INT32_MIN)
        return INT32_MAX;
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* RoundingDivideByPOT: x / 2**e, ties away from zero, 0 <= e <= 31. */
static inline int32_t nn_tfl_rdbpot(int32_t x, int32_t e)
{
    const int64_t mask = ((int64_t)1 << e) - 1;
    const int64_t rem = (int64_t)x & mask;
    const int64_t threshold = (mask >> 1) + (x < 0);
    return (int32_t)(nn_floor_shift(x, e) + (rem > threshold));
}

/* MultiplyByQuantizedMultiplier(x, m, e) as LiteRT builds it (two roundings) on the int32
 * accumulator, which wraps as TFLite's does. */
static inline int32_t nn_tfl_mbqm(int64_t acc, int32_t m, int32_t e)
{
    const int32_t left = e > 0 ? e : 0, right = e > 0 ? 0 : -e;
    const int32_t x = (int32_t)(uint32_t)((uint64_t)acc << left);
    return nn_tfl_rdbpot(nn_tfl_srdhm(x, m), right);
}

/* TFLite's double-precision rule (FULLY_CONNECTED): round_half_away(double(acc) * m)
 * with the double m = S * 2**-k packed in (mult, shift) by numerics.tflite_f64_pair
 * (S = mult * 2**22 + low, 53 bits).  Computed in integers, exactly as IEEE doubles do it
 * (no floating point, so no soft-float library on a microcontroller): the product
 * |acc| * S (up to 86 bits, as a 54-bit high part and a 32-bit low word) rounded to 53
 * significant bits with ties to even (the double multiply), then scaled by 2**-k with
 * ties away from zero (std::round).  Returns the magnitude capped at 2**40. */
#define NN_TFL_F64_FLAG (-64)
static inline int64_t nn_tfl_f64_round(int64_t acc, int32_t mult, int32_t shift)
{
    const uint32_t code = (uint32_t)shift + 0x80000000u;
    const int32_t k = (int32_t)(code & 0xFF);
    const uint64_t sig = ((uint64_t)(uint32_t)mult << 22) | (code >> 8);
    const int32_t x = (int32_t)(uint32_t)(uint64_t)acc;
    const uint64_t a = x < 0 ? (uint64_t)0 - (uint64_t)(int64_t)x : (uint64_t)x;
    const uint64_t lo64 = a * (sig & 0xFFFFFFFFu);
    const uint64_t mid = a * (sig >> 32) + (lo64 >> 32);       /* X = mid * 2**32 + low */
    const uint32_t low = (uint32_t)lo64;
    uint64_t q, r = 0, half = 0, mag;
    int32_t bits = 0, d, t;
    if (a == 0)
        return 0;
    for (uint64_t m = mid ? mid : low; m; m >>= 1)
        ++bits;
    bits += mid ? 32 : 0;                                       /* bit length of X */
    d = bits > 53 ? bits - 53 : 0;
    if (d == 0) {
        q = (mid << 32) | low;
    } else if (d <= 32) {
        q = (mid << (32 - d)) | (d == 32 ? 0 : (uint64_t)low >> d);
        r = d == 32 ? low : low & (((uint64_t)1 << d) - 1);
        half = (uint64_t)1 << (d - 1);
    } else {                                                    /* d == 33 */
        q = mid >> 1;
        r = ((mid & 1) << 32) | low;
        half = (uint64_t)1 << 32;
    }
    if (d && (r > half || (r == half && (q & 1))))
        ++q;                                                    /* the double multiply's rounding */
    if (d >= k)
        mag = (uint64_t)1 << 40;                                /* |result| >= 2**52: saturates anyway */
    else if ((t = k - d) > 62)
        mag = 0;
    else
        mag = (q + ((uint64_t)1 << (t - 1))) >> t;              /* ties away from zero */
    if (mag > ((uint64_t)1 << 40))
        mag = (uint64_t)1 << 40;
    return x < 0 ? -(int64_t)mag : (int64_t)mag;
}

/* TFLite's average of a raw sum: total / count, ties away from zero (count >= 1). */
static inline int64_t nn_tfl_average(int64_t total, int32_t count)
{
    return total > 0 ? (total + count / 2) / count : (total - count / 2) / count;
}

static inline int8_t nn_clamp_s8(int64_t v, int32_t lo, int32_t hi)
{
    if (v < lo)
        v = lo;
    if (v > hi)
        v = hi;
    return (int8_t)v;
}

static inline int8_t nn_requantize(int64_t acc, int32_t mult, int32_t shift, int32_t zp,
                                   int32_t lo, int32_t hi)
{
    if (shift <= NN_TFL_F64_FLAG)
        return nn_clamp_s8(nn_tfl_f64_round(acc, mult, shift) + zp, lo, hi);
    if (shift < 0)
        return nn_clamp_s8((int64_t)nn_tfl_mbqm(acc, mult, shift + NN_TFL_SHIFT_BIAS) + zp, lo, hi);
    return nn_clamp_s8(nn_rshift_round(acc * mult, shift) + zp, lo, hi);
}

/* The average of `count` elements summing to acc; count 0 (a window of padding only)
 * gives acc 0.  Under TFLite's rule, mult 0 averages the codes (acc + count * zp: its
 * pooling keeps the input's parameters); TFLite's MEAN has 1 / count in its multiplier. */
static inline int8_t nn_requantize_avg(int64_t acc, int32_t count, int32_t mult, int32_t shift,
                                       int32_t zp, int32_t lo, int32_t hi)
{
    if (count <= 0)
        return nn_clamp_s8(zp, lo, hi);
    if (shift < 0 && mult == 0)     /* TFLite's pooling: the average of the codes */
        return nn_clamp_s8(nn_tfl_average(acc + (int64_t)count * zp, count), lo, hi);
    if (shift < 0)                  /* TFLite's MEAN: 1 / count is in the multiplier */
        return nn_requantize(acc, mult, shift, zp, lo, hi);
    return nn_clamp_s8(nn_div_round(acc * mult, count, shift) + zp, lo, hi);
}

#endif /* NN_REQUANT_H */
