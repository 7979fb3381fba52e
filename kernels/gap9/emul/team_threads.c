/*
 * team_threads.c - the cluster team on 8 persistent POSIX threads (the default natively).
 *
 * The cluster controller (core 8) is the thread that called pi_cluster_send_task; it does not
 * take part in forks (GAP9). Team cores 0..7 are threads started at pi_cluster_open and joined at
 * pi_cluster_close. The barrier is a real one and detects a barrier that can never complete (a
 * core returned from the fork while others wait), which on the chip would hang.
 */
#include "pmsis_emul_internal.h"

#ifndef NN_EMUL_SEQUENTIAL

#include <pthread.h>
#include <stdint.h>

static pthread_mutex_t state_mutex = PTHREAD_MUTEX_INITIALIZER; /* nn_emul_lock */
static pthread_mutex_t fail_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t critical_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t ctx_key;

/* Team state, under team_mutex. */
static pthread_mutex_t team_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;    /* workers wait for a fork */
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;    /* the controller waits for the team */
static pthread_cond_t barrier_cv = PTHREAD_COND_INITIALIZER;
static pthread_t workers[NN_EMUL_NB_PE];
static int running;            /* workers alive */
static unsigned fork_gen;      /* bumped by every fork */
static unsigned start_gen;     /* fork_gen when the workers were started */
static int team_cfg = NN_EMUL_NB_PE; /* team of the next fork with nb_cores 0 */
static int team_nb;            /* team of the current fork */
static int in_fork;
static void (*fork_entry)(void *);
static void *fork_arg;
static int finished;           /* team cores that returned from the current fork */
static int arrived;            /* team cores waiting at the current barrier */
static unsigned barrier_gen;
static uint32_t forks;

void nn_emul_backend_init(void)
{
    if (pthread_key_create(&ctx_key, NULL))
        pmsis_emul_fail("cannot create a thread key");
}

/* The key holds ctx + 2; threads that never set it (NULL) are the FC. */
int nn_emul_ctx(void)
{
    intptr_t v = (intptr_t)pthread_getspecific(ctx_key);
    return v ? (int)v - 2 : NN_EMUL_CTX_FC;
}

void nn_emul_set_ctx(int ctx)
{
    pthread_setspecific(ctx_key, (void *)(intptr_t)(ctx + 2));
}

void nn_emul_lock(void)
{
    pthread_mutex_lock(&state_mutex);
}

void nn_emul_unlock(void)
{
    pthread_mutex_unlock(&state_mutex);
}

void nn_emul_fail_begin(void)
{
    pthread_mutex_lock(&fail_mutex); /* never released: the process is exiting */
}

static void check_deadlock(void)
{
    if (arrived > 0 && arrived + finished == team_nb)
        pmsis_emul_fail("pi_cl_team_barrier can never complete: %d core(s) of the team of %d wait "
                        "at it but the other %d returned from the fork entry (every core must "
                        "reach every barrier)",
                        arrived, team_nb, finished);
}

static void *worker_main(void *p)
{
    int id = (int)(intptr_t)p;
    unsigned seen;
    nn_emul_set_ctx(id);
    pthread_mutex_lock(&team_mutex);
    seen = start_gen; /* not fork_gen: a fork may have started before this thread ran */
    for (;;) {
        void (*entry)(void *);
        void *arg;
        while (running && fork_gen == seen)
            pthread_cond_wait(&work_cv, &team_mutex);
        if (!running)
            break;
        seen = fork_gen;
        if (id >= team_nb)
            continue;
        entry = fork_entry;
        arg = fork_arg;
        pthread_mutex_unlock(&team_mutex);
        entry(arg);
        pthread_mutex_lock(&team_mutex);
        finished++;
        check_deadlock();
        if (finished == team_nb)
            pthread_cond_signal(&done_cv);
    }
    pthread_mutex_unlock(&team_mutex);
    return NULL;
}

