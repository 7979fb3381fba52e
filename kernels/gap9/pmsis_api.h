/*
 * pmsis_api.h - the PMSIS declarations shared by nnscons's two PMSIS backends: the emulation
 * (emul/pmsis.h: platform=emul natively, platform=qemu on rv32) and the bare-metal pulp-open
 * runtime (open/pmsis.h: platform=gvsoc-open). On platform=gvsoc the GAP SDK's own pmsis.h is
 * used and this file is not.
 *
 * Written for nnscons; no SDK code is copied. Names, types, struct fields and argument orders
 * follow the public GAP SDK (github.com/GreenWaves-Technologies/gap_sdk), GAP9 variants where
 * GAP8 differs:
 *   kickoff, core ids ........ rtos/pulp/pulpos-2/include/pos/implem/implem.h
 *   struct pi_device ......... rtos/pmsis/api/include/pmsis/pmsis_types.h, device.h
 *   L2 / L1 allocation ....... pmsis/rtos/malloc/l2_malloc.h, cl_l1_malloc.h
 *   cluster .................. pmsis/cluster/cl_pmsis_types.h (the __GAP9__ struct pi_cluster_task:
 *                              no stack_size; the controller stack is pi_cluster_conf.cc_stack_size),
 *                              pmsis/cluster/cluster_sync/fc_to_cl_delegate.h
 *   team ..................... pmsis/cluster/cluster_team/cl_team.h; GAP9 fork semantics from
 *                              pulpos-2 pos/implem/pe.h (the controller is core 8, not in the team)
 *   cluster DMA .............. pmsis/cluster/dma/cl_dma.h
 *   RAM (L3) ................. bsp/ram.h, bsp/ram/aps25xxxn.h (GAP9 EVK default RAM, bsp/gap9_evk.h)
 *   flash .................... bsp/flash.h, bsp/flash/mx25u51245g.h (GAP9 EVK default flash)
 *   file system .............. bsp/fs.h, bsp/fs/readfs.h, bsp/fs/hostfs.h
 *
 * A backend's pmsis.h defines, before including this file, the private fields of three request
 * and file structs: PMSIS_BACKEND_CL_RAM_REQ, PMSIS_BACKEND_FS_FILE, PMSIS_BACKEND_CL_FS_REQ.
 * The emulation implements every function declared here; the pulp-open runtime the subset the
 * generated code and its runtime call (anything else fails at link time, not at run time).
 */
#ifndef NNSCONS_PMSIS_API_H
#define NNSCONS_PMSIS_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if !defined(PMSIS_BACKEND_CL_RAM_REQ) || !defined(PMSIS_BACKEND_FS_FILE) || !defined(PMSIS_BACKEND_CL_FS_REQ)
#error "include a backend's pmsis.h (kernels/gap9/emul or kernels/gap9/open), not pmsis_api.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- common types (pmsis_types.h) ---------------------------------------------------------- */

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

typedef struct pi_task pi_task_t; /* asynchronous tasks: not in either backend */
struct pi_device_api;
struct pmsis_event_kernel_wrap;

typedef struct pi_device {
    struct pi_device_api *api;
    void *config; /* set by pi_open_from_conf */
    void *data;   /* driver state, set by the open functions */
} pi_device_t;

void pi_open_from_conf(struct pi_device *device, void *conf);

/* ---- kickoff ------------------------------------------------------------------------------- */

/* Runs entry() (a void (*)(void)) on the fabric controller; returns the pmsis_exit() value or 0. */
int pmsis_kickoff(void *arg);
void pmsis_exit(int err) __attribute__((noreturn)); /* exits the program with status err */

/* 0..7 on a team core, 0 on the FC; the cluster controller: 8 on GAP9 and the emulation, 0 on
 * pulp-open (core 0 runs the task there) */
uint32_t pi_core_id(void);
uint32_t pi_cluster_id(void); /* 0 on the cluster, 31 on the FC (ARCHI_FC_CID) */
uint32_t pi_is_fc(void);

/* ---- L2 memory (l2_malloc.h) --------------------------------------------------------------- */

void *pi_l2_malloc(int size);
void pi_l2_free(void *chunk, int size);
void *pi_l2_malloc_align(int size, int align);
void pi_l2_malloc_dump(void);

