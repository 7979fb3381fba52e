/* The bare-metal GVSoC runtime (pulp-open, GAP9 model), fabric-controller side: kickoff and exit, L2 allocation, cluster boot and
 * tasks, the readfs over semihosting, the per-task counters. picolibc's crt0 starts the
 * FC at the ELF entry (GVSoC loads the ELF's segments into L2) and gives printf (semihosting). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "open_internal.h"

/* Where the readfs files are, relative to the simulator's working directory (the run step
 * passes --work-dir so that this relative path reaches the build's bin/ folder). */
#ifndef NN_OPEN_FS_DIR
#define NN_OPEN_FS_DIR "."
#endif

void open_cluster_start(void);

/* stdio: one SYS_WRITE0 per line.  picolibc's semihosting stdio writes a character per call
 * (SYS_WRITEC), which the GAP9 model's ISS does not implement and which is slow on both.  These
 * three definitions keep picolibc's own (libsemihost's iob.c) out of the link. */
static char out_line[256];
static unsigned out_len;

static int out_flush(FILE *f)
{
    (void)f;
    if (out_len) {
        out_line[out_len] = 0;
        open_semihost(SH_WRITE0, (long)out_line);
        out_len = 0;
    }
    return 0;
}

static int out_put(char c, FILE *f)
{
    out_line[out_len++] = c;
    if (c == '\n' || out_len == sizeof out_line - 1)
        out_flush(f);
    return (unsigned char)c;
}

static FILE out_file = FDEV_SETUP_STREAM(out_put, NULL, out_flush, _FDEV_SETUP_WRITE);
static FILE in_file = FDEV_SETUP_STREAM(NULL, NULL, NULL, _FDEV_SETUP_READ);
FILE *const stdin = &in_file;
FILE *const stdout = &out_file;
FILE *const stderr = &out_file;

void open_fail(const char *what)
{
    open_semihost(SH_WRITE0, (long)OPEN_CHIP_NAME " ERROR: ");
    open_semihost(SH_WRITE0, (long)what);
    open_semihost(SH_WRITE0, (long)"\n");
    open_semihost(SH_EXIT, 0x20023);    /* ADP_Stopped_InternalError: gvsoc exits with 1 */
    for (;;)
        ;
}

void pmsis_exit(int err)
{
    fflush(stdout);
    /* ApplicationExit is status 0 for gvsoc, any other reason status 1; the log says which */
    if (err)
        printf("pmsis_exit(%d)\n", err);
    fflush(stdout);
    open_semihost(SH_EXIT, err ? 0x20023 : 0x20026);
    for (;;)
        ;
}

int pmsis_kickoff(void *arg)
{
    ((void (*)(void))arg)();
    pmsis_exit(0);
}

uint32_t pi_core_id(void)
{
    return open_hartid() & 0x1f;
}

uint32_t pi_cluster_id(void)
{
    return (open_hartid() >> 5) & 0x3f;
}

uint32_t pi_is_fc(void)
{
    return pi_cluster_id() == 31;
}

void pi_open_from_conf(struct pi_device *device, void *conf)
{
    device->config = conf;
    device->data = NULL;
}

/* ---- L2: picolibc's heap, which fills the L2 between .bss and the FC stack ------------------ */

void *pi_l2_malloc(int size)
{
    return size > 0 ? memalign(8, (size_t)size) : NULL;
}

void *pi_l2_malloc_align(int size, int align)
{
    return size > 0 ? memalign((size_t)(align < 8 ? 8 : align), (size_t)size) : NULL;
}

void pi_l2_free(void *chunk, int size)
{
    (void)size;
    free(chunk);
}

/* ---- cluster ------------------------------------------------------------------------------------ */

static int cluster_on;
static uint32_t task_count;

void pi_cluster_conf_init(struct pi_cluster_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    conf->device_type = PI_DEVICE_CLUSTER_TYPE;
    conf->cc_stack_size = PI_CL_CC_STACK_SIZE;
}

