/* nn_parallel_for with POSIX threads: a pool of n-1 workers per network instance, started
 * by the instance's init and joined by its deinit, in the instance's arena; part 0 on the
 * caller.
 *
 * Waiting spins, then blocks.  A layer hands its parts over tens of times per inference, a
 * few hundred microseconds apart; a worker asleep on a condition variable takes a futex wake
 * and a reschedule (tens of microseconds on a VM, more when the vCPU was halted) each time.
 * So a worker that finished its part polls the job counter for up to `spin_us` microseconds
 * (as onnxruntime's pool spins before it blocks) and only then sleeps on the condition
 * variable; the caller waits for the workers the same way.  The spin is bounded: between
 * inferences, once it has run out, every worker sleeps and takes no CPU.  spin_us 0: block
 * at once (the condition-variable pool). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <time.h>

#include "nn_threads.h"

struct nn_pool {
    /* written by the caller per job, read by the workers after they see `generation` move */
    unsigned long generation;        /* bumped per job (and by stop); atomic */
    void (*fn)(void *, int, int);
    void *arg;
    int n;                           /* parts of the current job */
    int stop;                        /* deinit: the workers leave (under lock) */
    long spin_ns;                    /* how long a waiter polls before it sleeps */
    int backoff;                     /* jobs left without polling (contention seen); atomic */
    char pad0[64];                   /* the workers' polled line apart from `pending` */
    int pending;                     /* workers not yet done with the job; atomic */
    int started;                     /* workers that have taken the job; atomic */
    char pad1[64];
    pthread_mutex_t lock;            /* the sleepers' side: */
    pthread_cond_t go, done;
    int sleepers;                    /* workers asleep on go (under lock) */
    int caller_sleeps;               /* the caller asleep on done (under lock) */
    int workers;                     /* started */
    pthread_t tid[NN_MAX_THREADS];
};

/* the pool fits the bytes the plan reserves for it */
typedef char nn_pool_fits[sizeof(struct nn_pool) <= NN_POOL_BYTES ? 1 : -1];

static void nn_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();          /* the core's other thread (and power) gets the cycles */
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static long nn_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec * 1000000000L + t.tv_nsec;
}

/* a poll between two clock readings takes about a microsecond; a gap this long means the
 * poller was descheduled: the cores are taken by other work, so polling costs them a core */
#define NN_PREEMPTED_NS 50000L

/* jobs that run without polling once a waiter finds the cores taken by other work: polling
 * then takes a core from that work and from this pool's own threads (a scheduler that shares
 * a core between the process's threads gives the poller the caller's time) */
#define NN_BACKOFF_JOBS 64

static void nn_contended(struct nn_pool *pool)
{
    __atomic_store_n(&pool->backoff, NN_BACKOFF_JOBS, __ATOMIC_RELAXED);
}

/* what a waiter polls for: the next job (the counter moved past `seen`), or the workers'
 * end of the current one */
static inline int nn_ready(struct nn_pool *pool, int for_job, unsigned long seen)
{
    if (for_job)
        return __atomic_load_n(&pool->generation, __ATOMIC_ACQUIRE) != seen;
    return __atomic_load_n(&pool->pending, __ATOMIC_ACQUIRE) == 0;
}

/* poll until nn_ready (1), or spin_ns have passed or the poller was descheduled (0) */
static int nn_spin(struct nn_pool *pool, int for_job, unsigned long seen, long spin_ns)
{
    long t0, last;
    if (spin_ns <= 0)
        return 0;
    t0 = last = nn_now_ns();
    for (;;) {
        long t;
        for (int k = 0; k < 64; ++k) {
            if (nn_ready(pool, for_job, seen))
                return 1;
            nn_relax();
        }
        /* a thread of this pool waiting for this core (the scheduler put both on it) runs
         * now, not when the poller's time slice ends; with nothing else to run, this returns
         * at once */
        sched_yield();
        t = nn_now_ns();
        if (t - last >= NN_PREEMPTED_NS) {
            nn_contended(pool);
            return 0;
        }
        if (t - t0 >= spin_ns)
            return 0;
        last = t;
    }
}

