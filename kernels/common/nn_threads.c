/* nn_parallel_for with POSIX threads: parts 1..n-1 on new threads, part 0 on the caller.
 * n <= 1 calls fn(arg, 0, 1) directly, without any thread. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "nn_threads.h"

#define NN_MAX_THREADS 64

typedef struct {
    void (*fn)(void *, int, int);
    void *arg;
    int i, n;
} nn_part_t;

static void *nn_part_main(void *p)
{
    const nn_part_t *t = (const nn_part_t *)p;
    t->fn(t->arg, t->i, t->n);
    return NULL;
}

void nn_parallel_for(int n, void (*fn)(void *arg, int i, int n), void *arg)
{
    pthread_t tid[NN_MAX_THREADS];
    nn_part_t part[NN_MAX_THREADS];
    int i;
    if (n <= 1) {
        fn(arg, 0, 1);
        return;
    }
    if (n > NN_MAX_THREADS)
        n = NN_MAX_THREADS;
    for (i = 1; i < n; ++i) {
        part[i].fn = fn;
        part[i].arg = arg;
        part[i].i = i;
        part[i].n = n;
        if (pthread_create(&tid[i], NULL, nn_part_main, &part[i]) != 0) {
            fprintf(stderr, "nn_parallel_for: pthread_create failed\n");
            exit(2);
        }
    }
    fn(arg, 0, n);
    for (i = 1; i < n; ++i)
        pthread_join(tid[i], NULL);
}
