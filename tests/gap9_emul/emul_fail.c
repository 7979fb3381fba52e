/*
 * emul_fail.c - misuses the PMSIS emulation must reject: each scenario (argv[1], or the
 * EMUL_SCENARIO macro where there is no command line, as on qemu) must end with exit status 3
 * and a "PMSIS-EMUL ERROR:" message. Reaching the end prints "NOT DETECTED" and exits 0.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pmsis.h"
#include "pmsis_emul.h"

#define ADDR(p) ((uint32_t)(uintptr_t)(p))

static const char *scenario = "";
static struct pi_device cluster_dev, ram_dev;
static uint8_t *l2a, *l2b;
static uint32_t l3_addr;

static int is(const char *name)
{
    return strcmp(scenario, name) == 0;
}

static void barrier_in_fork(void *arg)
{
    (void)arg;
    pi_cl_team_barrier();
}

static void barrier_on_core0_only(void *arg)
{
    (void)arg;
    if (pi_core_id() == 0)
        pi_cl_team_barrier();
}

static void nested_fork(void *arg)
{
    pi_cl_team_fork(2, barrier_in_fork, arg);
}

static void cluster_main(void *arg)
{
    pi_cl_dma_cmd_t cmd, cmds[17];
    pi_cl_ram_req_t req;
    uint8_t *l1 = (uint8_t *)pi_cl_l1_malloc(&cluster_dev, 1024), *x;
    uint8_t on_stack[64];
    int i;

    if (is("dma_inflight")) /* 17 > NN_EMUL_DMA_MAX_INFLIGHT */
        for (i = 0; i < 17; i++)
            pi_cl_dma_cmd(ADDR(l2a + 16 * i), ADDR(l1 + 16 * i), 16, PI_CL_DMA_DIR_EXT2LOC, &cmds[i]);
    if (is("l1_limit")) {
        pmsis_emul_l1_limit(2048); /* 1024 live already */
        x = (uint8_t *)pi_cl_l1_malloc(&cluster_dev, 800);
        x = (uint8_t *)pi_cl_l1_malloc(&cluster_dev, 400);
    }
    if (is("l1_arena"))
        x = (uint8_t *)pi_cl_l1_malloc(&cluster_dev, NN_EMUL_L1_SIZE);
    if (is("dma_ext_not_l2"))
        pi_cl_dma_cmd(ADDR(on_stack), ADDR(l1), 64, PI_CL_DMA_DIR_EXT2LOC, &cmd);
    if (is("dma_loc_not_l1"))
        pi_cl_dma_cmd(ADDR(l2a), ADDR(l2b), 64, PI_CL_DMA_DIR_EXT2LOC, &cmd);
    if (is("dma_ext_overflow")) /* 64 bytes past a 1024-byte L2 block */
        pi_cl_dma_cmd(ADDR(l2a + 1000), ADDR(l1), 88, PI_CL_DMA_DIR_EXT2LOC, &cmd);
    if (is("dma_2d_overflow")) /* 4 lines 300 apart span 964 bytes: past the 1024-byte block */
        pi_cl_dma_cmd_2d(ADDR(l2a + 100), ADDR(l1), 256, 300, 64, PI_CL_DMA_DIR_EXT2LOC, &cmd);
    if (is("dma_freed_l1")) {
        pi_cl_l1_free(&cluster_dev, l1, 1024);
        pi_cl_dma_cmd(ADDR(l2a), ADDR(l1), 64, PI_CL_DMA_DIR_EXT2LOC, &cmd);
    }
    if (is("dma_too_big"))
        pi_cl_dma_cmd(ADDR(l2a), ADDR(l1), NN_EMUL_DMA_MAX_SIZE + 1, PI_CL_DMA_DIR_EXT2LOC, &cmd);
    if (is("dma_size_0"))
        pi_cl_dma_cmd(ADDR(l2a), ADDR(l1), 0, PI_CL_DMA_DIR_EXT2LOC, &cmd);
    if (is("dma_wait_twice")) {
        pi_cl_dma_cmd(ADDR(l2a), ADDR(l1), 64, PI_CL_DMA_DIR_EXT2LOC, &cmd);
        pi_cl_dma_cmd_wait(&cmd);
        pi_cl_dma_cmd_wait(&cmd);
    }
    if (is("dma_wait_never_issued")) {
        memset(&cmd, 0, sizeof cmd);
        pi_cl_dma_cmd_wait(&cmd);
    }
    if (is("dma_reused_cmd")) {
        pi_cl_dma_cmd(ADDR(l2a), ADDR(l1), 64, PI_CL_DMA_DIR_EXT2LOC, &cmd);
        pi_cl_dma_cmd(ADDR(l2a + 64), ADDR(l1 + 64), 64, PI_CL_DMA_DIR_EXT2LOC, &cmd);
    }
    if (is("dma_unwaited")) /* the task returns with the command in flight */
        pi_cl_dma_cmd(ADDR(l2a), ADDR(l1), 64, PI_CL_DMA_DIR_EXT2LOC, &cmd);
    if (is("dma_src_race")) { /* the L1 source is overwritten before the LOC2EXT landed */
        memset(l1, 1, 64);
        pi_cl_dma_cmd(ADDR(l2a), ADDR(l1), 64, PI_CL_DMA_DIR_LOC2EXT, &cmd);
        l1[10] = 2;
        pi_cl_dma_cmd_wait(&cmd);
    }
    if (is("dma_dst_race")) { /* a core writes the L1 destination before the wait */
        pi_cl_dma_cmd(ADDR(l2a), ADDR(l1), 64, PI_CL_DMA_DIR_EXT2LOC, &cmd);
        l1[3] = (uint8_t)(l1[3] + 1);
        pi_cl_dma_cmd_wait(&cmd);
    }
    if (is("barrier_sequential") || is("barrier_deadlock") || is("barrier_on_cc") ||
        is("nested_fork")) {
        if (is("barrier_sequential"))
            pi_cl_team_fork(8, barrier_in_fork, NULL);
        if (is("barrier_deadlock"))
            pi_cl_team_fork(8, barrier_on_core0_only, NULL);
        if (is("barrier_on_cc"))
            pi_cl_team_barrier();
        if (is("nested_fork"))
            pi_cl_team_fork(2, nested_fork, NULL);
    }
    if (is("fork_9"))
        pi_cl_team_fork(9, barrier_in_fork, NULL);
    if (is("cl_ram_read_to_l1"))
        pi_cl_ram_read(&ram_dev, l3_addr, l1, 64, &req);
    if (is("cl_ram_read_past_block"))
        pi_cl_ram_read(&ram_dev, l3_addr + 200, l2a, 64, &req);
    if (is("cl_ram_wait_twice")) {
        pi_cl_ram_read(&ram_dev, l3_addr, l2a, 64, &req);
        pi_cl_ram_read_wait(&req);
        pi_cl_ram_read_wait(&req);
    }
    if (is("ram_read_on_cluster"))
        pi_ram_read(&ram_dev, l3_addr, l2a, 64);
    if (is("l1_overrun")) /* caught by AddressSanitizer builds only */
        l1[1024 + (int)(uintptr_t)arg] = 1;
    if (is("l1_free_size"))
        pi_cl_l1_free(&cluster_dev, l1, 1000);
    pi_cl_l1_free(&cluster_dev, l1, 1024);
    (void)x;
}

