/* nnscons K210 SDK compatibility layer: what picolibc needs from the platform that the
 * Kendryte SDK provides under newlib's names.
 *
 * - stdout/stderr: picolibc's stdio writes through a FILE's put function, not through
 *   write(2), which is where the SDK's syscalls.c sends newlib's output: to `sys_putchar`.
 *   The glue uses the same route: the SDK's start-up (_init_bsp: uart_debug_init(UART_DEVICE_3)
 *   on FPIOA pins 4/5, the board's USB serial, 115200 8N1) registers sys_putchar; before
 *   that, or if nothing is registered, characters go to the high-speed UART (uarths_putchar,
 *   the boot ROM's console);
 * - _exit: picolibc's exit() ends in _exit(); the SDK's is sys_exit();
 * - the heap: picolibc's sbrk uses __heap_start/__heap_end, which the link maps to the SDK
 *   linker script's _heap_start/_heap_end (sdk_compat/picolibc.cmake). */
#include <stdio.h>

#include "syscalls.h"

int uarths_putchar(char c);
void sys_exit(int code) __attribute__((noreturn));

static int nns_uart_put(char c, FILE *f)
{
    (void)f;
    int (*put)(char) = sys_putchar ? sys_putchar : uarths_putchar;
    if (c == '\n')
        put('\r');
    return put(c);
}

static FILE nns_uart = FDEV_SETUP_STREAM(nns_uart_put, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdin = &nns_uart;
FILE *const stdout = &nns_uart;
FILE *const stderr = &nns_uart;

void _exit(int code)
{
    sys_exit(code);
}
