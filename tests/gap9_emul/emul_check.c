/*
 * emul_check.c - what the PMSIS emulation must do when used correctly; natively (threads or
 * -DNN_EMUL_SEQUENTIAL) and on qemu. Prints "EMUL-CHECK OK" and exits 0, or "CHECK FAILED: ..."
 * and exits 1. Needs emul_input.bin (byte i = i * 7 + 3) in the file-system directory.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bsp/bsp.h"
#include "bsp/fs.h"
#include "bsp/fs/readfs.h"
#include "bsp/ram.h"
#include "pmsis.h"
#include "pmsis_emul.h"

#define INPUT_SIZE 1000

static int errors;

#define CHECK(cond, ...)                                                                          \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            printf("CHECK FAILED (line %d): ", __LINE__);                                         \
            printf(__VA_ARGS__);                                                                  \
            printf("\n");                                                                         \
            errors++;                                                                             \
        }                                                                                         \
    } while (0)

#define ADDR(p) ((uint32_t)(uintptr_t)(p))

static struct pi_device cluster_dev, ram_dev, flash_dev, fs_dev;
static uint8_t *l2_src, *l2_dst, *l2_img, *l2_ram_buf, *l2_file;
static uint32_t l3_addr;

/* ---- fork and barrier ---- */

static int ran_on[16];
static int order[16], order_n;

static void record_core(void *arg)
{
    int id = (int)pi_core_id();
    (void)arg;
    pi_cl_team_critical_enter();
    if (id >= 0 && id < 16)
        ran_on[id]++;
    order[order_n++ % 16] = id;
    pi_cl_team_critical_exit();
}

#ifndef NN_EMUL_SEQUENTIAL
static int counter, barrier_errors;

static void barrier_phases(void *arg)
{
    int round, id = (int)pi_core_id(), nb = pi_cl_team_nb_cores();
    (void)arg;
    for (round = 1; round <= 3; round++) {
        if (id == nb - 1) { /* the last core arrives late: a no-op barrier would be caught */
            volatile unsigned spin;
            for (spin = 0; spin < 3000000u; spin++)
                ;
        }
        pi_cl_team_critical_enter();
        counter++;
        pi_cl_team_critical_exit();
        pi_cl_team_barrier();
        pi_cl_team_critical_enter();
        if (counter != round * nb)
            barrier_errors++;
        pi_cl_team_critical_exit();
        pi_cl_team_barrier();
    }
}
#endif

/* ---- DMA from every core: core i copies slice i of l2_src to L1 and back to l2_dst ---- */

static uint8_t *l1_slices;
#define SLICE 64

static void dma_slices(void *arg)
{
    int id = (int)pi_core_id();
    pi_cl_dma_cmd_t in, out;
    uint8_t *mine = l1_slices + id * SLICE;
    int i;
    (void)arg;
    pi_cl_dma_cmd(ADDR(l2_src + id * SLICE), ADDR(mine), SLICE, PI_CL_DMA_DIR_EXT2LOC, &in);
    pi_cl_dma_cmd_wait(&in);
    for (i = 0; i < SLICE; i++)
        mine[i] = (uint8_t)(mine[i] + 1);
    pi_cl_dma_cmd(ADDR(l2_dst + id * SLICE), ADDR(mine), SLICE, PI_CL_DMA_DIR_LOC2EXT, &out);
    pi_cl_dma_cmd_wait(&out);
}

/* ---- the cluster task ---- */

static pi_cl_ram_req_t prefetch_req;

