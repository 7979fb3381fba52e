/* The bare-metal GVSoC runtime (pulp-open, GAP9 model), cluster side: core boot, the task loop of core 0, the team (fork, barrier),
 * L1 allocation, the mchan DMA. Idle cores sleep in the event unit between tasks and forks and
 * check their mailbox word in L1 when woken (events are latched: a wake-up before the sleep is
 * not lost). */
#include <stddef.h>
#include "open_internal.h"

/* Boot address of every cluster core: gp, its stack, the FC's TLS pointer, then C. */
__attribute__((naked)) void open_cluster_start(void)
{
    __asm__ volatile(".option push\n.option norelax\nla gp, __global_pointer$\n.option pop\n"
                     "csrr a0, mhartid\n"
                     "andi a0, a0, 0x1f\n"
                     "li t0, %0\n"
                     "slli t1, a0, 2\n"
                     "add t1, t1, t0\n"
                     "lw sp, %1(t1)\n"
                     "lw tp, %2(t0)\n"
                     "j open_cluster_main\n"
                     ::"i"(OPEN_L1_BASE), "i"(offsetof(open_ctrl_t, stack_top)),
                     "i"(offsetof(open_ctrl_t, tls)));
}

static void worker_loop(open_ctrl_t *c, uint32_t core)
{
    uint32_t seen = c->fork_gen;
    for (;;) {
        uint32_t g;
        while ((g = c->fork_gen) == seen)
            (void)REG32(OPEN_EU_WAIT_CLEAR);
        seen = g;
        if (core >= c->fork_n)
            continue;
        uint32_t a[OPEN_PERF_N], b[OPEN_PERF_N];
        open_perf_read(a);
        c->fork_fn(c->fork_arg);
        open_perf_read(b);
        for (int k = 0; k < OPEN_PERF_N; ++k)
            c->worker_perf[core][k] += b[k] - a[k];
        c->fork_done[core] = g;
    }
}

static void master_loop(open_ctrl_t *c)
{
    uint32_t seen = c->task_gen;
    for (;;) {
        uint32_t g;
        while ((g = c->task_gen) == seen)
            (void)REG32(OPEN_EU_WAIT_CLEAR);
        seen = g;
        for (int i = 0; i < OPEN_NB_CORES; ++i)
            for (int k = 0; k < OPEN_PERF_N; ++k)
                c->worker_perf[i][k] = 0;
        uint32_t a[OPEN_PERF_N], b[OPEN_PERF_N];
        open_perf_read(a);
        c->task_fn(c->task_arg);
        open_perf_read(b);
        c->perf[OPEN_PERF_CYCLES] = b[OPEN_PERF_CYCLES] - a[OPEN_PERF_CYCLES];
        for (int k = 1; k < OPEN_PERF_N; ++k) {
            uint32_t sum = b[k] - a[k];
            for (int i = 1; i < OPEN_NB_CORES; ++i)
                sum += c->worker_perf[i][k];
            c->perf[k] = sum;
        }
        c->task_done = g;
    }
}

void open_cluster_main(uint32_t core)
{
    open_perf_start();
    REG32(OPEN_EU_MASK_OR) = 1u << OPEN_EVENT_WAKE;
    if (core == 0)
        master_loop(OPEN_CTRL);
    worker_loop(OPEN_CTRL, core);
    for (;;)
        ;
}

/* ---- team ------------------------------------------------------------------------------------ */

int pi_cl_cluster_nb_cores(void)
{
    return OPEN_NB_CORES;
}

int pi_cl_team_nb_cores(void)
{
    return (int)OPEN_CTRL->fork_n;
}

void pi_cl_team_fork(int nb_cores, void (*entry)(void *), void *arg)
{
    open_ctrl_t *c = OPEN_CTRL;
    if (pi_core_id() != 0)
        open_fail("pi_cl_team_fork called from a team core (only cluster core 0 forks)");
    const uint32_t n = nb_cores <= 0 ? c->fork_n : (uint32_t)nb_cores;
    if (n < 1 || n > OPEN_NB_CORES)
        open_fail("pi_cl_team_fork: team size outside 1..the cluster's cores");
    for (int i = 0; i < OPEN_NB_CORES; ++i)
        c->barrier[i] = 0;
    c->fork_fn = entry;
    c->fork_arg = arg;
    c->fork_n = n;
    const uint32_t g = c->fork_gen + 1;
    c->fork_gen = g;                    /* workers start */
    REG32(OPEN_EU_SW_TRIGGER + 4u * OPEN_EVENT_WAKE) = ((1u << n) - 1u) & ~1u;
    entry(arg);
    for (uint32_t i = 1; i < n; ++i)
        while (c->fork_done[i] != g)
            ;
}

