/* The bare-metal start-up of the test firmware: the vector table (initial stack pointer,
 * reset and fault handlers), .data copied from its load address, .bss zeroed, the FPU
 * (and MVE on Armv8.1-M) enabled, then main; its return value is the semihosting exit
 * status.  The symbols come from the project's linker script (nodes.linker_script). */
#include <stdint.h>
#include <string.h>
#include "nn_cm_counter.h"
#include "nn_cm_semihost.h"

extern uint32_t __stack_top, __data_load, __data_start, __data_end, __bss_start, __bss_end;
int main(void);

void nn_cm_reset(void) __attribute__((noreturn));
void nn_cm_fault(void) __attribute__((noreturn));

void nn_cm_reset(void)
{
    memcpy(&__data_start, &__data_load, (size_t)((char *)&__data_end - (char *)&__data_start));
    memset(&__bss_start, 0, (size_t)((char *)&__bss_end - (char *)&__bss_start));
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
    /* CPACR: full access to CP10/CP11 (the FPU and the M-profile vector extension) */
    *(volatile uint32_t *)0xE000ED88 |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
    sh_exit(main());
}

void nn_cm_fault(void)
{
    sh_puts("ERROR: hard fault (an invalid memory access or instruction)\n");
    sh_exit(3);
}

/* initial SP, reset, NMI, HardFault, MemManage, BusFault, UsageFault, 4 reserved, SVCall,
 * DebugMonitor, reserved, PendSV, SysTick (the instruction counter's wraps) */
__attribute__((section(".vectors"), used)) static const void *const vectors[16] = {
    &__stack_top, (void *)nn_cm_reset, (void *)nn_cm_fault, (void *)nn_cm_fault,
    (void *)nn_cm_fault, (void *)nn_cm_fault, (void *)nn_cm_fault, 0, 0, 0, 0,
    (void *)nn_cm_fault, (void *)nn_cm_fault, 0, (void *)nn_cm_fault, (void *)nn_cm_systick,
};