static void cluster_main(void *arg)
{
    uint8_t *buf, *buf2;
    pi_cl_dma_cmd_t cmd;
    pi_cl_dma_copy_t copy;
    pi_cl_ram_req_t req;
    int i, stale, fresh;
    (void)arg;

    CHECK(pi_core_id() == 8, "the task runs on the cluster controller, core 8, not %u",
          (unsigned)pi_core_id());
    CHECK(!pi_is_fc(), "pi_is_fc() in the cluster task");

    /* fork: every team core once, not the controller */
    pi_cl_team_fork(0, record_core, NULL);
    for (i = 0; i < 8; i++)
        CHECK(ran_on[i] == 1, "core %d ran the fork entry %d times", i, ran_on[i]);
    CHECK(ran_on[8] == 0, "the controller ran the fork entry");
#ifdef NN_EMUL_SEQUENTIAL
    for (i = 0; i < 8; i++)
        CHECK(order[i] == i, "sequential fork order: position %d ran core %d", i, order[i]);
#endif
    memset(ran_on, 0, sizeof ran_on);
    pi_cl_team_fork(3, record_core, NULL);
    CHECK(ran_on[0] == 1 && ran_on[1] == 1 && ran_on[2] == 1 && ran_on[3] == 0,
          "a fork of 3 cores ran on 0..2 only");
    memset(ran_on, 0, sizeof ran_on);
    pi_cl_team_fork(0, record_core, NULL); /* 0: the previous team */
    CHECK(ran_on[2] == 1 && ran_on[3] == 0, "nb_cores 0 reuses the previous team of 3");
    CHECK(pi_cl_team_nb_cores() == 3, "pi_cl_team_nb_cores() is %d", pi_cl_team_nb_cores());
    CHECK(pi_cl_cluster_nb_cores() == 8, "pi_cl_cluster_nb_cores() is %d", pi_cl_cluster_nb_cores());

#ifndef NN_EMUL_SEQUENTIAL
    pi_cl_team_fork(8, barrier_phases, NULL);
    CHECK(barrier_errors == 0, "%d cores passed a barrier before all had arrived", barrier_errors);
#endif

    /* 1D DMA: nothing moves before the wait */
    buf = (uint8_t *)pi_cl_l1_malloc(&cluster_dev, 256);
    memset(buf, 0x11, 256);
    pi_cl_dma_cmd(ADDR(l2_src), ADDR(buf), 256, PI_CL_DMA_DIR_EXT2LOC, &cmd);
    for (stale = 1, i = 0; i < 256; i++)
        stale &= buf[i] == 0x11;
    CHECK(stale, "L1 changed before pi_cl_dma_cmd_wait");
    pi_cl_dma_cmd_wait(&cmd);
    CHECK(memcmp(buf, l2_src, 256) == 0, "L1 does not hold the L2 data after the wait");

    for (i = 0; i < 256; i++)
        buf[i] = (uint8_t)(255 - i);
    memset(l2_dst, 0x22, 256);
    pi_cl_dma_cmd(ADDR(l2_dst), ADDR(buf), 256, PI_CL_DMA_DIR_LOC2EXT, &cmd);
    CHECK(l2_dst[0] == 0x22 && l2_dst[255] == 0x22, "L2 changed before the wait");
    pi_cl_dma_cmd_wait(&cmd);
    CHECK(memcmp(buf, l2_dst, 256) == 0, "L2 does not hold the L1 data after the wait");

    /* pi_cl_dma_memcpy + pi_cl_dma_wait; pi_cl_dma_flush lands early */
    memset(buf, 0, 256);
    copy.ext = ADDR(l2_src + 100);
    copy.loc = ADDR(buf);
    copy.size = 50;
    copy.dir = PI_CL_DMA_DIR_EXT2LOC;
    copy.merge = 0;
    pi_cl_dma_memcpy(&copy);
    CHECK(buf[0] == 0, "pi_cl_dma_memcpy landed before its wait");
    pi_cl_dma_flush();
    CHECK(memcmp(buf, l2_src + 100, 50) == 0, "pi_cl_dma_flush did not land the copy");
    pi_cl_dma_wait(&copy);

    /* 2D: lines of 5 bytes, 16 apart in L2, 14 bytes = 5 + 5 + 4 */
    memset(buf, 0, 256);
    pi_cl_dma_cmd_2d(ADDR(l2_img + 20), ADDR(buf), 14, 16, 5, PI_CL_DMA_DIR_EXT2LOC, &cmd);
    pi_cl_dma_cmd_wait(&cmd);
    fresh = memcmp(buf, l2_img + 20, 5) == 0 && memcmp(buf + 5, l2_img + 36, 5) == 0 &&
            memcmp(buf + 10, l2_img + 52, 4) == 0 && buf[14] == 0;
    CHECK(fresh, "2D EXT2LOC did not gather lines of 5 bytes with stride 16");
    memset(l2_dst, 0x33, 256);
    pi_cl_dma_cmd_2d(ADDR(l2_dst + 3), ADDR(buf), 14, 16, 5, PI_CL_DMA_DIR_LOC2EXT, &cmd);
    pi_cl_dma_cmd_wait(&cmd);
    fresh = memcmp(l2_dst + 3, buf, 5) == 0 && memcmp(l2_dst + 19, buf + 5, 5) == 0 &&
            memcmp(l2_dst + 35, buf + 10, 4) == 0 && l2_dst[2] == 0x33 && l2_dst[8] == 0x33 &&
            l2_dst[18] == 0x33 && l2_dst[24] == 0x33 && l2_dst[39] == 0x33;
    CHECK(fresh, "2D LOC2EXT did not scatter lines of 5 bytes with stride 16");

    /* freed L1 is reused */
    pi_cl_l1_free(&cluster_dev, buf, 256);
    buf2 = (uint8_t *)pi_cl_l1_malloc(&cluster_dev, 256);
    CHECK(buf2 == buf, "a freed L1 block is not reused (%p then %p)", (void *)buf, (void *)buf2);
    pi_cl_l1_free(&cluster_dev, buf2, 256);

    /* DMA from all 8 cores at once */
    l1_slices = (uint8_t *)pi_cl_l1_malloc(&cluster_dev, 8 * SLICE);
    pi_cl_team_fork(8, dma_slices, NULL);
    for (fresh = 1, i = 0; i < 8 * SLICE; i++)
        fresh &= l2_dst[i] == (uint8_t)(l2_src[i] + 1);
    CHECK(fresh, "the per-core DMA round trip lost data");
    pi_cl_l1_free(&cluster_dev, l1_slices, 8 * SLICE);

    /* L3 -> L2 from the cluster lands at the wait; 2D on the L3 side */
    memset(l2_ram_buf, 0x44, 512);
    pi_cl_ram_read(&ram_dev, l3_addr, l2_ram_buf, 512, &req);
    CHECK(l2_ram_buf[0] == 0x44 && l2_ram_buf[511] == 0x44, "pi_cl_ram_read landed before its wait");
    pi_cl_ram_read_wait(&req);
    for (fresh = 1, i = 0; i < 512; i++)
        fresh &= l2_ram_buf[i] == (uint8_t)(i ^ 0x5a);
    CHECK(fresh, "pi_cl_ram_read did not bring the L3 data");
    memset(l2_ram_buf, 0, 512);
    pi_cl_ram_read_2d(&ram_dev, l3_addr + 1, l2_ram_buf, 6, 10, 3, &req);
    pi_cl_ram_read_wait(&req);
    CHECK(l2_ram_buf[0] == (1 ^ 0x5a) && l2_ram_buf[2] == (3 ^ 0x5a) &&
              l2_ram_buf[3] == (11 ^ 0x5a) && l2_ram_buf[5] == (13 ^ 0x5a) && l2_ram_buf[6] == 0,
          "pi_cl_ram_read_2d did not gather lines of 3 bytes with stride 10");

    /* the L1 limit allows up to the budget */
    pmsis_emul_l1_limit(4096);
    buf = (uint8_t *)pi_cl_l1_malloc(&cluster_dev, 4096);
    pi_cl_l1_free(&cluster_dev, buf, 4096);
    pmsis_emul_l1_limit(0);

    /* a RAM read started here is waited for by the next task (cross-layer prefetch) */
    memset(l2_ram_buf, 0x33, 512);
    pi_cl_ram_read(&ram_dev, l3_addr, l2_ram_buf, 512, &prefetch_req);
}

