/*
 * emul_xfer.c - transfers that land at their wait: cluster DMA, pi_cl_ram_* and pi_cl_fs_copy.
 * The issue reads the source into a stage and snapshots the destination; the wait fails if either
 * changed in between (a race on the chip), then writes the stage: until its wait (or a
 * pi_cl_dma_flush) the destination keeps its old bytes. See pmsis_emul_internal.h.
 */
#include <stdlib.h>
#include <string.h>

#include "pmsis_emul_internal.h"

#define NN_EMUL_RAM_MAX_INFLIGHT 64 /* pi_cl_ram requests in flight (an emulation limit) */

typedef struct {
    int used;
    int kind;
    const void *key;  /* the command / request struct */
    uint32_t *idp;    /* its id field */
    uint32_t id;
    int issuer;
    const char *api;
    uint8_t *c;       /* contiguous side */
    uint8_t *s;       /* strided side: L2 for the DMA, L3 for RAM */
    uintptr_t c_addr, s_addr;
    uint32_t size, stride, length;
    int to_c;         /* 1: strided side -> contiguous side */
    uint8_t *stage;   /* the source, read at issue */
    uint8_t *snap;    /* the destination at issue */
    int landed;
} xfer_t;

#define NN_EMUL_XFERS (NN_EMUL_DMA_MAX_INFLIGHT + NN_EMUL_RAM_MAX_INFLIGHT)
static xfer_t xfers[NN_EMUL_XFERS];
static uint32_t next_xfer_id = 0x5eed0001u;

/* Bytes spanned by size bytes in lines of length bytes, stride apart. */
static uint64_t extent(uint32_t size, uint32_t stride, uint32_t length)
{
    uint64_t lines = (size + (uint64_t)length - 1) / length;
    return (lines - 1) * stride + (size - (lines - 1) * length);
}

uint32_t nn_emul_xfer_span(const char *api, uint32_t size, uint32_t *stride, uint32_t *length,
                           int is_2d)
{
    uint64_t span;
    if (is_2d) {
        /* lines closer than their length would overlap (one line may have any stride) */
        if (*length == 0 || (size > *length && *stride < *length))
            fail("%s: 2D length %lu must be > 0 and <= stride %lu", api, (unsigned long)*length,
                 (unsigned long)*stride);
    } else {
        *stride = *length = size;
    }
    span = extent(size, *stride, *length);
    if (span > 0xffffffffu)
        fail("%s: the 2D pattern spans %llu bytes", api, (unsigned long long)span);
    return (uint32_t)span;
}

void nn_emul_gather(uint8_t *out, const uint8_t *s, uint32_t size, uint32_t stride,
                    uint32_t length)
{
    while (size) {
        uint32_t n = size < length ? size : length;
        memcpy(out, s, n);
        out += n;
        s += stride;
        size -= n;
    }
}

void nn_emul_scatter(uint8_t *s, const uint8_t *in, uint32_t size, uint32_t stride,
                     uint32_t length)
{
    while (size) {
        uint32_t n = size < length ? size : length;
        memcpy(s, in, n);
        in += n;
        s += stride;
        size -= n;
    }
}

static int differs(const uint8_t *s, const uint8_t *buf, uint32_t size, uint32_t stride,
                   uint32_t length)
{
    while (size) {
        uint32_t n = size < length ? size : length;
        if (memcmp(s, buf, n))
            return 1;
        buf += n;
        s += stride;
        size -= n;
    }
    return 0;
}

uint32_t nn_emul_pending_count(int kind, const char **first_api, int *first_issuer,
                               uint32_t *first_size)
{
    uint32_t n = 0, i;
    for (i = 0; i < NN_EMUL_XFERS; i++) {
        if (xfers[i].used && (kind < 0 || xfers[i].kind == kind)) {
            if (n == 0 && first_api) {
                *first_api = xfers[i].api;
                *first_issuer = xfers[i].issuer;
                *first_size = xfers[i].size;
            }
            n++;
        }
    }
    return n;
}

