/*
 * pmsis_emul_internal.h - between pmsis_emul.c and the team backends (team_threads.c,
 * team_sequential.c). Not for application code.
 */
#ifndef PMSIS_EMUL_INTERNAL_H
#define PMSIS_EMUL_INTERNAL_H

#include "pmsis_emul.h"

#define NN_EMUL_NB_PE 8      /* team cores, ids 0..7 (ARCHI_CLUSTER_NB_PE) */
#define NN_EMUL_CC_CORE_ID 8 /* cluster controller (ARCHI_CC_CORE_ID) */
#define NN_EMUL_CTX_FC (-1)  /* the fabric controller */

/* Provided by the team backend. */
void nn_emul_backend_init(void);
int nn_emul_ctx(void);              /* NN_EMUL_CTX_FC, 0..7 or NN_EMUL_CC_CORE_ID */
void nn_emul_set_ctx(int ctx);      /* for the calling thread */
void nn_emul_lock(void);            /* guards all emulation state in pmsis_emul.c */
void nn_emul_unlock(void);
void nn_emul_fail_begin(void);      /* first failing thread reports, the others block */
void nn_emul_cluster_up(void);      /* at pi_cluster_open: start the team cores */
void nn_emul_cluster_down(void);    /* at pi_cluster_close */
void nn_emul_task_begin(int nb_cores); /* default team of the task's forks */
uint32_t nn_emul_fork_count(void);

/* Provided by pmsis_emul.c: "core 3", "the cluster controller (core 8)", "the FC". */
const char *nn_emul_ctx_name(int ctx);
/* Fails unless the caller is the cluster controller (what = API name, for the message). */
void nn_emul_require_cc(const char *what);

#endif /* PMSIS_EMUL_INTERNAL_H */
