/* nn_ne16.h -- bare-metal driver for GAP9's NE16 convolution accelerator (header only).
 *
 * Facts from GVSoC's NE16 model (gap_sdk release-v4.13.0, models/pulp/ne16: ne16.hpp,
 * ne16_regfile.cpp, ne16.cpp, fsm.cpp, ne16_load.cpp, ne16_matrixvec.cpp, ne16_streamout.cpp,
 * ne16_normquant.cpp, stream.cpp); tests/test_ne16.py proves them on the model bit for bit.
 *
 * Control (base 0x10201000, cluster peripheral; the FC reaches it too):
 *   +0x00 write 0: commit the configured context and start it (two contexts, double-buffered)
 *   +0x04 read   : acquire a context; returns the job id (>= 0), or < 0 while none is free
 *   +0x0C read   : status, non-zero while an acquired or committed job is not finished
 *   +0x10 read   : id of the running (or last run) job
 *   +0x20 + 4*i  : the 24 job registers below, written after acquire, before the commit
 *
 * Data (all in L1: NE16's streamer masks addresses with 0x1FFFF):
 *   activations: unsigned 8-bit, HWC, 16-channel groups read per pixel; a 3x3 job computes
 *     3x3 output pixels x 32 output channels (16 channels in depthwise) per step from a 5x5
 *     input window (3x3 for 1x1). Signed int8 activations: feed x + 128 and subtract
 *     128 * sum(w) per output channel (the pre-padded input then holds 128 where x is 0).
 *   weights: bit-serial, qw bit planes of an unsigned weight; the model adds
 *     WEIGHT_OFFSET * sum(x) (Wmin), so int8 weights are stored as w + 128 with Wmin = -128;
 *     ne16_weights.py packs them. Per output channel and 16-channel input group:
 *     3x3: [qw][9 positions][2 bytes], 1x1: [qw][2 bytes], depthwise: per 16-channel group
 *     [qw][9][2 bytes] (lane = channel in the group).
 *   output: 32-bit accumulators (HWC int32; requantize on the cores for bit-exactness), or
 *     NE16's own normquant to 8 bits: y = clip(int32(acc * scale_u8 + bias_i32) >> shift_u8),
 *     clip to [0,255] with ReLU else [-128,127]; no rounding term (add 1 << (shift-1) to the
 *     bias for round-half-up).
 * Padding: NE16 pads with 0 only on the right/bottom of a partial tile (cleared buffer), so
 * the driver offers zero padding (unsigned inputs); signed inputs (x + 128) come pre-padded.
 */
#ifndef NN_NE16_H
#define NN_NE16_H

#include <stdint.h>

#define NE16_BASE           0x10201000u
#define NE16_TRIGGER        0x00u
#define NE16_ACQUIRE        0x04u
#define NE16_STATUS         0x0Cu
#define NE16_RUNNING_JOB    0x10u
#define NE16_REG_OFFS(i)    (0x20u + 4u * (i))

/* job registers (ne16.hpp's NE16_REG_*) */
enum {
    NE16_WEIGHTS_PTR = 0, NE16_INFEAT_PTR, NE16_OUTFEAT_PTR, NE16_SCALE_PTR, NE16_SCALE_SHIFT_PTR,
    NE16_SCALE_BIAS_PTR, NE16_INFEAT_D0, NE16_INFEAT_D1, NE16_INFEAT_D2, NE16_OUTFEAT_D0,
    NE16_OUTFEAT_D1, NE16_OUTFEAT_D2, NE16_WEIGHTS_D0, NE16_WEIGHTS_D1, NE16_WEIGHTS_D2,
    NE16_REM0 /* ko<<16 | ki */, NE16_REM1 /* ho<<16 | wo */, NE16_REM2 /* hi<<16 | wi */,
    NE16_NB0 /* ko<<16 | ki */, NE16_NB1 /* ho<<16 | wo */, NE16_PADDING, NE16_WEIGHT_OFFSET,
    NE16_FILTER_MASK, NE16_CONFIG0, NE16_NB_REGS
};

