"""Generated BRGEMM microkernels for conv and linear layers (host target).

Per layer, one C source specialised to its exact shapes:

- Conv (groups 1) is a batch-reduce GEMM on HWC activations: M = output pixels,
  N = output channels, K = taps x input channels, reduced tap by tap through pointers to
  the shifted input rows of each output pixel (no im2col copy).  The input is first
  converted once into an int16 buffer padded with the input zero point (and to an even
  channel count, the extra channel 0), so every tap of every pixel is a plain pointer.
  Linear is the same with one pixel and one tap.
- Weights are prepacked at build time (pack_weights) in panels of NR channels,
  [K/2][NR][2] int8, the order the microkernels read; the bias in the weights .bin has
  -zp_in * sum(w) folded in, so accumulators are sum(w * x) over raw x.
- A main microkernel MR x NR, K unrolled by k_unroll, plus edge kernels for M % MR pixels
  and for the last, narrower channel panel; fused epilogue (bias, per-channel
  requantization with round half to even, clamp) while the accumulators are in registers.
- One source holds every ISA variant (isa.ISAS) behind its preprocessor guard; `isa: auto`
  runs the first of its variants the CPU has (their order: CPUID's, or measured on the building
  machine, targets/host/measure.py), a forced isa calls it directly.

A layer's code depends only on its spec (shapes, zero points, clamps, resolved blocking,
isa, threads), so editing one layer's blocking regenerates that layer only.

The generator's modules, one job each: geometry (the GEMM view of a layer), blocking (the
register blockings and their cost models), packing (the weights .bin, numpy), emit (the C
source of a layer), threads (which rows and channel panels each thread takes), testdriver
(the kernel test's C driver), isa (the microkernels per ISA).
This package re-exports what its callers use.
"""
from __future__ import annotations

from .blocking import (DEFAULT_NR_CHOICES, MAX_ACCUMULATORS, U8_BLOCKING, VNNI_LATENCY,  # noqa: F401
                       VNNI_MAX_ACCUMULATORS, VNNI_NR, WIDE_ACCUMULATORS, candidates, core_limits, cost,
                       default_blocking, vnni_blocking, vnni_candidates, VNNI_SEARCH)
from .emit import layer_source, micro_set, scratch  # noqa: F401
from .geometry import (geometry, padded, segments, supports, tap_offsets, u8_im2col, u8_quads,  # noqa: F401
                       u8_steps, u8_supported, u8_taps)
from .packing import (U8_ISAS, U8_PAIR_MAX, U8_VARIANTS, VNNI_ISAS, bias_u8, f64_safe, folded_bias,  # noqa: F401
                      pack_u8, pack_weights, panels, u8_pairs_safe, u8_split, vector_safe,
                      weight_matrix)
from . import wino, winomath  # noqa: F401
from .testdriver import gemm_test_source  # noqa: F401
from .threads import band_heights, thread_split  # noqa: F401
