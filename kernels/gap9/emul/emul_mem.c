/*
 * emul_mem.c - the L1, L2 and L3 arenas and their host memory; L2 and cluster-L1 allocation, the
 * L1 limit, and the check of the L2 side of uDMA transfers. See pmsis.h.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* MAP_ANONYMOUS, MAP_FIXED_NOREPLACE, MAP_32BIT */
#endif

#include "pmsis_emul_internal.h"

#if UINTPTR_MAX > 0xffffffffu
/* 64-bit host: L1/L2 addresses travel through uint32_t (DMA ext/loc), so the arenas are mapped
 * below 4 GiB. */
#define NN_EMUL_LOW_MAP 1
#include <sys/mman.h>
#endif

/* ---- the arenas ---------------------------------------------------------------------------- */

/* name, the macro that sets the size (for messages), size */
#define ARENA(name, size) {name, #size, NULL, 0, size, NULL, 0, 0, 0, 0, 0}
nn_emul_arena_t nn_emul_l1 = ARENA("L1", NN_EMUL_L1_SIZE);
nn_emul_arena_t nn_emul_l2 = ARENA("L2", NN_EMUL_L2_SIZE);
nn_emul_arena_t nn_emul_l3 = ARENA("L3", NN_EMUL_L3_SIZE);

static uint8_t l3_mem[NN_EMUL_L3_SIZE]; /* hidden: L3 addresses are not pointers into it */
#ifndef NN_EMUL_LOW_MAP
static uint8_t l1_mem[NN_EMUL_L1_SIZE] __attribute__((aligned(64)));
static uint8_t l2_mem[NN_EMUL_L2_SIZE] __attribute__((aligned(64)));
#endif

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

void nn_emul_mem_init(void)
{
#ifdef NN_EMUL_LOW_MAP
    nn_emul_l1.mem = map_low(0x10000000u, nn_emul_l1.size, "L1"); /* GAP9: cluster L1 */
    nn_emul_l2.mem = map_low(0x1c010000u, nn_emul_l2.size, "L2"); /* GAP9: shared L2 */
#else
    nn_emul_l1.mem = l1_mem;
    nn_emul_l2.mem = l2_mem;
#endif
    nn_emul_l1.addr0 = (uintptr_t)nn_emul_l1.mem;
    nn_emul_l2.addr0 = (uintptr_t)nn_emul_l2.mem;
    nn_emul_l3.mem = l3_mem;
    nn_emul_l3.addr0 = PMSIS_EMUL_L3_BASE;
    nn_emul_arena_reset(&nn_emul_l1);
    nn_emul_arena_reset(&nn_emul_l2); /* L3 is reset by pi_ram_open */
}

/* The processor side of a uDMA transfer (RAM, file system): L2. Memory outside both arenas is
 * taken for FC stack or static data, which lives in L2 on GAP9. */
void nn_emul_check_l2_buffer(const void *data, uint32_t size, const char *api)
{
    if (!data)
        fail("%s: the buffer is NULL", api);
    if (nn_emul_arena_touches(&nn_emul_l1, (uintptr_t)data, size))
        fail("%s: the buffer 0x%08lx is in cluster L1, which the uDMA cannot reach (use L2)", api,
             (unsigned long)(uintptr_t)data);
    if (nn_emul_arena_touches(&nn_emul_l2, (uintptr_t)data, size))
        nn_emul_check_block(&nn_emul_l2, (uintptr_t)data, size, api, "buffer (L2)");
}

static void check_align(int align, const char *api)
{
    if (align < 4 || (align & (align - 1)))
        fail("%s: alignment %d is not a power of two >= 4", api, align);
}

/* ---- L2 ------------------------------------------------------------------------------------ */

static void *l2_alloc(int size, int align, const char *api)
{
    uint32_t off;
    nn_emul_init();
    nn_emul_require_fc(api);
    if (size <= 0)
        fail("%s(%d): the size must be > 0", api, size);
    nn_emul_lock();
    off = nn_emul_arena_alloc(&nn_emul_l2, (uint32_t)size, (uint32_t)align, NN_EMUL_BLK_USER,
                              NULL, api);
    nn_emul_unlock();
    return nn_emul_l2.mem + off;
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
    nn_emul_init();
    nn_emul_require_fc("pi_l2_free");
    if (size <= 0)
        fail("pi_l2_free(%p, %d): the size must be > 0", chunk, size);
    nn_emul_lock();
    nn_emul_arena_free(&nn_emul_l2, (uintptr_t)chunk, (uint32_t)size, "pi_l2_free");
    nn_emul_unlock();
}

void pi_l2_malloc_dump(void)
{
    nn_emul_init();
    nn_emul_lock();
    nn_emul_arena_dump(&nn_emul_l2);
    nn_emul_unlock();
}

/* ---- L1 ------------------------------------------------------------------------------------ */

static void *l1_alloc(struct pi_device *device, uint32_t size, uint32_t align, const char *api)
{
    nn_emul_arena_t *l1 = &nn_emul_l1;
    uint32_t limit, off;
    nn_emul_init();
    nn_emul_lock();
    nn_emul_check_cluster_dev(device, api);
    if (size == 0 || size > 0x7fffffffu)
        fail("%s(%ld): the size must be > 0", api, (long)(int32_t)size);
    limit = nn_emul_cl.l1_limit;
    if (limit && l1->live + nn_emul_round4(size) > limit)
        fail("%s(%lu bytes) from %s exceeds the L1 limit: %lu bytes live + %lu requested = %lu > "
             "limit %lu bytes (pmsis_emul_l1_limit)",
             api, (unsigned long)size, nn_emul_ctx_name(nn_emul_ctx()), (unsigned long)l1->live,
             (unsigned long)nn_emul_round4(size), (unsigned long)(l1->live + nn_emul_round4(size)),
             (unsigned long)limit);
    off = nn_emul_arena_alloc(l1, size, align, NN_EMUL_BLK_USER, NULL, api);
    nn_emul_unlock();
    return l1->mem + off;
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
    nn_emul_init();
    nn_emul_lock();
    nn_emul_check_cluster_dev(device, "pi_cl_l1_free");
    if (size <= 0)
        fail("pi_cl_l1_free(%p, %d): the size must be > 0", chunk, size);
    nn_emul_arena_free(&nn_emul_l1, (uintptr_t)chunk, (uint32_t)size, "pi_cl_l1_free");
    nn_emul_unlock();
}

void pi_cl_l1_malloc_dump(struct pi_device *device)
{
    (void)device;
    nn_emul_init();
    nn_emul_lock();
    nn_emul_arena_dump(&nn_emul_l1);
    nn_emul_unlock();
}

void pmsis_emul_l1_limit(uint32_t bytes)
{
    nn_emul_init();
    nn_emul_lock();
    if (bytes > nn_emul_l1.size)
        fail("pmsis_emul_l1_limit(%lu): more than the whole L1 (%s=%lu)", (unsigned long)bytes,
             nn_emul_l1.macro, (unsigned long)nn_emul_l1.size);
    if (bytes && nn_emul_l1.live > bytes)
        fail("pmsis_emul_l1_limit(%lu): %lu bytes of L1 are already live", (unsigned long)bytes,
             (unsigned long)nn_emul_l1.live);
    nn_emul_cl.l1_limit = bytes;
    nn_emul_unlock();
}