/* CONFIG0 fields (ne16_regfile.cpp) */
#define NE16_CFG_QW(bits)        ((uint32_t)((bits) - 1) & 7u)  /* [2:0] weight bits - 1 */
#define NE16_CFG_OUTQUANT        (1u << 4)   /* normquant + 8-bit streamout, else raw */
#define NE16_CFG_MODE_3X3        (0u << 5)
#define NE16_CFG_MODE_DW3X3      (1u << 5)
#define NE16_CFG_MODE_1X1        (2u << 5)
#define NE16_CFG_NORM_8          (0u << 12)  /* [13:12] scale width: 8-bit */
#define NE16_CFG_STREAMIN        (1u << 14)  /* start from the 32-bit sums at out (32-bit mode only) */
#define NE16_CFG_QSHIFT(s)       (((uint32_t)(s) & 31u) << 16) /* layer-wide right shift */
#define NE16_CFG_QBITS_8         (0u << 21)
#define NE16_CFG_QBITS_32        (2u << 21)  /* streamout of the 32-bit accumulators */
#define NE16_CFG_NO_RELU         (1u << 23)  /* keep the sign: clip to [-128,127] */
#define NE16_CFG_NORM_SHIFT      (1u << 24)  /* per-channel shift from SCALE_SHIFT_PTR */
#define NE16_CFG_NORM_BIAS       (1u << 25)  /* per-channel int32 bias from SCALE_BIAS_PTR */

#define NE16_TP_IN   16   /* input channels per step */
#define NE16_TP_OUT  32   /* output channels per step (16 in depthwise) */

typedef enum { NE16_3X3 = 0, NE16_DW3X3 = 1, NE16_1X1 = 2 } nn_ne16_mode_t;

typedef struct { uint32_t reg[NE16_NB_REGS]; } nn_ne16_job_t;

/* One convolution on an L1 tile, stride 1, input pre-padded or zero-padded by NE16 (below):
 * in: (h_out + fs - 1) x (w_out + fs - 1) x k_in uint8 HWC, less the rows and columns NE16
 * pads; w: ne16_weights.py's bytes;
 * out: h_out x w_out x k_out, int32 (quant == 0) or 8-bit (quant != 0). */
typedef struct {
    nn_ne16_mode_t mode;
    const void *in; const void *weights; void *out;
    int k_in, k_out, h_out, w_out;      /* depthwise: k_out == k_in */
    int qw;                              /* weight bits, 8 for int8 */
    int32_t weight_offset;               /* -128 for int8 weights packed as w + 128 */
    int quant;                           /* 0: int32 accumulators out; 1: normquant to 8 bits */
    const uint8_t *scale; const uint8_t *shift; const int32_t *bias; /* quant: per channel */
    int relu;                            /* quant: 1 clips to [0,255], 0 to [-128,127] */
    /* 3x3 modes: zero padding by NE16 (0 or 1 per side); in is then the unpadded
     * (h_out + 2 - top - bottom) x (w_out + 2 - left - right) x k_in tile. Zero only: the model
     * writes PADDING's value on the left/top but leaves 0 on the right/bottom of a partial tile,
     * so signed inputs (x + 128) must come pre-padded. NE16 reads from in - top row - left
     * pixel: that address must not fall below the start of L1 (seen on the model: a tile at L1's
     * first byte, padded, had an output word written after the status said done). */
    int pad_top, pad_right, pad_bottom, pad_left;
    /* input-channel groups (ne16_layer.py splits wide layers): in points at the group's first
     * channel of a tile holding in_stride channels per pixel (0: k_in); streamin = 1 makes NE16
     * load its accumulators from out before adding this group (ne16_streamin.cpp; 32-bit out) */
    int in_stride;
    int streamin;
    /* kernel-row jobs (ne16_layer.py's "rows" mode: a strided or wide kernel as one 1x1 job
     * per kernel row): row_stride = bytes to the next input row (0: in_stride * w_in); in 1x1
     * mode k_in may exceed in_stride (neighbouring pixels' channels overlap: NE16 reads k_in
     * contiguous bytes from each pixel's address, any byte alignment, ne16_load.cpp/stream.cpp).
     * The weights stay dense per job: NE16 finds output channel 32 j at weights + 32 j times
     * the job's own channel bytes, whatever WEIGHTS_D1 says (ne16_matrixvec.cpp). */
    int row_stride;
} nn_ne16_conv_t;

/* NE16 reads and writes L1 behind the compiler's back: a compiler barrier before the commit
 * (inputs stored) and after the wait (outputs not read early); volatile alone orders neither. */