#define pmsis_l2_malloc pi_l2_malloc
#define pmsis_l2_malloc_align pi_l2_malloc_align
#define pmsis_l2_malloc_free pi_l2_free
#define pmsis_l2_malloc_dump pi_l2_malloc_dump

/* ---- cluster L1 memory (cl_l1_malloc.h); device is the cluster device or NULL --------------- */

void *pi_cl_l1_malloc(struct pi_device *device, uint32_t size);
void pi_cl_l1_free(struct pi_device *device, void *chunk, int size);
void *pi_cl_l1_malloc_align(struct pi_device *device, int size, int align);
void pi_cl_l1_malloc_dump(struct pi_device *device);

#define pi_l1_malloc(x, y) pi_cl_l1_malloc(x, y)
#define pi_l1_malloc_align(x, y, z) pi_cl_l1_malloc_align(x, y, z)
#define pi_l1_free(x, y, z) pi_cl_l1_free(x, y, z)
#define pmsis_l1_malloc(...) pi_cl_l1_malloc((void *)0, __VA_ARGS__)
#define pmsis_l1_malloc_align(...) pi_cl_l1_malloc_align((void *)0, __VA_ARGS__)
#define pmsis_l1_malloc_free(...) pi_cl_l1_free((void *)0, __VA_ARGS__)

/* ---- cluster (cl_pmsis_types.h, fc_to_cl_delegate.h) --------------------------------------- */

typedef enum {
    PI_CLUSTER_FLAGS_FORK_BASED = (0 << 0),
    PI_CLUSTER_FLAGS_TASK_BASED = (1 << 0)
} pi_cluster_flags_e;

#define PI_CL_CC_STACK_SIZE 0x800

struct pi_cluster_conf {
    pi_device_e device_type;
    int id;
    uint32_t cc_stack_size; /* cluster-controller stack, reserved in L1 while open (0x800) */
    uint32_t scratch_size;  /* L1 reserved for task scratch data while open (0) */
    void *heap_start;
    uint32_t heap_size;
    struct pmsis_event_kernel_wrap *event_kernel;
    pi_cluster_flags_e flags;
};

