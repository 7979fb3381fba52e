/*
 * pmsis_emul.h - extensions of the PMSIS emulation (not in the GAP SDK).
 *
 * Guard uses with #ifdef PMSIS_EMUL so the same sources build against the real SDK.
 *
 * Compile-time sizes (override with -D):
 *   NN_EMUL_L1_SIZE            cluster L1 arena, bytes (GAP9: 128 KiB)
 *   NN_EMUL_L2_SIZE            L2 arena, bytes (GAP9: 1.5 MiB)
 *   NN_EMUL_L3_SIZE            external RAM, bytes (GAP9 EVK APS256: 32 MiB)
 *   NN_EMUL_DMA_MAX_SIZE       bytes per cluster-DMA command
 *   NN_EMUL_DMA_MAX_INFLIGHT   cluster-DMA commands issued and not yet waited, all cores together
 *   NN_EMUL_SEQUENTIAL         run team cores one after the other on one thread (forced on bare
 *                              metal); a barrier inside a fork then fails
 */
#ifndef PMSIS_EMUL_PMSIS_EMUL_H
#define PMSIS_EMUL_PMSIS_EMUL_H

#include <stdint.h>

#include "pmsis.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef NN_EMUL_L1_SIZE
#define NN_EMUL_L1_SIZE (128u * 1024u)
#endif
#ifndef NN_EMUL_L2_SIZE
#define NN_EMUL_L2_SIZE 1572864u
#endif
#ifndef NN_EMUL_L3_SIZE
#define NN_EMUL_L3_SIZE (32u * 1024u * 1024u)
#endif
#ifndef NN_EMUL_DMA_MAX_SIZE
#define NN_EMUL_DMA_MAX_SIZE 65536u
#endif
#ifndef NN_EMUL_DMA_MAX_INFLIGHT
#define NN_EMUL_DMA_MAX_INFLIGHT 16
#endif

#if defined(__riscv) && !defined(__linux__) && !defined(NN_EMUL_SEQUENTIAL)
#define NN_EMUL_SEQUENTIAL 1 /* bare metal: no threads */
#endif

/* Exit status of every failure the emulation detects. */
#define PMSIS_EMUL_FAIL_STATUS 3

/* L1 addresses are mapped at 0x10000000 and L2 at 0x1c010000 natively (GAP9's addresses), so
 * (uint32_t)(uintptr_t)ptr round-trips on 64-bit hosts. L3 addresses start at this value, which is
 * unmapped natively and on qemu virt: dereferencing one faults. */
#define PMSIS_EMUL_L3_BASE 0x06000000u

/* Caps the bytes that pi_cl_l1_malloc may have live from now on (0: the whole L1). Already live
 * bytes count; a cap below them fails at once. Cluster stacks are not counted (they take arena
 * space: cc_stack_size while the cluster is open, 8 x slave_stack_size during a task). */
void pmsis_emul_l1_limit(uint32_t bytes);

struct pmsis_emul_stats {
    uint32_t l1_live, l1_peak;     /* pi_cl_l1_malloc bytes, rounded to 4 */
    uint32_t l1_stacks;            /* L1 bytes held by cluster stacks now */
    uint32_t l1_limit;             /* 0: none */
    uint32_t l2_live, l2_peak;     /* pi_l2_malloc bytes */
    uint32_t l3_live, l3_peak;     /* pi_ram_alloc bytes */
    uint64_t dma_cmds, dma_bytes;  /* cluster-DMA commands waited and bytes moved */
    uint64_t ram_reqs, ram_bytes;  /* pi_ram_* and pi_cl_ram_* transfers and bytes */
    uint32_t forks;                /* pi_cl_team_fork calls */
    uint32_t tasks;                /* cluster tasks run */
};

void pmsis_emul_get_stats(struct pmsis_emul_stats *stats);

/* Prints "PMSIS-EMUL ERROR: <message>" on stderr and exits with PMSIS_EMUL_FAIL_STATUS. */
void pmsis_emul_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((noreturn, format(printf, 1, 2)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif /* PMSIS_EMUL_PMSIS_EMUL_H */
