/* nn_aie_emul.h: one layer's DMAs and kernel calls on the CPU. */
#include <string.h>
#include "nn_aie_emul.h"

#define MAX_DIMS 8

/* Walks the pattern at `base` in runs of contiguous bytes (the innermost dimension when its
 * stride is 1): gather copies them into stream[k...], scatter from stream[k...] (and counts
 * the writes in hits).  Returns the number of bytes visited. */
static long walk(const nn_aie_pattern_t *p, long base, uint8_t *mem, const uint8_t *cmem, uint8_t *stream,
                 const uint8_t *cstream, uint8_t *hits)
{
    long idx[MAX_DIMS] = {0}, k = 0;
    const int inner = p->n > 0 && p->dims[p->n - 1][1] == 1;
    const int outer = inner ? p->n - 1 : p->n;
    const long run = inner ? p->dims[p->n - 1][0] : 1;
    for (;;) {
        long off = base;
        int d;
        for (d = 0; d < outer; ++d)
            off += idx[d] * p->dims[d][1];
        if (cstream) {                                  /* scatter */
            memcpy(mem + off, cstream + k, (size_t)run);
            if (hits)
                for (long j = 0; j < run; ++j)
                    hits[off + j] = (uint8_t)(hits[off + j] < 2 ? hits[off + j] + 1 : 2);
        } else {                                        /* gather */
            memcpy(stream + k, cmem + off, (size_t)run);
        }
        k += run;
        for (d = outer - 1; d >= 0 && ++idx[d] == p->dims[d][0]; --d)
            idx[d] = 0;
        if (d < 0)
            return k;
    }
}

static long gather(const nn_aie_pattern_t *p, long base, const uint8_t *src, uint8_t *stream)
{
    return walk(p, base, NULL, src, stream, NULL, NULL);
}

static long scatter(const nn_aie_pattern_t *p, long base, uint8_t *dst, const uint8_t *stream, uint8_t *hits)
{
    return walk(p, base, dst, NULL, NULL, stream, hits);
}

static long pattern_bytes(const nn_aie_pattern_t *p)
{
    long n = 1;
    for (int d = 0; d < p->n; ++d)
        n *= p->dims[d][0];
    return n;
}

/* the bytes of all the tasks' repetitions (all: 1), or of the largest repetition (all: 0) */
static long task_bytes(const nn_aie_task_t *t, int n, int all)
{
    long total = 0;
    for (int i = 0; i < n; ++i) {
        long b = pattern_bytes(&t[i].pattern);
        if (all)
            total += b * t[i].repeat;
        else if (b > total)
            total = b;
    }
    return total;
}

/* scratch: act stream of one iteration | memtile output (the calls' im2col) | L1 acts |
 * weights stream | one core's outputs | joined | out stream | hits */
typedef struct {
    long act_stream, a_l1, w_stream, o_core, joined, o_stream;
} sizes_t;

static sizes_t sizes(const nn_aie_layer_t *l)
{
    sizes_t s = {0, 0, 0, 0, 0, 0};
    for (int c = 0; c < l->n_columns; ++c) {
        long w = task_bytes(l->columns[c].w, l->columns[c].n_w, 1);
        long a = task_bytes(l->columns[c].act, l->columns[c].n_act, 0);
        s.w_stream = w > s.w_stream ? w : s.w_stream;
        s.act_stream = a > s.act_stream ? a : s.act_stream;
    }
    s.a_l1 = (long)l->calls * l->a_bytes;
    s.o_core = (long)l->calls * l->o_bytes;
    s.joined = (long)l->calls * l->cores * l->o_bytes;
    s.o_stream = (long)l->calls * pattern_bytes(&l->out_mm2s);
    return s;
}

long nn_aie_scratch_bytes(const nn_aie_layer_t *l)
{
    const sizes_t s = sizes(l);
    return s.act_stream + 2 * s.a_l1 + s.w_stream + s.o_core + s.joined + s.o_stream + l->out_bytes;
}

/* the (task, repetition) pairs of a task list in issue order: the i-th one's base */
static const nn_aie_task_t *nth_rep(const nn_aie_task_t *t, int n, int i, long *base)
{
    for (int k = 0; k < n; ++k) {
        if (i < t[k].repeat) {
            *base = t[k].offset + i * t[k].repeat_stride;
            return &t[k];
        }
        i -= (int)t[k].repeat;
    }
    return NULL;
}

int nn_aie_emul_layer(const nn_aie_layer_t *l, const uint8_t *ddr_in, const uint8_t *ddr_w, uint8_t *ddr_out,
                      uint8_t *scratch)
{
    const sizes_t s = sizes(l);
    uint8_t *act = scratch, *l2 = act + s.act_stream, *a_l1 = l2 + s.a_l1, *w = a_l1 + s.a_l1;
    uint8_t *o_core = w + s.w_stream, *joined = o_core + s.o_core, *o_stream = joined + s.joined;
    uint8_t *hits = o_stream + s.o_stream;
    const long join = pattern_bytes(&l->out_mm2s);
    memset(hits, 0, (size_t)l->out_bytes);
    for (int c = 0; c < l->n_columns; ++c) {
        const nn_aie_column_t *col = &l->columns[c];
        long nw = 0;
        for (int t = 0; t < col->n_w; ++t)                 /* the column's weights stream */
            for (long r = 0; r < col->w[t].repeat; ++r)
                nw += gather(&col->w[t].pattern, col->w[t].offset + r * col->w[t].repeat_stride, ddr_w, w + nw);
        for (int i = 0; i < l->n_iter; ++i) {
            long base, n, bands, k = 0;
            const nn_aie_task_t *t = nth_rep(col->act, col->n_act, i, &base);
            if (!t)
                return -1;
            n = gather(&t->pattern, base, ddr_in, act);        /* shim MM2S -> memtile (linear) */
            bands = n / l->band;
            for (long b = 0; b < bands; ++b)                    /* memtile MM2S: the calls' im2col */
                k += gather(&l->act_mm2s, 0, act + b * l->band, l2 + k);
            for (int call = 0; call < l->calls; ++call)       /* core S2MM */
                scatter(&l->act_s2mm, 0, a_l1 + (long)call * l->a_bytes, l2 + (long)call * l->a_bytes, NULL);
            for (int r = 0; r < l->cores; ++r) {
                const uint8_t *wr = w + (long)i * l->cores * l->gb + l->w_offsets[r];
                l->calls_fn(a_l1, l->calls, wr, o_core);
                for (int call = 0; call < l->calls; ++call)
                    memcpy(joined + ((long)call * l->cores) * l->o_bytes + l->out_offsets[r],
                           o_core + (long)call * l->o_bytes, (size_t)l->o_bytes);
            }
            for (int call = 0; call < l->calls; ++call)       /* memtile MM2S (join) */
                gather(&l->out_mm2s, 0, joined + (long)call * l->cores * l->o_bytes, o_stream + call * join);
            t = nth_rep(col->out, col->n_out, i, &base);      /* shim S2MM */
            if (!t)
                return -1;
            scatter(&t->pattern, base, ddr_out, o_stream, hits);
        }
    }
    for (long j = 0; j < l->out_bytes; ++j)
        if (hits[j] != 1)
            return -1;
    return 0;
}
