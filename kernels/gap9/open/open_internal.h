/* What the pulp-open runtime's files share: the memory map, the FC <-> cluster mailbox,
 * semihosting, the performance counters. Addresses: ../shared/gvsoc/NOTES.md (measured on
 * GVSoC's pulp-open) and GVSoC's pulp/chips/pulp_open/cluster.json, mchan/archi/mchan_v7.h. */
#ifndef PULP_OPEN_INTERNAL_H
#define PULP_OPEN_INTERNAL_H

#include <stdint.h>
#include "pmsis.h"

/* The chip: GVSoC's pulp-open (default) or GreenWaves' GAP9 model (NN_OPEN_CHIP_GAP9,
 * ../shared/gap9-gvsoc/NOTES.md): 9 cluster cores, 128 KiB L1, mchan's per-core alias moved. */
#ifdef NN_OPEN_CHIP_GAP9
#define OPEN_NB_CORES 9
#define OPEN_L1_SIZE (128u * 1024u)
#define OPEN_MCHAN 0x10204800u          /* the per-core alias: each core its own queue */
#define OPEN_CHIP_NAME "GAP9"
#define OPEN_PCER_TCDM_CONT 16          /* GAP9's pcer_v2 numbering (ELW is event 11) */
#else
#define OPEN_NB_CORES 8
#define OPEN_L1_SIZE (64u * 1024u)
#define OPEN_MCHAN 0x10204400u
#define OPEN_CHIP_NAME "PULP-OPEN"
#define OPEN_PCER_TCDM_CONT 15          /* RI5CY's pcer_v1 numbering */
#endif
#define OPEN_L1_BASE 0x10000000u
#define OPEN_CLUSTER_CTRL 0x10200000u
#define OPEN_FETCH_ENABLE (OPEN_CLUSTER_CTRL + 0x08u)
#define OPEN_BOOT_ADDR(i) (OPEN_CLUSTER_CTRL + 0x40u + 4u * (i))
#define OPEN_ICACHE_ENABLE 0x10201400u
#define OPEN_MCHAN_CMD (OPEN_MCHAN + 0x0u)
#define OPEN_MCHAN_STATUS (OPEN_MCHAN + 0x4u)
#define OPEN_MCHAN_LEN_MAX 0x1ffffu     /* 17-bit length field */
#define OPEN_MCHAN_TYPE_L2_TO_L1 (1u << 17)
#define OPEN_MCHAN_INCR (1u << 18)
#define OPEN_MCHAN_2D_EXT (1u << 19)

/* Event unit (GVSoC pulp/event_unit/archi/eu_v3.h): idle cluster cores sleep on a load from
 * EVENT_WAIT_CLEAR until software event 0 wakes them, instead of spinning: the simulator then
 * skips them (a spinning cluster made serial FC phases cost 9 cores' worth of simulation). */
#define OPEN_EU_DEMUX 0x10204000u                                  /* per-core alias */
#define OPEN_EU_MASK_OR (OPEN_EU_DEMUX + 0x08u)
#define OPEN_EU_WAIT_CLEAR (OPEN_EU_DEMUX + 0x3Cu)
#define OPEN_EU_SW_TRIGGER (OPEN_EU_DEMUX + 0x100u)                /* event 0, core mask */
#define OPEN_EU_SW_TRIGGER_FROM_FC (OPEN_CLUSTER_CTRL + 0x800u + 0x600u)
#define OPEN_EVENT_WAKE 0

#ifndef NN_OPEN_SLAVE_STACK_SIZE
#define NN_OPEN_SLAVE_STACK_SIZE 1024u
#endif
#define OPEN_STACK_CANARY 0x57ac4c0du

#define REG32(a) (*(volatile uint32_t *)(uintptr_t)(a))

/* Performance counters kept per layer: cycles, instructions, load stalls, icache miss cycles,
 * cycles lost to TCDM bank conflicts (modelled on GAP9's model; pulp-open counts none) */
enum { OPEN_PERF_CYCLES, OPEN_PERF_INSTR, OPEN_PERF_LD_STALL, OPEN_PERF_IMISS, OPEN_PERF_TCDM_CONT, OPEN_PERF_N };