void nn_emul_cluster_up(void)
{
    int i;
    pthread_mutex_lock(&team_mutex);
    running = 1;
    start_gen = fork_gen;
    team_cfg = NN_EMUL_NB_PE;
    pthread_mutex_unlock(&team_mutex);
    for (i = 0; i < NN_EMUL_NB_PE; i++)
        if (pthread_create(&workers[i], NULL, worker_main, (void *)(intptr_t)i))
            pmsis_emul_fail("cannot start the thread of cluster core %d", i);
}

void nn_emul_cluster_down(void)
{
    int i;
    pthread_mutex_lock(&team_mutex);
    running = 0;
    pthread_cond_broadcast(&work_cv);
    pthread_mutex_unlock(&team_mutex);
    for (i = 0; i < NN_EMUL_NB_PE; i++)
        pthread_join(workers[i], NULL);
}

void nn_emul_task_begin(int nb_cores)
{
    pthread_mutex_lock(&team_mutex);
    team_cfg = nb_cores;
    pthread_mutex_unlock(&team_mutex);
}

uint32_t nn_emul_fork_count(void)
{
    uint32_t n;
    pthread_mutex_lock(&team_mutex);
    n = forks;
    pthread_mutex_unlock(&team_mutex);
    return n;
}

void pi_cl_team_fork(int nb_cores, void (*entry)(void *), void *arg)
{
    nn_emul_require_cc("pi_cl_team_fork");
    if (!entry)
        pmsis_emul_fail("pi_cl_team_fork: entry is NULL");
    pthread_mutex_lock(&team_mutex);
    team_cfg = nn_emul_team_size(nb_cores, team_cfg, "pi_cl_team_fork");
    team_nb = team_cfg;
    fork_entry = entry;
    fork_arg = arg;
    finished = 0;
    arrived = 0;
    in_fork = 1;
    forks++;
    fork_gen++;
    pthread_cond_broadcast(&work_cv);
    while (finished < team_nb)
        pthread_cond_wait(&done_cv, &team_mutex);
    in_fork = 0;
    pthread_mutex_unlock(&team_mutex);
}

void pi_cl_team_prepare_fork(int nb_cores)
{
    nn_emul_require_cc("pi_cl_team_prepare_fork");
    pthread_mutex_lock(&team_mutex);
    team_cfg = nn_emul_team_size(nb_cores, team_cfg, "pi_cl_team_prepare_fork");
    pthread_mutex_unlock(&team_mutex);
}

void pi_cl_team_preset_fork(void (*entry)(void *), void *arg)
{
    pi_cl_team_fork(0, entry, arg);
}

int pi_cl_team_nb_cores(void)
{
    int n;
    pthread_mutex_lock(&team_mutex);
    n = in_fork ? team_nb : team_cfg;
    pthread_mutex_unlock(&team_mutex);
    return n;
}

void pi_cl_team_barrier(void)
{
    int ctx = nn_emul_ctx();
    if (ctx < 0 || ctx >= NN_EMUL_NB_PE)
        pmsis_emul_fail("pi_cl_team_barrier called from %s, which is not a team core (call it "
                        "inside a fork)",
                        nn_emul_ctx_name(ctx));
    pthread_mutex_lock(&team_mutex);
    arrived++;
    if (arrived == team_nb) {
        arrived = 0;
        barrier_gen++;
        pthread_cond_broadcast(&barrier_cv);
    } else {
        unsigned gen = barrier_gen;
        check_deadlock();
        while (gen == barrier_gen)
            pthread_cond_wait(&barrier_cv, &team_mutex);
    }
    pthread_mutex_unlock(&team_mutex);
}

void pi_cl_team_critical_enter(void)
{
    pthread_mutex_lock(&critical_mutex);
}

void pi_cl_team_critical_exit(void)
{
    pthread_mutex_unlock(&critical_mutex);
}

#else
typedef int nn_emul_team_threads_unused; /* ISO C wants a non-empty translation unit */
#endif