static void cluster_prefetch_wait(void *arg)
{
    int i, fresh;
    (void)arg;
    CHECK(l2_ram_buf[7] == 0x33, "the prefetch landed before its wait");
    pi_cl_ram_read_wait(&prefetch_req);
    for (fresh = 1, i = 0; i < 512; i++)
        fresh &= l2_ram_buf[i] == (uint8_t)(i ^ 0x5a);
    CHECK(fresh, "a RAM read waited in the next cluster task lost data");
}

static void fc_main(void)
{
    struct pi_cluster_conf cl_conf;
    struct pi_cluster_task task;
    struct pi_default_ram_conf ram_conf;
    struct pi_default_flash_conf flash_conf;
    struct pi_readfs_conf fs_conf;
    struct pmsis_emul_stats st;
    pi_fs_file_t *file;
    int i, ok;
    int32_t n;

    CHECK(pi_is_fc() && pi_core_id() == 0, "main runs on the FC");

    l2_src = (uint8_t *)pi_l2_malloc(1024);
    l2_dst = (uint8_t *)pi_l2_malloc(1024);
    l2_img = (uint8_t *)pi_l2_malloc(8 * 16);
    l2_ram_buf = (uint8_t *)pi_l2_malloc(512);
    l2_file = (uint8_t *)pi_l2_malloc(INPUT_SIZE);
    for (i = 0; i < 1024; i++)
        l2_src[i] = (uint8_t)(i * 13 + 1);
    for (i = 0; i < 8 * 16; i++)
        l2_img[i] = (uint8_t)(200 + i);

    /* L3 */
    pi_default_ram_conf_init(&ram_conf);
    pi_open_from_conf(&ram_dev, &ram_conf);
    CHECK(pi_ram_open(&ram_dev) == 0, "pi_ram_open");
    CHECK(pi_ram_alloc(&ram_dev, &l3_addr, 512) == 0, "pi_ram_alloc");
    CHECK(l3_addr >= PMSIS_EMUL_L3_BASE, "L3 address 0x%08lx", (unsigned long)l3_addr);
    for (i = 0; i < 512; i++)
        l2_ram_buf[i] = (uint8_t)(i ^ 0x5a);
    pi_ram_write(&ram_dev, l3_addr, l2_ram_buf, 512);
    memset(l2_ram_buf, 0, 512);
    pi_ram_read(&ram_dev, l3_addr, l2_ram_buf, 512);
    CHECK(l2_ram_buf[7] == (7 ^ 0x5a), "pi_ram_read after pi_ram_write");

    /* readfs */
    pi_default_flash_conf_init(&flash_conf);
    pi_open_from_conf(&flash_dev, &flash_conf);
    CHECK(pi_flash_open(&flash_dev) == 0, "pi_flash_open");
    pi_readfs_conf_init(&fs_conf);
    fs_conf.fs.flash = &flash_dev;
    pi_open_from_conf(&fs_dev, &fs_conf);
    CHECK(pi_fs_mount(&fs_dev) == 0, "pi_fs_mount");
    CHECK(pi_fs_open(&fs_dev, "no_such_file.bin", 0) == NULL, "a missing file opens");
    file = pi_fs_open(&fs_dev, "emul_input.bin", 0);
    CHECK(file != NULL, "emul_input.bin does not open");
    if (file) {
        CHECK(file->size == INPUT_SIZE, "file size %u", file->size);
        n = pi_fs_read(file, l2_file, INPUT_SIZE);
        CHECK(n == INPUT_SIZE, "pi_fs_read returned %ld", (long)n);
        for (ok = 1, i = 0; i < INPUT_SIZE; i++)
            ok &= l2_file[i] == (uint8_t)(i * 7 + 3);
        CHECK(ok, "the file content is wrong");
        pi_fs_seek(file, 990);
        n = pi_fs_read(file, l2_file, 100);
        CHECK(n == 10 && l2_file[0] == (uint8_t)(990 * 7 + 3), "seek + read at the end: %ld",
              (long)n);
        CHECK(pi_fs_copy(file, 5, l2_file, 2, 1) == 0 && l2_file[1] == (uint8_t)(6 * 7 + 3),
              "pi_fs_copy");
        pi_fs_close(file);
    }
    pi_fs_unmount(&fs_dev);
    pi_flash_close(&flash_dev);

    /* the cluster */
    pi_cluster_conf_init(&cl_conf);
    pi_open_from_conf(&cluster_dev, &cl_conf);
    CHECK(pi_cluster_open(&cluster_dev) == 0, "pi_cluster_open");
    pi_cluster_task(&task, cluster_main, NULL);
    task.slave_stack_size = 1024;
    pi_cluster_send_task_to_cl(&cluster_dev, &task);
    pi_cluster_task(&task, cluster_prefetch_wait, NULL);
    pi_cluster_send_task_to_cl(&cluster_dev, &task);
    pi_cluster_close(&cluster_dev);

    pmsis_emul_get_stats(&st);
    CHECK(st.tasks == 2 && st.forks >= 4 && st.dma_cmds == 21 && st.l1_live == 0,
          "stats: %lu tasks, %lu forks, %lu DMA commands, %lu L1 bytes live",
          (unsigned long)st.tasks, (unsigned long)st.forks, (unsigned long)st.dma_cmds,
          (unsigned long)st.l1_live);
    CHECK(st.l2_peak >= 1024 + 1024 + 128 + 512 + INPUT_SIZE, "L2 peak %lu",
          (unsigned long)st.l2_peak);

    pi_ram_free(&ram_dev, l3_addr, 512);
    pi_ram_close(&ram_dev);
    pi_l2_free(l2_file, INPUT_SIZE);
    pi_l2_free(l2_ram_buf, 512);
    pi_l2_free(l2_img, 8 * 16);
    pi_l2_free(l2_dst, 1024);
    pi_l2_free(l2_src, 1024);

    printf(errors ? "EMUL-CHECK FAILED: %d error(s)\n" : "EMUL-CHECK OK\n", errors);
    pmsis_exit(errors ? 1 : 0);
}

int main(void)
{
    return pmsis_kickoff((void *)fc_main);
}
