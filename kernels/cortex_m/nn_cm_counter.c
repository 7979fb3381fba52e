/* SysTick as a free-running 64-bit tick counter (nn_cm_counter.h). */
#include "nn_cm_counter.h"

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SYST_MAX 0xFFFFFFu

static volatile uint32_t wraps;

void nn_cm_systick(void)
{
    ++wraps;
}

void nn_cm_counter_start(void)
{
    SYST_CSR = 0;
    SYST_RVR = SYST_MAX;
    SYST_CVR = 0;                 /* any write clears it: the count reloads on the next tick */
    wraps = 0;
    SYST_CSR = 7;                 /* enable, exception on wrap, processor clock */
    while (SYST_CVR == 0)         /* until the first reload: 0 would read as a full period */
        ;
}

uint64_t nn_cm_counter_now(void)
{
    uint32_t w, v;
    do {                          /* a wrap between the two reads is seen by the retry */
        w = wraps;
        v = SYST_CVR;
    } while (w != wraps);
    return ((uint64_t)w << 24) + (SYST_MAX - v);
}
