"""NumPy emulator of one layer's data movement: shim -> memtile -> cores -> memtile -> shim.

It reads the layer's _dma.json (the same pattern data its design file is generated from),
refuses any pattern the hardware cannot run (patterns.check / layerplan.check_dma), and moves
the bytes exactly as the BDs would: the shim MM2S tasks read DDR into bands, the memtile
MM2S pattern turns a band into the calls' im2col stream, the cores' S2MM pattern lays each
call out in L1, the kernel runs (natively, `calls_fn`), the memtile joins the cores'
outputs and its MM2S pattern plus the shim S2MM tasks write them back into DDR.
Every S2MM must fill its buffer exactly once; a hole or a double write is an error.
"""
from __future__ import annotations

import numpy as np

from . import patterns as P
from .layerplan import check_dma


def _task_offsets(tasks):
    """Per repetition, in issue order: the DDR addresses one BD repetition visits."""
    for task in tasks:
        for rep in range(task["repeat"]):
            yield P.offsets(task["dims"], task["offset"] + rep * task["repeat_stride"])


def run_layer(dma: dict, ddr_in: np.ndarray, ddr_w: np.ndarray, calls_fn, what: str) -> np.ndarray:
    """ddr_in/ddr_w: uint8 buffers; calls_fn(a (calls, A) uint8, w (gb,) uint8) -> (calls, O) uint8.
    Returns the output buffer (uint8)."""
    check_dma(dma, what)
    b = dma["buffers"]
    if ddr_in.size != b["in"] or ddr_w.size != b["w"]:
        raise P.PatternError(f"{what}: DDR buffers of {ddr_in.size}/{ddr_w.size} bytes, the design "
                             f"declares {b['in']}/{b['w']}")
    band, a_bytes = dma["act_l2"]["bytes"], dma["act_l1"]["bytes"]
    gb, o_bytes, R = dma["w_l1"]["bytes"], dma["out_l1"]["bytes"], dma["cores"]
    n_iter, calls = dma["n_iter"], dma["calls_per_iter"]
    mm2s = P.offsets(dma["act_l1"]["mm2s"])
    core_idx = P.scatter_index(dma["act_l1"]["s2mm"], a_bytes, f"{what}: act core S2MM")
    join_out = P.offsets(dma["out_l2"]["mm2s"])
    if join_out.size != R * o_bytes:
        raise P.PatternError(f"{what}: output memtile pattern moves {join_out.size} bytes of a "
                             f"{R * o_bytes}-byte element")
    out = np.zeros(b["out"], dtype=np.uint8)
    hits = np.zeros(b["out"], dtype=np.int32)
    for c, col in enumerate(dma["tasks"]):
        w_stream = np.concatenate([ddr_w[o] for o in _task_offsets(col["w"])])
        if w_stream.size != n_iter * R * gb:
            raise P.PatternError(f"{what}: column {c} weights tasks move {w_stream.size} bytes, "
                                 f"the cores consume {n_iter * R * gb}")
        w_l2 = w_stream.reshape(n_iter, R * gb)
        acts, outs = list(_task_offsets(col["act"])), list(_task_offsets(col["out"]))
        if len(acts) != n_iter or len(outs) != n_iter:
            raise P.PatternError(f"{what}: column {c} has {len(acts)} act / {len(outs)} out task "
                                 f"repetitions for {n_iter} iterations")
        for i in range(n_iter):
            stream = ddr_in[acts[i]]                       # shim MM2S -> memtile S2MM (linear)
            if stream.size % band:
                raise P.PatternError(f"{what}: act task moves {stream.size} bytes, not whole "
                                     f"bands of {band}")
            l1_stream = stream.reshape(-1, band)[:, mm2s].reshape(-1, a_bytes)
            if l1_stream.shape[0] != calls:
                raise P.PatternError(f"{what}: {l1_stream.shape[0]} act elements per iteration, "
                                     f"the cores make {calls} calls")
            a_l1 = np.empty_like(l1_stream)
            a_l1[:, core_idx] = l1_stream                  # core S2MM
            joined = np.empty((calls, R * o_bytes), dtype=np.uint8)
            for r, off in enumerate(dma["w_l1"]["offsets"]):
                w_l1 = np.ascontiguousarray(w_l2[i, off:off + gb])
                joined[:, dma["out_l2"]["offsets"][r]:dma["out_l2"]["offsets"][r] + o_bytes] = \
                    calls_fn(np.ascontiguousarray(a_l1), w_l1)
            o_stream = joined[:, join_out].reshape(-1)     # memtile MM2S
            if o_stream.size != outs[i].size:
                raise P.PatternError(f"{what}: out task takes {outs[i].size} bytes per iteration, "
                                     f"the memtile sends {o_stream.size}")
            out[outs[i]] = o_stream                        # shim S2MM
            np.add.at(hits, outs[i], 1)
    if hits.min() != 1 or hits.max() != 1:
        raise P.PatternError(f"{what}: the output tasks leave {int((hits == 0).sum())} bytes unwritten "
                             f"and write {int((hits > 1).sum())} more than once")
    return out