static void fc_main(void)
{
    struct pi_cluster_conf conf;
    struct pi_cluster_task task;
    struct pi_default_ram_conf ram_conf;
    struct pi_readfs_conf fs_conf;
    struct pi_device fs_dev;

    l2a = (uint8_t *)pi_l2_malloc(1024);
    l2b = (uint8_t *)pi_l2_malloc(1024);
    if (is("l2_overflow")) { /* 1 MiB + 1 MiB > 1.5 MiB */
        pi_l2_malloc(1 << 20);
        pi_l2_malloc(1 << 20);
    }
    if (is("l2_free_size"))
        pi_l2_free(l2a, 1000);
    if (is("l2_double_free")) {
        pi_l2_free(l2b, 1024);
        pi_l2_free(l2b, 1024);
    }
    if (is("l2_free_inside"))
        pi_l2_free(l2a + 8, 1016);
    if (is("readfs_without_flash")) {
        pi_readfs_conf_init(&fs_conf);
        pi_open_from_conf(&fs_dev, &fs_conf);
        pi_fs_mount(&fs_dev);
    }
    if (is("fork_on_fc"))
        pi_cl_team_fork(8, barrier_in_fork, NULL);
    if (is("l1_closed"))
        pi_cl_l1_malloc(NULL, 64);

    pi_default_ram_conf_init(&ram_conf);
    pi_open_from_conf(&ram_dev, &ram_conf);
    pi_ram_open(&ram_dev);
    pi_ram_alloc(&ram_dev, &l3_addr, 256);
    if (is("ram_not_l3_address"))
        pi_ram_read(&ram_dev, ADDR(l2a), l2b, 64);
    if (is("ram_overflow")) {
        uint32_t big;
        pi_ram_alloc(&ram_dev, &big, NN_EMUL_L3_SIZE);
    }

    pi_cluster_conf_init(&conf);
    pi_open_from_conf(&cluster_dev, &conf);
    pi_cluster_open(&cluster_dev);
    pi_cluster_task(&task, cluster_main, NULL);
    pi_cluster_send_task(&cluster_dev, &task);
    pi_cluster_close(&cluster_dev);
    printf("NOT DETECTED: %s\n", scenario);
    pmsis_exit(0);
}

int main(int argc, char **argv)
{
#ifdef EMUL_SCENARIO
    scenario = EMUL_SCENARIO; /* qemu's semihosting passes the ELF path as argv[1] */
    (void)argc;
    (void)argv;
#else
    if (argc > 1)
        scenario = argv[1];
#endif
    return pmsis_kickoff((void *)fc_main);
}
