/* What a generated layer gets besides its tensors and weights: the instance's memory and
 * threads.  The library keeps no mutable state of its own: a layer's scratch is a region of
 * the caller's arena (sized by the plan, ARENA_ALIGN-aligned), its threads the context's. */
#ifndef NN_EXEC_H
#define NN_EXEC_H

#include <stdint.h>

struct nn_pool;

typedef struct nn_exec {
    uint8_t *scratch;           /* this layer's scratch: the arena's scratch region */
    struct nn_pool *pool;       /* the instance's worker threads; NULL: the caller's thread only */
    const char *variant;        /* set by a layer that picks its kernel at run time ("avx2" ...) */
} nn_exec_t;

/* a layer that needs neither scratch nor threads ignores its nn_exec_t */
#define NN_MAYBE_UNUSED __attribute__((unused))

#endif /* NN_EXEC_H */