/* The mailbox at the start of L1. No atomics on RI5CY (rv32imc): every word has one writer. */
typedef struct {
    /* FC -> core 0 */
    volatile uint32_t task_gen;
    void (*volatile task_fn)(void *);
    void *volatile task_arg;
    /* core 0 -> FC */
    volatile uint32_t task_done;
    volatile uint32_t perf[OPEN_PERF_N];            /* the last task, see pulp_open_last_counters */
    /* core 0 -> workers */
    volatile uint32_t fork_gen;
    void (*volatile fork_fn)(void *);
    void *volatile fork_arg;
    volatile uint32_t fork_n;
    /* worker i -> core 0 */
    volatile uint32_t fork_done[OPEN_NB_CORES];
    volatile uint32_t barrier[OPEN_NB_CORES];       /* barriers passed in this fork, per core */
    volatile uint32_t worker_perf[OPEN_NB_CORES][OPEN_PERF_N];  /* summed over forks of a task */
    uint32_t stack_top[OPEN_NB_CORES];              /* set by the FC before boot */
    uint32_t stack_bottom[OPEN_NB_CORES];
    void *tls;                                      /* the FC's tp: picolibc's TLS block */
    /* L1 allocator (core 0 only) */
    uint32_t l1_top, l1_end;
} open_ctrl_t;

#define OPEN_CTRL ((open_ctrl_t *)(uintptr_t)OPEN_L1_BASE)
#define OPEN_L1_HEAP_BASE (OPEN_L1_BASE + ((sizeof(open_ctrl_t) + 15u) & ~15u))

static inline uint32_t open_hartid(void)
{
    uint32_t id;
    __asm__ volatile("csrr %0, mhartid" : "=r"(id));
    return id;
}

/* RI5CY counters (PCCR 0x780 + n): 0 cycles, 1 instructions, 2 load stalls, 4 icache misses,
 * TCDM contention (event OPEN_PCER_TCDM_CONT) */
static inline void open_perf_read(uint32_t v[OPEN_PERF_N])
{
    __asm__ volatile("csrr %0, 0x780" : "=r"(v[OPEN_PERF_CYCLES]));
    __asm__ volatile("csrr %0, 0x781" : "=r"(v[OPEN_PERF_INSTR]));
    __asm__ volatile("csrr %0, 0x782" : "=r"(v[OPEN_PERF_LD_STALL]));
    __asm__ volatile("csrr %0, 0x784" : "=r"(v[OPEN_PERF_IMISS]));
    __asm__ volatile("csrr %0, %1" : "=r"(v[OPEN_PERF_TCDM_CONT]) : "i"(0x780 + OPEN_PCER_TCDM_CONT));
}

static inline void open_perf_start(void)
{
    const uint32_t events = (1u << 0) | (1u << 1) | (1u << 2) | (1u << 4) | (1u << OPEN_PCER_TCDM_CONT);
    __asm__ volatile("csrw 0xCC0, %0" ::"r"(events));   /* PCER: what to count */
    __asm__ volatile("csrw 0xCC1, %0" ::"r"(1u));       /* PCMR: run */
}

/* ARM-style semihosting on RISC-V: the three uncompressed instructions GVSoC recognizes */
static inline long open_semihost(long op, long arg)
{
    register long a0 __asm__("a0") = op;
    register long a1 __asm__("a1") = arg;
    __asm__ volatile(".option push\n.option norvc\n"
                     "slli x0, x0, 0x1f\nebreak\nsrai x0, x0, 7\n.option pop"
                     : "+r"(a0) : "r"(a1) : "memory");
    return a0;
}

enum { SH_OPEN = 0x01, SH_CLOSE = 0x02, SH_WRITE0 = 0x04, SH_READ = 0x06, SH_SEEK = 0x0A,
       SH_FLEN = 0x0C, SH_EXIT = 0x18 };

void open_fail(const char *what) __attribute__((noreturn));
void open_cluster_main(uint32_t core) __attribute__((noreturn));

#endif