/* The GAP9 layout: there is no stack_size field (see cc_stack_size above). */
typedef struct pi_cluster_task {
    void (*entry)(void *);
    void *arg;
    void *stacks;              /* NULL: the team stacks are reserved in L1 for the task */
    uint32_t slave_stack_size; /* per team core; 0 means 0x400 */
    int nb_cores;              /* team size of the first fork; 0 means all 8 */
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
struct pi_cluster_task *pi_cluster_task(struct pi_cluster_task *task, void (*entry)(void *),
                                        void *arg);
pi_cluster_task_t *pi_cluster_task_stacks(pi_cluster_task_t *task, void *stacks, int stack_size);
/* Runs task->entry on the cluster controller and returns when it has returned. */
int pi_cluster_send_task_to_cl(struct pi_device *device, struct pi_cluster_task *task);

static inline int pi_cluster_send_task(struct pi_device *device, struct pi_cluster_task *task)
{
    return pi_cluster_send_task_to_cl(device, task);
}

/* ---- team (cl_team.h) ---------------------------------------------------------------------- */

int pi_cl_cluster_nb_cores(void); /* 8 */
int pi_cl_team_nb_cores(void);    /* cores of the current (or last configured) team */
/* Runs entry(arg) on team cores 0..nb_cores-1 and returns when all have returned; the calling
 * cluster controller does not run it. nb_cores 0 reuses the previous team (initially all 8). */
void pi_cl_team_fork(int nb_cores, void (*entry)(void *), void *arg);
void pi_cl_team_prepare_fork(int nb_cores);
void pi_cl_team_preset_fork(void (*entry)(void *), void *arg);
void pi_cl_team_barrier(void); /* every core of the team, exactly once per barrier */
void pi_cl_team_critical_enter(void);
void pi_cl_team_critical_exit(void);

/* ---- cluster DMA (cl_dma.h) ---------------------------------------------------------------- */

typedef enum {
    PI_CL_DMA_DIR_LOC2EXT = 0, /* cluster L1 -> L2 */
    PI_CL_DMA_DIR_EXT2LOC = 1  /* L2 -> cluster L1 */
} pi_cl_dma_dir_e;

typedef struct pi_cl_dma_cmd_s {
    uint32_t id; /* set at issue, checked at wait */
} pi_cl_dma_cmd_t;

typedef struct pi_cl_dma_copy_s {
    uint32_t ext;
    uint32_t loc;
    uint32_t id;
    uint32_t size;
    pi_cl_dma_dir_e dir;
    uint8_t merge; /* must be 0: merged transfers are not emulated */
    uint32_t stride;
    uint32_t length;
} pi_cl_dma_copy_t;

typedef pi_cl_dma_copy_t pi_cl_dma_copy_2d_t;

/* ext: L2 address, loc: L1 address (both as uint32_t, e.g. (uint32_t)(uintptr_t)ptr). 2D: size bytes in lines of length bytes; the ext address
 * advances by stride per line, loc is contiguous. */
void pi_cl_dma_cmd(uint32_t ext, uint32_t loc, uint32_t size, pi_cl_dma_dir_e dir,
                   pi_cl_dma_cmd_t *cmd);
void pi_cl_dma_cmd_2d(uint32_t ext, uint32_t loc, uint32_t size, uint32_t stride,
                      uint32_t length, pi_cl_dma_dir_e dir, pi_cl_dma_cmd_t *cmd);
void pi_cl_dma_cmd_wait(pi_cl_dma_cmd_t *cmd);
void pi_cl_dma_flush(void); /* lands every pending transfer; each must still be waited */
void pi_cl_dma_memcpy(pi_cl_dma_copy_t *copy);
void pi_cl_dma_memcpy_2d(pi_cl_dma_copy_2d_t *copy);
void pi_cl_dma_wait(void *copy);

/* ---- external RAM, L3 (bsp/ram.h, bsp/ram/aps25xxxn.h) ------------------------------------- */

typedef struct pi_ram_api_s pi_ram_api_t;

struct pi_ram_conf {
    pi_ram_api_t *api; /* set by the conf_init function; checked by pi_ram_open */
};

struct pi_aps25xxxn_conf {
    struct pi_ram_conf ram;
    int spi_itf;
    int spi_cs;
    int xip_en;
    int ram_start;
    int ram_size;
    uint32_t baudrate;
    int reserve_addr_0;
    uint32_t mba;
};

void pi_aps25xxxn_conf_init(struct pi_aps25xxxn_conf *conf);

#define pi_default_ram_conf pi_aps25xxxn_conf
#define pi_default_ram_conf_init pi_aps25xxxn_conf_init

/* L3 addresses are opaque: they are not host pointers. */
int32_t pi_ram_open(struct pi_device *device);
void pi_ram_close(struct pi_device *device);
int pi_ram_alloc(struct pi_device *device, uint32_t *addr, uint32_t size);
int pi_ram_free(struct pi_device *device, uint32_t addr, uint32_t size);
void pi_ram_read(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size);
void pi_ram_write(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size);
void pi_ram_copy(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size,
                 int ext2loc);
void pi_ram_read_2d(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size,
                    uint32_t stride, uint32_t length);
void pi_ram_write_2d(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size,
                     uint32_t stride, uint32_t length);
void pi_ram_copy_2d(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size,
                    uint32_t stride, uint32_t length, int ext2loc);

typedef struct pi_cl_ram_req_s {
    PMSIS_BACKEND_CL_RAM_REQ
    uint32_t id; /* set at issue, checked at wait */
} pi_cl_ram_req_t;

void pi_cl_ram_read(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                    pi_cl_ram_req_t *req);
void pi_cl_ram_write(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                     pi_cl_ram_req_t *req);
void pi_cl_ram_copy(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                    int ext2loc, pi_cl_ram_req_t *req);
void pi_cl_ram_read_2d(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                       uint32_t stride, uint32_t length, pi_cl_ram_req_t *req);
void pi_cl_ram_write_2d(struct pi_device *device, uint32_t pi_ram_addr, void *addr,
                        uint32_t size, uint32_t stride, uint32_t length, pi_cl_ram_req_t *req);
void pi_cl_ram_copy_2d(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                       uint32_t stride, uint32_t length, int ext2loc, pi_cl_ram_req_t *req);
void pi_cl_ram_read_wait(pi_cl_ram_req_t *req);
void pi_cl_ram_write_wait(pi_cl_ram_req_t *req);
void pi_cl_ram_copy_wait(pi_cl_ram_req_t *req);

/* ---- flash (bsp/flash.h, bsp/flash/mx25u51245g.h): only what mounting a readfs needs -------- */

typedef struct pi_flash_api_s pi_flash_api_t;

struct pi_flash_conf {
    pi_flash_api_t *api; /* set by the conf_init function; checked by pi_flash_open */
};

struct pi_mx25u51245g_conf {
    struct pi_flash_conf flash;
    int spi_itf;
    int spi_cs;
    int xip_en;
    uint32_t baudrate;
    uint32_t mba;
};

void pi_mx25u51245g_conf_init(struct pi_mx25u51245g_conf *conf);

#define pi_default_flash_conf pi_mx25u51245g_conf
#define pi_default_flash_conf_init pi_mx25u51245g_conf_init

int pi_flash_open(struct pi_device *device);
void pi_flash_close(struct pi_device *device);

/* ---- file system (bsp/fs.h, bsp/fs/readfs.h, bsp/fs/hostfs.h) ------------------------------ */

typedef enum {
    PI_FS_READ_ONLY = 0,
    PI_FS_HOST = 1,
    PI_FS_LFS = 2
} pi_fs_type_e;

typedef enum {
    PI_FS_FLAGS_READ = 0,
    PI_FS_FLAGS_WRITE = 1,
    PI_FS_FLAGS_APPEND = 2
} pi_fs_flags_e;

typedef struct pi_fs_api_s pi_fs_api_t;

struct pi_fs_conf {
    pi_fs_type_e type;
    struct pi_device *flash; /* readfs: an opened flash device */
    char *partition_name;
    bool auto_format;
    pi_fs_api_t *api; /* set by the conf_init functions; checked by pi_fs_mount */
};

struct pi_readfs_conf {
    struct pi_fs_conf fs;
};

struct pi_hostfs_conf {
    struct pi_fs_conf fs;
};

typedef struct pi_fs_file_s {
    struct pi_device *fs;
    pi_fs_api_t *api;
    void *data;
    unsigned int size; /* file size in bytes */
    void *fs_data;
    PMSIS_BACKEND_FS_FILE
} pi_fs_file_t;

void pi_fs_conf_init(struct pi_fs_conf *conf);
void pi_readfs_conf_init(struct pi_readfs_conf *conf);
void pi_hostfs_conf_init(struct pi_hostfs_conf *conf);
int32_t pi_fs_mount(struct pi_device *device);
void pi_fs_unmount(struct pi_device *device);
pi_fs_file_t *pi_fs_open(struct pi_device *device, const char *file, int flags); /* NULL if absent */
void pi_fs_close(pi_fs_file_t *file);
int32_t pi_fs_read(pi_fs_file_t *file, void *buffer, uint32_t size); /* bytes read */
int32_t pi_fs_direct_read(pi_fs_file_t *file, void *buffer, uint32_t size);
int32_t pi_fs_seek(pi_fs_file_t *file, unsigned int offset);
int32_t pi_fs_copy(pi_fs_file_t *file, uint32_t index, void *buffer, uint32_t size,
                   int32_t ext2loc);

/* Cluster side (bsp/fs.h): a copy between a file and L2, complete at pi_cl_fs_wait;
 * flash-resident weights are read this way. */
typedef struct pi_cl_fs_req_s {
    PMSIS_BACKEND_CL_FS_REQ
} pi_cl_fs_req_t;

void pi_cl_fs_copy(pi_fs_file_t *file, uint32_t index, void *buffer, uint32_t size,
                   int32_t ext2loc, pi_cl_fs_req_t *req);
int32_t pi_cl_fs_wait(pi_cl_fs_req_t *req);

#ifdef __cplusplus
}
#endif

#endif /* NNSCONS_PMSIS_API_H */
