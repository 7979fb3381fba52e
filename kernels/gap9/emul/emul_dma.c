/*
 * emul_dma.c - the cluster DMA (pi_cl_dma_*): commands checked against the L1 and L2 blocks and
 * the in-flight limit, then handed to emul_xfer.c, where they land at their wait. See pmsis.h.
 */
#include "pmsis_emul_internal.h"

static void dma_issue(const char *api, const void *key, uint32_t *idp, uint32_t ext, uint32_t loc,
                      uint32_t size, uint32_t stride, uint32_t length, int dir, int is_2d)
{
    uint32_t span;
    nn_emul_init();
    nn_emul_require_cluster(api);
    nn_emul_lock();
    if (!nn_emul_cl.in_task)
        fail("%s: no cluster task is running", api);
    if (dir != PI_CL_DMA_DIR_EXT2LOC && dir != PI_CL_DMA_DIR_LOC2EXT)
        fail("%s: direction %d is neither PI_CL_DMA_DIR_EXT2LOC nor PI_CL_DMA_DIR_LOC2EXT", api,
             dir);
    if (size == 0 || size > NN_EMUL_DMA_MAX_SIZE)
        fail("%s: size %lu is not in 1..%lu (NN_EMUL_DMA_MAX_SIZE)", api, (unsigned long)size,
             (unsigned long)NN_EMUL_DMA_MAX_SIZE);
    span = nn_emul_xfer_span(api, size, &stride, &length, is_2d);
    nn_emul_check_block(&nn_emul_l1, (uintptr_t)loc, size, api, "loc (L1)");
    nn_emul_check_block(&nn_emul_l2, (uintptr_t)ext, span, api, "ext (L2)");
    if (nn_emul_pending_count(NN_EMUL_XFER_DMA, NULL, NULL, NULL) >= NN_EMUL_DMA_MAX_INFLIGHT)
        fail("%s from %s: %d cluster-DMA commands are already in flight "
             "(NN_EMUL_DMA_MAX_INFLIGHT=%d); wait on some first",
             api, nn_emul_ctx_name(nn_emul_ctx()), NN_EMUL_DMA_MAX_INFLIGHT,
             NN_EMUL_DMA_MAX_INFLIGHT);
    nn_emul_xfer_issue(NN_EMUL_XFER_DMA, api, key, idp, (uint8_t *)(uintptr_t)loc, loc,
                       (uint8_t *)(uintptr_t)ext, ext, size, stride, length,
                       dir == PI_CL_DMA_DIR_EXT2LOC);
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
    nn_emul_init();
    nn_emul_require_cluster(api);
    nn_emul_lock();
    nn_emul_xfer_wait(NN_EMUL_XFER_DMA, api, key);
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
    nn_emul_init();
    nn_emul_require_cluster("pi_cl_dma_flush");
    nn_emul_lock();
    nn_emul_xfer_land_all(NN_EMUL_XFER_DMA);
    nn_emul_unlock();
}
