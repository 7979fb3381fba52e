/* The Xpulp operations the GAP9 cluster kernels use, with three implementations of the
 * same semantics, chosen by a macro:
 *
 *   NN_XPULP_BUILTIN  the GAP SDK compiler's builtins (platform=gvsoc, the real GAP9 flow);
 *                     its gcc turns the C loops into hardware loops with post-increment
 *                     loads by itself
 *   NN_XPULP_INSN     `.insn` encodings for a compiler that knows no Xpulp (Debian's
 *                     riscv64-unknown-elf-gcc on GVSoC's pulp-open): the inner loops are
 *                     asm blocks with a hardware loop (lp.setup), post-increment loads
 *                     (p.lw rd, 4(rs!)) and pv.sdotsp.b / pv.sdotusp.b
 *   (neither)         plain C (emul, qemu, tests), so those platforms prove the kernels
 *
 * Words are 4 packed int8 lanes, lane 0 at the lowest address (little-endian loads).
 *   nn_xp_sdotsp(acc, a, b)   acc + sum a[i] * b[i], a and b signed
 *   nn_xp_sdotusp(acc, a, b)  acc + sum a[i] * b[i], a unsigned, b signed
 *   nn_xp_max4(a, b)          max(a[i], b[i]) per lane, signed
 * Activations with zero point -128 are fed as x ^ 0x80 (= x - zp, 0..255) to sdotusp, those
 * with zero point 0 as they are to sdotsp: either way padding is 0 and contributes nothing.
 *
 * The dot-product loops (nn_xp_dot_4x2, _4x1, _1x2, _1x1: output channels x pixels) run
 * over a receptive field of rows x n words (both >= 1; _1x1 takes 0 too); the pointers must
 * be 4-byte aligned on Xpulp. FLIP selects the activation form: 0 = signed (zero point 0),
 * 1 = x ^ 0x80 unsigned (zero point -128), 2 = unsigned as stored (a zero point -128 tile
 * flipped once in place beforehand: the loops then skip one xor per loaded word).
 */
#ifndef NN_XPULP_H
#define NN_XPULP_H

#include <stddef.h>
#include <stdint.h>

#if defined(NN_XPULP_BUILTIN) && defined(NN_XPULP_INSN)
#error "nn_xpulp.h: define at most one of NN_XPULP_BUILTIN and NN_XPULP_INSN"
#endif

#define NN_XP_FLIP_MASK 0x80808080u

/* ---- one word ---- */

static inline uint32_t nn_xp_load(const int8_t *p)
{
#if defined(NN_XPULP_BUILTIN) || defined(NN_XPULP_INSN)
    return *(const uint32_t *)(const void *)p;     /* aligned by contract */
#else
    /* lane 0 = p[0] whatever the host's byte order; no alignment or aliasing assumptions */
    return (uint32_t)(uint8_t)p[0] | (uint32_t)(uint8_t)p[1] << 8 | (uint32_t)(uint8_t)p[2] << 16 |
           (uint32_t)(uint8_t)p[3] << 24;
#endif
}

/* A word at any byte address: the cluster cores load misaligned words in hardware (two
 * accesses). gcc for plain rv32 would split a C access into bytes, hence the asm. */
static inline uint32_t nn_xp_load_u(const int8_t *p)
{
#if defined(NN_XPULP_INSN)
    typedef struct { uint8_t b[4]; } nn_xp_bytes4;
    uint32_t v;
    __asm__("lw %0, %1" : "=r"(v) : "m"(*(const nn_xp_bytes4 *)(const void *)p));
    return v;
#elif defined(NN_XPULP_BUILTIN)
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
#else
    return nn_xp_load(p);
#endif
}