/* L1: [mailbox][heap ... ][stacks of cores 7..1][stack of core 0] */
int pi_cluster_open(struct pi_device *device)
{
    const struct pi_cluster_conf *conf = (const struct pi_cluster_conf *)device->config;
    open_ctrl_t *c = OPEN_CTRL;
    if (cluster_on)
        return 0;
    memset(c, 0, sizeof *c);
    const uint32_t end = OPEN_L1_BASE + OPEN_L1_SIZE;
    const uint32_t cc = ((conf ? conf->cc_stack_size : PI_CL_CC_STACK_SIZE) + 15u) & ~15u;
    const uint32_t slave = (NN_OPEN_SLAVE_STACK_SIZE + 15u) & ~15u;
    for (uint32_t i = 0; i < OPEN_NB_CORES; ++i) {
        c->stack_top[i] = i == 0 ? end : end - cc - (i - 1) * slave;
        c->stack_bottom[i] = i == 0 ? end - cc : c->stack_top[i] - slave;
        REG32(c->stack_bottom[i]) = OPEN_STACK_CANARY;
    }
    __asm__ volatile("mv %0, tp" : "=r"(c->tls));
    c->l1_top = OPEN_L1_HEAP_BASE;
    c->l1_end = c->stack_bottom[OPEN_NB_CORES - 1];
    c->fork_n = OPEN_NB_CORES;
    for (uint32_t i = 0; i < OPEN_NB_CORES; ++i)
        REG32(OPEN_BOOT_ADDR(i)) = (uint32_t)(uintptr_t)open_cluster_start;
    REG32(OPEN_ICACHE_ENABLE) = 0xffffffffu;    /* off at reset: 3.7x slower code without it */
    REG32(OPEN_FETCH_ENABLE) = (1u << OPEN_NB_CORES) - 1u;
    cluster_on = 1;
    return 0;
}

int pi_cluster_close(struct pi_device *device)
{
    (void)device;
    return 0;   /* the cores keep polling their mailbox until the program exits */
}

struct pi_cluster_task *pi_cluster_task(struct pi_cluster_task *task, void (*entry)(void *), void *arg)
{
    memset(task, 0, sizeof *task);
    task->entry = entry;
    task->arg = arg;
    return task;
}

int pi_cluster_send_task_to_cl(struct pi_device *device, struct pi_cluster_task *task)
{
    (void)device;
    open_ctrl_t *c = OPEN_CTRL;
    if (!cluster_on)
        open_fail("pi_cluster_send_task_to_cl: the cluster is not open");
    if (task->slave_stack_size > NN_OPEN_SLAVE_STACK_SIZE)
        open_fail("pi_cluster_task: slave_stack_size above NN_OPEN_SLAVE_STACK_SIZE (fixed at cluster boot)");
    c->task_fn = task->entry;
    c->task_arg = task->arg;
    const uint32_t g = ++task_count;
    c->task_gen = g;
    REG32(OPEN_EU_SW_TRIGGER_FROM_FC + 4u * OPEN_EVENT_WAKE) = 1u;     /* wakes core 0 */
    while (c->task_done != g)
        ;
    for (uint32_t i = 0; i < OPEN_NB_CORES; ++i)
        if (REG32(c->stack_bottom[i]) != OPEN_STACK_CANARY) {
            printf(OPEN_CHIP_NAME " ERROR: stack overflow on cluster core %lu\n", (unsigned long)i);
            pmsis_exit(3);
        }
    return 0;
}

void pulp_open_last_counters(pulp_open_counters_t *out)
{
    const open_ctrl_t *c = OPEN_CTRL;
    out->cycles = c->perf[OPEN_PERF_CYCLES];
    out->instructions = c->perf[OPEN_PERF_INSTR];
    out->load_stalls = c->perf[OPEN_PERF_LD_STALL];
    out->icache_misses = c->perf[OPEN_PERF_IMISS];
    out->tcdm_contention = c->perf[OPEN_PERF_TCDM_CONT];
}

uint32_t pulp_open_last_cycles(void)
{
    return OPEN_CTRL->perf[OPEN_PERF_CYCLES];
}

/* ---- no L3 RAM (pulp-open; the GAP9 model has no uDMA) --------------------------------------------------------------------- */

void pi_aps25xxxn_conf_init(struct pi_aps25xxxn_conf *conf)
{
    memset(conf, 0, sizeof *conf);
}

