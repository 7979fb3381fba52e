"""DMA access patterns and the hardware limits they must respect.

A pattern is a list of [size, stride] pairs, outermost first, in bytes (every buffer the
designs move is int8/uint8). It visits sum(i_d * stride_d) for every index tuple, innermost
fastest -- the meaning of IRON's dimensionsToStream / dimensionsFromStreamPerConsumer and
of a shim task's sizes/strides. The same lists are written into the design file and read
by the emulator, so the hardware checks here guard both.

Limits (mlir-aie's BD verifiers, AIE-ML/AIE2P buffer descriptors): at most 3 dimensions on
shim and compute tiles, 4 on memtiles; addresses in 32-bit words, so the innermost
dimension is contiguous (stride 1) and a whole number of words, and every other stride is
a multiple of 4 bytes; wrap sizes are 10-bit (<= 1023, the innermost counted in words);
step fields hold 2**20 words (shim), 2**17 (memtile), 2**13 (core); a shim task repeats
its BD at most 64 times; a shim tile has 16 BDs. A plain contiguous transfer (one
dimension, stride 1) is a linear BD: only its length counts.
"""
from __future__ import annotations

import numpy as np

MAX_DIMS = {"shim": 3, "memtile": 4, "core": 3}
MAX_STEP_WORDS = {"shim": 1 << 20, "memtile": 1 << 17, "core": 1 << 13}
MAX_WRAP = 1023
MAX_REPEAT = 64
SHIM_BDS = 16
WORD = 4


class PatternError(ValueError):
    """A pattern the DMA hardware cannot run."""


def canonical(dims) -> list:
    """Drop size-1 dimensions and merge a dimension into its inner neighbour when they
    walk one contiguous stride (the same addresses in the same order)."""
    out = []
    for size, stride in dims:
        size, stride = int(size), int(stride)
        if size == 1:
            continue
        out.append([size, stride])
    merged = []
    for size, stride in reversed(out):          # innermost first
        # contiguous runs always merge (a long one is split by fit()); a strided dimension
        # only while its size still fits the wrap field
        if (merged and stride == merged[-1][0] * merged[-1][1]
                and (merged[-1][1] == 1 and len(merged) == 1 or merged[-1][0] * size <= MAX_WRAP)):
            merged[-1] = [merged[-1][0] * size, merged[-1][1]]
        else:
            merged.append([size, stride])
    merged.reverse()
    return merged or [[1, 1]]


def fit(dims) -> list:
    """canonical(), then split a too-long contiguous innermost run into whole chunks of
    at most 1023 words, so a strided pattern stays encodable."""
    c = canonical(dims)
    if is_linear(c):
        return c
    size, stride = c[-1]
    if stride == 1 and size > MAX_WRAP * WORD:
        q = max((q for q in range(WORD, MAX_WRAP * WORD + 1, WORD) if size % q == 0), default=None)
        if q is not None:
            c = c[:-1] + [[size // q, q], [q, 1]]
    return c


def is_linear(dims) -> bool:
    return len(dims) == 1 and dims[0][1] == 1


def length(dims) -> int:
    return int(np.prod([s for s, _ in dims], dtype=np.int64))


def offsets(dims, base: int = 0) -> np.ndarray:
    """Every byte address the pattern visits, in stream order (int64)."""
    idx = np.array([base], dtype=np.int64)
    for size, stride in dims:
        idx = (idx[:, None] + np.arange(size, dtype=np.int64)[None, :] * stride).reshape(-1)
    return idx


def check(tile: str, dims, buffer_bytes: int, what: str, offset: int = 0, repeat: int = 1,
          repeat_stride: int = 0) -> None:
    """Raise PatternError unless a `tile` DMA (shim | memtile | core) can run `dims` on a
    buffer of `buffer_bytes`, starting at `offset`, `repeat` times `repeat_stride` apart."""
    def bad(msg):
        return PatternError(f"{what}: {tile} DMA pattern {dims}: {msg}")
    if not dims or any(len(d) != 2 for d in dims):
        raise bad("expected [size, stride] pairs")
    if any(int(s) < 1 or int(st) < 0 for s, st in dims):
        raise bad("sizes must be >= 1 and strides >= 0")
    if offset % WORD:
        raise bad(f"offset {offset} is not 4-byte aligned")
    if repeat < 1 or repeat > (MAX_REPEAT if tile == "shim" else 1):
        raise bad(f"repeat count {repeat} outside [1, {MAX_REPEAT if tile == 'shim' else 1}]")
    if repeat > 1 and repeat_stride % WORD:
        raise bad(f"repeat stride {repeat_stride} is not a multiple of 4 bytes")
    if not is_linear(dims):
        if len(dims) > MAX_DIMS[tile]:
            raise bad(f"{len(dims)} dimensions; a {tile} BD has at most {MAX_DIMS[tile]}")
        size, stride = dims[-1]
        if stride != 1:
            raise bad(f"innermost stride {stride}; it must be 1 (DMAs address 32-bit words)")
        if size % WORD:
            raise bad(f"innermost run of {size} bytes is not a whole number of 32-bit words")
        if size // WORD > MAX_WRAP:
            raise bad(f"innermost run of {size // WORD} words exceeds the 10-bit wrap (1023)")
        for s, st in dims[:-1]:
            if s > MAX_WRAP:
                raise bad(f"size {s} exceeds the 10-bit wrap (1023)")
            if st % WORD:
                raise bad(f"stride {st} bytes is not a multiple of 4 bytes")
            if st // WORD > MAX_STEP_WORDS[tile]:
                raise bad(f"stride {st // WORD} words exceeds the {tile} step field "
                          f"({MAX_STEP_WORDS[tile]} words)")
    last = offset + (repeat - 1) * repeat_stride + sum((s - 1) * st for s, st in dims)
    if last >= buffer_bytes:
        raise bad(f"reaches byte {last}, past the end of the {buffer_bytes}-byte buffer")


def scatter_index(dims, buffer_bytes: int, what: str) -> np.ndarray:
    """S2MM: where each stream byte lands; the pattern must fill the buffer exactly once
    (a hole or a double write in an object FIFO element is a planning error)."""
    idx = offsets(dims)
    if idx.size != buffer_bytes or np.unique(idx).size != idx.size:
        raise PatternError(f"{what}: S2MM pattern {dims} does not write each of the "
                           f"{buffer_bytes} bytes exactly once")
    return idx
