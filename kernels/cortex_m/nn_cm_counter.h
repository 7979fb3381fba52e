/* A 64-bit count of the core's SysTick ticks (its processor clock, CLKSOURCE 1): 24-bit
 * SysTick wraps are counted by its exception (nn_cm_systick, in the vector table).
 * Under qemu-system-arm -icount shift=S, QEMU's virtual clock advances 2^S ns per executed
 * instruction, so ticks * 1e9 / (clock_hz * 2^S) is an instruction count (not cycles: qemu
 * models none); on a real board the same ticks are processor cycles. */
#ifndef NN_CM_COUNTER_H
#define NN_CM_COUNTER_H

#include <stdint.h>

void nn_cm_counter_start(void);
uint64_t nn_cm_counter_now(void);
void nn_cm_systick(void);

#endif
