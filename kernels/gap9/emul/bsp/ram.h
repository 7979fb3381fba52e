/* bsp/ram.h - the GAP SDK BSP header of that name; the emulation declares it all in pmsis.h. */
#include "pmsis.h"
