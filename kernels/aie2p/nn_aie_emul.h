/* The NPU's data movement for one layer, emulated on the CPU (platform=emul, the library):
 * shim -> memtile -> cores -> memtile -> shim, exactly as the buffer descriptors of the
 * layer's design move the bytes (the C twin of site_scons/nnscons/targets/aie2p/emulator.py,
 * from the same patterns: <layer>_dma.json).  The patterns were checked against the hardware
 * when the layer was planned; here every output byte must still be written exactly once.
 *
 * A pattern is n [size, stride] pairs, outermost first, in bytes: it visits
 * base + sum(i_d * stride_d) for every index tuple, innermost fastest.
 */
#ifndef NN_AIE_EMUL_H
#define NN_AIE_EMUL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int n;
    const long (*dims)[2];
} nn_aie_pattern_t;

/* a shim DMA task: its BD `repeat` times, `repeat_stride` bytes apart */
typedef struct {
    nn_aie_pattern_t pattern;
    long offset, repeat, repeat_stride;
} nn_aie_task_t;

typedef struct {
    int n_act, n_w, n_out;
    const nn_aie_task_t *act, *w, *out;
} nn_aie_column_t;

/* the layer's kernel: `calls` consecutive L1 act buffers, one weights buffer, the calls' outputs */
typedef void (*nn_aie_calls_fn)(const void *a, int calls, const void *w, void *out);

typedef struct {
    long in_bytes, w_bytes, out_bytes;        /* the DDR buffers */
    long band, a_bytes, gb, o_bytes;          /* memtile band, core act / weights / output element */
    int cores, n_iter, calls;                 /* cores per column, iterations, calls per iteration */
    nn_aie_pattern_t act_mm2s, act_s2mm, out_mm2s;
    const long *w_offsets, *out_offsets;      /* per core: its weights in the group, its output in the join */
    int n_columns;
    const nn_aie_column_t *columns;
    nn_aie_calls_fn calls_fn;
} nn_aie_layer_t;

/* Scratch the layer needs (bytes), for nn_aie_emul_layer's `scratch`. */
long nn_aie_scratch_bytes(const nn_aie_layer_t *l);

/* One layer: ddr_in (in_bytes), ddr_w (w_bytes) -> ddr_out (out_bytes).  Returns 0, or -1
 * when the output tasks leave a byte unwritten or write one twice. */
int nn_aie_emul_layer(const nn_aie_layer_t *l, const uint8_t *ddr_in, const uint8_t *ddr_w, uint8_t *ddr_out,
                      uint8_t *scratch);

#ifdef __cplusplus
}
#endif

#endif /* NN_AIE_EMUL_H */