int32_t pi_ram_open(struct pi_device *device)
{
    (void)device;
    printf(OPEN_CHIP_NAME " ERROR: no L3 RAM on this simulator (the network keeps its parameters in L2)\n");
    return -1;
}

int pi_ram_alloc(struct pi_device *device, uint32_t *addr, uint32_t size)
{
    (void)device, (void)addr, (void)size;
    return -1;
}

void pi_ram_write(struct pi_device *device, uint32_t pi_ram_addr, void *data, uint32_t size)
{
    (void)device, (void)pi_ram_addr, (void)data, (void)size;
    open_fail("pi_ram_write: no L3 RAM on this simulator");
}

void pi_cl_ram_read(struct pi_device *device, uint32_t pi_ram_addr, void *addr, uint32_t size,
                    pi_cl_ram_req_t *req)
{
    (void)device, (void)pi_ram_addr, (void)addr, (void)size, (void)req;
    open_fail("pi_cl_ram_read: no L3 RAM on this simulator");
}

void pi_cl_ram_read_wait(pi_cl_ram_req_t *req)
{
    (void)req;
    open_fail("pi_cl_ram_read_wait: no L3 RAM on this simulator");
}

/* ---- flash + readfs: files of NN_OPEN_FS_DIR on the host ------------------------------------- */

void pi_mx25u51245g_conf_init(struct pi_mx25u51245g_conf *conf)
{
    memset(conf, 0, sizeof *conf);
}

int pi_flash_open(struct pi_device *device)
{
    (void)device;
    return 0;
}

void pi_flash_close(struct pi_device *device)
{
    (void)device;
}

void pi_readfs_conf_init(struct pi_readfs_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    conf->fs.type = PI_FS_READ_ONLY;
}

int32_t pi_fs_mount(struct pi_device *device)
{
    (void)device;
    return 0;
}

void pi_fs_unmount(struct pi_device *device)
{
    (void)device;
}

pi_fs_file_t *pi_fs_open(struct pi_device *device, const char *file, int flags)
{
    char path[160];
    if (flags != 0 || snprintf(path, sizeof path, "%s/%s", NN_OPEN_FS_DIR, file) >= (int)sizeof path)
        return NULL;
    long args[3] = {(long)path, 1 /* "rb" */, (long)strlen(path)};
    const long h = open_semihost(SH_OPEN, (long)args);
    if (h < 0)
        return NULL;
    const long size = open_semihost(SH_FLEN, h);   /* GVSoC: the handle itself, not a block */
    pi_fs_file_t *f = (pi_fs_file_t *)calloc(1, sizeof *f);
    if (f == NULL || size < 0) {
        open_semihost(SH_CLOSE, h);
        free(f);
        return NULL;
    }
    f->fs = device;
    f->size = (unsigned int)size;
    f->handle = (int)h;
    return f;
}

void pi_fs_close(pi_fs_file_t *file)
{
    open_semihost(SH_CLOSE, file->handle);     /* GVSoC: the handle itself */
    free(file);
}

int32_t pi_fs_read(pi_fs_file_t *file, void *buffer, uint32_t size)
{
    long args[3] = {file->handle, (long)buffer, (long)size};
    const long left = open_semihost(SH_READ, (long)args);   /* bytes NOT read */
    return left < 0 ? -1 : (int32_t)(size - (uint32_t)left);
}

int32_t pi_fs_seek(pi_fs_file_t *file, unsigned int offset)
{
    long args[2] = {file->handle, (long)offset};
    return open_semihost(SH_SEEK, (long)args) == 0 ? 0 : -1;
}

/* Synchronous: the data is in place when the call returns (semihosting costs no simulated time,
 * so flash-staged weights would come for free: these platforms stage none). */
void pi_cl_fs_copy(pi_fs_file_t *file, uint32_t index, void *buffer, uint32_t size, int32_t ext2loc,
                   pi_cl_fs_req_t *req)
{
    if (!ext2loc)
        open_fail("pi_cl_fs_copy: only file -> chip copies");
    req->result = pi_fs_seek(file, index) == 0 ? pi_fs_read(file, buffer, size) : -1;
}

int32_t pi_cl_fs_wait(pi_cl_fs_req_t *req)
{
    return req->result;
}
