/*
 * emul_arena.c - the arena allocator behind L1, L2 and L3: first-fit blocks in a sorted table,
 * fresh/freed/closed memory poisoned (and ASan-poisoned under AddressSanitizer), frees checked
 * against their allocation, ranges checked against the live blocks. See pmsis_emul_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmsis_emul_internal.h"

#define POISON_FRESH 0xA5 /* newly allocated memory is garbage, not zeros */
#define POISON_FREED 0xDD
#define POISON_OFF 0xDE   /* L1 after pi_cluster_close, L3 after pi_ram_close */

/* Under AddressSanitizer the arenas' free space is poisoned and each block is addressable up to
 * its requested size, so out-of-block accesses by kernels are reported. ASan tracks 8-byte
 * granules, hence 8-byte placement there (accounting stays at 4-byte granularity). */
#if defined(__SANITIZE_ADDRESS__)
#define NN_EMUL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NN_EMUL_ASAN 1
#endif
#endif
#ifdef NN_EMUL_ASAN
#include <sanitizer/asan_interface.h>
#define GRAIN 8u
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define GRAIN 4u
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

static uint32_t round_up(uint32_t n, uint32_t g)
{
    return n > 0xffffffffu - (g - 1) ? 0xffffffffu & ~(g - 1) : (n + g - 1) & ~(g - 1);
}

uint32_t nn_emul_round4(uint32_t n)
{
    return round_up(n, 4);
}

/* First fit; NN_EMUL_NOFIT if no gap is large enough. *largest gets the largest free gap. */
static uint32_t arena_fit(const nn_emul_arena_t *a, uint32_t size, uint32_t align,
                          uint32_t *largest)
{
    uint32_t prev = 0, found = NN_EMUL_NOFIT, i;
    *largest = 0;
    for (i = 0; i <= a->n; i++) {
        uint32_t end = i < a->n ? a->blk[i].off : a->size;
        uint32_t start = (prev + align - 1) & ~(align - 1);
        if (end - prev > *largest)
            *largest = end - prev;
        if (found == NN_EMUL_NOFIT && start <= end && end - start >= size)
            found = start;
        if (i < a->n)
            prev = a->blk[i].off + a->blk[i].size;
    }
    return found;
}