static void *nn_worker(void *p)
{
    struct nn_pool *pool = (struct nn_pool *)p;
    unsigned long seen = 0;
    int id;
    pthread_mutex_lock(&pool->lock);
    id = ++pool->workers;            /* the order they start in: part 1, 2, ... */
    pthread_cond_signal(&pool->done);
    pthread_mutex_unlock(&pool->lock);
    for (;;) {
        if (__atomic_load_n(&pool->backoff, __ATOMIC_RELAXED) > 0
            || !nn_spin(pool, 1, seen, pool->spin_ns)) {
            /* the job counter is bumped under the lock, so checking it under the lock
             * before sleeping loses no wake-up */
            pthread_mutex_lock(&pool->lock);
            ++pool->sleepers;
            while (__atomic_load_n(&pool->generation, __ATOMIC_ACQUIRE) == seen)
                pthread_cond_wait(&pool->go, &pool->lock);
            --pool->sleepers;
            pthread_mutex_unlock(&pool->lock);
        }
        seen = __atomic_load_n(&pool->generation, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&pool->stop, __ATOMIC_ACQUIRE))
            break;
        __atomic_add_fetch(&pool->started, 1, __ATOMIC_RELAXED);
        if (id < pool->n)
            pool->fn(pool->arg, id, pool->n);
        /* every worker counts off every job, its part or none: the caller writes the next
         * job's fields only when no worker can still be reading these */
        if (__atomic_sub_fetch(&pool->pending, 1, __ATOMIC_ACQ_REL) == 0) {
            pthread_mutex_lock(&pool->lock);
            if (pool->caller_sleeps)
                pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->lock);
        }
    }
    return NULL;
}

int nn_pool_start(void *memory, int threads, int spin_us, struct nn_pool **out)
{
    struct nn_pool *pool = (struct nn_pool *)memory;
    int started = 0;
    *out = NULL;
    if (threads <= 1)
        return 0;
    if (threads > NN_MAX_THREADS)
        threads = NN_MAX_THREADS;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->go, NULL);
    pthread_cond_init(&pool->done, NULL);
    pool->workers = 0;
    pool->stop = 0;
    pool->generation = 0;
    pool->n = pool->pending = pool->started = 0;
    pool->sleepers = pool->caller_sleeps = 0;
    pool->spin_ns = spin_us > 0 ? (long)spin_us * 1000L : 0;
    pool->backoff = 0;
    pool->fn = NULL;
    pool->arg = NULL;
    for (; started < threads - 1; ++started)
        if (pthread_create(&pool->tid[started], NULL, nn_worker, pool) != 0)
            break;
    pthread_mutex_lock(&pool->lock);
    while (pool->workers < started)  /* every worker has its id before the first job */
        pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
    if (started < threads - 1) {
        nn_pool_stop(pool);
        return -1;
    }
    *out = pool;
    return 0;
}

void nn_pool_stop(struct nn_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    __atomic_store_n(&pool->stop, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&pool->generation, 1, __ATOMIC_ACQ_REL);   /* spinners see it too */
    pthread_cond_broadcast(&pool->go);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->workers; ++i)
        pthread_join(pool->tid[i], NULL);
    pthread_cond_destroy(&pool->go);
    pthread_cond_destroy(&pool->done);
    pthread_mutex_destroy(&pool->lock);
}

void nn_parallel_for(struct nn_pool *pool, int n, void (*fn)(void *arg, int i, int n), void *arg)
{
    if (!pool || n <= 1) {
        fn(arg, 0, 1);
        return;
    }
    if (n > pool->workers + 1)
        n = pool->workers + 1;
    /* the job's fields, then the counter (release): a worker that sees the new count sees
     * them; every worker has counted off the previous job (pending was 0), so none reads
     * them meanwhile */
    pool->fn = fn;
    pool->arg = arg;
    pool->n = n;
    __atomic_store_n(&pool->pending, pool->workers, __ATOMIC_RELAXED);
    __atomic_store_n(&pool->started, 0, __ATOMIC_RELAXED);
    pthread_mutex_lock(&pool->lock);
    __atomic_add_fetch(&pool->generation, 1, __ATOMIC_ACQ_REL);
    if (pool->sleepers)
        pthread_cond_broadcast(&pool->go);
    pthread_mutex_unlock(&pool->lock);
    fn(arg, 0, n);
    /* poll for the workers only while they run: one that has not even taken the job after
     * the caller's whole part waits for a core, which the polling caller would keep from it */
    if (__atomic_load_n(&pool->backoff, __ATOMIC_RELAXED) > 0)
        __atomic_sub_fetch(&pool->backoff, 1, __ATOMIC_RELAXED);
    else if (__atomic_load_n(&pool->started, __ATOMIC_RELAXED) < pool->workers)
        nn_contended(pool);
    else if (nn_spin(pool, 0, 0, pool->spin_ns))
        return;
    pthread_mutex_lock(&pool->lock);
    pool->caller_sleeps = 1;
    while (__atomic_load_n(&pool->pending, __ATOMIC_ACQUIRE) > 0)
        pthread_cond_wait(&pool->done, &pool->lock);
    pool->caller_sleeps = 0;
    pthread_mutex_unlock(&pool->lock);
}
