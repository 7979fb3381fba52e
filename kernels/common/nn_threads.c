/* nn_parallel_for with POSIX threads: a pool of n-1 workers per network instance, started
 * by the instance's init and joined by its deinit, in the instance's arena; part 0 on the
 * caller, a generation counter under one mutex. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stddef.h>

#include "nn_threads.h"

struct nn_pool {
    pthread_mutex_t lock;
    pthread_cond_t go, done;
    int workers;                     /* started */
    int stop;                        /* deinit: the workers leave */
    unsigned long generation;        /* bumped per job */
    int n, pending;                  /* parts of the current job, parts not yet finished */
    void (*fn)(void *, int, int);
    void *arg;
    pthread_t tid[NN_MAX_THREADS];
};

/* the pool fits the bytes the plan reserves for it */
typedef char nn_pool_fits[sizeof(struct nn_pool) <= NN_POOL_BYTES ? 1 : -1];

static void *nn_worker(void *p)
{
    struct nn_pool *pool = (struct nn_pool *)p;
    unsigned long seen = 0;
    int id;
    pthread_mutex_lock(&pool->lock);
    id = ++pool->workers;            /* the order they start in: part 1, 2, ... */
    pthread_cond_signal(&pool->done);
    for (;;) {
        while (pool->generation == seen && !pool->stop)
            pthread_cond_wait(&pool->go, &pool->lock);
        if (pool->stop)
            break;
        seen = pool->generation;
        if (id < pool->n) {
            void (*fn)(void *, int, int) = pool->fn;
            void *arg = pool->arg;
            const int n = pool->n;
            pthread_mutex_unlock(&pool->lock);
            fn(arg, id, n);
            pthread_mutex_lock(&pool->lock);
            if (--pool->pending == 0)
                pthread_cond_signal(&pool->done);
        }
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

int nn_pool_start(void *memory, int threads, struct nn_pool **out)
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
    pool->n = pool->pending = 0;
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
        pool->workers = started;
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
    pool->stop = 1;
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
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->arg = arg;
    pool->n = n;
    pool->pending = n - 1;
    ++pool->generation;
    pthread_cond_broadcast(&pool->go);
    pthread_mutex_unlock(&pool->lock);
    fn(arg, 0, n);
    pthread_mutex_lock(&pool->lock);
    while (pool->pending > 0)
        pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}
