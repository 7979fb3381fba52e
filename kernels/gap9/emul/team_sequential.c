/*
 * team_sequential.c - the cluster team on one thread (qemu, or natively with
 * -DNN_EMUL_SEQUENTIAL): a fork runs the entry for core 0, then core 1, ... then returns.
 *
 * A barrier inside a fork cannot work here (core 0 would wait for cores that only start after it
 * returns), so with more than one core it fails instead of silently not synchronizing.
 */
#include "pmsis_emul_internal.h"

#ifdef NN_EMUL_SEQUENTIAL

static int ctx = NN_EMUL_CTX_FC;
static int team_cfg = NN_EMUL_NB_PE;
static int team_nb;
static int in_fork;
static uint32_t forks;

void nn_emul_backend_init(void)
{
}

int nn_emul_ctx(void)
{
    return ctx;
}

void nn_emul_set_ctx(int c)
{
    ctx = c;
}

void nn_emul_lock(void)
{
}

void nn_emul_unlock(void)
{
}

void nn_emul_fail_begin(void)
{
}

void nn_emul_cluster_up(void)
{
    team_cfg = NN_EMUL_NB_PE;
}

void nn_emul_cluster_down(void)
{
}

void nn_emul_task_begin(int nb_cores)
{
    team_cfg = nb_cores;
}

uint32_t nn_emul_fork_count(void)
{
    return forks;
}

void pi_cl_team_fork(int nb_cores, void (*entry)(void *), void *arg)
{
    int core;
    nn_emul_require_cc("pi_cl_team_fork");
    if (!entry)
        pmsis_emul_fail("pi_cl_team_fork: entry is NULL");
    team_cfg = nn_emul_team_size(nb_cores, team_cfg, "pi_cl_team_fork");
    team_nb = team_cfg;
    in_fork = 1;
    forks++;
    for (core = 0; core < team_nb; core++) {
        ctx = core;
        entry(arg);
    }
    ctx = NN_EMUL_CC_CORE_ID;
    in_fork = 0;
}

void pi_cl_team_prepare_fork(int nb_cores)
{
    nn_emul_require_cc("pi_cl_team_prepare_fork");
    team_cfg = nn_emul_team_size(nb_cores, team_cfg, "pi_cl_team_prepare_fork");
}

void pi_cl_team_preset_fork(void (*entry)(void *), void *arg)
{
    pi_cl_team_fork(0, entry, arg);
}

int pi_cl_team_nb_cores(void)
{
    return in_fork ? team_nb : team_cfg;
}

void pi_cl_team_barrier(void)
{
    if (ctx < 0 || ctx >= NN_EMUL_NB_PE)
        pmsis_emul_fail("pi_cl_team_barrier called from %s, which is not a team core (call it "
                        "inside a fork)",
                        nn_emul_ctx_name(ctx));
    if (team_nb > 1)
        pmsis_emul_fail("pi_cl_team_barrier on %s inside a fork of %d cores: the sequential "
                        "backend (NN_EMUL_SEQUENTIAL, used on qemu) runs the cores one after the "
                        "other, so a barrier cannot synchronize them; split the work into one "
                        "fork per phase",
                        nn_emul_ctx_name(ctx), team_nb);
}

void pi_cl_team_critical_enter(void)
{
}

void pi_cl_team_critical_exit(void)
{
}

#else
typedef int nn_emul_team_sequential_unused; /* ISO C wants a non-empty translation unit */
#endif