/* A word to any byte address (the cores store misaligned words in hardware, as they load them) */
static inline void nn_xp_store_u(int8_t *p, uint32_t v)
{
#if defined(NN_XPULP_INSN)
    typedef struct { uint8_t b[4]; } nn_xp_bytes4;
    __asm__("sw %1, %0" : "=m"(*(nn_xp_bytes4 *)(void *)p) : "r"(v));
#elif defined(NN_XPULP_BUILTIN)
    __builtin_memcpy(p, &v, 4);
#else
    int i;
    for (i = 0; i < 4; ++i)
        p[i] = (int8_t)(uint8_t)(v >> 8 * i);
#endif
}

#if defined(NN_XPULP_BUILTIN)
typedef signed char nn_v4s __attribute__((vector_size(4)));
typedef unsigned char nn_v4u __attribute__((vector_size(4)));

static inline int32_t nn_xp_sdotsp(int32_t acc, uint32_t a, uint32_t b)
{
    return __builtin_pulp_sdotsp4((nn_v4s)a, (nn_v4s)b, acc);   /* same-size vector casts */
}

static inline int32_t nn_xp_sdotusp(int32_t acc, uint32_t a, uint32_t b)
{
    return __builtin_pulp_sdotusp4((nn_v4u)a, (nn_v4s)b, acc);
}
#elif defined(NN_XPULP_INSN)
static inline int32_t nn_xp_sdotsp(int32_t acc, uint32_t a, uint32_t b)
{
    __asm__(".insn r 0x57, 1, 0x5c, %0, %1, %2" : "+r"(acc) : "r"(a), "r"(b));
    return acc;
}

static inline int32_t nn_xp_sdotusp(int32_t acc, uint32_t a, uint32_t b)
{
    __asm__(".insn r 0x57, 1, 0x54, %0, %1, %2" : "+r"(acc) : "r"(a), "r"(b));
    return acc;
}
#else
static inline int32_t nn_xp_sdotsp(int32_t acc, uint32_t a, uint32_t b)
{
    int i;
    for (i = 0; i < 4; ++i)
        acc += (int32_t)(int8_t)(uint8_t)(a >> 8 * i) * (int32_t)(int8_t)(uint8_t)(b >> 8 * i);
    return acc;
}

static inline int32_t nn_xp_sdotusp(int32_t acc, uint32_t a, uint32_t b)
{
    int i;
    for (i = 0; i < 4; ++i)
        acc += (int32_t)(uint8_t)(a >> 8 * i) * (int32_t)(int8_t)(uint8_t)(b >> 8 * i);
    return acc;
}
#endif

/* Clamps of a requantized value: to [lo, hi] by p.max then p.min (funct7 2, funct3 6 / 4), to
 * int8 by p.clip rd, rs1, 8 (funct7 0x0a, funct3 1, the bit count in rs2's field): one
 * instruction for the common no-activation case. The GAP SDK's gcc (NN_XPULP_BUILTIN) emits them
 * from the plain C by itself. Encodings: GVSoC's isa_pulpv2.py. */
#if defined(NN_XPULP_INSN)
static inline int32_t nn_xp_clamp(int32_t q, int32_t lo, int32_t hi)
{
    __asm__(".insn r 0x33, 6, 2, %0, %0, %1" : "+r"(q) : "r"(lo));
    __asm__(".insn r 0x33, 4, 2, %0, %0, %1" : "+r"(q) : "r"(hi));
    return q;
}

static inline int32_t nn_xp_clip8(int32_t q)
{
    __asm__(".insn r 0x33, 1, 0x0a, %0, %0, x8" : "+r"(q));
    return q;
}
#else
static inline int32_t nn_xp_clamp(int32_t q, int32_t lo, int32_t hi)
{
    return q < lo ? lo : (q > hi ? hi : q);
}

static inline int32_t nn_xp_clip8(int32_t q)
{
    return q < -128 ? -128 : (q > 127 ? 127 : q);
}
#endif

