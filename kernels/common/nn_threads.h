/* Run fn(arg, i, n) for i in [0, n) on n threads (the caller runs part 0) and wait. */
#ifndef NN_THREADS_H
#define NN_THREADS_H

void nn_parallel_for(int n, void (*fn)(void *arg, int i, int n), void *arg);

#endif /* NN_THREADS_H */
