/* Window clipping shared by the conv and pool kernels (internal header). */
#ifndef NN_WINDOW_H
#define NN_WINDOW_H

/* Indices k in [*lo, *hi), 0 <= k < n, for which base + k * step lies in [0, limit).
 * step >= 1.  Used both for kernel taps of one output position and for the output
 * positions one kernel tap can serve, so inner loops never test bounds. */
static inline void nn_valid_range(int base, int step, int n, int limit, int *lo, int *hi)
{
    int l = base >= 0 ? 0 : (-base + step - 1) / step;
    int h = limit - base <= 0 ? 0 : (limit - base + step - 1) / step;
    if (h > n)
        h = n;
    if (l > h)
        l = h;
    *lo = l;
    *hi = h;
}

#endif /* NN_WINDOW_H */
