/*
 * pmsis_emul.c - the backend-independent part of the PMSIS emulation: memory arenas (L1, L2, L3),
 * cluster open/task, cluster DMA and RAM transfers, readfs, kickoff. See pmsis.h.
 *
 * Every detected misuse calls pmsis_emul_fail(): one message, exit status 3.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* MAP_ANONYMOUS, MAP_FIXED_NOREPLACE, MAP_32BIT */
#endif

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmsis_emul_internal.h"

#if UINTPTR_MAX > 0xffffffffu
/* 64-bit host: L1/L2 addresses travel through uint32_t (DMA ext/loc), so the arenas are mapped
 * below 4 GiB. */
#define NN_EMUL_LOW_MAP 1
#include <sys/mman.h>
#endif

#define NN_EMUL_RAM_MAX_INFLIGHT 64 /* pi_cl_ram requests in flight (an emulation limit) */
#define NN_EMUL_FS_PATH_MAX 4096

#define POISON_FRESH 0xA5 /* newly allocated memory is garbage, not zeros */
#define POISON_FREED 0xDD
#define POISON_OFF 0xDE   /* L1 after pi_cluster_close, L3 after pi_ram_close */

#define NOFIT 0xffffffffu

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

/* ---- failure ------------------------------------------------------------------------------- */

