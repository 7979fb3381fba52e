/* nn_threads.h on one core without an operating system: the caller's thread runs every
 * part (the plan gives cortex-m layers threads: 1, so no pool is ever started). */
#include <stddef.h>

#include "nn_threads.h"

int nn_pool_start(void *memory, int threads, int spin_us, struct nn_pool **pool)
{
    (void)memory;
    (void)spin_us;
    *pool = NULL;
    return threads > 1 ? -1 : 0;
}

void nn_pool_stop(struct nn_pool *pool)
{
    (void)pool;
}

void nn_parallel_for(struct nn_pool *pool, int n, void (*fn)(void *arg, int i, int n), void *arg)
{
    (void)pool;
    (void)n;
    fn(arg, 0, 1);
}
