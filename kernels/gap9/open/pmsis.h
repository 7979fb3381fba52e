/*
 * pmsis.h - a bare-metal PMSIS subset for GVSoC's pulp-open (platform=gvsoc-open).
 *
 * Written for nnscons; no SDK code is copied. The names, types and argument orders are those
 * of the GAP SDK's PMSIS, as in ../emul/pmsis.h, limited to what the generated gap9 code and
 * its runtime (nn_gap9.c) call. pulp-open (see ../../../README.md, "Target pulp-open"):
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
 *     synchronous semihosting reads.
 * Each cluster task is measured with the RI5CY performance counters (NN_PLATFORM_MEASURE).
 */
#ifndef PMSIS_PULP_OPEN_PMSIS_H
#define PMSIS_PULP_OPEN_PMSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PMSIS_PULP_OPEN 1

/* ---- common types ---------------------------------------------------------------------------- */

typedef enum {
    PI_DEVICE_UNKWN_TYPE,
    PI_DEVICE_CLUSTER_TYPE,
    PI_DEVICE_HYPERBUS_TYPE,
    PI_DEVICE_SPI_TYPE,
    PI_DEVICE_CPI_TYPE,
    PI_DEVICE_I2C_TYPE,
    PI_DEVICE_GPIO_TYPE,
    PI_DEVICE_PWM_TYPE
} pi_device_e;

typedef struct pi_task pi_task_t;
struct pi_device_api;

typedef struct pi_device {
    struct pi_device_api *api;
    void *config;
    void *data;
} pi_device_t;

void pi_open_from_conf(struct pi_device *device, void *conf);

/* ---- kickoff, exit, ids ------------------------------------------------------------------------ */

int pmsis_kickoff(void *arg);           /* runs ((void (*)(void))arg)() on the FC */
void pmsis_exit(int err) __attribute__((noreturn));

uint32_t pi_core_id(void);              /* 0..7 on the cluster, 0 on the FC */
uint32_t pi_cluster_id(void);           /* 0 on the cluster, 31 on the FC */
uint32_t pi_is_fc(void);

/* ---- memory -------------------------------------------------------------------------------------- */

void *pi_l2_malloc(int size);
void pi_l2_free(void *chunk, int size);
void *pi_l2_malloc_align(int size, int align);

/* L1: a stack allocator (frees in reverse order of allocation, as the generated layers do) */
void *pi_cl_l1_malloc(struct pi_device *device, uint32_t size);
void pi_cl_l1_free(struct pi_device *device, void *chunk, int size);

/* ---- cluster ------------------------------------------------------------------------------------ */

#define PI_CL_CC_STACK_SIZE 0x800

typedef enum {
    PI_CLUSTER_FLAGS_FORK_BASED = (0 << 0),
    PI_CLUSTER_FLAGS_TASK_BASED = (1 << 0)
} pi_cluster_flags_e;

struct pi_cluster_conf {
    pi_device_e device_type;
    int id;
    uint32_t cc_stack_size;     /* stack of cluster core 0, which runs the task */
    uint32_t scratch_size;
    void *heap_start;
    uint32_t heap_size;
    void *event_kernel;
    pi_cluster_flags_e flags;
};

typedef struct pi_cluster_task {
    void (*entry)(void *);
    void *arg;
    void *stacks;
    uint32_t slave_stack_size;  /* must not exceed NN_OPEN_SLAVE_STACK_SIZE (fixed at boot) */
    int nb_cores;
    struct pi_task *completion_callback;
    int stack_allocated;
    struct pi_cluster_task *next;
    int core_mask;
    uint32_t scratch_size;
    uint8_t priority;
} pi_cluster_task_t;

void pi_cluster_conf_init(struct pi_cluster_conf *conf);
int pi_cluster_open(struct pi_device *device);
int pi_cluster_close(struct pi_device *device);
struct pi_cluster_task *pi_cluster_task(struct pi_cluster_task *task, void (*entry)(void *), void *arg);
int pi_cluster_send_task_to_cl(struct pi_device *device, struct pi_cluster_task *task);

static inline int pi_cluster_send_task(struct pi_device *device, struct pi_cluster_task *task)
{
    return pi_cluster_send_task_to_cl(device, task);
}

/* ---- team --------------------------------------------------------------------------------------- */

int pi_cl_cluster_nb_cores(void);
int pi_cl_team_nb_cores(void);
void pi_cl_team_fork(int nb_cores, void (*entry)(void *), void *arg);
void pi_cl_team_barrier(void);

/* ---- cluster DMA (mchan) ------------------------------------------------------------------------ */

typedef enum {
    PI_CL_DMA_DIR_LOC2EXT = 0,  /* L1 -> L2 (mchan TYPE bit 0) */
    PI_CL_DMA_DIR_EXT2LOC = 1   /* L2 -> L1 (mchan TYPE bit 1) */
} pi_cl_dma_dir_e;

typedef struct pi_cl_dma_cmd_s {
    uint32_t id;                /* the mchan transfer counter */
} pi_cl_dma_cmd_t;