/* Each core counts the barriers it reached; it passes when every team core has reached as
 * many (single-writer counters: no atomics needed). */
void pi_cl_team_barrier(void)
{
    open_ctrl_t *c = OPEN_CTRL;
    const uint32_t core = pi_core_id(), n = c->fork_n;
    const uint32_t mine = c->barrier[core] + 1;
    c->barrier[core] = mine;
    for (uint32_t j = 0; j < n; ++j)
        while (c->barrier[j] < mine)
            ;
}

/* ---- L1 ------------------------------------------------------------------------------------- */

void *pi_cl_l1_malloc(struct pi_device *device, uint32_t size)
{
    (void)device;
    open_ctrl_t *c = OPEN_CTRL;
    const uint32_t s = (size + 7u) & ~7u;
    if (s > c->l1_end - c->l1_top)
        return NULL;
    void *p = (void *)(uintptr_t)c->l1_top;
    c->l1_top += s;
    return p;
}

void pi_cl_l1_free(struct pi_device *device, void *chunk, int size)
{
    (void)device;
    open_ctrl_t *c = OPEN_CTRL;
    const uint32_t s = ((uint32_t)size + 7u) & ~7u;
    if ((uint32_t)(uintptr_t)chunk + s != c->l1_top)
        open_fail("pi_cl_l1_free: not the most recent L1 allocation (the L1 allocator is a stack)");
    c->l1_top -= s;
}

/* ---- cluster DMA (mchan): CMD words are command, TCDM address, L2 address[, length, stride] ---- */

static uint32_t dma_issue(uint32_t ext, uint32_t loc, uint32_t size, pi_cl_dma_dir_e dir, int two_d,
                          uint32_t stride, uint32_t length)
{
    if (size == 0 || size > OPEN_MCHAN_LEN_MAX)
        open_fail("cluster DMA: transfer size 0 or above mchan's 17-bit length (128 KiB - 1)");
    const uint32_t id = REG32(OPEN_MCHAN_CMD);
    REG32(OPEN_MCHAN_CMD) = size | (dir == PI_CL_DMA_DIR_EXT2LOC ? OPEN_MCHAN_TYPE_L2_TO_L1 : 0u) |
                            OPEN_MCHAN_INCR | (two_d ? OPEN_MCHAN_2D_EXT : 0u);
    REG32(OPEN_MCHAN_CMD) = loc;
    REG32(OPEN_MCHAN_CMD) = ext;
    if (two_d) {
        REG32(OPEN_MCHAN_CMD) = length;
        REG32(OPEN_MCHAN_CMD) = stride;
    }
    return id;
}

static void dma_wait_id(uint32_t id)
{
    while ((REG32(OPEN_MCHAN_STATUS) >> id) & 1u)
        ;
    REG32(OPEN_MCHAN_STATUS) = 1u << id;     /* frees the transfer counter */
}

void pi_cl_dma_cmd(uint32_t ext, uint32_t loc, uint32_t size, pi_cl_dma_dir_e dir, pi_cl_dma_cmd_t *cmd)
{
    cmd->id = dma_issue(ext, loc, size, dir, 0, 0, 0);
}

void pi_cl_dma_cmd_2d(uint32_t ext, uint32_t loc, uint32_t size, uint32_t stride, uint32_t length,
                      pi_cl_dma_dir_e dir, pi_cl_dma_cmd_t *cmd)
{
    cmd->id = dma_issue(ext, loc, size, dir, 1, stride, length);
}

void pi_cl_dma_cmd_wait(pi_cl_dma_cmd_t *cmd)
{
    dma_wait_id(cmd->id);
}

void pi_cl_dma_flush(void)
{
    while (REG32(OPEN_MCHAN_STATUS) & 0xffffu)
        ;
}

void pi_cl_dma_memcpy(pi_cl_dma_copy_t *copy)
{
    copy->id = dma_issue(copy->ext, copy->loc, copy->size, copy->dir, 0, 0, 0);
}

void pi_cl_dma_memcpy_2d(pi_cl_dma_copy_2d_t *copy)
{
    copy->id = dma_issue(copy->ext, copy->loc, copy->size, copy->dir, 1, copy->stride, copy->length);
}

void pi_cl_dma_wait(void *copy)
{
    dma_wait_id(((pi_cl_dma_copy_t *)copy)->id);
}
