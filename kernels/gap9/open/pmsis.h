/*
 * pmsis.h - a bare-metal PMSIS subset for GVSoC's pulp-open (platform=gvsoc-open) and for
 * GreenWaves' GVSoC model of GAP9 (platform=gvsoc-gap9, NN_OPEN_CHIP_GAP9: 9 cores, 128 KiB L1).
 *
 * Written for nnscons; no SDK code is copied. The declarations are those of ../pmsis_api.h
 * (shared with the emulation); this runtime implements what the generated gap9 code and its
 * runtime (nn_gap9.c) call. pulp-open (see ../../../README.md, "Target pulp-open"):
 *   fabric controller (FC) ... one RI5CY core, runs main(), picolibc printf over semihosting
 *   cluster .................. 8 RI5CY cores (Xpulpv2), 64 KiB L1 TCDM at 0x10000000, mchan DMA
 *   L2 ....................... 1.5 MiB at 0x1C010000: code, data, FC stack, pi_l2_malloc heap
 * Differences from GAP9's PMSIS, all invisible to the generated code:
 *   - core 0 of the cluster runs the cluster task (GAP9 has a separate controller core 8) and is
 *     team core 0 in pi_cl_team_fork;
 *   - the readfs is the run's bin/ directory on the host, read through semihosting (SYS_OPEN,
 *     SYS_READ); pi_flash_open and pi_fs_mount only check that semihosting answers;
 *   - there is no L3 RAM: the pulp-open target keeps every parameter in L2 (a model that does
 *     not fit runs layer by layer), pi_ram_open fails; flash-staged slabs (pi_cl_fs_copy) are
 *     synchronous semihosting reads;
 *   - L1 is a stack allocator (frees in reverse order of allocation, as the generated layers do),
 *     and a task's slave_stack_size may not exceed NN_OPEN_SLAVE_STACK_SIZE (fixed at boot).
 * Each cluster task is measured with the RI5CY performance counters (NN_PLATFORM_CYCLES,
 * pulp_open_last_counters).
 */
#ifndef PMSIS_PULP_OPEN_PMSIS_H
#define PMSIS_PULP_OPEN_PMSIS_H

#include <stdint.h>

#define PMSIS_PULP_OPEN 1

/* Transfers are synchronous semihosting reads (open_fc.c); a file is a semihosting handle. */
#define PMSIS_BACKEND_CL_RAM_REQ
#define PMSIS_BACKEND_FS_FILE int handle;
#define PMSIS_BACKEND_CL_FS_REQ int32_t result;

#include "../pmsis_api.h" /* beside this folder: found whatever the include path */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- measurement (not PMSIS): the performance counters of the last cluster task --------------- */

/* cycles on core 0 from the task's start to its end (the layer's wall time on the cluster), the
 * other counters summed over the cluster's cores (tcdm_contention: cycles lost to L1 bank
 * conflicts, modelled on the GAP9 model only) */
typedef struct {
    uint32_t cycles, instructions, load_stalls, icache_misses, tcdm_contention;
} pulp_open_counters_t;
void pulp_open_last_counters(pulp_open_counters_t *c);
uint32_t pulp_open_last_cycles(void);
/* what the generated network reports as a layer's cycles (its callback's report) */
#define NN_PLATFORM_CYCLES() pulp_open_last_cycles()

#ifdef __cplusplus
}
#endif

#endif /* PMSIS_PULP_OPEN_PMSIS_H */
