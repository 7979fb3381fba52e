/* Semihosting calls: `bkpt 0xAB` with the operation in r0 and its argument block in r1
 * (the Arm semihosting specification; qemu-system-arm -semihosting serves them). */
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include "nn_cm_semihost.h"

enum { SYS_OPEN = 0x01, SYS_CLOSE = 0x02, SYS_WRITE0 = 0x04, SYS_WRITE = 0x05, SYS_READ = 0x06,
       SYS_FLEN = 0x0C, SYS_GET_CMDLINE = 0x15, SYS_EXIT = 0x18 };

static long call(int op, void *arg)
{
    register long r0 __asm__("r0") = op;
    register void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void sh_puts(const char *s)
{
    call(SYS_WRITE0, (void *)s);
}

static char line[256];
static int used;

static void put(char c)
{
    line[used++] = c;
    if (c == '\n' || used == (int)sizeof line - 1) {
        line[used] = 0;
        sh_puts(line);
        used = 0;
    }
}

static void put_num(unsigned long long v, int negative)
{
    char digits[24];
    int n = 0;
    if (negative)
        put('-');
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        put(digits[--n]);
}

void sh_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    for (const char *p = fmt; *p; ++p) {
        if (*p != '%') {
            put(*p);
            continue;
        }
        int is_long = 0;
        while (p[1] == 'l' && is_long < 2) {
            ++is_long;
            ++p;
        }
        switch (*++p) {
        case 'd': {
            long long v = is_long == 2 ? va_arg(ap, long long) : is_long ? va_arg(ap, long) : va_arg(ap, int);
            put_num(v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v, v < 0);
            break;
        }
        case 'u':
            put_num(is_long == 2 ? va_arg(ap, unsigned long long)
                    : is_long ? va_arg(ap, unsigned long) : va_arg(ap, unsigned), 0);
            break;
        case 's':
            for (const char *s = va_arg(ap, const char *); *s; ++s)
                put(*s);
            break;
        case 'c':
            put((char)va_arg(ap, int));
            break;
        case '%':
            put('%');
            break;
        default:
            put('?');
            break;
        }
    }
    va_end(ap);
}

static long open_file(const char *path, int mode)
{
    long args[3] = { (long)(uintptr_t)path, mode, (long)strlen(path) };
    return call(SYS_OPEN, args);
}

long sh_read_file(const char *path, void *buf, long size)
{
    long h = open_file(path, 1 /* "rb" */);
    if (h < 0)
        return -1;
    long flen_args[1] = { h };
    long len = call(SYS_FLEN, flen_args);
    long args[3] = { h, (long)(uintptr_t)buf, size };
    long left = len == size ? call(SYS_READ, args) : -1;
    long close_args[1] = { h };
    call(SYS_CLOSE, close_args);
    return left == 0 ? size : -2;
}

int sh_write_file(const char *path, const void *buf, long size)
{
    long h = open_file(path, 5 /* "wb" */);
    if (h < 0)
        return -1;
    long args[3] = { h, (long)(uintptr_t)buf, size };
    long left = call(SYS_WRITE, args);
    long close_args[1] = { h };
    call(SYS_CLOSE, close_args);
    return left == 0 ? 0 : -1;
}

int sh_cmdline(char *buf, int size)
{
    long args[2] = { (long)(uintptr_t)buf, size };
    return call(SYS_GET_CMDLINE, args) == 0 ? 0 : -1;
}

void sh_exit(int status)
{
    if (used) {
        line[used] = 0;
        sh_puts(line);
        used = 0;
    }
    long args[2] = { 0x20026 /* ADP_Stopped_ApplicationExit */, status };
    for (;;)
        call(SYS_EXIT, args);
}
