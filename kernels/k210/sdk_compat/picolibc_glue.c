/* nnscons K210 SDK compatibility layer: what picolibc needs from the platform that the
 * Kendryte SDK provides under newlib's names.
 *
 * - stdout/stderr: picolibc's stdio writes through a FILE's put function, not through
 *   write(2) (the SDK's syscalls.c serves newlib's _write ecall); here every character goes
 *   to the SDK's high-speed UART (uarths_putchar, 115200 8N1 after the SDK's start-up), the
 *   serial port kflash's terminal reads;
 * - _exit: picolibc's exit() ends in _exit(); the SDK's is sys_exit();
 * - the heap: picolibc's sbrk uses __heap_start/__heap_end, which the link maps to the SDK
 *   linker script's _heap_start/_heap_end (sdk_compat/picolibc.cmake). */
#include <stdio.h>

int uarths_putchar(char c);
void sys_exit(int code) __attribute__((noreturn));

static int nns_uart_put(char c, FILE *f)
{
    (void)f;
    if (c == '\n')
        uarths_putchar('\r');
    return uarths_putchar(c);
}

static FILE nns_uart = FDEV_SETUP_STREAM(nns_uart_put, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdin = &nns_uart;
FILE *const stdout = &nns_uart;
FILE *const stderr = &nns_uart;

void _exit(int code)
{
    sys_exit(code);
}