/* Index of the block starting at off, or -1. */
static long arena_find_start(const nn_emul_arena_t *a, uint32_t off)
{
    uint32_t lo = 0, hi = a->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (a->blk[mid].off == off)
            return (long)mid;
        if (a->blk[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* Index of the block whose taken bytes contain off, or -1. */
static long arena_find_containing(const nn_emul_arena_t *a, uint32_t off)
{
    uint32_t lo = 0, hi = a->n;
    while (lo < hi) { /* first block with blk.off > off */
        uint32_t mid = (lo + hi) / 2;
        if (a->blk[mid].off <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    lo--;
    return off < a->blk[lo].off + a->blk[lo].size ? (long)lo : -1;
}

static int arena_contains(const nn_emul_arena_t *a, uintptr_t addr, uint32_t n, uint32_t *off)
{
    if (addr < a->addr0 || addr - a->addr0 > a->size || n > a->size - (addr - a->addr0))
        return 0;
    *off = (uint32_t)(addr - a->addr0);
    return 1;
}

int nn_emul_arena_touches(const nn_emul_arena_t *a, uintptr_t addr, uint32_t n)
{
    return addr < a->addr0 + a->size && addr + n > a->addr0;
}

uint32_t nn_emul_arena_alloc(nn_emul_arena_t *a, uint32_t req, uint32_t align, int kind,
                             const char *what, const char *api)
{
    uint32_t size = round_up(req, GRAIN), largest, off;
    nn_emul_block_t b;
    if (align < GRAIN)
        align = GRAIN;
    off = req <= a->size ? arena_fit(a, size, align, &largest) : NN_EMUL_NOFIT;
    if (off == NN_EMUL_NOFIT) {
        uint32_t i, nuser = 0;
        for (i = 0; i < a->n; i++)
            nuser += a->blk[i].kind == NN_EMUL_BLK_USER;
        arena_fit(a, 0, 1, &largest);
        fail("%s(%lu bytes): %s exhausted (%s=%lu): %lu bytes in use (%lu by the program in %lu "
             "blocks, %lu by the runtime), %lu free, largest free block %lu bytes",
             api, (unsigned long)req, a->name, a->macro, (unsigned long)a->size,
             (unsigned long)(a->live + a->internal), (unsigned long)a->live, (unsigned long)nuser,
             (unsigned long)a->internal, (unsigned long)(a->size - a->live - a->internal),
             (unsigned long)largest);
    }
    if (a->n == a->cap) {
        uint32_t cap = a->cap ? 2 * a->cap : 64;
        nn_emul_block_t *blk = (nn_emul_block_t *)realloc(a->blk, cap * sizeof(nn_emul_block_t));
        if (!blk)
            fail("%s: out of host memory", api);
        a->blk = blk;
        a->cap = cap;
    }
    b.off = off;
    b.size = size;
    b.req = req;
    b.acct = nn_emul_round4(req);
    b.kind = kind;
    b.what = what;
    {
        uint32_t i = a->n;
        while (i > 0 && a->blk[i - 1].off > off) {
            a->blk[i] = a->blk[i - 1];
            i--;
        }
        a->blk[i] = b;
        a->n++;
    }
    if (kind == NN_EMUL_BLK_USER) {
        a->live += b.acct;
        if (a->live > a->peak)
            a->peak = a->live;
    } else {
        a->internal += b.acct;
    }
    UNPOISON(a->mem + off, size);
    memset(a->mem + off, POISON_FRESH, size);
    POISON(a->mem + off, size);
    UNPOISON(a->mem + off, req);
    return off;
}

static void arena_remove(nn_emul_arena_t *a, long idx)
{
    nn_emul_block_t b = a->blk[idx];
    if (b.kind == NN_EMUL_BLK_USER)
        a->live -= b.acct;
    else
        a->internal -= b.acct;
    UNPOISON(a->mem + b.off, b.size);
    memset(a->mem + b.off, POISON_FREED, b.size);
    POISON(a->mem + b.off, b.size);
    memmove(&a->blk[idx], &a->blk[idx + 1], (a->n - (uint32_t)idx - 1) * sizeof(nn_emul_block_t));
    a->n--;
}

void nn_emul_arena_free(nn_emul_arena_t *a, uintptr_t addr, uint32_t req, const char *api)
{
    uint32_t off;
    long idx, in;
    if (!arena_contains(a, addr, 0, &off) || off == a->size)
        fail("%s(0x%08lx, %lu): the address is not in %s [0x%08lx, 0x%08lx)", api,
             (unsigned long)addr, (unsigned long)req, a->name, (unsigned long)a->addr0,
             (unsigned long)(a->addr0 + a->size));
    idx = arena_find_start(a, off);
    if (idx < 0) {
        in = arena_find_containing(a, off);
        if (in >= 0)
            fail("%s(0x%08lx, %lu): not the start of a block: it is %lu bytes into the block "
                 "0x%08lx of %lu bytes",
                 api, (unsigned long)addr, (unsigned long)req,
                 (unsigned long)(off - a->blk[in].off), (unsigned long)(a->addr0 + a->blk[in].off),
                 (unsigned long)a->blk[in].req);
        fail("%s(0x%08lx, %lu): no live block there (never allocated, or already freed)", api,
             (unsigned long)addr, (unsigned long)req);
    }
    if (a->blk[idx].kind != NN_EMUL_BLK_USER)
        fail("%s(0x%08lx, %lu): that block is the %s, not an allocation of the program", api,
             (unsigned long)addr, (unsigned long)req, a->blk[idx].what);
    if (a->blk[idx].req != req)
        fail("%s(0x%08lx, %lu): the block was allocated with %lu bytes", api, (unsigned long)addr,
             (unsigned long)req, (unsigned long)a->blk[idx].req);
    arena_remove(a, idx);
}

void nn_emul_arena_release(nn_emul_arena_t *a, uint32_t *off)
{
    if (*off != NN_EMUL_NOFIT) {
        long idx = arena_find_start(a, *off);
        if (idx >= 0)
            arena_remove(a, idx);
        *off = NN_EMUL_NOFIT;
    }
}

/* Drops every block (the memory goes away: cluster or RAM closed). */
void nn_emul_arena_reset(nn_emul_arena_t *a)
{
    a->n = 0;
    a->live = 0;
    a->internal = 0;
    UNPOISON(a->mem, a->size);
    memset(a->mem, POISON_OFF, a->size);
    POISON(a->mem, a->size);
}

void nn_emul_check_block(const nn_emul_arena_t *a, uintptr_t addr, uint32_t n, const char *api,
                         const char *side)
{
    uint32_t off;
    long idx;
    if (!arena_contains(a, addr, n, &off))
        fail("%s: %s range 0x%08lx..0x%08lx (%lu bytes) is not inside the %s arena [0x%08lx, "
             "0x%08lx)",
             api, side, (unsigned long)addr, (unsigned long)(addr + n), (unsigned long)n, a->name,
             (unsigned long)a->addr0, (unsigned long)(a->addr0 + a->size));
    idx = n ? arena_find_containing(a, off) : -1;
    if (idx < 0 || a->blk[idx].kind != NN_EMUL_BLK_USER ||
        off + n > a->blk[idx].off + a->blk[idx].req) {
        if (idx >= 0)
            fail("%s: %s range 0x%08lx..0x%08lx (%lu bytes) is not inside one live %s block: the "
                 "block at 0x%08lx has %lu bytes%s%s",
                 api, side, (unsigned long)addr, (unsigned long)(addr + n), (unsigned long)n,
                 a->name, (unsigned long)(a->addr0 + a->blk[idx].off),
                 (unsigned long)a->blk[idx].req,
                 a->blk[idx].kind == NN_EMUL_BLK_USER ? "" : " and is the ",
                 a->blk[idx].kind == NN_EMUL_BLK_USER ? "" : a->blk[idx].what);
        fail("%s: %s range 0x%08lx..0x%08lx (%lu bytes) is not inside a live %s block (never "
             "allocated, or freed)",
             api, side, (unsigned long)addr, (unsigned long)(addr + n), (unsigned long)n, a->name);
    }
}

void nn_emul_arena_dump(const nn_emul_arena_t *a)
{
    uint32_t i;
    printf("%s: %lu of %lu bytes used (%lu by the runtime), peak %lu, %lu blocks\n", a->name,
           (unsigned long)(a->live + a->internal), (unsigned long)a->size,
           (unsigned long)a->internal, (unsigned long)a->peak, (unsigned long)a->n);
    for (i = 0; i < a->n; i++)
        printf("  0x%08lx %8lu bytes%s%s\n", (unsigned long)(a->addr0 + a->blk[i].off),
               (unsigned long)a->blk[i].req, a->blk[i].kind == NN_EMUL_BLK_USER ? "" : "  ",
               a->blk[i].kind == NN_EMUL_BLK_USER ? "" : a->blk[i].what);
}
