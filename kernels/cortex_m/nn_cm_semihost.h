/* Arm semihosting for the bare-metal test harness under qemu-system-arm -semihosting:
 * console output, the host's files (relative names resolve in qemu's working folder),
 * the command line and the exit status. */
#ifndef NN_CM_SEMIHOST_H
#define NN_CM_SEMIHOST_H

#include <stddef.h>

void sh_puts(const char *s);                       /* SYS_WRITE0 */
void sh_printf(const char *fmt, ...);              /* %d %ld %lld %u %lu %llu %s %c only */
long sh_read_file(const char *path, void *buf, long size);   /* bytes, -1: cannot open, -2: size differs */
int sh_write_file(const char *path, const void *buf, long size);   /* 0 ok */
int sh_cmdline(char *buf, int size);               /* SYS_GET_CMDLINE; 0 ok */
void sh_exit(int status) __attribute__((noreturn));   /* SYS_EXIT with ADP_Stopped_ApplicationExit */

#endif