/* Lane-wise signed maximum of 4 int8 lanes: pv.max.b (funct7 0x18, funct3 1, opcode 0x57). */
#if defined(NN_XPULP_BUILTIN)
static inline uint32_t nn_xp_max4(uint32_t a, uint32_t b)
{
    return (uint32_t)__builtin_pulp_max4((nn_v4s)a, (nn_v4s)b);
}
#elif defined(NN_XPULP_INSN)
static inline uint32_t nn_xp_max4(uint32_t a, uint32_t b)
{
    uint32_t r;
    __asm__(".insn r 0x57, 1, 0x18, %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
#else
static inline uint32_t nn_xp_max4(uint32_t a, uint32_t b)
{
    uint32_t r = 0;
    int i;
    for (i = 0; i < 4; ++i) {
        const int8_t x = (int8_t)(uint8_t)(a >> 8 * i), y = (int8_t)(uint8_t)(b >> 8 * i);
        r |= (uint32_t)(uint8_t)(x > y ? x : y) << 8 * i;
    }
    return r;
}
#endif

/* One step of the activation form FLIP: acc + dot(x, w). */
#define NN_XP_DOT(flip, acc, x, w)                                                                 \
    ((flip) == 1 ? nn_xp_sdotusp((acc), (x) ^ NN_XP_FLIP_MASK, (w))                              \
                 : (flip) ? nn_xp_sdotusp((acc), (x), (w)) : nn_xp_sdotsp((acc), (x), (w)))

/* ---- the loops over a receptive field: `rows` runs of n words (rows >= 1, n >= 1); run r
 * of the activations starts x_row bytes after run r-1, run r of each weight row w_row
 * bytes after run r-1; weight row c (output channel c) starts c * ws bytes after w0. ---- */

#if defined(NN_XPULP_INSN)
/* pv.sdotsp.b (funct7 0x5c) or pv.sdotusp.b (0x54): opcode 0x57, funct3 1 */
#define NN_XP_SDOT_S "0x5c"
#define NN_XP_SDOT_U "0x54"
#define NN_XP_SDOT(op, rd, a, b) ".insn r 0x57, 1, " op ", " rd ", " a ", " b "\n\t"
/* p.lw rd, 4(rs!): opcode 0x0b, funct3 2, imm 4 */
#define NN_XP_PLW(rd, rs) ".insn i 0x0b, 2, " rd ", " rs ", 4\n\t"
/* lp.setup Lk, count, last: opcode 0x7b, funct3 4, rd = k, imm = (last body insn - pc) / 2 =
 * 2 * body instructions, every one 4 bytes (norvc). L1 is the outer loop (kernel rows),
 * L0 the inner one (words). */
#define NN_XP_LOOP(k, count, body) ".insn i 0x7b, 4, " k ", " count ", " #body "\n\t"
/* The asm blocks keep accumulators and pointers in operands and the loaded words, the
 * other weight-row pointers and the xor mask in clobbered t0..t6/a7: an asm takes at most 30
 * operands. Loads run two instructions ahead of their use (no load-use stall). The in-out
 * operands are early-clobbered ("+&r"): they change inside the loops while the inputs (row
 * steps, counts) are still read, so no input may share their register -- gcc would give
 * one register to an input and an accumulator it can prove equal (a row step of 0 and an
 * accumulator starting at 0), and the weight pointer would then step by the running sum. */
#define NN_XP_4X2_BODY(op, flip)                                                                   \
    NN_XP_PLW("t0", "%[pa]") NN_XP_PLW("t1", "%[pb]") NN_XP_PLW("t2", "%[p0]") NN_XP_PLW("t3", "t4") \
    flip                                                                                          \
    NN_XP_SDOT(op, "%[c00]", "t0", "t2") NN_XP_SDOT(op, "%[c01]", "t1", "t2") NN_XP_PLW("t2", "t5") \
    NN_XP_SDOT(op, "%[c10]", "t0", "t3") NN_XP_SDOT(op, "%[c11]", "t1", "t3") NN_XP_PLW("t3", "t6") \
    NN_XP_SDOT(op, "%[c20]", "t0", "t2") NN_XP_SDOT(op, "%[c21]", "t1", "t2")                     \
    NN_XP_SDOT(op, "%[c30]", "t0", "t3") NN_XP_SDOT(op, "%[c31]", "t1", "t3")
#define NN_XP_FLIP2 "xor t0, t0, a7\n\txor t1, t1, a7\n\t"
/* outer body = lp.setup + inner body + 6 pointer steps */
#define NN_XP_DOT_4X2_ASM(op, flip, inner, outer)                                                 \
    __asm__ volatile(".option push\n\t.option norvc\n\t"                               \
                     "li a7, 0x80808080\n\t"                                                      \
                     "add t4, %[p0], %[ws]\n\tadd t5, t4, %[ws]\n\tadd t6, t5, %[ws]\n\t"         \
                     NN_XP_LOOP("x1", "%[rows]", outer)                                           \
                     NN_XP_LOOP("x0", "%[n]", inner)                                              \
                     NN_XP_4X2_BODY(op, flip)                                                     \
                     "add %[pa], %[pa], %[xs]\n\tadd %[pb], %[pb], %[xs]\n\t"                     \
                     "add %[p0], %[p0], %[wst]\n\tadd t4, t4, %[wst]\n\t"                         \
                     "add t5, t5, %[wst]\n\tadd t6, t6, %[wst]\n\t"                               \
                     ".option pop"                                                                \
                     : [c00] "+&r"(c00), [c01] "+&r"(c01), [c10] "+&r"(c10), [c11] "+&r"(c11),         \
                       [c20] "+&r"(c20), [c21] "+&r"(c21), [c30] "+&r"(c30), [c31] "+&r"(c31),         \
                       [pa] "+&r"(xa), [pb] "+&r"(xb), [p0] "+&r"(w0)                                \
                     : [ws] "r"(ws), [n] "r"(n), [rows] "r"(rows), [xs] "r"(xs), [wst] "r"(wst)    \
                     : "t0", "t1", "t2", "t3", "t4", "t5", "t6", "a7", "memory")
#define NN_XP_4X1_BODY(op, flip)                                                                   \
    NN_XP_PLW("t0", "%[pa]") NN_XP_PLW("t2", "%[p0]") NN_XP_PLW("t3", "t4") flip                   \
    NN_XP_SDOT(op, "%[c0]", "t0", "t2") NN_XP_PLW("t2", "t5")                                     \
    NN_XP_SDOT(op, "%[c1]", "t0", "t3") NN_XP_PLW("t3", "t6")                                     \
    NN_XP_SDOT(op, "%[c2]", "t0", "t2") NN_XP_SDOT(op, "%[c3]", "t0", "t3")
#define NN_XP_FLIP1 "xor t0, t0, a7\n\t"
#define NN_XP_DOT_4X1_ASM(op, flip, inner, outer)                                                 \
    __asm__ volatile(".option push\n\t.option norvc\n\t"                               \
                     "li a7, 0x80808080\n\t"                                                      \
                     "add t4, %[p0], %[ws]\n\tadd t5, t4, %[ws]\n\tadd t6, t5, %[ws]\n\t"         \
                     NN_XP_LOOP("x1", "%[rows]", outer)                                           \
                     NN_XP_LOOP("x0", "%[n]", inner)                                              \
                     NN_XP_4X1_BODY(op, flip)                                                     \
                     "add %[pa], %[pa], %[xs]\n\t"                                                \
                     "add %[p0], %[p0], %[wst]\n\tadd t4, t4, %[wst]\n\t"                         \
                     "add t5, t5, %[wst]\n\tadd t6, t6, %[wst]\n\t"                               \
                     ".option pop"                                                                \
                     : [c0] "+&r"(c0), [c1] "+&r"(c1), [c2] "+&r"(c2), [c3] "+&r"(c3),                 \
                       [pa] "+&r"(x), [p0] "+&r"(w0)                                                \
                     : [ws] "r"(ws), [n] "r"(n), [rows] "r"(rows), [xs] "r"(xs), [wst] "r"(wst)    \
                     : "t0", "t2", "t3", "t4", "t5", "t6", "a7", "memory")
/* with the xor between the loads and the sdot no load-use stall; without it one per word */
#define NN_XP_1X1_BODY(op, flip)                                                                   \
    NN_XP_PLW("t0", "%[pa]") NN_XP_PLW("t2", "%[p0]") flip NN_XP_SDOT(op, "%[c0]", "t0", "t2")
#define NN_XP_DOT_1X1_ASM(op, flip, inner, outer, xa, w0)                                         \
    __asm__ volatile(".option push\n\t.option norvc\n\t"                                          \
                     "li a7, 0x80808080\n\t"                                                      \
                     NN_XP_LOOP("x1", "%[rows]", outer)                                           \
                     NN_XP_LOOP("x0", "%[n]", inner)                                              \
                     NN_XP_1X1_BODY(op, flip)                                                     \
                     "add %[pa], %[pa], %[xs]\n\tadd %[p0], %[p0], %[wst]\n\t"                     \
                     ".option pop"                                                                \
                     : [c0] "+&r"(c0), [pa] "+&r"(xa), [p0] "+&r"(w0)                                \
                     : [n] "r"(n), [rows] "r"(rows), [xs] "r"(xs), [wst] "r"(wst)                  \
                     : "t0", "t2", "a7", "memory")
#define NN_XP_1X2_BODY(op, flip)                                                                   \
    NN_XP_PLW("t2", "%[p0]") NN_XP_PLW("t0", "%[pa]") NN_XP_PLW("t1", "%[pb]") flip                \
    NN_XP_SDOT(op, "%[c0]", "t0", "t2") NN_XP_SDOT(op, "%[c1]", "t1", "t2")
#define NN_XP_DOT_1X2_ASM(op, flip, inner, outer)                                                 \
    __asm__ volatile(".option push\n\t.option norvc\n\t"                                          \
                     "li a7, 0x80808080\n\t"                                                      \
                     NN_XP_LOOP("x1", "%[rows]", outer)                                           \
                     NN_XP_LOOP("x0", "%[n]", inner)                                              \
                     NN_XP_1X2_BODY(op, flip)                                                     \
                     "add %[pa], %[pa], %[xs]\n\tadd %[pb], %[pb], %[xs]\n\t"                     \
                     "add %[p0], %[p0], %[wst]\n\t"                                              \
                     ".option pop"                                                                \
                     : [c0] "+&r"(c0), [c1] "+&r"(c1), [pa] "+&r"(xa), [pb] "+&r"(xb), [p0] "+&r"(w0)  \
                     : [n] "r"(n), [rows] "r"(rows), [xs] "r"(xs), [wst] "r"(wst)                  \
                     : "t0", "t1", "t2", "a7", "memory")
#endif

/* acc[p] += dot(field of pixel p, weights of one channel), p = 0..1: the channels after the
 * last whole block of 4 */
static inline void nn_xp_dot_1x2(int flip, int32_t acc[2], const int8_t *xa, const int8_t *xb,
                                 const int8_t *w0, int n, int rows, ptrdiff_t x_row, ptrdiff_t w_row)
{
    int32_t c0 = acc[0], c1 = acc[1];
#if defined(NN_XPULP_INSN)
    const ptrdiff_t xs = x_row - 4 * n, wst = w_row - 4 * n;
    /* inner body 5 instructions (7 with the xors); outer 1 + inner + 3 */
    if (flip == 1)
        NN_XP_DOT_1X2_ASM(NN_XP_SDOT_U, NN_XP_FLIP2, 14, 22);
    else if (flip)
        NN_XP_DOT_1X2_ASM(NN_XP_SDOT_U, "", 10, 18);
    else
        NN_XP_DOT_1X2_ASM(NN_XP_SDOT_S, "", 10, 18);
#else
    int r, i;
    for (r = 0; r < rows; ++r)
        for (i = 0; i < 4 * n; i += 4) {
            const uint32_t v = nn_xp_load(w0 + r * w_row + i);
            c0 = NN_XP_DOT(flip, c0, nn_xp_load(xa + r * x_row + i), v);
            c1 = NN_XP_DOT(flip, c1, nn_xp_load(xb + r * x_row + i), v);
        }
#endif
    acc[0] = c0;
    acc[1] = c1;
}

/* acc[2c + p] += dot(field of pixel p, weights of channel c), c = 0..3, p = 0..1 */
static inline void nn_xp_dot_4x2(int flip, int32_t acc[8], const int8_t *xa, const int8_t *xb,
                                 const int8_t *w0, ptrdiff_t ws, int n, int rows, ptrdiff_t x_row,
                                 ptrdiff_t w_row)
{
    int32_t c00 = acc[0], c01 = acc[1], c10 = acc[2], c11 = acc[3];
    int32_t c20 = acc[4], c21 = acc[5], c30 = acc[6], c31 = acc[7];
#if defined(NN_XPULP_INSN)
    const ptrdiff_t xs = x_row - 4 * n, wst = w_row - 4 * n;   /* steps after a run */
    /* inner body 14 instructions (16 with the xors); outer 1 + inner + 6 */
    if (flip == 1)
        NN_XP_DOT_4X2_ASM(NN_XP_SDOT_U, NN_XP_FLIP2, 32, 46);
    else if (flip)
        NN_XP_DOT_4X2_ASM(NN_XP_SDOT_U, "", 28, 42);
    else
        NN_XP_DOT_4X2_ASM(NN_XP_SDOT_S, "", 28, 42);
#else
    int r, i;
    for (r = 0; r < rows; ++r) {
        const int8_t *a = xa + r * x_row, *b = xb + r * x_row, *v = w0 + r * w_row;
        for (i = 0; i < 4 * n; i += 4) {
            const uint32_t xa4 = nn_xp_load(a + i), xb4 = nn_xp_load(b + i);
            const uint32_t v0 = nn_xp_load(v + i), v1 = nn_xp_load(v + ws + i);
            const uint32_t v2 = nn_xp_load(v + 2 * ws + i), v3 = nn_xp_load(v + 3 * ws + i);
            c00 = NN_XP_DOT(flip, c00, xa4, v0);
            c01 = NN_XP_DOT(flip, c01, xb4, v0);
            c10 = NN_XP_DOT(flip, c10, xa4, v1);
            c11 = NN_XP_DOT(flip, c11, xb4, v1);
            c20 = NN_XP_DOT(flip, c20, xa4, v2);
            c21 = NN_XP_DOT(flip, c21, xb4, v2);
            c30 = NN_XP_DOT(flip, c30, xa4, v3);
            c31 = NN_XP_DOT(flip, c31, xb4, v3);
        }
    }
#endif
    acc[0] = c00; acc[1] = c01; acc[2] = c10; acc[3] = c11;
    acc[4] = c20; acc[5] = c21; acc[6] = c30; acc[7] = c31;
}

/* acc[c] += dot(field of the pixel, weights of channel c), c = 0..3 */
static inline void nn_xp_dot_4x1(int flip, int32_t acc[4], const int8_t *x, const int8_t *w0,
                                 ptrdiff_t ws, int n, int rows, ptrdiff_t x_row, ptrdiff_t w_row)
{
    int32_t c0 = acc[0], c1 = acc[1], c2 = acc[2], c3 = acc[3];
#if defined(NN_XPULP_INSN)
    const ptrdiff_t xs = x_row - 4 * n, wst = w_row - 4 * n;
    /* inner body 9 instructions (10 with the xor); outer 1 + inner + 5 */
    if (flip == 1)
        NN_XP_DOT_4X1_ASM(NN_XP_SDOT_U, NN_XP_FLIP1, 20, 32);
    else if (flip)
        NN_XP_DOT_4X1_ASM(NN_XP_SDOT_U, "", 18, 30);
    else
        NN_XP_DOT_4X1_ASM(NN_XP_SDOT_S, "", 18, 30);
#else
    int r, i;
    for (r = 0; r < rows; ++r) {
        const int8_t *a = x + r * x_row, *v = w0 + r * w_row;
        for (i = 0; i < 4 * n; i += 4) {
            const uint32_t x4 = nn_xp_load(a + i);
            c0 = NN_XP_DOT(flip, c0, x4, nn_xp_load(v + i));
            c1 = NN_XP_DOT(flip, c1, x4, nn_xp_load(v + ws + i));
            c2 = NN_XP_DOT(flip, c2, x4, nn_xp_load(v + 2 * ws + i));
            c3 = NN_XP_DOT(flip, c3, x4, nn_xp_load(v + 3 * ws + i));
        }
    }
#endif
    acc[0] = c0; acc[1] = c1; acc[2] = c2; acc[3] = c3;
}

/* acc + dot(field, weights of one channel): the leftover channels (out_c % 4), and a tile's
 * last odd pixel shared by the cores a few channels each (nn_xp_conv2d_split) */
static inline int32_t nn_xp_dot_1x1(int flip, int32_t acc, const int8_t *x, const int8_t *w, int n,
                                    int rows, ptrdiff_t x_row, ptrdiff_t w_row)
{
#if defined(NN_XPULP_INSN)
    const ptrdiff_t xs = x_row - 4 * n, wst = w_row - 4 * n;
    int32_t c0 = acc;
    if (n <= 0 || rows <= 0)        /* a hardware loop runs at least once */
        return acc;
    /* inner body 3 instructions (4 with the xor); outer 1 + inner + 2 */
    if (flip == 1)
        NN_XP_DOT_1X1_ASM(NN_XP_SDOT_U, NN_XP_FLIP1, 8, 14, x, w);
    else if (flip)
        NN_XP_DOT_1X1_ASM(NN_XP_SDOT_U, "", 6, 12, x, w);
    else
        NN_XP_DOT_1X1_ASM(NN_XP_SDOT_S, "", 6, 12, x, w);
    return c0;
#else
    int r, i;
    for (r = 0; r < rows; ++r)
        for (i = 0; i < 4 * n; i += 4)
            acc = NN_XP_DOT(flip, acc, nn_xp_load(x + r * x_row + i), nn_xp_load(w + r * w_row + i));
    return acc;
#endif
}

/* ---- requantization: nn_requant.h's rule, cheap on a 32-bit core ----
 * Same result as nn_requantize(bias + acc, ...) for every input (tests compare them).
 * The common case, bias + acc fitting in 32 bits and shift >= 32, needs only the high word
 * of v = (bias + acc) * mult (mulh) and whether the low word is 0: with k = shift - 32,
 * round-half-even(v / 2^shift) = (v + 2^(shift-1) - 1 + bit_shift(v)) >> shift, whose carry
 * out of the low word is (low != 0 || bit), so the result is
 * (high + 2^(k-1) - 1 + carry) >> k (no overflow: |high| < 2^30, k <= 30).
 * Everything else defers to nn_requantize. GCC's >> on negative values is arithmetic (all
 * three compilers are GCC). */
#include "nn_requant.h"

/* the rare case out of line: inlined at every call it would crowd the instruction cache */
static __attribute__((noinline)) int8_t nn_xp_requant_slow(int32_t bias, int32_t acc, int32_t mult,
                                                            int32_t shift, int32_t zp, int32_t lo, int32_t hi)
{
    return nn_requantize((int64_t)bias + acc, mult, shift, zp, lo, hi);
}

static inline int8_t nn_xp_requant(int32_t bias, int32_t acc, int32_t mult, int32_t shift,
                                   int32_t zp, int32_t lo, int32_t hi)
{
    int32_t s, q;
    int64_t v;
    uint32_t vl;
    int32_t vh, k, bit;
    if (__builtin_add_overflow(bias, acc, &s) || shift < 32)
        return nn_xp_requant_slow(bias, acc, mult, shift, zp, lo, hi);
    v = (int64_t)s * mult;
    vh = (int32_t)(v >> 32);
    vl = (uint32_t)v;
    k = shift - 32;
    bit = (vh >> k) & 1;
    if (k == 0)     /* half - 1 = 0x7fffffff: carry when vl + bit > 0x80000000 */
        q = vh + (vl > 0x80000000u - (uint32_t)bit);
    else
        q = (vh + ((int32_t)1 << (k - 1)) - 1 + (vl != 0 || bit)) >> k;
    q += zp;
    return (int8_t)(q < lo ? lo : (q > hi ? hi : q));
}

/* The common case of nn_xp_requant without its checks, for callers that made them once per
 * channel (nn_xp_requant_quick): shift >= 33 (k = shift - 32 >= 1, half_m1 = 2^(k-1) - 1)
 * and bias + acc known not to overflow (|bias| <= 2^30, |acc| < 2^30). Same result. */
static inline int nn_xp_requant_quick(int32_t bias, int32_t shift)
{
    return shift >= 33 && shift <= 62 && bias >= -(1 << 30) && bias <= (1 << 30);
}

/* |acc| < 2^30 for every dot product of `bytes` int8 weights with centred activations
 * (|x - zp| <= 255): bytes * 255 * 128 < 2^30 */
#define NN_XP_QUICK_BYTES 32768

static inline int8_t nn_xp_requant_k(int32_t s, int32_t mult, int32_t k, int32_t half_m1, int32_t zp,
                                     int32_t lo, int32_t hi)
{
    const int64_t v = (int64_t)s * mult;
    const int32_t vh = (int32_t)(v >> 32);
    int32_t q = ((vh + half_m1 + (((uint32_t)v != 0) | ((vh >> k) & 1))) >> k) + zp;
    return (int8_t)(q < lo ? lo : (q > hi ? hi : q));
}

/* The short form of the rule for shift 33..55 (k = shift - 32 in 1..23): it rounds
 * v = a mult to nearest, ties to even, at bit 32 + k, and a tie needs the low word of v to be
 * 0, i.e. ctz(a) + ctz(mult) >= 32, impossible when every reachable a != 0 has
 * |a| < 2^(32 - ctz(mult)) (a = 0 rounds to 0 either way). Then the rule is
 * ((v >> 32) + 2^(k-1)) >> k, and + zp folds in as zp 2^k inside the shift when that cannot
 * overflow. nn_xp_rq_short_ok says whether that holds for every a = bias + d, |d| <= span
 * (span < 2^30), all in 32-bit arithmetic, and sets q. */
typedef struct {
    int32_t mult, rcz, k, zp;   /* zp: for callers that also keep the exact rule's constants here */
} nn_xp_rq_short_t;

static inline int nn_xp_rq_short_ok(nn_xp_rq_short_t *q, int32_t bias, int32_t mult, int32_t shift, int32_t zp,
                                    uint32_t span)
{
    const uint32_t m = mult < 0 ? 0u - (uint32_t)mult : (uint32_t)mult;
    const uint32_t ab = bias < 0 ? 0u - (uint32_t)bias : (uint32_t)bias, amax = ab + span;
    if (shift < 33 || shift > 55 || zp < -128 || zp > 128 || ab >= 0x40000000u || span >= 0x40000000u)
        return 0;
    if ((uint32_t)(((uint64_t)amax * (m & (0u - m))) >> 32) != 0)      /* amax 2^ctz(m) >= 2^32 */
        return 0;
    /* |v >> 32| <= that + 1 and |rcz| <= 2^22 + 2^30: the sum stays in 32 bits */
    if ((uint32_t)(((uint64_t)amax * m) >> 32) >= 0x3f000000u)
        return 0;
    q->mult = mult;
    q->k = shift - 32;
    q->rcz = (int32_t)(((uint32_t)1 << (q->k - 1)) + ((uint32_t)zp << q->k));
    q->zp = 0;
    return 1;
}

#endif /* NN_XPULP_H */
