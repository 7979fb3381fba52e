/* nnscons GAP9 runtime: what generated layer code shares.
 *
 * - nn_dma_queue_t: cluster-DMA commands for HWC boxes, batched so that no more than
 *   NN_DMA_MAX_INFLIGHT commands are outstanding (the oldest is waited first) and no
 *   command moves more than NN_DMA_MAX_SIZE bytes.
 * - nn_stage_t: L3 -> L2 staging of parameter slabs through two L2 buffers; acquiring
 *   slab j waits for it and starts reading slab j+1 (pi_cl_ram_read), so the next slab,
 *   possibly the next layer's, loads while the cluster computes.
 * - nn_layer_io_t: a layer's L2 buffers, passed by network.c so layer code holds no
 *   global addresses.
 * - nn_split: the range of a work item count a core takes in pi_cl_team_fork.
 * - nn_readfs_mount, nn_fs_open_exact, nn_fs_open_sized, nn_fs_read_exact, nn_check_golden:
 *   the fabric controller's readfs files (the library's weights, the harness's input and
 *   goldens).  The library calls only the silent ones (nn_fs_open_sized, nn_fs_read_exact);
 *   those that print (nn_fs_open_exact, nn_check_golden) are the harnesses' and the
 *   applications'.
 */
#ifndef NN_GAP9_H
#define NN_GAP9_H

#include <stdint.h>
#include "pmsis.h"

#ifdef PMSIS_EMUL  /* defined by the emulation's pmsis.h */
#include "pmsis_emul.h"
/* the emulation caps live L1 at the layer's budget: an over-budget tiling fails loudly */
#define NN_L1_LIMIT(bytes) pmsis_emul_l1_limit(bytes)
#else
#define NN_L1_LIMIT(bytes) ((void)0)
#endif

#ifndef NN_DMA_MAX_INFLIGHT
#define NN_DMA_MAX_INFLIGHT 8
#endif
#ifndef NN_DMA_MAX_SIZE
#define NN_DMA_MAX_SIZE 65536
#endif
#ifndef NN_NUM_CORES
#define NN_NUM_CORES 8
#endif
#define NN_MAX_INPUTS 8

typedef struct {
    pi_cl_dma_cmd_t cmd[NN_DMA_MAX_INFLIGHT];
    int cap;        /* commands this queue may have in flight */
    int head;       /* next slot */
    int live;       /* outstanding commands, oldest at head - live */
} nn_dma_queue_t;

void nn_dma_init(nn_dma_queue_t *q, int cap);
/* rows x cols x chans box of an HWC tensor (W pixels per row, C channels per pixel) at l2,
 * to or from a dense [rows][cols][chans] buffer at l1. dir: PI_CL_DMA_DIR_EXT2LOC / LOC2EXT. */
void nn_dma_box(nn_dma_queue_t *q, void *l2, void *l1, int rows, int cols, int chans,
                int W, int C, pi_cl_dma_dir_e dir);
void nn_dma_linear(nn_dma_queue_t *q, void *l2, void *l1, uint32_t size, pi_cl_dma_dir_e dir);
void nn_dma_wait_all(nn_dma_queue_t *q);

/* L3 is external RAM (pi_cl_ram_read at l3_base + l3) or, with NN_L3_FLASH, the flash
 * itself: the weights stay in the layer's readfs file and slabs are read with
 * pi_cl_fs_copy at offset l3 of files[file]. */
typedef struct { uint32_t l3, size, dst; } nn_stage_read_t;
typedef struct { nn_stage_read_t read[4]; int n_reads; int file; } nn_slab_t;

typedef struct {
    struct pi_device *ram;
    uint32_t l3_base;
    pi_fs_file_t **files;
    uint8_t *buf[2];
    const nn_slab_t *slabs;
    int n_slabs;
    int issued;                 /* slabs whose read has been started */
#ifdef NN_L3_FLASH
    pi_cl_fs_req_t req[2][4];
#else
    pi_cl_ram_req_t req[2][4];
#endif
} nn_stage_t;

/* The L2 copy of slab `slab` (global index); starts reading slab + 1. */
const uint8_t *nn_stage_acquire(nn_stage_t *s, int slab);

typedef struct {
    struct pi_device *cluster;          /* for pi_cl_l1_malloc */
    const int8_t *in[NN_MAX_INPUTS];    /* L2 */
    int8_t *out;                        /* L2 */
    const uint8_t *params;              /* L2-resident parameters, or NULL when staged */
    nn_stage_t *stage;                  /* staged parameters */
    int first_slab;
    int *status;                        /* a layer that fails sets *status (NN_LAYER_*) and returns */
    /* activations in L3 (an element-wise layer streamed from L3 when its inputs do not fit L2
     * with its output): the inputs' L3 addresses, and an L2 buffer they pass through */
    uint32_t l3_in[NN_MAX_INPUTS];
    int8_t *l2_bounce;
} nn_layer_io_t;

#ifndef NN_L3_FLASH
/* size bytes at L3 address l3 into L1 through the L2 buffer bounce (the uDMA reaches L2, the
 * cluster DMA L1): synchronous, from the cluster */
void nn_l3_to_l1(struct pi_device *ram, uint32_t l3, int8_t *bounce, int8_t *l1, uint32_t size);
#endif

#define NN_LAYER_L1_FAILED 1            /* pi_cl_l1_malloc of the layer's block failed */

static inline void nn_split(int n, int *begin, int *end)
{
    const int core = pi_core_id(), per = (n + NN_NUM_CORES - 1) / NN_NUM_CORES;
    *begin = core * per < n ? core * per : n;
    *end = *begin + per < n ? *begin + per : n;
}

/* Opens the default flash and mounts its readfs partition on fs: 0, or -1. */
int nn_readfs_mount(struct pi_device *flash, struct pi_device *fs);
/* The readfs file `name`, open, when it holds exactly `size` bytes; else NULL (said on stdout). */
pi_fs_file_t *nn_fs_open_exact(struct pi_device *fs, const char *name, long size);
/* The same, silent (the library's): NULL with *why = NN_FS_MISSING or NN_FS_WRONG_SIZE. */
#define NN_FS_MISSING 1
#define NN_FS_WRONG_SIZE 2
pi_fs_file_t *nn_fs_open_sized(struct pi_device *fs, const char *name, long size, int *why);
/* Reads `size` bytes of f into dst: 0, or -1. */
int nn_fs_read_exact(pi_fs_file_t *f, void *dst, uint32_t size);
/* Compares got[0..size) with the readfs file `name`, read through chunk (chunk_size bytes, L2),
 * and prints the layer's line ("layer <index> <id>: OK" or "... MISMATCH ...").
 * 0: match, 1: mismatch, -1: I/O error. */
int nn_check_golden(struct pi_device *fs, const char *name, int index, const char *id, const int8_t *got,
                    long size, int8_t *chunk, long chunk_size);

#endif /* NN_GAP9_H */
