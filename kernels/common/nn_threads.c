/* nn_parallel_for with POSIX threads: a pool of n-1 workers started on first use (and
 * grown when a call asks for more), part 0 on the caller, a generation counter under one
 * mutex.  n <= 1 calls fn(arg, 0, 1) directly, without any thread.  Calls come from one
 * thread (the network runs layer after layer). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "nn_threads.h"

#define NN_MAX_THREADS 64

static struct {
    pthread_mutex_t lock;
    pthread_cond_t go, done;
    int workers;                     /* started so far */
    unsigned long generation;        /* bumped per job */
    int n, pending;                  /* parts of the current job, parts not yet finished */
    void (*fn)(void *, int, int);
    void *arg;
} nn_pool = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
              0, 0, 0, 0, NULL, NULL };

static void *nn_worker(void *p)
{
    const int id = (int)(long)p;     /* part index, 1.. */
    unsigned long seen = 0;
    pthread_mutex_lock(&nn_pool.lock);
    for (;;) {
        while (nn_pool.generation == seen)
            pthread_cond_wait(&nn_pool.go, &nn_pool.lock);
        seen = nn_pool.generation;
        if (id < nn_pool.n) {
            void (*fn)(void *, int, int) = nn_pool.fn;
            void *arg = nn_pool.arg;
            const int n = nn_pool.n;
            pthread_mutex_unlock(&nn_pool.lock);
            fn(arg, id, n);
            pthread_mutex_lock(&nn_pool.lock);
            if (--nn_pool.pending == 0)
                pthread_cond_signal(&nn_pool.done);
        }
    }
    return NULL;
}

void nn_parallel_for(int n, void (*fn)(void *arg, int i, int n), void *arg)
{
    if (n <= 1) {
        fn(arg, 0, 1);
        return;
    }
    if (n > NN_MAX_THREADS)
        n = NN_MAX_THREADS;
    pthread_mutex_lock(&nn_pool.lock);
    while (nn_pool.workers < n - 1) {
        pthread_t tid;
        if (pthread_create(&tid, NULL, nn_worker, (void *)(long)(nn_pool.workers + 1)) != 0) {
            fprintf(stderr, "nn_parallel_for: pthread_create failed\n");
            exit(2);
        }
        pthread_detach(tid);
        ++nn_pool.workers;
    }
    nn_pool.fn = fn;
    nn_pool.arg = arg;
    nn_pool.n = n;
    nn_pool.pending = n - 1;
    ++nn_pool.generation;
    pthread_cond_broadcast(&nn_pool.go);
    pthread_mutex_unlock(&nn_pool.lock);
    fn(arg, 0, n);
    pthread_mutex_lock(&nn_pool.lock);
    while (nn_pool.pending > 0)
        pthread_cond_wait(&nn_pool.done, &nn_pool.lock);
    pthread_mutex_unlock(&nn_pool.lock);
}