static inline void nn_ne16_barrier(void) { __asm__ volatile("" ::: "memory"); }

static inline void nn_ne16_write(uint32_t offs, uint32_t v) { *(volatile uint32_t *)(NE16_BASE + offs) = v; }
static inline int32_t nn_ne16_read(uint32_t offs) { return *(volatile int32_t *)(NE16_BASE + offs); }

static inline int nn_ne16_ceil(int a, int b) { return (a + b - 1) / b; }
/* remainder registers hold the last group's size (a full group, not 0, when it divides:
 * the model's input loader takes rem_ki == 0 as "no channels") */
static inline int nn_ne16_rem(int a, int b) { return a % b ? a % b : b; }

/* Fills job from c; returns 0, or -1 when c asks for what NE16 cannot do. */
static inline int nn_ne16_conv_job(nn_ne16_job_t *job, const nn_ne16_conv_t *c)
{
    const int fs = c->mode == NE16_1X1 ? 1 : 3;
    const int tp_out = c->mode == NE16_DW3X3 ? NE16_TP_IN : NE16_TP_OUT;
    const int w_in = c->w_out + fs - 1 - c->pad_left - c->pad_right;
    const int out_bytes = c->quant ? 1 : 4;
    const int nb_ki = nn_ne16_ceil(c->k_in, NE16_TP_IN);
    const int ist = c->in_stride ? c->in_stride : c->k_in;
    const uint32_t pad_back = (uint32_t)(c->pad_top * ist * w_in + c->pad_left * ist);
    uint32_t *r = job->reg;
    if (c->qw < 2 || c->qw > 8 || c->k_in < 1 || c->k_out < 1 || c->h_out < 1 || c->w_out < 1)
        return -1;
    if (c->mode == NE16_DW3X3 && c->k_in != c->k_out)
        return -1;
    if ((ist < c->k_in && c->mode != NE16_1X1) || (c->streamin && c->quant))
        return -1;
    if ((unsigned)c->pad_top > (fs == 3) || (unsigned)c->pad_right > (fs == 3)
        || (unsigned)c->pad_bottom > (fs == 3) || (unsigned)c->pad_left > (fs == 3))
        return -1;
    if (((uint32_t)c->in & 0x1FFFFu) < pad_back)
        return -1;
    /* the buffers escape to NE16: otherwise GCC may treat a static output array the program
     * never stores to as constant, and fold its loads after the job */
    __asm__ volatile("" :: "r"(c->in), "r"(c->weights), "r"(c->out), "r"(c->scale),
                     "r"(c->shift), "r"(c->bias) : "memory");
    for (int i = 0; i < NE16_NB_REGS; i++) r[i] = 0;
    r[NE16_WEIGHTS_PTR] = (uint32_t)c->weights;
    r[NE16_INFEAT_PTR] = (uint32_t)c->in - pad_back;
    r[NE16_OUTFEAT_PTR] = (uint32_t)c->out;
    r[NE16_SCALE_PTR] = (uint32_t)c->scale;
    r[NE16_SCALE_SHIFT_PTR] = (uint32_t)c->shift;
    r[NE16_SCALE_BIAS_PTR] = (uint32_t)c->bias;
    /* input: d0 = next pixel, d1 = next row */
    r[NE16_INFEAT_D0] = (uint32_t)ist;
    r[NE16_INFEAT_D1] = (uint32_t)(c->row_stride ? c->row_stride : ist * w_in);
    /* output: d0 = next 8-channel word (32-bit mode), d1 = next pixel, d2 = next row */
    r[NE16_OUTFEAT_D0] = 32;
    r[NE16_OUTFEAT_D1] = (uint32_t)(c->k_out * out_bytes);
    r[NE16_OUTFEAT_D2] = (uint32_t)(c->k_out * out_bytes * c->w_out);
    /* weights: d0 = next bit plane (3x3/dw: 9 x 16 bits), d1 = next output channel */
    if (c->mode == NE16_1X1) {
        r[NE16_WEIGHTS_D0] = 0;
        r[NE16_WEIGHTS_D1] = (uint32_t)(2 * c->qw * nb_ki);
    } else {
        r[NE16_WEIGHTS_D0] = 18;
        r[NE16_WEIGHTS_D1] = c->mode == NE16_3X3 ? (uint32_t)(18 * c->qw * nb_ki) : 0;
    }
    {
        const int ko = c->mode == NE16_DW3X3 ? c->k_in : c->k_out;
        const int rem_ho = nn_ne16_rem(c->h_out, 3), rem_wo = nn_ne16_rem(c->w_out, 3);
        r[NE16_REM0] = ((uint32_t)nn_ne16_rem(ko, tp_out) << 16) | (uint32_t)nn_ne16_rem(c->k_in, NE16_TP_IN);
        r[NE16_REM1] = ((uint32_t)rem_ho << 16) | (uint32_t)rem_wo;
        /* the last tile's input rows/columns: the bottom/right pad is not read */
        r[NE16_REM2] = ((uint32_t)(rem_ho + fs - 1 - c->pad_bottom) << 16)
                     | (uint32_t)(rem_wo + fs - 1 - c->pad_right);
        r[NE16_NB0] = ((uint32_t)nn_ne16_ceil(ko, tp_out) << 16) | (uint32_t)nb_ki;
        r[NE16_NB1] = ((uint32_t)nn_ne16_ceil(c->h_out, 3) << 16) | (uint32_t)nn_ne16_ceil(c->w_out, 3);
    }
    r[NE16_PADDING] = ((uint32_t)c->pad_top << 28) | ((uint32_t)c->pad_right << 24)
                    | ((uint32_t)c->pad_bottom << 20) | ((uint32_t)c->pad_left << 16); /* value 0 */
    r[NE16_WEIGHT_OFFSET] = (uint32_t)c->weight_offset;
    r[NE16_CONFIG0] = NE16_CFG_QW(c->qw) | ((uint32_t)c->mode << 5)
        | (c->quant ? NE16_CFG_OUTQUANT | NE16_CFG_QBITS_8 | NE16_CFG_NORM_8 | NE16_CFG_NORM_SHIFT
                      | NE16_CFG_NORM_BIAS | (c->relu ? 0u : NE16_CFG_NO_RELU)
                    : NE16_CFG_QBITS_32 | (c->streamin ? NE16_CFG_STREAMIN : 0u));
    return 0;
}

