/* Worker threads per network instance.  nn_pool_start starts n-1 workers in a pool the
 * caller stores (NN_POOL_BYTES of its arena); nn_parallel_for(pool, n, fn, arg) runs
 * fn(arg, i, n) for i in [0, n) on them (the caller runs part 0) and waits; nn_pool_stop
 * joins them.  A NULL pool or n <= 1: fn(arg, 0, 1) on the caller, no thread.  One caller
 * per pool at a time (an instance runs one inference at a time).  A waiting worker (and the
 * caller waiting for the workers) polls for up to spin_us microseconds before it sleeps
 * (0: sleeps at once). */
#ifndef NN_THREADS_H
#define NN_THREADS_H

#define NN_MAX_THREADS 64
#define NN_POOL_BYTES 1024      /* what a pool takes (checked at compile time in nn_threads.c) */

struct nn_pool;

/* 0, or -1 when a thread could not be started (the others are joined again) */
int nn_pool_start(void *memory, int threads, int spin_us, struct nn_pool **pool);
void nn_pool_stop(struct nn_pool *pool);
void nn_parallel_for(struct nn_pool *pool, int n, void (*fn)(void *arg, int i, int n), void *arg);

#endif /* NN_THREADS_H */
