/* A C emulator of the K210 KPU behind kpu_hal.h (platform=emul natively, platform=qemu on
 * rv64). It decodes the 12 layer-argument words field by field (kpu.h's layout), reads the
 * input map from its AI RAM through the layout fields, the weights, batch-norm and activation
 * tables through the 32-bit addresses kpu_hal_map() handed out, and writes the pooled output
 * back through the write-back fields (input and output maps may not share a line). The arithmetic is the one documented in
 * site_scons/nnscons/targets/k210/kpu.py (the NumPy model, which makes the goldens), operation
 * for operation, in 64-bit two's complement; tests/test_k210_emul.py compares the two on
 * randomized layers. A misuse (address outside the AI RAM or any mapped region, an invalid
 * field) prints `KPU-EMUL ERROR ...` and exits with status 3.
 *
 * The emulator is the device: its AI RAM and its table of mapped regions are static here as
 * they are hardware on a K210 (the libraries' static-state check skips this object).  One
 * layer at a time, from one thread at a time, as on the KPU; kpu_hal_map() of a region
 * mapped before returns its address again (every context of a model maps the same weights).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kpu_hal.h"

static uint8_t ai_ram[KPU_AI_RAM_SIZE] __attribute__((aligned(64)));

uint8_t *kpu_hal_ai_ram(void)
{
    return ai_ram;
}

/* ---- SRAM bus addresses: regions handed out from 0x80000000, 256-byte aligned */

#define MAX_REGIONS 1024
static struct {
    const uint8_t *p;
    uint32_t addr;
    size_t size;
} regions[MAX_REGIONS];
static int n_regions;
static uint32_t next_addr = 0x80000000u;

static void fail(const char *what, unsigned long a, unsigned long b)
{
    printf("KPU-EMUL ERROR: %s (%lu, %lu)\n", what, a, b);
    exit(3);
}

uint32_t kpu_hal_map(const void *p, size_t size)
{
    for (int i = 0; i < n_regions; ++i)      /* mapped before (another context of the model) */
        if (regions[i].p == p && regions[i].size == size)
            return regions[i].addr;
    if (n_regions == MAX_REGIONS)
        fail("too many mapped regions", (unsigned long)n_regions, 0);
    uint32_t addr = next_addr;
    if ((uintptr_t)p % 256 != 0)
        fail("mapped region not 256-byte aligned", (unsigned long)((uintptr_t)p % 256), (unsigned long)size);
    regions[n_regions].p = p;
    regions[n_regions].addr = addr;
    regions[n_regions].size = size;
    ++n_regions;
    next_addr = addr + (uint32_t)((size + 255) / 256 * 256) + 256;
    return addr;
}

static const uint8_t *sram(uint64_t addr, size_t size)
{
    for (int i = 0; i < n_regions; ++i)
        if (addr >= regions[i].addr && addr + size <= regions[i].addr + regions[i].size)
            return regions[i].p + (addr - regions[i].addr);
    fail("SRAM access outside every mapped region: address, bytes", (unsigned long)addr, (unsigned long)size);
    return NULL;
}

/* ---- fields */

static uint64_t field(const uint64_t *w, int word, int lo, int width)
{
    return (w[word] >> lo) & ((width == 64 ? 0 : ((uint64_t)1 << width)) - 1);
}

static int64_t sfield(const uint64_t *w, int word, int lo, int width)
{
    uint64_t v = field(w, word, lo, width);
    if (v >> (width - 1))
        return (int64_t)v - ((int64_t)1 << width);
    return (int64_t)v;
}

/* 64-bit wrapping arithmetic, as NumPy's int64 */
static int64_t wmul(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a * (uint64_t)b);
}

