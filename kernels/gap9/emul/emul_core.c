/*
 * emul_core.c - init, failure, caller checks, kickoff and exit, pi_open_from_conf, core and
 * cluster ids. See pmsis.h and pmsis_emul_internal.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmsis_emul_internal.h"

/* ---- failure ------------------------------------------------------------------------------- */

void pmsis_emul_fail(const char *fmt, ...)
{
    va_list ap;
    nn_emul_fail_begin();
    fflush(stdout);
    fputs("PMSIS-EMUL ERROR: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    _Exit(PMSIS_EMUL_FAIL_STATUS);
}

const char *nn_emul_ctx_name(int ctx)
{
    static const char *const pe[NN_EMUL_NB_PE] = {"core 0", "core 1", "core 2", "core 3",
                                                  "core 4", "core 5", "core 6", "core 7"};
    if (ctx >= 0 && ctx < NN_EMUL_NB_PE)
        return pe[ctx];
    if (ctx == NN_EMUL_CC_CORE_ID)
        return "the cluster controller (core 8)";
    return "the FC";
}

void nn_emul_require_cc(const char *what)
{
    int ctx = nn_emul_ctx();
    if (ctx == NN_EMUL_CC_CORE_ID)
        return;
    if (ctx == NN_EMUL_CTX_FC)
        fail("%s called from the FC: only the cluster controller, inside a cluster task, may do this",
             what);
    fail("%s called from %s inside a fork: only the cluster controller (core 8) may do this (no "
         "nested forks)",
         what, nn_emul_ctx_name(ctx));
}

void nn_emul_require_fc(const char *what)
{
    int ctx = nn_emul_ctx();
    if (ctx != NN_EMUL_CTX_FC)
        fail("%s called from %s: it is a fabric-controller call%s", what, nn_emul_ctx_name(ctx),
             strncmp(what, "pi_ram_", 7) == 0 ? " (the cluster uses pi_cl_ram_*)" : "");
}

void nn_emul_require_cluster(const char *what)
{
    if (nn_emul_ctx() == NN_EMUL_CTX_FC)
        fail("%s called from the FC: it is a cluster call (inside a cluster task)", what);
}

/* ---- init ---------------------------------------------------------------------------------- */

static int inited;

void nn_emul_init(void)
{
    if (inited)
        return;
    inited = 1;
    nn_emul_backend_init();
    nn_emul_mem_init();
}

/* ---- kickoff, device, core ids ------------------------------------------------------------- */

int pmsis_kickoff(void *arg)
{
    void (*entry)(void);
    typedef char fn_fits_in_pointer[sizeof(entry) == sizeof(arg) ? 1 : -1];
    (void)sizeof(fn_fits_in_pointer);
    nn_emul_init();
    if (!arg)
        fail("pmsis_kickoff(NULL)");
    memcpy(&entry, &arg, sizeof entry);
    entry();
    return 0;
}

void pmsis_exit(int err)
{
    fflush(stdout);
    fflush(stderr);
    exit(err);
}

void pi_open_from_conf(struct pi_device *device, void *conf)
{
    if (!device)
        fail("pi_open_from_conf(NULL, ...)");
    device->api = NULL;
    device->config = conf;
    device->data = NULL;
}

uint32_t pi_core_id(void)
{
    int ctx;
    nn_emul_init();
    ctx = nn_emul_ctx();
    return ctx == NN_EMUL_CTX_FC ? 0u : (uint32_t)ctx;
}

uint32_t pi_cluster_id(void)
{
    nn_emul_init();
    return nn_emul_ctx() == NN_EMUL_CTX_FC ? 31u : 0u;
}

uint32_t pi_is_fc(void)
{
    nn_emul_init();
    return nn_emul_ctx() == NN_EMUL_CTX_FC;
}

int pi_cl_cluster_nb_cores(void)
{
    return NN_EMUL_NB_PE;
}

int nn_emul_team_size(int nb_cores, int previous, const char *api)
{
    if (nb_cores < 0 || nb_cores > NN_EMUL_NB_PE)
        pmsis_emul_fail("%s(%d): the team must have 1..%d cores (0: the previous team)", api,
                        nb_cores, NN_EMUL_NB_PE);
    return nb_cores ? nb_cores : previous;
}
