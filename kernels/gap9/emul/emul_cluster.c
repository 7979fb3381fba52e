/*
 * emul_cluster.c - cluster open/close and cluster tasks: the controller stack, scratch area and
 * team stacks in L1, the task run on the cluster controller (core 8), and the cluster-DMA
 * commands a task must have waited when it returns. Forks are the team backend's. See pmsis.h.
 */
#include <string.h>

#include "pmsis_emul_internal.h"

struct nn_emul_cluster nn_emul_cl;

static int cluster_tag; /* pi_cluster_open stores &cluster_tag in device->data */

static uint32_t cc_stack_off = NN_EMUL_NOFIT, scratch_off = NN_EMUL_NOFIT;

void nn_emul_check_cluster_dev(struct pi_device *device, const char *api)
{
    if (!nn_emul_cl.open)
        fail("%s: the cluster is not open (pi_cluster_open)", api);
    if (device && device->data != (void *)&cluster_tag)
        fail("%s: the device is not the opened cluster device", api);
}

void pi_cluster_conf_init(struct pi_cluster_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    conf->device_type = PI_DEVICE_CLUSTER_TYPE;
    conf->id = 0;
    conf->cc_stack_size = PI_CL_CC_STACK_SIZE;
    conf->flags = PI_CLUSTER_FLAGS_FORK_BASED;
}

int pi_cluster_open(struct pi_device *device)
{
    struct pi_cluster_conf *conf;
    nn_emul_init();
    nn_emul_require_fc("pi_cluster_open");
    if (!device || !device->config)
        fail("pi_cluster_open: no conf (pi_open_from_conf)");
    conf = (struct pi_cluster_conf *)device->config;
    if (conf->device_type != PI_DEVICE_CLUSTER_TYPE)
        fail("pi_cluster_open: the conf was not initialized by pi_cluster_conf_init");
    if (conf->id != 0)
        fail("pi_cluster_open: cluster %d does not exist (GAP9 has cluster 0)", conf->id);
    nn_emul_lock();
    if (nn_emul_cl.open)
        fail("pi_cluster_open: the cluster is already open");
    nn_emul_cl.open = 1;
    nn_emul_cl.l1_limit = 0;
    nn_emul_arena_reset(&nn_emul_l1);
    if (conf->cc_stack_size)
        cc_stack_off = nn_emul_arena_alloc(&nn_emul_l1, conf->cc_stack_size, 4,
                                           NN_EMUL_BLK_INTERNAL,
                                           "cluster-controller stack (cc_stack_size)",
                                           "pi_cluster_open");
    if (conf->scratch_size)
        scratch_off = nn_emul_arena_alloc(&nn_emul_l1, conf->scratch_size, 4,
                                          NN_EMUL_BLK_INTERNAL, "task scratch area (scratch_size)",
                                          "pi_cluster_open");
    nn_emul_unlock();
    device->data = (void *)&cluster_tag;
    nn_emul_cluster_up();
    return 0;
}

int pi_cluster_close(struct pi_device *device)
{
    nn_emul_init();
    nn_emul_require_fc("pi_cluster_close");
    nn_emul_lock();
    nn_emul_check_cluster_dev(device, "pi_cluster_close");
    if (!device)
        fail("pi_cluster_close(NULL)");
    cc_stack_off = scratch_off = NN_EMUL_NOFIT;
    nn_emul_arena_reset(&nn_emul_l1); /* L1 contents do not survive the power-down */
    nn_emul_cl.open = 0;
    nn_emul_cl.l1_limit = 0;
    nn_emul_unlock();
    nn_emul_cluster_down();
    device->data = NULL;
    return 0;
}

struct pi_cluster_task *pi_cluster_task(struct pi_cluster_task *task, void (*entry)(void *),
                                        void *arg)
{
    memset(task, 0, sizeof *task);
    task->entry = entry;
    task->arg = arg;
    task->nb_cores = NN_EMUL_NB_PE;
    return task;
}

pi_cluster_task_t *pi_cluster_task_stacks(pi_cluster_task_t *task, void *stacks, int stack_size)
{
    task->stacks = stacks;
    task->slave_stack_size = (uint32_t)stack_size;
    return task;
}

int pi_cluster_send_task_to_cl(struct pi_device *device, struct pi_cluster_task *task)
{
    uint32_t stacks_off = NN_EMUL_NOFIT, slave, n;
    int nb;
    const char *api;
    int issuer;
    uint32_t size;
    nn_emul_init();
    nn_emul_require_fc("pi_cluster_send_task");
    nn_emul_lock();
    nn_emul_check_cluster_dev(device, "pi_cluster_send_task");
    if (!task || !task->entry)
        fail("pi_cluster_send_task: no task entry (pi_cluster_task)");
    nb = task->nb_cores ? task->nb_cores : NN_EMUL_NB_PE;
    if (nb < 1 || nb > NN_EMUL_NB_PE)
        fail("pi_cluster_send_task: nb_cores %d is not in 1..%d", task->nb_cores, NN_EMUL_NB_PE);
    slave = task->slave_stack_size ? task->slave_stack_size : 0x400;
    if (slave > nn_emul_l1.size / NN_EMUL_NB_PE)
        fail("pi_cluster_send_task: slave_stack_size %lu cannot fit in L1",
             (unsigned long)task->slave_stack_size);
    if (task->stacks)
        nn_emul_check_block(&nn_emul_l1, (uintptr_t)task->stacks, slave * (uint32_t)nb,
                            "pi_cluster_send_task (task stacks)", "stacks");
    else
        stacks_off = nn_emul_arena_alloc(&nn_emul_l1, slave * (uint32_t)nb, 4,
                                         NN_EMUL_BLK_INTERNAL,
                                         "team stacks (slave_stack_size x nb_cores)",
                                         "pi_cluster_send_task");
    nn_emul_cl.in_task = 1;
    nn_emul_unlock();

    nn_emul_task_begin(nb);
    nn_emul_set_ctx(NN_EMUL_CC_CORE_ID);
    task->entry(task->arg);
    nn_emul_set_ctx(NN_EMUL_CTX_FC);

    nn_emul_lock();
    /* Cluster-DMA commands belong to the task. pi_cl_ram requests are served by the FC's
     * RAM driver and their request lives in L2, so one task may start a read that the next
     * task waits for (the next layer's weights prefetched while this layer computes). */
    n = nn_emul_pending_count(NN_EMUL_XFER_DMA, &api, &issuer, &size);
    if (n)
        fail("the cluster task returned with %lu transfer(s) never waited (first: %s of %lu bytes "
             "issued by %s)",
             (unsigned long)n, api, (unsigned long)size, nn_emul_ctx_name(issuer));
    nn_emul_arena_release(&nn_emul_l1, &stacks_off);
    nn_emul_cl.in_task = 0;
    nn_emul_cl.tasks++;
    nn_emul_unlock();
    return 0;
}
