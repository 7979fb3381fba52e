/* LD_PRELOAD library for benchmarks/cpu_mask.py: a program whose cpuid and xgetbv
 * instructions were patched to int3 (cpuid 0f a2 -> cc a2, xgetbv 0f 01 d0 -> cc 01 d0)
 * traps here; the handler runs the real instruction and hides what the mask removes
 * (AVX-512, AVX-VNNI, AMX: an AVX2-only x86-64), then resumes after the instruction.
 * Only the patched copies trap: everything else in the process runs unchanged, at full
 * speed (the sites are CPU-feature checks, run at start-up).
 *
 * NNSCONS_CPU_MASK_REPORT=path: at exit, append "pid cpuid=N xgetbv=M" (how many
 * patched instructions were emulated) so the caller can tell the mask was in effect.
 *
 * /proc/cpuinfo opened by name (open, open64, openat, openat64, fopen, fopen64) reads as
 * the kernel's text with those features' flags removed: a build planned under the mask
 * (its variant cache key, the kernels it times) sees the AVX2-only CPU too. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static volatile unsigned long n_cpuid, n_xgetbv;

#define BIT(n) (1u << (n))

static void mask_cpuid(unsigned leaf, unsigned sub, unsigned r[4])
{
    if (leaf == 7 && sub == 0) {
        /* EBX: AVX512F, DQ, IFMA, PF, ER, CD, BW, VL */
        r[1] &= ~(BIT(16) | BIT(17) | BIT(21) | BIT(26) | BIT(27) | BIT(28) | BIT(30) | BIT(31));
        /* ECX: AVX512_VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ */
        r[2] &= ~(BIT(1) | BIT(6) | BIT(11) | BIT(12) | BIT(14));
        /* EDX: AVX512_4VNNIW, 4FMAPS, VP2INTERSECT, AMX-BF16, FP16, AMX-TILE, AMX-INT8 */
        r[3] &= ~(BIT(2) | BIT(3) | BIT(8) | BIT(22) | BIT(23) | BIT(24) | BIT(25));
    } else if (leaf == 7 && sub == 1) {
        /* EAX: AVX-VNNI, AVX512_BF16, AMX-FP16, AVX-IFMA */
        r[0] &= ~(BIT(4) | BIT(5) | BIT(21) | BIT(23));
        /* EDX: AVX-VNNI-INT8, AVX-NE-CONVERT, AVX-VNNI-INT16, AVX10 */
        r[3] &= ~(BIT(4) | BIT(5) | BIT(10) | BIT(19));
    }
}