void pmsis_emul_fail(const char *fmt, ...)
{
    va_list ap;
    nn_emul_fail_begin();
    fflush(stdout);
    fputs("PMSIS-EMUL ERROR: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    _Exit(PMSIS_EMUL_FAIL_STATUS);
}

#define fail pmsis_emul_fail

const char *nn_emul_ctx_name(int ctx)
{
    static const char *const pe[NN_EMUL_NB_PE] = {"core 0", "core 1", "core 2", "core 3",
                                                  "core 4", "core 5", "core 6", "core 7"};
    if (ctx >= 0 && ctx < NN_EMUL_NB_PE)
        return pe[ctx];
    if (ctx == NN_EMUL_CC_CORE_ID)
        return "the cluster controller (core 8)";
    return "the FC";
}

void nn_emul_require_cc(const char *what)
{
    int ctx = nn_emul_ctx();
    if (ctx == NN_EMUL_CC_CORE_ID)
        return;
    if (ctx == NN_EMUL_CTX_FC)
        fail("%s called from the FC: only the cluster controller, inside a cluster task, may do this",
             what);
    fail("%s called from %s inside a fork: only the cluster controller (core 8) may do this (no "
         "nested forks)",
         what, nn_emul_ctx_name(ctx));
}

static void require_fc(const char *what)
{
    int ctx = nn_emul_ctx();
    if (ctx != NN_EMUL_CTX_FC)
        fail("%s called from %s: it is a fabric-controller call%s", what, nn_emul_ctx_name(ctx),
             strncmp(what, "pi_ram_", 7) == 0 ? " (the cluster uses pi_cl_ram_*)" : "");
}

static void require_cluster(const char *what)
{
    if (nn_emul_ctx() == NN_EMUL_CTX_FC)
        fail("%s called from the FC: it is a cluster call (inside a cluster task)", what);
}

/* ---- arenas -------------------------------------------------------------------------------- */

enum { BLK_USER, BLK_INTERNAL };

typedef struct {
    uint32_t off;     /* from the arena start */
    uint32_t size;    /* bytes taken: req rounded up to GRAIN */
    uint32_t req;     /* bytes requested */
    uint32_t acct;    /* bytes accounted: req rounded up to 4 (the SDK's granularity) */
    int kind;
    const char *what; /* internal blocks: what holds them */
} block_t;

typedef struct {
    const char *name;  /* "L1" */
    const char *macro; /* "NN_EMUL_L1_SIZE" */
    uint8_t *mem;      /* host memory of offset 0 */
    uintptr_t addr0;   /* the address programs use for offset 0 */
    uint32_t size;
    block_t *blk;      /* sorted by off */
    uint32_t n, cap;
    uint32_t live, peak; /* user blocks, accounted bytes */
    uint32_t internal;   /* runtime blocks (cluster stacks), accounted bytes */
} arena_t;

static arena_t l1 = {"L1", "NN_EMUL_L1_SIZE", NULL, 0, NN_EMUL_L1_SIZE, NULL, 0, 0, 0, 0, 0};
static arena_t l2 = {"L2", "NN_EMUL_L2_SIZE", NULL, 0, NN_EMUL_L2_SIZE, NULL, 0, 0, 0, 0, 0};
static arena_t l3 = {"L3", "NN_EMUL_L3_SIZE", NULL, 0, NN_EMUL_L3_SIZE, NULL, 0, 0, 0, 0, 0};

static uint8_t l3_mem[NN_EMUL_L3_SIZE]; /* hidden: L3 addresses are not pointers into it */
#ifndef NN_EMUL_LOW_MAP
static uint8_t l1_mem[NN_EMUL_L1_SIZE] __attribute__((aligned(64)));
static uint8_t l2_mem[NN_EMUL_L2_SIZE] __attribute__((aligned(64)));
#endif

static uint32_t round_up(uint32_t n, uint32_t g)
{
    return n > 0xffffffffu - (g - 1) ? 0xffffffffu & ~(g - 1) : (n + g - 1) & ~(g - 1);
}

static uint32_t round4(uint32_t n)
{
    return round_up(n, 4);
}

/* First fit; NOFIT if no gap is large enough. *largest gets the largest free gap. */
static uint32_t arena_fit(const arena_t *a, uint32_t size, uint32_t align, uint32_t *largest)
{
    uint32_t prev = 0, found = NOFIT, i;
    *largest = 0;
    for (i = 0; i <= a->n; i++) {
        uint32_t end = i < a->n ? a->blk[i].off : a->size;
        uint32_t start = (prev + align - 1) & ~(align - 1);
        if (end - prev > *largest)
            *largest = end - prev;
        if (found == NOFIT && start <= end && end - start >= size)
            found = start;
        if (i < a->n)
            prev = a->blk[i].off + a->blk[i].size;
    }
    return found;
}

/* Index of the block starting at off, or -1. */
static long arena_find_start(const arena_t *a, uint32_t off)
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
static long arena_find_containing(const arena_t *a, uint32_t off)
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

static int arena_contains(const arena_t *a, uintptr_t addr, uint32_t n, uint32_t *off)
{
    if (addr < a->addr0 || addr - a->addr0 > a->size || n > a->size - (addr - a->addr0))
        return 0;
    *off = (uint32_t)(addr - a->addr0);
    return 1;
}

static int arena_touches(const arena_t *a, uintptr_t addr, uint32_t n)
{
    return addr < a->addr0 + a->size && addr + n > a->addr0;
}

static uint32_t arena_alloc(arena_t *a, uint32_t req, uint32_t align, int kind, const char *what,
                            const char *api)
{
    uint32_t size = round_up(req, GRAIN), largest, off;
    block_t b;
    if (align < GRAIN)
        align = GRAIN;
    off = req <= a->size ? arena_fit(a, size, align, &largest) : NOFIT;
    if (off == NOFIT) {
        uint32_t i, nuser = 0;
        for (i = 0; i < a->n; i++)
            nuser += a->blk[i].kind == BLK_USER;
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
        block_t *blk = (block_t *)realloc(a->blk, cap * sizeof(block_t));
        if (!blk)
            fail("%s: out of host memory", api);
        a->blk = blk;
        a->cap = cap;
    }
    b.off = off;
    b.size = size;
    b.req = req;
    b.acct = round4(req);
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
    if (kind == BLK_USER) {
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

static void arena_remove(arena_t *a, long idx)
{
    block_t b = a->blk[idx];
    if (b.kind == BLK_USER)
        a->live -= b.acct;
    else
        a->internal -= b.acct;
    UNPOISON(a->mem + b.off, b.size);
    memset(a->mem + b.off, POISON_FREED, b.size);
    POISON(a->mem + b.off, b.size);
    memmove(&a->blk[idx], &a->blk[idx + 1], (a->n - (uint32_t)idx - 1) * sizeof(block_t));
    a->n--;
}

static void arena_free(arena_t *a, uintptr_t addr, uint32_t req, const char *api)
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
    if (a->blk[idx].kind != BLK_USER)
        fail("%s(0x%08lx, %lu): that block is the %s, not an allocation of the program", api,
             (unsigned long)addr, (unsigned long)req, a->blk[idx].what);
    if (a->blk[idx].req != req)
        fail("%s(0x%08lx, %lu): the block was allocated with %lu bytes", api, (unsigned long)addr,
             (unsigned long)req, (unsigned long)a->blk[idx].req);
    arena_remove(a, idx);
}

/* Drops every block (the memory goes away: cluster or RAM closed). */
static void arena_reset(arena_t *a)
{
    a->n = 0;
    a->live = 0;
    a->internal = 0;
    UNPOISON(a->mem, a->size);
    memset(a->mem, POISON_OFF, a->size);
    POISON(a->mem, a->size);
}

/* Fails unless [addr, addr+n) lies inside one live user block of a. */
static void check_block(const arena_t *a, uintptr_t addr, uint32_t n, const char *api,
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
    if (idx < 0 || a->blk[idx].kind != BLK_USER || off + n > a->blk[idx].off + a->blk[idx].req) {
        if (idx >= 0)
            fail("%s: %s range 0x%08lx..0x%08lx (%lu bytes) is not inside one live %s block: the "
                 "block at 0x%08lx has %lu bytes%s%s",
                 api, side, (unsigned long)addr, (unsigned long)(addr + n), (unsigned long)n,
                 a->name, (unsigned long)(a->addr0 + a->blk[idx].off),
                 (unsigned long)a->blk[idx].req, a->blk[idx].kind == BLK_USER ? "" : " and is the ",
                 a->blk[idx].kind == BLK_USER ? "" : a->blk[idx].what);
        fail("%s: %s range 0x%08lx..0x%08lx (%lu bytes) is not inside a live %s block (never "
             "allocated, or freed)",
             api, side, (unsigned long)addr, (unsigned long)(addr + n), (unsigned long)n, a->name);
    }
}

static void arena_dump(const arena_t *a)
{
    uint32_t i;
    printf("%s: %lu of %lu bytes used (%lu by the runtime), peak %lu, %lu blocks\n", a->name,
           (unsigned long)(a->live + a->internal), (unsigned long)a->size,
           (unsigned long)a->internal, (unsigned long)a->peak, (unsigned long)a->n);
    for (i = 0; i < a->n; i++)
        printf("  0x%08lx %8lu bytes%s%s\n", (unsigned long)(a->addr0 + a->blk[i].off),
               (unsigned long)a->blk[i].req, a->blk[i].kind == BLK_USER ? "" : "  ",
               a->blk[i].kind == BLK_USER ? "" : a->blk[i].what);
}

#ifdef NN_EMUL_LOW_MAP
static uint8_t *map_low(uintptr_t hint, uint32_t size, const char *name)
{
    void *p = MAP_FAILED;
    size_t len = ((size_t)size + 0xfffu) & ~(size_t)0xfffu;
#ifdef MAP_FIXED_NOREPLACE
    p = mmap((void *)hint, len, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
#else
    p = mmap((void *)hint, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
#endif
    if (p != MAP_FAILED && (uintptr_t)p != hint) { /* a kernel that took the address as a hint */
        munmap(p, len);
        p = MAP_FAILED;
    }
#ifdef MAP_32BIT
    if (p == MAP_FAILED)
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
#endif
    if (p == MAP_FAILED || (uintptr_t)p + len > 0x100000000ull)
        fail("cannot map the %s arena (%lu bytes) below 4 GiB, where uint32_t DMA addresses can "
             "reach it",
             name, (unsigned long)size);
    return (uint8_t *)p;
}
#endif

/* ---- global state and init ----------------------------------------------------------------- */

static struct {
    int open;
    int in_task;
    uint32_t l1_limit;
    uint32_t tasks;
} cl;

static struct {
    int open;
} ram_dev_state;

static int inited;

/* The open functions store these in device->data; the conf_init functions store the tags in the
 * conf's api field so that open can tell an initialized conf. */
static int cluster_tag, ram_tag, flash_tag, fs_tag;
#define RAM_API_TAG ((pi_ram_api_t *)(void *)&ram_tag)
#define FLASH_API_TAG ((pi_flash_api_t *)(void *)&flash_tag)
#define FS_API_TAG ((pi_fs_api_t *)(void *)&fs_tag)

static void emul_init(void)
{
    if (inited)
        return;
    inited = 1;
    nn_emul_backend_init();
#ifdef NN_EMUL_LOW_MAP
    l1.mem = map_low(0x10000000u, l1.size, "L1"); /* GAP9: cluster L1 at 0x10000000 */
    l2.mem = map_low(0x1c010000u, l2.size, "L2"); /* GAP9: shared L2 at 0x1c010000 */
#else
    l1.mem = l1_mem;
    l2.mem = l2_mem;
#endif
    l1.addr0 = (uintptr_t)l1.mem;
    l2.addr0 = (uintptr_t)l2.mem;
    l3.mem = l3_mem;
    l3.addr0 = PMSIS_EMUL_L3_BASE;
    arena_reset(&l1);
    arena_reset(&l2); /* L3 is reset by pi_ram_open */
}

/* ---- kickoff, device, core ids ------------------------------------------------------------- */

int pmsis_kickoff(void *arg)
{
    void (*entry)(void);
    typedef char fn_fits_in_pointer[sizeof(entry) == sizeof(arg) ? 1 : -1];
    (void)sizeof(fn_fits_in_pointer);
    emul_init();
    if (!arg)
        fail("pmsis_kickoff(NULL)");
    memcpy(&entry, &arg, sizeof entry);
    entry();
    return 0;
}

void pmsis_exit(int err)
{
    fflush(stdout);
    fflush(stderr);
    exit(err);
}

void pi_open_from_conf(struct pi_device *device, void *conf)
{
    if (!device)
        fail("pi_open_from_conf(NULL, ...)");
    device->api = NULL;
    device->config = conf;
    device->data = NULL;
}

uint32_t pi_core_id(void)
{
    int ctx;
    emul_init();
    ctx = nn_emul_ctx();
    return ctx == NN_EMUL_CTX_FC ? 0u : (uint32_t)ctx;
}

uint32_t pi_cluster_id(void)
{
    emul_init();
    return nn_emul_ctx() == NN_EMUL_CTX_FC ? 31u : 0u;
}

uint32_t pi_is_fc(void)
{
    emul_init();
    return nn_emul_ctx() == NN_EMUL_CTX_FC;
}

int pi_cl_cluster_nb_cores(void)
{
    return NN_EMUL_NB_PE;
}

/* ---- L2 ------------------------------------------------------------------------------------ */

static void check_align(int align, const char *api)
{
    if (align < 4 || (align & (align - 1)))
        fail("%s: alignment %d is not a power of two >= 4", api, align);
}

static void *l2_alloc(int size, int align, const char *api)
{
    uint32_t off;
    emul_init();
    require_fc(api);
    if (size <= 0)
        fail("%s(%d): the size must be > 0", api, size);
    nn_emul_lock();
    off = arena_alloc(&l2, (uint32_t)size, (uint32_t)align, BLK_USER, NULL, api);
    nn_emul_unlock();
    return l2.mem + off;
}

void *pi_l2_malloc(int size)
{
    return l2_alloc(size, 4, "pi_l2_malloc");
}

void *pi_l2_malloc_align(int size, int align)
{
    check_align(align, "pi_l2_malloc_align");
    return l2_alloc(size, align, "pi_l2_malloc_align");
}

void pi_l2_free(void *chunk, int size)
{
    emul_init();
    require_fc("pi_l2_free");
    if (size <= 0)
        fail("pi_l2_free(%p, %d): the size must be > 0", chunk, size);
    nn_emul_lock();
    arena_free(&l2, (uintptr_t)chunk, (uint32_t)size, "pi_l2_free");
    nn_emul_unlock();
}

void pi_l2_malloc_dump(void)
{
    emul_init();
    nn_emul_lock();
    arena_dump(&l2);
    nn_emul_unlock();
}

/* ---- L1 ------------------------------------------------------------------------------------ */

static void check_cluster_dev(struct pi_device *device, const char *api)
{
    if (!cl.open)
        fail("%s: the cluster is not open (pi_cluster_open)", api);
    if (device && device->data != (void *)&cluster_tag)
        fail("%s: the device is not the opened cluster device", api);
}

static void *l1_alloc(struct pi_device *device, uint32_t size, uint32_t align, const char *api)
{
    uint32_t off;
    emul_init();
    nn_emul_lock();
    check_cluster_dev(device, api);
    if (size == 0 || size > 0x7fffffffu)
        fail("%s(%ld): the size must be > 0", api, (long)(int32_t)size);
    if (cl.l1_limit && l1.live + round4(size) > cl.l1_limit)
        fail("%s(%lu bytes) from %s exceeds the L1 limit: %lu bytes live + %lu requested = %lu > "
             "limit %lu bytes (pmsis_emul_l1_limit)",
             api, (unsigned long)size, nn_emul_ctx_name(nn_emul_ctx()), (unsigned long)l1.live,
             (unsigned long)round4(size), (unsigned long)(l1.live + round4(size)),
             (unsigned long)cl.l1_limit);
    off = arena_alloc(&l1, size, align, BLK_USER, NULL, api);
    nn_emul_unlock();
    return l1.mem + off;
}

void *pi_cl_l1_malloc(struct pi_device *device, uint32_t size)
{
    return l1_alloc(device, size, 4, "pi_cl_l1_malloc");
}

void *pi_cl_l1_malloc_align(struct pi_device *device, int size, int align)
{
    check_align(align, "pi_cl_l1_malloc_align");
    if (size <= 0)
        fail("pi_cl_l1_malloc_align(%d): the size must be > 0", size);
    return l1_alloc(device, (uint32_t)size, (uint32_t)align, "pi_cl_l1_malloc_align");
}

void pi_cl_l1_free(struct pi_device *device, void *chunk, int size)
{
    emul_init();
    nn_emul_lock();
    check_cluster_dev(device, "pi_cl_l1_free");
    if (size <= 0)
        fail("pi_cl_l1_free(%p, %d): the size must be > 0", chunk, size);
    arena_free(&l1, (uintptr_t)chunk, (uint32_t)size, "pi_cl_l1_free");
    nn_emul_unlock();
}

void pi_cl_l1_malloc_dump(struct pi_device *device)
{
    (void)device;
    emul_init();
    nn_emul_lock();
    arena_dump(&l1);
    nn_emul_unlock();
}

void pmsis_emul_l1_limit(uint32_t bytes)
{
    emul_init();
    nn_emul_lock();
    if (bytes > l1.size)
        fail("pmsis_emul_l1_limit(%lu): more than the whole L1 (%s=%lu)", (unsigned long)bytes,
             l1.macro, (unsigned long)l1.size);
    if (bytes && l1.live > bytes)
        fail("pmsis_emul_l1_limit(%lu): %lu bytes of L1 are already live", (unsigned long)bytes,
             (unsigned long)l1.live);
    cl.l1_limit = bytes;
    nn_emul_unlock();
}

/* ---- cluster ------------------------------------------------------------------------------- */

static uint32_t cc_stack_off = NOFIT, scratch_off = NOFIT;

static void release_internal(uint32_t *off)
{
    if (*off != NOFIT) {
        long idx = arena_find_start(&l1, *off);
        if (idx >= 0)
            arena_remove(&l1, idx);
        *off = NOFIT;
    }
}

void pi_cluster_conf_init(struct pi_cluster_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    conf->device_type = PI_DEVICE_CLUSTER_TYPE;
    conf->id = 0;
    conf->cc_stack_size = PI_CL_CC_STACK_SIZE;
    conf->flags = PI_CLUSTER_FLAGS_FORK_BASED;
}

int pi_cluster_open(struct pi_device *device)
{
    struct pi_cluster_conf *conf;
    emul_init();
    require_fc("pi_cluster_open");
    if (!device || !device->config)
        fail("pi_cluster_open: no conf (pi_open_from_conf)");
    conf = (struct pi_cluster_conf *)device->config;
    if (conf->device_type != PI_DEVICE_CLUSTER_TYPE)
        fail("pi_cluster_open: the conf was not initialized by pi_cluster_conf_init");
    if (conf->id != 0)
        fail("pi_cluster_open: cluster %d does not exist (GAP9 has cluster 0)", conf->id);
    nn_emul_lock();
    if (cl.open)
        fail("pi_cluster_open: the cluster is already open");
    cl.open = 1;
    cl.l1_limit = 0;
    arena_reset(&l1);
    if (conf->cc_stack_size)
        cc_stack_off = arena_alloc(&l1, conf->cc_stack_size, 4, BLK_INTERNAL,
                                   "cluster-controller stack (cc_stack_size)", "pi_cluster_open");
    if (conf->scratch_size)
        scratch_off = arena_alloc(&l1, conf->scratch_size, 4, BLK_INTERNAL,
                                  "task scratch area (scratch_size)", "pi_cluster_open");
    nn_emul_unlock();
    device->data = (void *)&cluster_tag;
    nn_emul_cluster_up();
    return 0;
}

int pi_cluster_close(struct pi_device *device)
{
    emul_init();
    require_fc("pi_cluster_close");
    nn_emul_lock();
    check_cluster_dev(device, "pi_cluster_close");
    if (!device)
        fail("pi_cluster_close(NULL)");
    cc_stack_off = scratch_off = NOFIT;
    arena_reset(&l1); /* L1 contents do not survive the power-down */
    cl.open = 0;
    cl.l1_limit = 0;
    nn_emul_unlock();
    nn_emul_cluster_down();
    device->data = NULL;
    return 0;
}

struct pi_cluster_task *pi_cluster_task(struct pi_cluster_task *task, void (*entry)(void *),
                                        void *arg)
{
    memset(task, 0, sizeof *task);
    task->entry = entry;
    task->arg = arg;
    task->nb_cores = NN_EMUL_NB_PE;
    return task;
}

pi_cluster_task_t *pi_cluster_task_stacks(pi_cluster_task_t *task, void *stacks, int stack_size)
{
    task->stacks = stacks;
    task->slave_stack_size = (uint32_t)stack_size;
    return task;
}

enum { XFER_DMA, XFER_RAM };
static uint32_t pending_count(int kind, const char **first_api, int *first_issuer,
                              uint32_t *first_size);

int pi_cluster_send_task_to_cl(struct pi_device *device, struct pi_cluster_task *task)
{
    uint32_t stacks_off = NOFIT, slave, n;
    int nb;
    const char *api;
    int issuer;
    uint32_t size;
    emul_init();
    require_fc("pi_cluster_send_task");
    nn_emul_lock();
    check_cluster_dev(device, "pi_cluster_send_task");
    if (!task || !task->entry)
        fail("pi_cluster_send_task: no task entry (pi_cluster_task)");
    nb = task->nb_cores ? task->nb_cores : NN_EMUL_NB_PE;
    if (nb < 1 || nb > NN_EMUL_NB_PE)
        fail("pi_cluster_send_task: nb_cores %d is not in 1..%d", task->nb_cores, NN_EMUL_NB_PE);
    slave = task->slave_stack_size ? task->slave_stack_size : 0x400;
    if (slave > l1.size / NN_EMUL_NB_PE)
        fail("pi_cluster_send_task: slave_stack_size %lu cannot fit in L1",
             (unsigned long)task->slave_stack_size);
    if (task->stacks)
        check_block(&l1, (uintptr_t)task->stacks, slave * (uint32_t)nb,
                    "pi_cluster_send_task (task stacks)", "stacks");
    else
        stacks_off = arena_alloc(&l1, slave * (uint32_t)nb, 4, BLK_INTERNAL,
                                 "team stacks (slave_stack_size x nb_cores)", "pi_cluster_send_task");
    cl.in_task = 1;
    nn_emul_unlock();

    nn_emul_task_begin(nb);
    nn_emul_set_ctx(NN_EMUL_CC_CORE_ID);
    task->entry(task->arg);
    nn_emul_set_ctx(NN_EMUL_CTX_FC);

    nn_emul_lock();
    /* Cluster-DMA commands belong to the task. pi_cl_ram requests are served by the FC's
     * RAM driver and their request lives in L2, so one task may start a read that the next
     * task waits for (the next layer's weights prefetched while this layer computes). */
    n = pending_count(XFER_DMA, &api, &issuer, &size);
    if (n)
        fail("the cluster task returned with %lu transfer(s) never waited (first: %s of %lu bytes "
             "issued by %s)",
             (unsigned long)n, api, (unsigned long)size, nn_emul_ctx_name(issuer));
    release_internal(&stacks_off);
    cl.in_task = 0;
    cl.tasks++;
    nn_emul_unlock();
    return 0;
}

/* ---- transfers that land at their wait ----------------------------------------------------- */


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
static uint64_t dma_cmds, dma_bytes, ram_reqs, ram_bytes;

/* Bytes spanned by size bytes in lines of length bytes, stride apart. */
static uint64_t extent(uint32_t size, uint32_t stride, uint32_t length)
{
    uint64_t lines = (size + (uint64_t)length - 1) / length;
    return (lines - 1) * stride + (size - (lines - 1) * length);
}

static void gather(uint8_t *out, const uint8_t *s, uint32_t size, uint32_t stride, uint32_t length)
{
    while (size) {
        uint32_t n = size < length ? size : length;
        memcpy(out, s, n);
        out += n;
        s += stride;
        size -= n;
    }
}

static void scatter(uint8_t *s, const uint8_t *in, uint32_t size, uint32_t stride, uint32_t length)
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

static uint32_t pending_count(int kind, const char **first_api, int *first_issuer,
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

static void xfer_issue(int kind, const char *api, const void *key, uint32_t *idp, uint8_t *c,
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
    if (kind == XFER_RAM && pending_count(XFER_RAM, NULL, NULL, NULL) >= NN_EMUL_RAM_MAX_INFLIGHT)
        fail("%s: %d RAM requests already in flight (emulation limit); wait on some first", api,
             NN_EMUL_RAM_MAX_INFLIGHT);
    x->stage = (uint8_t *)malloc(size);
    x->snap = (uint8_t *)malloc(size);
    if (!x->stage || !x->snap)
        fail("%s: out of host memory", api);
    if (to_c) {
        gather(x->stage, s, size, stride, length);
        memcpy(x->snap, c, size);
    } else {
        memcpy(x->stage, c, size);
        gather(x->snap, s, size, stride, length);
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
    const char *side = x->kind == XFER_DMA ? (x->to_c ? "L2" : "L1") : (x->to_c ? "L3" : "L2");
    const char *dside = x->kind == XFER_DMA ? (x->to_c ? "L1" : "L2") : (x->to_c ? "L2" : "L3");
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
        scatter(x->s, x->stage, x->size, x->stride, x->length);
    x->landed = 1;
}

static void xfer_wait(int kind, const char *api, const void *key)
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
    if (kind == XFER_DMA) {
        dma_cmds++;
        dma_bytes += x->size;
    } else {
        ram_reqs++;
        ram_bytes += x->size;
    }
    free(x->stage);
    free(x->snap);
    memset(x, 0, sizeof *x);
}

/* ---- cluster DMA --------------------------------------------------------------------------- */

static void dma_issue(const char *api, const void *key, uint32_t *idp, uint32_t ext, uint32_t loc,
                      uint32_t size, uint32_t stride, uint32_t length, int dir, int is_2d)
{
    uint64_t span;
    emul_init();
    require_cluster(api);
    nn_emul_lock();
    if (!cl.in_task)
        fail("%s: no cluster task is running", api);
    if (dir != PI_CL_DMA_DIR_EXT2LOC && dir != PI_CL_DMA_DIR_LOC2EXT)
        fail("%s: direction %d is neither PI_CL_DMA_DIR_EXT2LOC nor PI_CL_DMA_DIR_LOC2EXT", api,
             dir);
    if (size == 0 || size > NN_EMUL_DMA_MAX_SIZE)
        fail("%s: size %lu is not in 1..%lu (NN_EMUL_DMA_MAX_SIZE)", api, (unsigned long)size,
             (unsigned long)NN_EMUL_DMA_MAX_SIZE);
    if (is_2d) {
        /* lines closer than their length would overlap (one line may have any stride) */
        if (length == 0 || (size > length && stride < length))
            fail("%s: 2D length %lu must be > 0 and <= stride %lu", api, (unsigned long)length,
                 (unsigned long)stride);
    } else {
        stride = length = size;
    }
    span = extent(size, stride, length);
    if (span > 0xffffffffu)
        fail("%s: the 2D pattern spans %llu bytes", api, (unsigned long long)span);
    check_block(&l1, (uintptr_t)loc, size, api, "loc (L1)");
    check_block(&l2, (uintptr_t)ext, (uint32_t)span, api, "ext (L2)");
    if (pending_count(XFER_DMA, NULL, NULL, NULL) >= NN_EMUL_DMA_MAX_INFLIGHT)
        fail("%s from %s: %d cluster-DMA commands are already in flight "
             "(NN_EMUL_DMA_MAX_INFLIGHT=%d); wait on some first",
             api, nn_emul_ctx_name(nn_emul_ctx()), NN_EMUL_DMA_MAX_INFLIGHT,
             NN_EMUL_DMA_MAX_INFLIGHT);
    xfer_issue(XFER_DMA, api, key, idp, (uint8_t *)(uintptr_t)loc, loc, (uint8_t *)(uintptr_t)ext,
               ext, size, stride, length, dir == PI_CL_DMA_DIR_EXT2LOC);
    nn_emul_unlock();
}

void pi_cl_dma_cmd(uint32_t ext, uint32_t loc, uint32_t size, pi_cl_dma_dir_e dir,
                   pi_cl_dma_cmd_t *cmd)
{
    if (!cmd)
        fail("pi_cl_dma_cmd: cmd is NULL");
    dma_issue("pi_cl_dma_cmd", cmd, &cmd->id, ext, loc, size, 0, 0, (int)dir, 0);
}

void pi_cl_dma_cmd_2d(uint32_t ext, uint32_t loc, uint32_t size, uint32_t stride,
                      uint32_t length, pi_cl_dma_dir_e dir, pi_cl_dma_cmd_t *cmd)
{
    if (!cmd)
        fail("pi_cl_dma_cmd_2d: cmd is NULL");
    dma_issue("pi_cl_dma_cmd_2d", cmd, &cmd->id, ext, loc, size, stride, length, (int)dir, 1);
}

void pi_cl_dma_memcpy(pi_cl_dma_copy_t *copy)
{
    if (!copy)
        fail("pi_cl_dma_memcpy(NULL)");
    if (copy->merge)
        fail("pi_cl_dma_memcpy: merged transfers (merge=%d) are not emulated", copy->merge);
    dma_issue("pi_cl_dma_memcpy", copy, &copy->id, copy->ext, copy->loc, copy->size, 0, 0,
              (int)copy->dir, 0);
}

void pi_cl_dma_memcpy_2d(pi_cl_dma_copy_2d_t *copy)
{
    if (!copy)
        fail("pi_cl_dma_memcpy_2d(NULL)");
    if (copy->merge)
        fail("pi_cl_dma_memcpy_2d: merged transfers (merge=%d) are not emulated", copy->merge);
    dma_issue("pi_cl_dma_memcpy_2d", copy, &copy->id, copy->ext, copy->loc, copy->size,
              copy->stride, copy->length, (int)copy->dir, 1);
}

static void dma_wait(const char *api, const void *key)
{
    emul_init();
    require_cluster(api);
    nn_emul_lock();
    xfer_wait(XFER_DMA, api, key);
    nn_emul_unlock();
}

void pi_cl_dma_cmd_wait(pi_cl_dma_cmd_t *cmd)
{
    dma_wait("pi_cl_dma_cmd_wait", cmd);
}

void pi_cl_dma_wait(void *copy)
{
    dma_wait("pi_cl_dma_wait", copy);
}

void pi_cl_dma_flush(void)
{
    uint32_t i;
    emul_init();
    require_cluster("pi_cl_dma_flush");
    nn_emul_lock();
    for (i = 0; i < NN_EMUL_XFERS; i++)
        if (xfers[i].used && xfers[i].kind == XFER_DMA)
            xfer_land(&xfers[i]);
    nn_emul_unlock();
}

/* ---- external RAM (L3) --------------------------------------------------------------------- */

void pi_aps25xxxn_conf_init(struct pi_aps25xxxn_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    conf->ram.api = RAM_API_TAG;
    conf->spi_cs = 1;
    conf->ram_size = (int)NN_EMUL_L3_SIZE;
}

static void check_ram_dev(struct pi_device *device, const char *api)
{
    if (!device || device->data != (void *)&ram_tag || !ram_dev_state.open)
        fail("%s: the device is not an opened RAM device (pi_ram_open)", api);
}

int32_t pi_ram_open(struct pi_device *device)
{
    struct pi_ram_conf *conf;
    emul_init();
    require_fc("pi_ram_open");
    if (!device || !device->config)
        fail("pi_ram_open: no conf (pi_open_from_conf)");
    conf = (struct pi_ram_conf *)device->config;
    if (conf->api != RAM_API_TAG)
        fail("pi_ram_open: the conf was not initialized by pi_default_ram_conf_init");
    nn_emul_lock();
    if (ram_dev_state.open)
        fail("pi_ram_open: the RAM is already open");
    ram_dev_state.open = 1;
    arena_reset(&l3);
    nn_emul_unlock();
    device->data = (void *)&ram_tag;
    return 0;
}

void pi_ram_close(struct pi_device *device)
{
    emul_init();
    require_fc("pi_ram_close");
    nn_emul_lock();
    check_ram_dev(device, "pi_ram_close");
    if (pending_count(XFER_RAM, NULL, NULL, NULL))
        fail("pi_ram_close: RAM requests are still in flight");
    ram_dev_state.open = 0;
    arena_reset(&l3);
    nn_emul_unlock();
    device->data = NULL;
}

int pi_ram_alloc(struct pi_device *device, uint32_t *addr, uint32_t size)
{
    uint32_t off;
    emul_init();
    require_fc("pi_ram_alloc");
    nn_emul_lock();
    check_ram_dev(device, "pi_ram_alloc");
    if (!addr)
        fail("pi_ram_alloc: addr is NULL");
    if (size == 0)
        fail("pi_ram_alloc(0): the size must be > 0");
    off = arena_alloc(&l3, size, 4, BLK_USER, NULL, "pi_ram_alloc");
    *addr = PMSIS_EMUL_L3_BASE + off;
    nn_emul_unlock();
    return 0;
}

int pi_ram_free(struct pi_device *device, uint32_t addr, uint32_t size)
{
    emul_init();
    require_fc("pi_ram_free");
    nn_emul_lock();
    check_ram_dev(device, "pi_ram_free");
    arena_free(&l3, addr, size, "pi_ram_free");
    nn_emul_unlock();
    return 0;
}

/* The processor side of a uDMA transfer (RAM, file system): L2. Memory outside both arenas is
 * taken for FC stack or static data, which lives in L2 on GAP9. */
static void check_l2_buffer(const void *data, uint32_t size, const char *api)
{
    if (!data)
        fail("%s: the buffer is NULL", api);
    if (arena_touches(&l1, (uintptr_t)data, size))
        fail("%s: the buffer 0x%08lx is in cluster L1, which the uDMA cannot reach (use L2)", api,
             (unsigned long)(uintptr_t)data);
    if (arena_touches(&l2, (uintptr_t)data, size))
        check_block(&l2, (uintptr_t)data, size, api, "buffer (L2)");
}

static void ram_xfer(int async, const char *api, struct pi_device *device, uint32_t ram_addr,
                     void *data, uint32_t size, uint32_t stride, uint32_t length, int ext2loc,
                     int is_2d, pi_cl_ram_req_t *req)
{
    uint64_t span;
    uint8_t *s;
    emul_init();
    if (async)
        require_cluster(api);
    else
        require_fc(api);
    nn_emul_lock();
    check_ram_dev(device, api);
    if (async && !req)
        fail("%s: req is NULL", api);
    if (size == 0)
        fail("%s: size 0", api);
    if (is_2d) {
        /* lines closer than their length would overlap (one line may have any stride) */
        if (length == 0 || (size > length && stride < length))
            fail("%s: 2D length %lu must be > 0 and <= stride %lu", api, (unsigned long)length,
                 (unsigned long)stride);
    } else {
        stride = length = size;
    }
    span = extent(size, stride, length);
    if (span > 0xffffffffu)
        fail("%s: the 2D pattern spans %llu bytes", api, (unsigned long long)span);
    if (ram_addr < PMSIS_EMUL_L3_BASE || ram_addr - PMSIS_EMUL_L3_BASE >= l3.size)
        fail("%s: 0x%08lx is not an L3 address (pi_ram_alloc returns 0x%08lx..0x%08lx)", api,
             (unsigned long)ram_addr, (unsigned long)PMSIS_EMUL_L3_BASE,
             (unsigned long)(PMSIS_EMUL_L3_BASE + l3.size));
    check_block(&l3, ram_addr, (uint32_t)span, api, "RAM (L3)");
    check_l2_buffer(data, size, api);
    s = l3.mem + (ram_addr - PMSIS_EMUL_L3_BASE);
    if (!async) {
        if (ext2loc)
            gather((uint8_t *)data, s, size, stride, length);
        else
            scatter(s, (const uint8_t *)data, size, stride, length);
        ram_reqs++;
        ram_bytes += size;
    } else {
        req->device = device;
        req->addr = data;
        req->pi_ram_addr = ram_addr;
        req->size = size;
        req->stride = (int32_t)stride;
        req->length = length;
        req->done = 0;
        req->ext2loc = (unsigned char)(ext2loc != 0);
        req->is_2d = (unsigned char)is_2d;
        xfer_issue(XFER_RAM, api, req, &req->id, (uint8_t *)data, (uintptr_t)data, s, ram_addr,
                   size, stride, length, ext2loc != 0);
    }
    nn_emul_unlock();
}

void pi_ram_read(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size)
{
    ram_xfer(0, "pi_ram_read", device, pi_ram_addr, data, size, 0, 0, 1, 0, NULL);
}

void pi_ram_write(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size)
{
    ram_xfer(0, "pi_ram_write", device, pi_ram_addr, data, size, 0, 0, 0, 0, NULL);
}

void pi_ram_copy(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size,
                 int ext2loc)
{
    ram_xfer(0, "pi_ram_copy", device, pi_ram_addr, data, size, 0, 0, ext2loc, 0, NULL);
}

void pi_ram_read_2d(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size,
                    uint32_t stride, uint32_t length)
{
    ram_xfer(0, "pi_ram_read_2d", device, pi_ram_addr, data, size, stride, length, 1, 1, NULL);
}

void pi_ram_write_2d(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size,
                     uint32_t stride, uint32_t length)
{
    ram_xfer(0, "pi_ram_write_2d", device, pi_ram_addr, data, size, stride, length, 0, 1, NULL);
}

void pi_ram_copy_2d(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size,
                    uint32_t stride, uint32_t length, int ext2loc)
{
    ram_xfer(0, "pi_ram_copy_2d", device, pi_ram_addr, data, size, stride, length, ext2loc, 1,
             NULL);
}

void pi_cl_ram_read(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                    pi_cl_ram_req_t *req)
{
    ram_xfer(1, "pi_cl_ram_read", device, pi_ram_addr, addr, size, 0, 0, 1, 0, req);
}

void pi_cl_ram_write(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                     pi_cl_ram_req_t *req)
{
    ram_xfer(1, "pi_cl_ram_write", device, pi_ram_addr, addr, size, 0, 0, 0, 0, req);
}

void pi_cl_ram_copy(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                    int ext2loc, pi_cl_ram_req_t *req)
{
    ram_xfer(1, "pi_cl_ram_copy", device, pi_ram_addr, addr, size, 0, 0, ext2loc, 0, req);
}

void pi_cl_ram_read_2d(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                       uint32_t stride, uint32_t length, pi_cl_ram_req_t *req)
{
    ram_xfer(1, "pi_cl_ram_read_2d", device, pi_ram_addr, addr, size, stride, length, 1, 1, req);
}

void pi_cl_ram_write_2d(struct pi_device *device, uint32_t pi_ram_addr, void *addr,
                        uint32_t size, uint32_t stride, uint32_t length, pi_cl_ram_req_t *req)
{
    ram_xfer(1, "pi_cl_ram_write_2d", device, pi_ram_addr, addr, size, stride, length, 0, 1, req);
}

void pi_cl_ram_copy_2d(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                       uint32_t stride, uint32_t length, int ext2loc, pi_cl_ram_req_t *req)
{
    ram_xfer(1, "pi_cl_ram_copy_2d", device, pi_ram_addr, addr, size, stride, length, ext2loc, 1,
             req);
}

static void ram_wait(const char *api, pi_cl_ram_req_t *req)
{
    emul_init();
    require_cluster(api);
    nn_emul_lock();
    xfer_wait(XFER_RAM, api, req);
    req->done = 1;
    nn_emul_unlock();
}

void pi_cl_ram_read_wait(pi_cl_ram_req_t *req)
{
    ram_wait("pi_cl_ram_read_wait", req);
}

void pi_cl_ram_write_wait(pi_cl_ram_req_t *req)
{
    ram_wait("pi_cl_ram_write_wait", req);
}

void pi_cl_ram_copy_wait(pi_cl_ram_req_t *req)
{
    ram_wait("pi_cl_ram_copy_wait", req);
}

/* ---- flash (only opened, for readfs) ------------------------------------------------------- */

void pi_mx25u51245g_conf_init(struct pi_mx25u51245g_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    conf->flash.api = FLASH_API_TAG;
}

int pi_flash_open(struct pi_device *device)
{
    emul_init();
    require_fc("pi_flash_open");
    if (!device || !device->config)
        fail("pi_flash_open: no conf (pi_open_from_conf)");
    if (((struct pi_flash_conf *)device->config)->api != FLASH_API_TAG)
        fail("pi_flash_open: the conf was not initialized by pi_default_flash_conf_init");
    device->data = (void *)&flash_tag;
    return 0;
}

void pi_flash_close(struct pi_device *device)
{
    require_fc("pi_flash_close");
    if (!device || device->data != (void *)&flash_tag)
        fail("pi_flash_close: the device is not an opened flash device");
    device->data = NULL;
}

/* ---- file system --------------------------------------------------------------------------- */

#define FILE_MAGIC 0x46494c45u

typedef struct {
    pi_fs_file_t pub; /* first: the program holds &pub */
    FILE *fp;
    uint32_t magic;
} emul_file_t;

void pi_fs_conf_init(struct pi_fs_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    conf->type = PI_FS_READ_ONLY;
    conf->api = FS_API_TAG;
}

void pi_readfs_conf_init(struct pi_readfs_conf *conf)
{
    pi_fs_conf_init(&conf->fs);
}

void pi_hostfs_conf_init(struct pi_hostfs_conf *conf)
{
    pi_fs_conf_init(&conf->fs);
    conf->fs.type = PI_FS_HOST;
}

int32_t pi_fs_mount(struct pi_device *device)
{
    struct pi_fs_conf *conf;
    emul_init();
    require_fc("pi_fs_mount");
    if (!device || !device->config)
        fail("pi_fs_mount: no conf (pi_open_from_conf)");
    conf = (struct pi_fs_conf *)device->config;
    if (conf->api != FS_API_TAG)
        fail("pi_fs_mount: the conf was not initialized by pi_readfs_conf_init / "
             "pi_hostfs_conf_init");
    if (conf->type == PI_FS_READ_ONLY) {
        if (!conf->flash || conf->flash->data != (void *)&flash_tag)
            fail("pi_fs_mount: a readfs needs conf.fs.flash = an opened flash device "
                 "(pi_flash_open)");
    } else if (conf->type != PI_FS_HOST) {
        fail("pi_fs_mount: file-system type %d is not emulated (readfs and hostfs are)",
             (int)conf->type);
    }
    device->data = (void *)&fs_tag;
    return 0;
}

void pi_fs_unmount(struct pi_device *device)
{
    require_fc("pi_fs_unmount");
    if (!device || device->data != (void *)&fs_tag)
        fail("pi_fs_unmount: the device is not a mounted file system");
    device->data = NULL;
}

pi_fs_file_t *pi_fs_open(struct pi_device *device, const char *file, int flags)
{
    char path[NN_EMUL_FS_PATH_MAX];
    const char *dir = getenv("NN_EMUL_FS_DIR");
    emul_file_t *f;
    FILE *fp;
    long size;
    int n;
    emul_init();
    require_fc("pi_fs_open");
    if (!device || device->data != (void *)&fs_tag)
        fail("pi_fs_open: the device is not a mounted file system (pi_fs_mount)");
    if (!file || !*file)
        fail("pi_fs_open: no file name");
    if (flags != PI_FS_FLAGS_READ)
        fail("pi_fs_open(\"%s\", %d): only reading is emulated (readfs is read-only)", file, flags);
    if (file[0] == '/' || !dir || !*dir)
        n = snprintf(path, sizeof path, "%s", file);
    else
        n = snprintf(path, sizeof path, "%s/%s", dir, file);
    if (n < 0 || (size_t)n >= sizeof path)
        fail("pi_fs_open: the path of \"%s\" is too long", file);
    fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    if (fseek(fp, 0, SEEK_END) || (size = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET))
        fail("pi_fs_open: cannot find the size of %s", path);
    if ((unsigned long)size > 0xffffffffu)
        fail("pi_fs_open: %s is larger than 4 GiB", path);
    f = (emul_file_t *)calloc(1, sizeof *f);
    if (!f)
        fail("pi_fs_open: out of host memory");
    f->pub.fs = device;
    f->pub.api = FS_API_TAG;
    f->pub.data = fp;
    f->pub.size = (unsigned int)size;
    f->pub.fs_data = NULL;
    f->fp = fp;
    f->magic = FILE_MAGIC;
    return &f->pub;
}

static emul_file_t *check_file(pi_fs_file_t *file, const char *api)
{
    emul_file_t *f = (emul_file_t *)file;
    require_fc(api);
    if (!file || f->magic != FILE_MAGIC)
        fail("%s: not an open file (pi_fs_open)", api);
    return f;
}

void pi_fs_close(pi_fs_file_t *file)
{
    emul_file_t *f = check_file(file, "pi_fs_close");
    fclose(f->fp);
    f->magic = 0;
    free(f);
}

int32_t pi_fs_read(pi_fs_file_t *file, void *buffer, uint32_t size)
{
    emul_file_t *f = check_file(file, "pi_fs_read");
    size_t got;
    if (size == 0)
        return 0;
    nn_emul_lock();
    check_l2_buffer(buffer, size, "pi_fs_read");
    nn_emul_unlock();
    got = fread(buffer, 1, size, f->fp);
    if (got < size && ferror(f->fp))
        fail("pi_fs_read: read error");
    return (int32_t)got;
}

int32_t pi_fs_direct_read(pi_fs_file_t *file, void *buffer, uint32_t size)
{
    return pi_fs_read(file, buffer, size);
}

int32_t pi_fs_seek(pi_fs_file_t *file, unsigned int offset)
{
    emul_file_t *f = check_file(file, "pi_fs_seek");
    if (offset > f->pub.size)
        fail("pi_fs_seek(%u): beyond the end of the file (%u bytes)", offset, f->pub.size);
    if (fseek(f->fp, (long)offset, SEEK_SET))
        fail("pi_fs_seek(%u): seek error", offset);
    return 0;
}

int32_t pi_fs_copy(pi_fs_file_t *file, uint32_t index, void *buffer, uint32_t size,
                   int32_t ext2loc)
{
    emul_file_t *f = check_file(file, "pi_fs_copy");
    long pos;
    if (!ext2loc)
        fail("pi_fs_copy: writing (ext2loc 0) is not emulated (readfs is read-only)");
    if (index > f->pub.size || size > f->pub.size - index)
        fail("pi_fs_copy(index %lu, %lu bytes): beyond the end of the file (%u bytes)",
             (unsigned long)index, (unsigned long)size, f->pub.size);
    nn_emul_lock();
    check_l2_buffer(buffer, size, "pi_fs_copy");
    nn_emul_unlock();
    pos = ftell(f->fp);
    if (fseek(f->fp, (long)index, SEEK_SET) || fread(buffer, 1, size, f->fp) != size ||
        fseek(f->fp, pos, SEEK_SET))
        fail("pi_fs_copy: read error");
    return 0;
}

void pi_cl_fs_copy(pi_fs_file_t *file, uint32_t index, void *buffer, uint32_t size,
                   int32_t ext2loc, pi_cl_fs_req_t *req)
{
    emul_file_t *f;
    uint8_t *bytes;
    long pos;
    emul_init();
    require_cluster("pi_cl_fs_copy");
    f = (emul_file_t *)file;
    if (!file || f->magic != FILE_MAGIC)
        fail("pi_cl_fs_copy: not an open file (pi_fs_open)");
    if (!req)
        fail("pi_cl_fs_copy: req is NULL");
    if (!ext2loc)
        fail("pi_cl_fs_copy: writing (ext2loc 0) is not emulated (readfs is read-only)");
    if (size == 0 || index > f->pub.size || size > f->pub.size - index)
        fail("pi_cl_fs_copy(index %lu, %lu bytes): empty or beyond the end of the file (%u bytes)",
             (unsigned long)index, (unsigned long)size, f->pub.size);
    bytes = (uint8_t *)malloc(size);
    if (!bytes)
        fail("pi_cl_fs_copy: out of host memory");
    nn_emul_lock();
    check_l2_buffer(buffer, size, "pi_cl_fs_copy");
    pos = ftell(f->fp);
    if (fseek(f->fp, (long)index, SEEK_SET) || fread(bytes, 1, size, f->fp) != size ||
        fseek(f->fp, pos, SEEK_SET))
        fail("pi_cl_fs_copy: read error");
    req->file = file;
    req->index = index;
    req->buffer = buffer;
    req->size = size;
    req->ext2loc = ext2loc;
    req->done = 0;
    req->emul_data = bytes;
    xfer_issue(XFER_RAM, "pi_cl_fs_copy", req, &req->id, (uint8_t *)buffer, (uintptr_t)buffer, bytes,
               (uintptr_t)index, size, size, size, 1);
    nn_emul_unlock();
}

int32_t pi_cl_fs_wait(pi_cl_fs_req_t *req)
{
    emul_init();
    require_cluster("pi_cl_fs_wait");
    nn_emul_lock();
    xfer_wait(XFER_RAM, "pi_cl_fs_wait", req);
    free(req->emul_data);
    req->emul_data = NULL;
    req->done = 1;
    nn_emul_unlock();
    return 0;
}

/* ---- stats --------------------------------------------------------------------------------- */

void pmsis_emul_get_stats(struct pmsis_emul_stats *stats)
{
    emul_init();
    nn_emul_lock();
    stats->l1_live = l1.live;
    stats->l1_peak = l1.peak;
    stats->l1_stacks = l1.internal;
    stats->l1_limit = cl.l1_limit;
    stats->l2_live = l2.live;
    stats->l2_peak = l2.peak;
    stats->l3_live = l3.live;
    stats->l3_peak = l3.peak;
    stats->dma_cmds = dma_cmds;
    stats->dma_bytes = dma_bytes;
    stats->ram_reqs = ram_reqs;
    stats->ram_bytes = ram_bytes;
    stats->forks = nn_emul_fork_count();
    stats->tasks = cl.tasks;
    nn_emul_unlock();
}