static int64_t wadd(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* arithmetic shift right (floor); s in 0..63 */
static int64_t sra(int64_t v, int s)
{
    return v >= 0 ? v >> s : -(int64_t)((~(uint64_t)v) >> s) - 1;
}

static int64_t carry_shift(int64_t v, int64_t s)
{
    if (s > 63)
        s = 63;
    if (s <= 0)
        return v;
    return sra(wadd(sra(v, (int)s - 1), 1), 1);
}

typedef struct {
    uint32_t line;
    int channel_switch, row_switch, group;
} map_layout_t;

static size_t map_offset(const map_layout_t *l, int c, int y, int x)
{
    return (size_t)l->line * KPU_LINE + (size_t)(c / l->group) * l->channel_switch * KPU_LINE
           + (size_t)(c % l->group) * (KPU_LINE / l->group) + (size_t)y * l->row_switch * KPU_LINE + (size_t)x;
}

static void check_map(const map_layout_t *l, int c, int h, int w, const char *what)
{
    if (l->group != 1 && l->group != 2 && l->group != 4)
        fail(what, (unsigned long)l->group, 0);
    if (w > (int)(l->row_switch * KPU_LINE / l->group))
        fail("row wider than its layout", (unsigned long)w, (unsigned long)l->row_switch);
    size_t last = map_offset(l, c - 1, h - 1, w - 1);
    if (last >= KPU_AI_RAM_SIZE)
        fail("map beyond the AI RAM: last byte, line", (unsigned long)last, (unsigned long)l->line);
}

static const int pool_filter[10] = {1, 2, 2, 4, 4, 2, 2, 4, 2, 2};
static const int pool_stride[10] = {1, 2, 2, 4, 4, 2, 2, 4, 1, 1};
/* 0 pick, 1 max, 2 mean */
static const int pool_kind[10] = {0, 1, 2, 1, 2, 0, 0, 0, 2, 1};
static const int pool_dx[10] = {0, 0, 0, 0, 0, 0, 1, 0, 0, 0};

void kpu_hal_run(const uint64_t words[KPU_NUM_WORDS])
{
    const int depthwise = (int)field(words, 0, 3, 1);
    map_layout_t in = {(uint32_t)field(words, 1, 0, 15), (int)field(words, 7, 0, 15), (int)field(words, 7, 16, 4),
                       (int)field(words, 7, 28, 3)};
    map_layout_t out = {(uint32_t)field(words, 1, 32, 15), (int)field(words, 8, 0, 15),
                        (int)field(words, 8, 16, 4), (int)field(words, 8, 20, 3)};
    const int ic = (int)field(words, 2, 0, 10) + 1, oc = (int)field(words, 2, 32, 10) + 1;
    const int iw = (int)field(words, 3, 0, 10) + 1, ih = (int)field(words, 3, 10, 9) + 1;
    const int ow = (int)field(words, 3, 32, 10) + 1, oh = (int)field(words, 3, 42, 9) + 1;
    const int kernel_type = (int)field(words, 4, 0, 3);
    const int pool_type = (int)field(words, 4, 4, 4);
    const uint8_t pad_value = (uint8_t)field(words, 4, 24, 8);
    const uint32_t bn_addr = (uint32_t)field(words, 4, 32, 32);
    const uint32_t w_addr = (uint32_t)field(words, 5, 32, 32);
    const uint32_t act_addr = (uint32_t)field(words, 7, 32, 32);
    const int shr_w = (int)field(words, 9, 0, 4), shr_x = (int)field(words, 9, 4, 4);
    const int64_t arg_w = sfield(words, 9, 8, 24), arg_x = sfield(words, 9, 32, 24);
    const int64_t arg_add = sfield(words, 10, 0, 40);

    if (kernel_type > 1)
        fail("kernel_type", (unsigned long)kernel_type, 0);
    if (pool_type > 9)
        fail("pool_type", (unsigned long)pool_type, 0);
    if (depthwise && ic != oc)
        fail("depthwise layer with i_ch_num != o_ch_num", (unsigned long)ic, (unsigned long)oc);
    const int k = kernel_type == 1 ? 3 : 1, pad = k / 2;
    const int ps = pool_stride[pool_type], pf = pool_filter[pool_type];
    if (ih / ps != oh || iw / ps != ow)
        fail("o_row_wid/o_col_high disagree with the pool", (unsigned long)ow, (unsigned long)oh);
    check_map(&in, ic, ih, iw, "coef_group");
    check_map(&out, oc, oh, ow, "wb_group");
    {   /* the KPU streams its input while it writes: the two maps must not share a line */
        const size_t in_lo = map_offset(&in, 0, 0, 0) / KPU_LINE, in_hi = map_offset(&in, ic - 1, ih - 1, iw - 1) / KPU_LINE;
        const size_t out_lo = map_offset(&out, 0, 0, 0) / KPU_LINE, out_hi = map_offset(&out, oc - 1, oh - 1, ow - 1) / KPU_LINE;
        if (in_lo <= out_hi && out_lo <= in_hi)
            fail("input and output maps overlap in the AI RAM: input line, output line", (unsigned long)in_lo,
                 (unsigned long)out_lo);
    }

    const int g_ic = depthwise ? 1 : ic;
    {   /* parameter loads as nncase 1.x emits them (kpu.py:weight_loads): at most 30 KiB of weights
         * per load (a depthwise layer in one), o_ch_num_coef + 1 output channels per load */
        const unsigned long per_load = (unsigned long)field(words, 2, 48, 10) + 1;
        const unsigned long loads = (unsigned long)field(words, 5, 1, 6) + 1;
        const unsigned long para_size = (unsigned long)field(words, 5, 15, 17);
        const unsigned long channel_bytes = (unsigned long)g_ic * k * k;
        if (!depthwise && para_size > 30ul * 1024ul)
            fail("one weight load over 30 KiB: para_size, limit", para_size, 30ul * 1024ul);
        if (para_size != per_load * channel_bytes)
            fail("para_size is not o_ch_num_coef + 1 output channels of weights: para_size, channels",
                 para_size, per_load);
        if (loads != ((unsigned long)oc + per_load - 1) / per_load)
            fail("load_time disagrees with o_ch_num / o_ch_num_coef: loads, channels per load", loads, per_load);
    }
    const uint8_t *weights = sram(w_addr, (size_t)oc * g_ic * k * k);
    const uint8_t *bn = sram(bn_addr, (size_t)oc * 8);
    const uint8_t *act = sram(act_addr, 18 * 8);

    /* activation table */
    int64_t xs[16], ymul[16], ysh[16], ybias[16];
    for (int i = 0; i < 16; ++i) {
        uint64_t r = 0;
        for (int b = 7; b >= 0; --b)
            r = (r << 8) | act[8 * i + b];
        uint64_t x = (r >> 24) & (((uint64_t)1 << 36) - 1);
        xs[i] = (x >> 35) ? (int64_t)x - ((int64_t)1 << 36) : (int64_t)x;
        ymul[i] = (int64_t)((r >> 8) & 0xFFFF);
        ysh[i] = (int64_t)(r & 0xFF);
        ybias[i] = act[8 * 16 + i];
    }

    /* the input, padded with pad_value */
    const int pw = iw + 2 * pad, ph = ih + 2 * pad;
    uint8_t *xp = malloc((size_t)ic * ph * pw);
    int32_t *value = malloc(sizeof(int32_t) * (size_t)ih * iw);
    int64_t *sum_x = malloc(sizeof(int64_t) * (size_t)ih * iw);
    uint8_t *y = malloc((size_t)ih * iw);
    if (!xp || !value || !sum_x || !y)
        fail("out of memory", 0, 0);
    memset(xp, pad_value, (size_t)ic * ph * pw);
    for (int c = 0; c < ic; ++c)
        for (int r = 0; r < ih; ++r)
            memcpy(xp + ((size_t)c * ph + r + pad) * pw + pad, ai_ram + map_offset(&in, c, r, 0), (size_t)iw);

    if (!depthwise) {   /* sum(x) over every channel and tap, per output pixel */
        memset(sum_x, 0, sizeof(int64_t) * (size_t)ih * iw);
        for (int c = 0; c < ic; ++c)
            for (int ky = 0; ky < k; ++ky)
                for (int r = 0; r < ih; ++r) {
                    const uint8_t *row = xp + ((size_t)c * ph + r + ky) * pw;
                    int64_t *s = sum_x + (size_t)r * iw;
                    for (int kx = 0; kx < k; ++kx)
                        for (int x = 0; x < iw; ++x)
                            s[x] += row[x + kx];
                }
    }

    for (int o = 0; o < oc; ++o) {
        const uint8_t *w_o = weights + (size_t)o * g_ic * k * k;
        int64_t sum_w = 0;
        for (int i = 0; i < g_ic * k * k; ++i)
            sum_w += w_o[i];
        memset(value, 0, sizeof(int32_t) * (size_t)ih * iw);
        if (depthwise)
            memset(sum_x, 0, sizeof(int64_t) * (size_t)ih * iw);
        for (int ci = 0; ci < g_ic; ++ci) {
            const int c = depthwise ? o : ci;
            for (int ky = 0; ky < k; ++ky)
                for (int kx = 0; kx < k; ++kx) {
                    const int32_t wv = w_o[(ci * k + ky) * k + kx];
                    for (int r = 0; r < ih; ++r) {
                        const uint8_t *row = xp + ((size_t)c * ph + r + ky) * pw + kx;
                        int32_t *v = value + (size_t)r * iw;
                        for (int x = 0; x < iw; ++x)
                            v[x] += wv * row[x];
                        if (depthwise) {
                            int64_t *s = sum_x + (size_t)r * iw;
                            for (int x = 0; x < iw; ++x)
                                s[x] += row[x];
                        }
                    }
                }
        }
        /* batch norm of this channel */
        uint64_t breg = 0;
        for (int b = 7; b >= 0; --b)
            breg = (breg << 8) | bn[8 * o + b];
        const int64_t norm_mul = (int64_t)(breg & 0xFFFFFF);
        const uint64_t add_raw = (breg >> 24) & 0xFFFFFFFFu;
        const int64_t norm_add = add_raw >> 31 ? (int64_t)add_raw - ((int64_t)1 << 32) : (int64_t)add_raw;
        const int norm_shift = (int)((breg >> 56) & 0xF);
        const int64_t wterm = sra(wmul(arg_w, sum_w), shr_w);
        for (size_t p = 0; p < (size_t)ih * iw; ++p) {
            int64_t acc = wadd(wadd(wadd(value[p], sra(wmul(arg_x, sum_x[p]), shr_x)), wterm), arg_add);
            int64_t v = wadd(sra(wmul(acc, norm_mul), norm_shift), norm_add);
            int seg = 0;
            for (int i = 1; i < 16; ++i)
                if (v > xs[i])
                    seg = i;
            int64_t t = wadd(carry_shift(wmul(wadd(v, -xs[seg]), ymul[seg]), ysh[seg]), ybias[seg]);
            y[p] = (uint8_t)(t < 0 ? 0 : t > 255 ? 255 : t);
        }
        /* pool and write back */
        for (int r = 0; r < oh; ++r) {
            uint8_t *dst = ai_ram + map_offset(&out, o, r, 0);
            for (int x = 0; x < ow; ++x) {
                const int r0 = r * ps, x0 = x * ps;
                int res = 0;
                if (pool_kind[pool_type] == 0) {
                    res = y[(size_t)r0 * iw + x0 + pool_dx[pool_type]];
                } else if (pool_kind[pool_type] == 1) {
                    for (int a = 0; a < pf; ++a)
                        for (int b = 0; b < pf; ++b)
                            if (r0 + a < ih && x0 + b < iw && y[(size_t)(r0 + a) * iw + x0 + b] > res)
                                res = y[(size_t)(r0 + a) * iw + x0 + b];
                } else {
                    for (int a = 0; a < pf; ++a)
                        for (int b = 0; b < pf; ++b) {
                            const int rr = r0 + a < ih ? r0 + a : ih - 1;
                            const int xx = x0 + b < iw ? x0 + b : iw - 1;
                            res += y[(size_t)rr * iw + xx];
                        }
                    res /= pf * pf;
                }
                dst[x] = (uint8_t)res;
            }
        }
    }
    free(xp);
    free(value);
    free(sum_x);
    free(y);
}
