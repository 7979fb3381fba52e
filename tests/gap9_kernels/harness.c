/* Batch driver for tests/test_gap9_kernels.py: runs many CHW (kernels/common) and HWC
 * (kernels/gap9) kernel calls in one process.
 *
 *     harness CALLS OUT
 *
 * CALLS is a sequence of records of native int32 words and bytes:
 *     op, out_bytes, fill, n_cfg, cfg[n_cfg], n_arr, { n_bytes, bytes[n_bytes] } * n_arr
 * Each call gets its own output buffer of exactly out_bytes, pre-filled with `fill`
 * (so writes outside a call's range show), and every operand its own exact-size
 * allocation (so the sanitizer build catches any out-of-bounds access).  An empty
 * operand is passed as NULL (bias).  The output buffers are appended to OUT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_hwc_kernels.h"
#include "nn_ops.h"

#define MAX_CFG 24
#define MAX_ARR 5

enum { CONV_CHW = 1, CONV_HWC, MAXPOOL_CHW, AVGPOOL_CHW, MAXPOOL_HWC, AVGPOOL_HWC,
       GAP_CHW, GAP_HWC, REQUANT_CHW, REQUANT_HWC, XP_CONV_HWC, XP_CONV_FAST,
       LINEAR, XP_LINEAR, XP_CONV_IM2COL, XP_MAXPOOL, ADD, XP_ADD, XP_CONV_CHANS,
       XP_CONV_CORES, XP_CONV_SPLIT, XP_DWCONV, XP_GAP, LUT, XP_LUT, XP_AVGPOOL, XP_REQUANT,
       XP_ADD_SHORT };

static void die(const char *what)
{
    fprintf(stderr, "harness: %s\n", what);
    exit(2);
}

static int32_t word(FILE *f)
{
    int32_t v;
    if (fread(&v, sizeof v, 1, f) != 1)
        die("truncated record");
    return v;
}

static void *bytes(FILE *f, int32_t n)
{
    void *p;
    if (n < 0)
        die("negative size");
    if (n == 0)
        return NULL;
    p = malloc((size_t)n);
    if (!p || fread(p, 1, (size_t)n, f) != (size_t)n)
        die("truncated operand");
    return p;
}

static void run(int32_t op, const int32_t *k, void *const *a, int8_t *out)
{
    switch (op) {
    case CONV_CHW: {
        const nn_conv2d_cfg_t c = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9],
                                   k[10], k[11], k[12], k[13], k[14], k[15], k[16], k[17], k[18]};
        nn_conv2d_s8(&c, a[0], a[1], a[2], a[3], a[4], out);
        break;
    }
    case CONV_HWC: {
        const nn_hwc_conv_cfg_t c = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9],
                                     k[10], k[11], k[12], k[13], k[14], k[15], k[16], k[17], k[18]};
        nn_hwc_conv2d_s8(&c, a[0], a[1], a[2], a[3], a[4], out, k[19], k[20]);
        break;
    }
    case XP_CONV_HWC:
    case XP_CONV_FAST: {
        const nn_hwc_conv_cfg_t c = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9],
                                     k[10], k[11], k[12], k[13], k[14], k[15], k[16], k[17], k[18]};
        if (op == XP_CONV_FAST)     /* one byte: does this call take the Xpulp path? */
            out[0] = (int8_t)nn_xp_conv2d_fast(&c);
        else
            nn_xp_conv2d_s8(&c, a[0], a[1], a[2], a[3], a[4], out, k[19], k[20]);
        break;
    }
    case XP_CONV_CHANS: {       /* k[19], k[20]: channel range; scratch (and padded weights) on im2col convs */
        const nn_hwc_conv_cfg_t c = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9],
                                     k[10], k[11], k[12], k[13], k[14], k[15], k[16], k[17], k[18]};
        int8_t *scratch = nn_xp_conv2d_im2col(&c) ? malloc((size_t)(2 * ((c.k_h * c.k_w * c.in_c + 3) & ~3))) : NULL;
        nn_xp_conv2d_chans_s8(&c, a[0], a[1], a[2], a[3], a[4], out, k[19], k[20], scratch);
        free(scratch);
        break;
    }
    case XP_CONV_CORES: {       /* k[19] cores each run their share (k[20]: flip the input first
                                 * when nn_xp_conv2d_preflip says so), as a layer's fork does */
        const nn_hwc_conv_cfg_t c = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9],
                                     k[10], k[11], k[12], k[13], k[14], k[15], k[16], k[17], k[18]};
        const int flip = k[20] && nn_xp_conv2d_preflip(&c), n_in = c.in_h * c.in_w * c.in_c;
        const size_t kw = (size_t)((c.k_h * c.k_w * c.in_c + 3) & ~3);
        int8_t *in = malloc((size_t)n_in + 1), *scratch = malloc(2 * kw * (size_t)k[19]);
        int core;
        if (!in || !scratch)
            die("out of memory");
        memcpy(in, a[0], (size_t)n_in);
        if (flip)
            for (core = 0; core < k[19]; ++core) {
                const int per = (n_in / 4 + k[19] - 1) / k[19], b = core * per < n_in / 4 ? core * per : n_in / 4;
                nn_xp_conv2d_flip(in, b, b + per < n_in / 4 ? b + per : n_in / 4);
            }
        for (core = 0; core < k[19]; ++core)
            nn_xp_conv2d_core_s8(&c, in, a[1], a[2], a[3], a[4], out, core, k[19],
                                 nn_xp_conv2d_im2col(&c) ? scratch + 2 * kw * (size_t)core : NULL, flip);
        free(in);
        free(scratch);
        break;
    }
    case XP_CONV_SPLIT: {       /* k[0] pixels, k[1] channels, k[2] cores, k[3] field words: per core
                                 * pb pe cb ce tb te (int32) */
        int core, r[6];
        for (core = 0; core < k[2]; ++core) {
            nn_xp_conv2d_split(k[0], k[1], k[3], core, k[2], &r[0], &r[1], &r[2], &r[3], &r[4], &r[5]);
            memcpy(out + 24 * core, r, sizeof r);
        }
        break;
    }
    case XP_CONV_IM2COL: {      /* scratch of exactly the documented size */
        const nn_hwc_conv_cfg_t c = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9],
                                     k[10], k[11], k[12], k[13], k[14], k[15], k[16], k[17], k[18]};
        int8_t *scratch = malloc((size_t)(2 * ((c.k_h * c.k_w * c.in_c + 3) & ~3)));
        if (!scratch || !nn_xp_conv2d_im2col(&c))
            die("im2col call on a conv it does not take");
        nn_xp_conv2d_im2col_s8(&c, a[0], a[1], a[2], a[3], a[4], out, k[19], k[20], scratch);
        free(scratch);
        break;
    }
    case XP_DWCONV: {   /* k[19], k[20]: work items c * out_h + y; scratch of exactly the documented size */
        const nn_hwc_conv_cfg_t c = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9],
                                     k[10], k[11], k[12], k[13], k[14], k[15], k[16], k[17], k[18]};
        int8_t *scratch;
        if (!nn_xp_dwconv_fast(&c))
            die("depthwise call on a conv it does not take");
        scratch = malloc((size_t)nn_xp_dwconv_scratch(&c));
        nn_xp_dwconv_s8(&c, a[0], a[1], a[2], a[3], a[4], out, k[19], k[20], scratch);
        free(scratch);
        break;
    }
    case LINEAR:
    case XP_LINEAR: {   /* k[6]: out[0] = nn_xp_linear_fast(cfg) instead of running */
        const nn_linear_cfg_t c = {k[0], k[1], k[2], k[3], k[4], k[5]};
        if (k[6])
            out[0] = (int8_t)nn_xp_linear_fast(&c);
        else
            (op == LINEAR ? nn_linear_s8 : nn_xp_linear_s8)(&c, a[0], a[1], a[2], a[3], a[4], out);
        break;
    }
    case ADD:
    case XP_ADD:
        (op == ADD ? nn_add_s8 : nn_xp_add_s8)(k[0], a[0], k[1], a[1], k[2], a[2], a[3], k[3], k[4], k[5], out);
        break;
    case XP_ADD_SHORT:  /* k: n, m0', m1', c, s', act_min, act_max (add_short.py's rule) */
        nn_xp_add_short_s8(k[0], a[0], a[1], k[1], k[2], k[3], k[4], k[5], k[6], out);
        break;
    case MAXPOOL_CHW:
    case AVGPOOL_CHW: {
        const nn_pool_cfg_t c = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9],
                                 k[10], k[11], k[12], k[13], k[14], k[15], k[16], k[17]};
        (op == MAXPOOL_CHW ? nn_maxpool_s8 : nn_avgpool_s8)(&c, a[0], a[1], a[2], out);
        break;
    }
    case XP_MAXPOOL:
    case XP_AVGPOOL:
    case MAXPOOL_HWC:
    case AVGPOOL_HWC: {
        const nn_hwc_pool_cfg_t c = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9],
                                     k[10], k[11], k[12], k[13], k[14], k[15], k[16], k[17]};
        (op == XP_MAXPOOL ? nn_xp_maxpool_s8 : op == XP_AVGPOOL ? nn_xp_avgpool_s8
         : op == MAXPOOL_HWC ? nn_hwc_maxpool_s8 : nn_hwc_avgpool_s8)(&c, a[0], a[1], a[2], out, k[18], k[19]);
        break;
    }
    case GAP_CHW:
        nn_global_avgpool_s8(k[0], k[1], k[2], k[3], k[4], k[5], a[0], a[1], a[2], out);
        break;
    case GAP_HWC:
        nn_hwc_global_avgpool_s8(k[0], k[1], k[2], k[3], k[4], k[5], a[0], a[1], a[2], out,
                                 k[6], k[7]);
        break;
    case XP_GAP:
        nn_xp_global_avgpool_s8(k[0], k[1], k[2], k[3], k[4], k[5], a[0], a[1], a[2], out, k[6], k[7]);
        break;
    case LUT:           /* k[1], k[2]: offsets of the first byte in the in / out buffers */
    case XP_LUT:
        if (op == LUT)
            nn_lut_s8(1, 1, k[0], (const int8_t *)a[0] + k[1], a[1], 0, out + k[2]);
        else
            nn_xp_lut_s8(k[0], (const int8_t *)a[0] + k[1], a[1], out + k[2]);
        break;
    case REQUANT_CHW:
        nn_requant_s8(k[0], a[0], k[1], k[2], k[3], k[4], k[5], k[6], out);
        break;
    case REQUANT_HWC:   /* k[10], k[11]: offsets of the first pixel in the in/out buffers */
    case XP_REQUANT:
        (op == REQUANT_HWC ? nn_hwc_requant_s8 : nn_xp_requant_s8)(
            k[0], k[1], (const int8_t *)a[0] + k[10], k[2], k[3], k[4], k[5], k[6], k[7], k[8], out + k[11], k[9]);
        break;
    default:
        die("unknown op");
    }
}