/* Waits for a free context and returns its job id. */
static inline int nn_ne16_acquire(void)
{
    int id;
    while ((id = nn_ne16_read(NE16_ACQUIRE)) < 0) {}
    return id;
}

/* Writes the job into the acquired context, then commits and starts it. */
static inline void nn_ne16_trigger(const nn_ne16_job_t *job)
{
    for (int i = 0; i < NE16_NB_REGS; i++) nn_ne16_write(NE16_REG_OFFS(i), job->reg[i]);
    nn_ne16_barrier();
    nn_ne16_write(NE16_TRIGGER, 0);
}

/* A job into the context just acquired whose registers hold a job that differed only in its
 * pointers (the first six registers): a context keeps its registers between jobs (GVSoC's
 * ne16_regfile.cpp), so the others need no writing. */
static inline void nn_ne16_trigger_ptrs(const nn_ne16_job_t *job)
{
    for (int i = NE16_WEIGHTS_PTR; i <= NE16_SCALE_BIAS_PTR; i++) nn_ne16_write(NE16_REG_OFFS(i), job->reg[i]);
    nn_ne16_barrier();
    nn_ne16_write(NE16_TRIGGER, 0);
}

/* Commits job into a free context if there is one (acquire reads < 0, with no side effect,
 * while both are taken): 1 when committed, 0 when NE16 is full. Lets a core feed NE16 a queue
 * of jobs between pieces of other work. */
static inline int nn_ne16_try_trigger(const nn_ne16_job_t *job)
{
    if (nn_ne16_read(NE16_ACQUIRE) < 0)
        return 0;
    nn_ne16_trigger(job);
    return 1;
}

/* Busy-waits until no job is pending (status 0). */
static inline void nn_ne16_wait(void)
{
    while (nn_ne16_read(NE16_STATUS) != 0) {}
    nn_ne16_barrier();
}

/* acquire + configure + trigger + wait for one job */
static inline void nn_ne16_run(const nn_ne16_job_t *job)
{
    nn_ne16_acquire();
    nn_ne16_trigger(job);
    nn_ne16_wait();
}

#endif /* NN_NE16_H */
