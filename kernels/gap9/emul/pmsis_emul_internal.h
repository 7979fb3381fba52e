/*
 * pmsis_emul_internal.h - what the files of the PMSIS emulation share. Not for application code.
 *
 *   emul_core.c ......... init, failure, caller checks (FC / cluster / controller) and names,
 *                         kickoff and exit, pi_open_from_conf, core and cluster ids
 *   emul_arena.c ........ the arena allocator behind L1, L2 and L3: first-fit blocks, poisoning
 *                         (and ASan poisoning), frees checked against the allocation, range checks
 *   emul_mem.c .......... the L1, L2 and L3 arenas and their host memory; pi_l2_malloc/free,
 *                         pi_cl_l1_malloc/free, the L1 limit; the L2 side of uDMA transfers
 *   emul_cluster.c ...... cluster open/close, cluster tasks and their stacks
 *   emul_xfer.c ......... transfers that land at their wait (cluster DMA, pi_cl_ram_*,
 *                         pi_cl_fs_copy): issue, land, wait, race checks, pending counts
 *   emul_dma.c .......... cluster DMA (pi_cl_dma_*)
 *   emul_ram.c .......... external RAM (L3): pi_ram_* on the FC, pi_cl_ram_* on the cluster
 *   emul_fs.c ........... flash (opened for readfs), readfs/hostfs files, pi_cl_fs_copy
 *   emul_stats.c ........ transfer counters, pmsis_emul_get_stats
 *   team_threads.c ...... team backend: 8 POSIX threads (natively)
 *   team_sequential.c ... team backend: one thread (qemu, or -DNN_EMUL_SEQUENTIAL)
 *
 * Every detected misuse calls pmsis_emul_fail(): one message, exit status 3. All emulation state
 * is guarded by nn_emul_lock().
 */
#ifndef PMSIS_EMUL_INTERNAL_H
#define PMSIS_EMUL_INTERNAL_H

#include "pmsis_emul.h"

#define NN_EMUL_NB_PE 8      /* team cores, ids 0..7 (ARCHI_CLUSTER_NB_PE) */
#define NN_EMUL_CC_CORE_ID 8 /* cluster controller (ARCHI_CC_CORE_ID) */
#define NN_EMUL_CTX_FC (-1)  /* the fabric controller */

/* The emulation files' short name for pmsis_emul_fail. */
#define fail pmsis_emul_fail

/* ---- provided by the team backend (team_threads.c or team_sequential.c) -------------------- */

void nn_emul_backend_init(void);
int nn_emul_ctx(void);              /* NN_EMUL_CTX_FC, 0..7 or NN_EMUL_CC_CORE_ID */
void nn_emul_set_ctx(int ctx);      /* for the calling thread */
void nn_emul_lock(void);            /* guards all emulation state */
void nn_emul_unlock(void);
void nn_emul_fail_begin(void);      /* first failing thread reports, the others block */
void nn_emul_cluster_up(void);      /* at pi_cluster_open: start the team cores */
void nn_emul_cluster_down(void);    /* at pi_cluster_close */
void nn_emul_task_begin(int nb_cores); /* default team of the task's forks */
uint32_t nn_emul_fork_count(void);
/* nb_cores of a fork or prepare_fork checked (1..8, 0: `previous`), both team backends */
int nn_emul_team_size(int nb_cores, int previous, const char *api);

/* ---- emul_core.c --------------------------------------------------------------------------- */

void nn_emul_init(void); /* once, at the first call of any API function that needs it */
/* "core 3", "the cluster controller (core 8)", "the FC". */
const char *nn_emul_ctx_name(int ctx);
/* Fail unless the caller is the cluster controller / the FC / on the cluster (what = API name,
 * for the message). */
void nn_emul_require_cc(const char *what);
void nn_emul_require_fc(const char *what);
void nn_emul_require_cluster(const char *what);

/* ---- emul_arena.c -------------------------------------------------------------------------- */

#define NN_EMUL_NOFIT 0xffffffffu /* no offset */

enum { NN_EMUL_BLK_USER, NN_EMUL_BLK_INTERNAL };

typedef struct {
    uint32_t off;     /* from the arena start */
    uint32_t size;    /* bytes taken: req rounded up to the placement grain */
    uint32_t req;     /* bytes requested */
    uint32_t acct;    /* bytes accounted: req rounded up to 4 (the SDK's granularity) */
    int kind;
    const char *what; /* internal blocks: what holds them */
} nn_emul_block_t;