void nn_emul_xfer_issue(int kind, const char *api, const void *key, uint32_t *idp, uint8_t *c,
                        uintptr_t c_addr, uint8_t *s, uintptr_t s_addr, uint32_t size,
                        uint32_t stride, uint32_t length, int to_c)
{
    xfer_t *x = NULL;
    uint32_t i;
    for (i = 0; i < NN_EMUL_XFERS; i++) {
        if (xfers[i].used && xfers[i].key == key)
            fail("%s: the struct at %p still has a transfer in flight (issued by %s, not yet "
                 "waited); a struct cannot be reused before its wait",
                 api, key, nn_emul_ctx_name(xfers[i].issuer));
        if (!xfers[i].used && !x)
            x = &xfers[i];
    }
    if (kind == NN_EMUL_XFER_RAM &&
        nn_emul_pending_count(NN_EMUL_XFER_RAM, NULL, NULL, NULL) >= NN_EMUL_RAM_MAX_INFLIGHT)
        fail("%s: %d RAM requests already in flight (emulation limit); wait on some first", api,
             NN_EMUL_RAM_MAX_INFLIGHT);
    x->stage = (uint8_t *)malloc(size);
    x->snap = (uint8_t *)malloc(size);
    if (!x->stage || !x->snap)
        fail("%s: out of host memory", api);
    if (to_c) {
        nn_emul_gather(x->stage, s, size, stride, length);
        memcpy(x->snap, c, size);
    } else {
        memcpy(x->stage, c, size);
        nn_emul_gather(x->snap, s, size, stride, length);
    }
    x->used = 1;
    x->kind = kind;
    x->key = key;
    x->idp = idp;
    x->id = next_xfer_id++;
    *idp = x->id;
    x->issuer = nn_emul_ctx();
    x->api = api;
    x->c = c;
    x->s = s;
    x->c_addr = c_addr;
    x->s_addr = s_addr;
    x->size = size;
    x->stride = stride;
    x->length = length;
    x->to_c = to_c;
    x->landed = 0;
}

static void xfer_land(xfer_t *x)
{
    int dma = x->kind == NN_EMUL_XFER_DMA;
    const char *side = dma ? (x->to_c ? "L2" : "L1") : (x->to_c ? "L3" : "L2");
    const char *dside = dma ? (x->to_c ? "L1" : "L2") : (x->to_c ? "L2" : "L3");
    uintptr_t src = x->to_c ? x->s_addr : x->c_addr, dst = x->to_c ? x->c_addr : x->s_addr;
    int src_changed, dst_changed;
    if (x->landed)
        return;
    if (x->to_c) {
        src_changed = differs(x->s, x->stage, x->size, x->stride, x->length);
        dst_changed = memcmp(x->c, x->snap, x->size) != 0;
    } else {
        src_changed = memcmp(x->c, x->stage, x->size) != 0;
        dst_changed = differs(x->s, x->snap, x->size, x->stride, x->length);
    }
    if (src_changed)
        fail("%s of %lu bytes issued by %s: its source (%s 0x%08lx) changed between the issue and "
             "the wait (written by a core or by another transfer): a race",
             x->api, (unsigned long)x->size, nn_emul_ctx_name(x->issuer), side,
             (unsigned long)src);
    if (dst_changed)
        fail("%s of %lu bytes issued by %s: its destination (%s 0x%08lx) was written between the "
             "issue and the wait (by a core or by another transfer): a race",
             x->api, (unsigned long)x->size, nn_emul_ctx_name(x->issuer), dside,
             (unsigned long)dst);
    if (x->to_c)
        memcpy(x->c, x->stage, x->size);
    else
        nn_emul_scatter(x->s, x->stage, x->size, x->stride, x->length);
    x->landed = 1;
}

void nn_emul_xfer_wait(int kind, const char *api, const void *key)
{
    xfer_t *x = NULL;
    uint32_t i;
    for (i = 0; i < NN_EMUL_XFERS; i++)
        if (xfers[i].used && xfers[i].key == key)
            x = &xfers[i];
    if (!x)
        fail("%s(%p) from %s: no transfer is in flight on this struct (never issued, or already "
             "waited)",
             api, key, nn_emul_ctx_name(nn_emul_ctx()));
    if (x->kind != kind)
        fail("%s(%p): the struct belongs to a %s transfer", api, key, x->api);
    if (*x->idp != x->id)
        fail("%s(%p): the struct was modified after %s issued it", api, key, x->api);
    xfer_land(x);
    nn_emul_count_transfer(kind, x->size);
    free(x->stage);
    free(x->snap);
    memset(x, 0, sizeof *x);
}

void nn_emul_xfer_land_all(int kind)
{
    uint32_t i;
    for (i = 0; i < NN_EMUL_XFERS; i++)
        if (xfers[i].used && xfers[i].kind == kind)
            xfer_land(&xfers[i]);
}
