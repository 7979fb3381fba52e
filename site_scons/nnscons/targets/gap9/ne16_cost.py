"""NE16 or the cluster for one conv: estimated cycles of both, the cheaper runs it.

NE16 (conv2d_ne16.c.j2 on ne16_layer.py's tiling), per tile:
  max(engine, cores, DMA) + TILE_CYCLES, plus one tile's input and parameters before the first
  engine: NE16's cycles from GVSoC's NE16 model (fsm.cpp's per-state latencies, the vector
    loads one cycle per word): per subtile of 3x3 output pixels, per step of k <= 32 output
    channels, per group of 16 input channels
      3x3: 25 input pixels + 6 + 6 + 6 (FIFO latencies) + 8 * k (a bit plane per channel)
      1x1:  9 input pixels + 6 + 10 + 6 + k
    plus 9 * ceil(k / 8) words streamed out per subtile and step (and in again per extra
    input-channel group), JOB_CYCLES per job (the core writes the 24 registers; ~709 cycles
    measured in tests/test_ne16.py, the engine idle meanwhile). Checked against the model:
    3x3 32->32 16x16 gives 22,824 (23,350 measured), 1x1 64->64 16x16 20,736 (21,062).
  cores: the x ^ 0x80 flip of the input tile (PREP_CYCLES per byte over the cores) and the
    requantization (REQUANT_CYCLES per output over the cores);
  DMA: the tile's bytes at DMA_BYTES_PER_CYCLE (tiling.py's figure, 8 KiB in ~1,063 cycles).
Cluster: the cluster tiler's own estimate of the Xpulp kernels for the tiling it chose
(tiling._xp_cycles, fitted on pulp-open), times CLUSTER_SCALE for GAP9's model; plain-C
kernels MACs / PLAIN_MACS_PER_CYCLE.
TILE_CYCLES and CLUSTER_SCALE were fitted on ResNet-18 on the GAP9 model (README, "NE16").
"""
from __future__ import annotations

import numpy as np

JOB_CYCLES = 700
PREP_CYCLES = 1.0          # per input byte on one core (word xor, load + store)
REQUANT_CYCLES = 14.0      # per output on one core (nn_xp_requant + the loop)
DMA_BYTES_PER_CYCLE = 7.6
TILE_CYCLES = 2500         # forks, DMA programming and waits per tile
CLUSTER_SCALE = 0.8        # GAP9 model cycles / tiling.py's estimate (pulp-open fit)
PLAIN_MACS_PER_CYCLE = 2.0
MARGIN = 1.0               # NE16 when its estimate < MARGIN x the cluster's


def _engine(m, rows, ow, chans, ic, kg, n_g) -> float:
    """NE16's cycles for one tile (all its input-channel groups)."""
    sub = -(-rows // 3) * -(-ow // 3)
    total = 0.0
    for k in [32] * (chans // 32) + ([chans % 32] if chans % 32 else []):
        words = 9 * -(-k // 8)
        per_ic = 43 + 8 * k if m == "3x3" else 31 + k
        total += sub * (-(-ic // 16) * per_ic + words * (2 * n_g - 1))
    return total + JOB_CYCLES * n_g


def ne16_cycles(layer, graph, m, t, cores) -> int:
    """Estimated cycles of the conv on NE16 with tiling t (ne16_layer.plan_tiling)."""
    from .ne16_layer import _geometry
    i, o, kh, kw = _geometry(layer, graph)
    total, first = 0.0, None
    for co in range(t["n_c"]):
        chans = min(t["tc"], o["c"] - co * t["tc"])
        for h in range(t["n_h"]):
            rows = min(t["th"], o["h"] - h * t["th"])
            in_bytes = (rows + kh - 1) * (o["w"] + kw - 1) * i["c"]
            engine = _engine(m, rows, o["w"], chans, i["c"], t["kg"], t["n_g"])
            core = (PREP_CYCLES * in_bytes + REQUANT_CYCLES * rows * o["w"] * chans) / cores
            w_bytes = chans * (t["w_grp"] * (t["n_g"] - 1) + t["w_last"]) if t["n_g"] > 1 else \
                (chans * t["l1_w"] // max(t["tc"], 1) if h == 0 else 0)
            dma = (in_bytes + w_bytes + rows * o["w"] * chans) / DMA_BYTES_PER_CYCLE
            total += max(engine, core, dma) + TILE_CYCLES
            if first is None:
                first = dma
    return int(total + first)


def cluster_cycles(layer, graph, til, cores, xpulp) -> int:
    """Estimated cycles of the conv on the cluster's kernels with their tiling til."""
    from . import ops, tiling
    g = ops.window(layer, graph, cores, xpulp)
    if not getattr(g, "kernel", "") or til is None:
        return int(np.prod(graph.tensor(layer.output).shape) * np.prod(layer.weight.shape[1:])
                   / PLAIN_MACS_PER_CYCLE)
    one = np.zeros(1, np.int64)
    est = tiling._xp_cycles(g, np.array([til.th]), np.array([til.tw]), np.array([til.tc]), one, one, one,
                            np.array([til.l1_in]), np.array([til.l1_params]),
                            np.array([til.n_h * til.n_w == 1]))
    return int(float(np.asarray(est).reshape(-1)[0]) * CLUSTER_SCALE)


def choose(layer, graph, m, t, til, cores, xpulp) -> tuple:
    """(on NE16?, {why}): the estimates and the verdict, for report.json and the console."""
    ne = ne16_cycles(layer, graph, m, t, cores)
    cl = cluster_cycles(layer, graph, til, cores, xpulp)
    on = ne < MARGIN * cl
    return on, {"ne16_estimate": ne, "cluster_estimate": cl,
                "why": f"estimate NE16 {ne:,} {'<' if on else '>='} cluster {cl:,} cycles"}