int main(int argc, char **argv)
{
    FILE *f, *g;
    int32_t op;
    if (argc != 3)
        die("usage: harness CALLS OUT");
    f = fopen(argv[1], "rb");
    g = fopen(argv[2], "wb");
    if (!f || !g)
        die("cannot open files");
    while (fread(&op, sizeof op, 1, f) == 1) {
        const int32_t out_bytes = word(f), fill = word(f), n_cfg = word(f);
        int32_t cfg[MAX_CFG] = {0}, n_arr;
        void *arr[MAX_ARR] = {0};
        int8_t *out;
        int i;
        if (n_cfg < 0 || n_cfg > MAX_CFG || out_bytes < 0)
            die("bad record header");
        for (i = 0; i < n_cfg; ++i)
            cfg[i] = word(f);
        n_arr = word(f);
        if (n_arr < 0 || n_arr > MAX_ARR)
            die("bad operand count");
        for (i = 0; i < n_arr; ++i)
            arr[i] = bytes(f, word(f));
        out = malloc(out_bytes > 0 ? (size_t)out_bytes : 1);
        if (!out)
            die("out of memory");
        memset(out, fill, (size_t)out_bytes);
        run(op, cfg, arr, out);
        if (fwrite(out, 1, (size_t)out_bytes, g) != (size_t)out_bytes)
            die("write failed");
        free(out);
        for (i = 0; i < n_arr; ++i)
            free(arr[i]);
    }
    return fclose(g) != 0 || fclose(f) != 0;
}
