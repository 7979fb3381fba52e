/*
 * emul_stats.c - transfer counters and pmsis_emul_get_stats. See pmsis_emul.h.
 */
#include "pmsis_emul_internal.h"

static uint64_t dma_cmds, dma_bytes, ram_reqs, ram_bytes;

void nn_emul_count_transfer(int kind, uint32_t bytes)
{
    if (kind == NN_EMUL_XFER_DMA) {
        dma_cmds++;
        dma_bytes += bytes;
    } else {
        ram_reqs++;
        ram_bytes += bytes;
    }
}

void pmsis_emul_get_stats(struct pmsis_emul_stats *stats)
{
    nn_emul_init();
    nn_emul_lock();
    stats->l1_live = nn_emul_l1.live;
    stats->l1_peak = nn_emul_l1.peak;
    stats->l1_stacks = nn_emul_l1.internal;
    stats->l1_limit = nn_emul_cl.l1_limit;
    stats->l2_live = nn_emul_l2.live;
    stats->l2_peak = nn_emul_l2.peak;
    stats->l3_live = nn_emul_l3.live;
    stats->l3_peak = nn_emul_l3.peak;
    stats->dma_cmds = dma_cmds;
    stats->dma_bytes = dma_bytes;
    stats->ram_reqs = ram_reqs;
    stats->ram_bytes = ram_bytes;
    stats->forks = nn_emul_fork_count();
    stats->tasks = nn_emul_cl.tasks;
    nn_emul_unlock();
}
