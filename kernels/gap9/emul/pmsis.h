/*
 * pmsis.h - PMSIS emulation for the GAP9 target (platform=emul natively, platform=qemu on rv32).
 *
 * The declarations are those of ../pmsis_api.h (shared with the pulp-open runtime, with the
 * GAP SDK files they follow); this file adds the emulation's private request fields.
 *
 * The emulation exists to make bugs visible: every misuse it can see (over-budget L1, L2 overflow,
 * out-of-arena or unwaited DMA, mismatched frees, barriers that cannot meet, ...) prints one
 * "PMSIS-EMUL ERROR:" line on stderr and exits with status 3. Emulation-only extensions live in
 * pmsis_emul.h. Code can test for the emulation with #ifdef PMSIS_EMUL.
 *
 * The implementation: every *.c file here, one job each (pmsis_emul_internal.h is what they
 * share):
 *   emul_core.c ......... init, failure, kickoff/exit, pi_open_from_conf, core and cluster ids
 *   emul_arena.c ........ the arena allocator behind L1, L2 and L3 (checks, poisoning)
 *   emul_mem.c .......... the L1/L2/L3 arenas; pi_l2_malloc/free, pi_cl_l1_malloc/free, L1 limit
 *   emul_cluster.c ...... cluster open/close, cluster tasks
 *   emul_xfer.c ......... transfers that land at their wait (DMA, pi_cl_ram, pi_cl_fs_copy)
 *   emul_dma.c .......... cluster DMA
 *   emul_ram.c .......... external RAM (L3), FC and cluster side
 *   emul_fs.c ........... flash, readfs/hostfs, pi_cl_fs_copy
 *   emul_stats.c ........ pmsis_emul_get_stats
 *   team_threads.c ...... the team on 8 POSIX threads (natively; the default)
 *   team_sequential.c ... the team on one thread (qemu, or -DNN_EMUL_SEQUENTIAL)
 * A build compiles all of them; each team backend compiles to nothing unless selected.
 */
#ifndef PMSIS_EMUL_PMSIS_H
#define PMSIS_EMUL_PMSIS_H

#include <stdint.h>

#define PMSIS_EMUL 1

struct pi_device;
struct pi_fs_file_s;

/* Cluster-side transfers land only at their wait (emul_xfer.c): a request holds the copy. */
#define PMSIS_BACKEND_CL_RAM_REQ \
    struct pi_device *device;    \
    void *addr;                  \
    uint32_t pi_ram_addr;        \
    uint32_t size;               \
    int32_t stride;              \
    uint32_t length;             \
    uint8_t done;                \
    unsigned char ext2loc;       \
    unsigned char is_2d;
#define PMSIS_BACKEND_FS_FILE
/* Only ext2loc = 1 (file -> chip) is emulated; one cluster task may start a copy that the
 * next waits for. Files are looked up in $NN_EMUL_FS_DIR (default ".") natively, in qemu's
 * working directory on qemu. */
#define PMSIS_BACKEND_CL_FS_REQ      \
    struct pi_fs_file_s *file;       \
    uint32_t index;                  \
    void *buffer;                    \
    uint32_t size;                   \
    int32_t ext2loc;                 \
    uint8_t done;                    \
    uint32_t id;     /* set at issue, checked at wait */ \
    void *emul_data; /* the file bytes read at issue */

#include "../pmsis_api.h" /* beside this folder: found whatever the include path */

#endif /* PMSIS_EMUL_PMSIS_H */