static void on_trap(int sig, siginfo_t *info, void *ctx)
{
    ucontext_t *uc = ctx;
    greg_t *g = uc->uc_mcontext.gregs;
    const uint8_t *at = (const uint8_t *)g[REG_RIP];   /* just past the int3 */
    (void)info;
    if (at[0] == 0xa2) {
        unsigned r[4];
        const unsigned leaf = (unsigned)g[REG_RAX], sub = (unsigned)g[REG_RCX];
        __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
        mask_cpuid(leaf, sub, r);
        g[REG_RAX] = r[0];
        g[REG_RBX] = r[1];
        g[REG_RCX] = r[2];
        g[REG_RDX] = r[3];
        g[REG_RIP] += 1;
        ++n_cpuid;
    } else if (at[0] == 0x01 && at[1] == 0xd0) {
        unsigned lo, hi;
        const unsigned which = (unsigned)g[REG_RCX];
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(which));
        if (which == 0)
            lo &= ~(BIT(5) | BIT(6) | BIT(7) | BIT(17) | BIT(18));   /* opmask, zmm, AMX state */
        g[REG_RAX] = lo;
        g[REG_RDX] = hi;
        g[REG_RIP] += 2;
        ++n_xgetbv;
    } else {           /* an int3 that is not ours: what it would have done */
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

/* ---- /proc/cpuinfo without the masked flags ---- */

static int masked_flag(const char *tok, size_t n)
{
    static const char *const prefix[] = {"avx512", "avx_vnni", "amx", "avx_ifma", "avx_ne_convert", "avx10"};
    size_t i;
    for (i = 0; i < sizeof prefix / sizeof prefix[0]; ++i)
        if (n >= strlen(prefix[i]) && !strncmp(tok, prefix[i], strlen(prefix[i])))
            return 1;
    return 0;
}

static int is_cpuinfo(const char *path)
{
    return path && !strcmp(path, "/proc/cpuinfo");
}

/* A memfd holding the filtered text, at offset 0 (-1 and errno on failure). */
static int cpuinfo_fd(void)
{
    char *text = NULL, *out;
    size_t len = 0, cap = 0, o = 0, i = 0;
    const int in = (int)syscall(SYS_openat, AT_FDCWD, "/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
    int fd;
    if (in < 0)
        return -1;
    for (;;) {
        ssize_t got;
        if (len + 4096 > cap && !(text = realloc(text, cap = cap * 2 + 8192)))
            return -1;
        if ((got = read(in, text + len, cap - len)) <= 0)
            break;
        len += (size_t)got;
    }
    close(in);
    if (!(out = malloc(len + 1)))
        return -1;
    while (i < len) {          /* line by line; on "flags" lines the masked tokens dropped */
        size_t end = i;
        while (end < len && text[end] != '\n')
            ++end;
        if (!strncmp(text + i, "flags", 5)) {
            size_t j = i;
            while (j < end && text[j] != ':')
                out[o++] = text[j++];
            while (j < end) {
                size_t k = j;
                while (k < end && text[k] == ' ')
                    ++k;
                {
                    size_t e = k;
                    while (e < end && text[e] != ' ')
                        ++e;
                    if (e == k || !masked_flag(text + k, e - k)) {
                        memcpy(out + o, text + j, e - j);
                        o += e - j;
                    }
                    j = e;
                }
            }
        } else {
            memcpy(out + o, text + i, end - i);
            o += end - i;
        }
        if (end < len)
            out[o++] = '\n';
        i = end + 1;
    }
    free(text);
    fd = memfd_create("cpuinfo", 0);
    if (fd >= 0 && (write(fd, out, o) != (ssize_t)o || lseek(fd, 0, SEEK_SET) != 0)) {
        close(fd);
        fd = -1;
    }
    free(out);
    return fd;
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

static mode_t mode_of(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

/* open and openat (and their 64 twins): the mode argument only where the flags create */
#define OPEN_BODY(call)                                                             \
    {                                                                               \
        va_list ap;                                                                 \
        mode_t m;                                                                   \
        va_start(ap, flags);                                                        \
        m = mode_of(flags, ap);                                                     \
        va_end(ap);                                                                 \
        return is_cpuinfo(path) ? cpuinfo_fd() : call;                              \
    }
#define WRAP_OPEN(name) int name(const char *path, int flags, ...) OPEN_BODY(REAL(name)(path, flags, m))
#define WRAP_OPENAT(name) int name(int dir, const char *path, int flags, ...) OPEN_BODY(REAL(name)(dir, path, flags, m))
#define WRAP_FOPEN(name)                                                            \
    FILE *name(const char *path, const char *how)                                   \
    {                                                                               \
        int fd;                                                                     \
        if (!is_cpuinfo(path))                                                      \
            return REAL(name)(path, how);                                           \
        return (fd = cpuinfo_fd()) < 0 ? NULL : fdopen(fd, "r");                    \
    }

WRAP_OPEN(open)
WRAP_OPEN(open64)
WRAP_OPENAT(openat)
WRAP_OPENAT(openat64)
WRAP_FOPEN(fopen)
WRAP_FOPEN(fopen64)

static void report(void)
{
    const char *path = getenv("NNSCONS_CPU_MASK_REPORT");
    FILE *f;
    if (!path || !*path || !(f = fopen(path, "a")))
        return;
    fprintf(f, "%ld cpuid=%lu xgetbv=%lu\n", (long)getpid(), n_cpuid, n_xgetbv);
    fclose(f);
}

__attribute__((constructor)) static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_trap;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTRAP, &sa, NULL);
    atexit(report);
}