typedef struct pi_cl_dma_copy_s {
    uint32_t ext;
    uint32_t loc;
    uint32_t id;
    uint32_t size;
    pi_cl_dma_dir_e dir;
    uint8_t merge;
    uint32_t stride;
    uint32_t length;
} pi_cl_dma_copy_t;

typedef pi_cl_dma_copy_t pi_cl_dma_copy_2d_t;

void pi_cl_dma_cmd(uint32_t ext, uint32_t loc, uint32_t size, pi_cl_dma_dir_e dir, pi_cl_dma_cmd_t *cmd);
void pi_cl_dma_cmd_2d(uint32_t ext, uint32_t loc, uint32_t size, uint32_t stride, uint32_t length,
                      pi_cl_dma_dir_e dir, pi_cl_dma_cmd_t *cmd);
void pi_cl_dma_cmd_wait(pi_cl_dma_cmd_t *cmd);
void pi_cl_dma_flush(void);
void pi_cl_dma_memcpy(pi_cl_dma_copy_t *copy);
void pi_cl_dma_memcpy_2d(pi_cl_dma_copy_2d_t *copy);
void pi_cl_dma_wait(void *copy);

/* ---- L3 RAM: not on pulp-open (the target plans none; opening it fails) ------------------------ */

typedef struct pi_ram_api_s pi_ram_api_t;
struct pi_ram_conf {
    pi_ram_api_t *api;
};
struct pi_aps25xxxn_conf {
    struct pi_ram_conf ram;
};
void pi_aps25xxxn_conf_init(struct pi_aps25xxxn_conf *conf);
#define pi_default_ram_conf pi_aps25xxxn_conf
#define pi_default_ram_conf_init pi_aps25xxxn_conf_init
int32_t pi_ram_open(struct pi_device *device);
int pi_ram_alloc(struct pi_device *device, uint32_t *addr, uint32_t size);
void pi_ram_write(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size);

typedef struct pi_cl_ram_req_s {
    uint32_t id;
} pi_cl_ram_req_t;
void pi_cl_ram_read(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                    pi_cl_ram_req_t *req);
void pi_cl_ram_read_wait(pi_cl_ram_req_t *req);

/* ---- flash and readfs: the host's bin/ directory through semihosting --------------------------- */

typedef struct pi_flash_api_s pi_flash_api_t;
struct pi_flash_conf {
    pi_flash_api_t *api;
};
struct pi_mx25u51245g_conf {
    struct pi_flash_conf flash;
};
void pi_mx25u51245g_conf_init(struct pi_mx25u51245g_conf *conf);
#define pi_default_flash_conf pi_mx25u51245g_conf
#define pi_default_flash_conf_init pi_mx25u51245g_conf_init
int pi_flash_open(struct pi_device *device);
void pi_flash_close(struct pi_device *device);

typedef enum {
    PI_FS_READ_ONLY = 0,
    PI_FS_HOST = 1,
    PI_FS_LFS = 2
} pi_fs_type_e;

typedef struct pi_fs_api_s pi_fs_api_t;
struct pi_fs_conf {
    pi_fs_type_e type;
    struct pi_device *flash;
    char *partition_name;
    bool auto_format;
    pi_fs_api_t *api;
};
struct pi_readfs_conf {
    struct pi_fs_conf fs;
};

typedef struct pi_fs_file_s {
    struct pi_device *fs;
    pi_fs_api_t *api;
    void *data;
    unsigned int size;          /* file size in bytes */
    void *fs_data;
    int handle;                 /* the semihosting file handle */
} pi_fs_file_t;

void pi_readfs_conf_init(struct pi_readfs_conf *conf);
int32_t pi_fs_mount(struct pi_device *device);
void pi_fs_unmount(struct pi_device *device);
pi_fs_file_t *pi_fs_open(struct pi_device *device, const char *file, int flags);
void pi_fs_close(pi_fs_file_t *file);
int32_t pi_fs_read(pi_fs_file_t *file, void *buffer, uint32_t size);
int32_t pi_fs_seek(pi_fs_file_t *file, unsigned int offset);

typedef struct pi_cl_fs_req_s {
    int32_t result;
} pi_cl_fs_req_t;
void pi_cl_fs_copy(pi_fs_file_t *file, uint32_t index, void *buffer, uint32_t size, int32_t ext2loc,
                   pi_cl_fs_req_t *req);
int32_t pi_cl_fs_wait(pi_cl_fs_req_t *req);

/* ---- measurement (not PMSIS): the generated network prints one line per cluster task ------------ */

/* Prints "measure <layer> cycles=... instructions=... load_stalls=... icache_misses=..." for the
 * last cluster task: cycles on core 0 from the task's start to its end (the layer's wall time on
 * the cluster), the other counters summed over the 8 cores. */
void pulp_open_print_measure(int layer);
#define NN_PLATFORM_MEASURE(layer) pulp_open_print_measure(layer)

#ifdef __cplusplus
}
#endif

#endif /* PMSIS_PULP_OPEN_PMSIS_H */