typedef struct {
    const char *name;  /* "L1" */
    const char *macro; /* "NN_EMUL_L1_SIZE" */
    uint8_t *mem;      /* host memory of offset 0 */
    uintptr_t addr0;   /* the address programs use for offset 0 */
    uint32_t size;
    nn_emul_block_t *blk; /* sorted by off */
    uint32_t n, cap;
    uint32_t live, peak; /* user blocks, accounted bytes */
    uint32_t internal;   /* runtime blocks (cluster stacks), accounted bytes */
} nn_emul_arena_t;

uint32_t nn_emul_round4(uint32_t n);
/* Offset of a new block of req bytes (kind NN_EMUL_BLK_*); fails when it does not fit. */
uint32_t nn_emul_arena_alloc(nn_emul_arena_t *a, uint32_t req, uint32_t align, int kind,
                             const char *what, const char *api);
/* Frees the user block at addr, which must have been allocated with req bytes. */
void nn_emul_arena_free(nn_emul_arena_t *a, uintptr_t addr, uint32_t req, const char *api);
/* Drops the block at *off unless *off is NN_EMUL_NOFIT, then sets *off to NN_EMUL_NOFIT. */
void nn_emul_arena_release(nn_emul_arena_t *a, uint32_t *off);
/* Drops every block (the memory goes away: cluster or RAM closed). */
void nn_emul_arena_reset(nn_emul_arena_t *a);
/* Whether [addr, addr+n) overlaps the arena. */
int nn_emul_arena_touches(const nn_emul_arena_t *a, uintptr_t addr, uint32_t n);
/* Fails unless [addr, addr+n) lies inside one live user block of a (side names it). */
void nn_emul_check_block(const nn_emul_arena_t *a, uintptr_t addr, uint32_t n, const char *api,
                         const char *side);
void nn_emul_arena_dump(const nn_emul_arena_t *a);

/* ---- emul_mem.c ---------------------------------------------------------------------------- */

extern nn_emul_arena_t nn_emul_l1, nn_emul_l2, nn_emul_l3;

void nn_emul_mem_init(void); /* places the arenas (from nn_emul_init) */
/* The processor side of a uDMA transfer (RAM, file system) must be L2. */
void nn_emul_check_l2_buffer(const void *data, uint32_t size, const char *api);

/* ---- emul_cluster.c ------------------------------------------------------------------------ */

struct nn_emul_cluster {
    int open;
    int in_task;
    uint32_t l1_limit; /* pmsis_emul_l1_limit; 0: none */
    uint32_t tasks;
};
extern struct nn_emul_cluster nn_emul_cl;

/* Fails unless the cluster is open and device (if not NULL) is its device. */
void nn_emul_check_cluster_dev(struct pi_device *device, const char *api);

/* ---- emul_xfer.c --------------------------------------------------------------------------- */

/* Transfer kinds: cluster DMA; requests served by the FC's uDMA (pi_cl_ram_*, pi_cl_fs_copy). */
enum { NN_EMUL_XFER_DMA, NN_EMUL_XFER_RAM };

/* Transfers of a kind (-1: all) in flight; the first one's API, issuer and size if first_api. */
uint32_t nn_emul_pending_count(int kind, const char **first_api, int *first_issuer,
                               uint32_t *first_size);
/* Checks a transfer pattern: lines of length bytes, stride apart (is_2d) or one line (then sets
 * *stride and *length to size). Returns the bytes it spans on the strided side. */
uint32_t nn_emul_xfer_span(const char *api, uint32_t size, uint32_t *stride, uint32_t *length,
                           int is_2d);
/* Strided copies: s is the strided side. */
void nn_emul_gather(uint8_t *out, const uint8_t *s, uint32_t size, uint32_t stride,
                    uint32_t length);
void nn_emul_scatter(uint8_t *s, const uint8_t *in, uint32_t size, uint32_t stride,
                     uint32_t length);
/* Starts a transfer on the struct key (id field *idp) between the contiguous side c and the
 * strided side s (addresses c_addr, s_addr for messages); to_c: s -> c. It lands at its wait. */
void nn_emul_xfer_issue(int kind, const char *api, const void *key, uint32_t *idp, uint8_t *c,
                        uintptr_t c_addr, uint8_t *s, uintptr_t s_addr, uint32_t size,
                        uint32_t stride, uint32_t length, int to_c);
/* Lands and retires the transfer on key. */
void nn_emul_xfer_wait(int kind, const char *api, const void *key);
/* Lands (without retiring) every transfer of a kind in flight. */
void nn_emul_xfer_land_all(int kind);

/* ---- emul_stats.c -------------------------------------------------------------------------- */

void nn_emul_count_transfer(int kind, uint32_t bytes); /* a transfer of kind completed */

#endif /* PMSIS_EMUL_INTERNAL_H */
