"""NE16 or the cluster for one conv: estimated cycles of both, the cheaper runs it.

NE16 (conv2d_ne16.c.j2 on ne16_layer.py's tiling), stride 1: the first tile's input DMA +
  under PIPE_MIN_TILES tiles (one input-channel group): _few_cycles, the template's loop
                 played tile by tile -- NE16 runs tile k while the cores requantize tile
                 k - 1, a new channel tile drains it -- with the requantization per tile
                 FEW_FORK_CYCLES + the busiest core's units x (FEW_CH_CYCLES + FEW_PX_CYCLES
                 x the unit's pixels) (_rq_units: requant_worker splits (channel, pixel chunk)
                 units over the cores, the short rule's hardware loop per unit),
                 FEW_TILE_CYCLES per tile, FEW_LAYER_CYCLES per layer. Least squares (log
                 error) on the 55 such convs of kws_dscnn, ic_resnet8, vww_mobilenetv1 and
                 MobileNetV2 forced on NE16 on the GAP9 model after the short-rule loop
                 (ne16_cost.choose returning NE16 for every eligible conv, gap9_cycles.py
                 with gap9 and gap9-cluster): 0.86-1.10x of each, ic_resnet8's 3x3 convs the
                 low ones (0.86-0.89x; 4x faster than the cluster anyway); the fit before it
                 (26 cycles per output, pixels split over the cores) said 1.06-2.2x after the
                 loop, 1.5-2.2x on most 1x1 convs, and kept vww_mobilenetv1's block1-4, 6 and
                 12 pointwise convs and 17 of MobileNetV2's on the cluster though NE16 ran
                 them faster (195k cycles lost on the four networks against the measured
                 faster engine, 9k now besides block1_0.expand's 27k, see below);
  more tiles:    sum over tiles of PIPE_TILE_CYCLES + weight wait
                   + max(engine of tile k, requantization of tile k - 1 + prep of tile k)
                 + the last tile's requantization (NE16 computes tile k while the cores
                 requantize tile k - 1: the template's pipeline), with one input buffer the
                 input's DMA and prep serial before its tile, where
  engine: NE16's cycles from GVSoC's NE16 model (fsm.cpp's per-state latencies, its vector
    loads one cycle per word): per subtile of 3x3 output pixels, per step of k <= 32 output
    channels, per group of 16 input channels
      3x3: 25 input pixels + 6 + 6 + 6 (FIFO latencies) + 8 * k (one bit plane per channel)
      1x1:  9 input pixels + 6 + 10 + 6 + k
    plus 9 * ceil(k / 8) words streamed out per subtile and step (and in again per extra
    input-channel group), JOB_CYCLES per job (the core writes the 24 registers: ~709 cycles
    in tests/test_ne16.py). Checked against the model's jobs: 3x3 32->32 16x16 22,824
    (23,350 measured), 1x1 64->64 16x16 20,736 (21,062);
  cores: the requantization, the busiest core's units as under PIPE_MIN_TILES (_rq_core, the
    fork in PIPE_TILE_CYCLES), and the x ^ 0x80 flip, PREP_CYCLES per input byte, over the cores;
  with the weights' DMA (DMA_BYTES_PER_CYCLE, tiling.py's figure) where it is not hidden
  (every channel tile's weights before its first tile; the groups' behind the engine).
  TILE_CYCLES (summed form: more than one input-channel group under PIPE_MIN_TILES) was
  fitted on small layers measured on the GAP9 model (simplecnn, ic_resnet8: per tile ~4,000
  cycles beside the engine). PIPE_TILE_CYCLES (6,500) is fitted, with the short-rule loop's
  requantization, on ResNet-18's stride-1 3x3 convs measured in the network (layer by layer,
  at 02857b6): 64 ch 56x56 1.18 M estimated / 1.165 M measured, 128 ch 28x28 1.28 M / 1.27 M,
  512 ch 7x7 (input-channel groups) 1.67 M / 1.64 M, 256 ch 14x14 (one input buffer) 1.52 M /
  1.84 M (the one under: its per-tile input reload is slower than the DMA figure); with the
  requantization at 41 cycles per output and 8,000 per tile, as before, 1.33 M, 1.35 M, 1.70 M,
  1.59 M. On mobilenetv1's 14 pointwise convs (8+ tiles, every eligible conv forced on NE16):
  0.75-1.12x (block3.pw, 96->96 56x56, the low one: 22.6k cycles per tile measured where NE16
  and the requantization are ~8.6k each, so they overlap less than the max() says), 0.94-2.0x
  before; its 24->48 and 48->96 112x112 / 56x56 pointwise convs now go to NE16 (1,774,629 and
  1,012,291 cycles measured there against the cluster's 1,870,628 and 1,325,828).
Choices on those 55 convs and the 9 others (each measured on both engines, benchmarks/gap9_cycles.py,
gap9 with every eligible conv forced on NE16 and gap9-cluster): 36,521 cycles lost against always
picking the measured faster engine (231,460 before the refit): MobileNetV2's block1_0.expand (16
tiles, the pipelined form: 1.22x of the 234,743 measured, 2.7x with the older requantization
figure; the cluster took 261,927) and ic_resnet8's two 1x1/2 shortcuts in rows mode
(1.08-1.28x: 27.4k and 18.3k on NE16, 32.8k and 22.3k on the cluster); MobileNetV2's 48->8
projections stay on the cluster (22.1k cycles on NE16, 10.2k on the cluster at 12x12).
Stride 2 ("rows" mode, ne16_layer.py): kh 1x1 jobs per tile of kw * ic channels (or one of
  kw * kh * ic on stacked rows), and the template's pipeline modelled rather than summed
  (_rows_cycles: NE16 runs tile k while the cores requantize tile k - 1 and prep tile k + 1,
  measured so: 64->128 56->28 3x3/2 1,340,157 cycles against 1,257,529 estimated; the sum
  would say 1.7 M), plus LAYER_CYCLES measured on one-tile layers; the requantization
  ROWS_RQ_CYCLES per output and ROWS_CH_CYCLES per channel and core (the template's short-rule
  hardware loop; 41 cycles per output made the 1x1/2 estimates 2.0-2.4x the measured cycles,
  now 0.99-1.21x; the 3x3/2 ones, NE16-bound, 0.91-1.06x); the 1x1/S downsamples' dense tiles
  (ne16_geometry.dense) as NE16's 3 rows, their DMA and prep on the read pixels only, each
  requantization's fork ROWS_RQ_FORK_CYCLES (64->128 1x1/2 measured 230k, 238k, 242k and 249k
  cycles in 12, 14, 14 and 16 tiles: without the term the estimate picked the 16); each prep costs
  PREP_FORK_CYCLES beside its bytes. 3x3/2 on dense kernel-row buffers (ne16_geometry.dense_rows,
  a tiling option beside the padded tile): NE16's 3 rows of dense_cols, the buffers' bytes
  flipped, DR_CMD_CYCLES per DMA command serial on core 0 (measured one-layer: 64->128 56->28
  1,164,966 cycles, estimated 1,172,802; 256->504 14->7 2,099,660 / 2,117,589; ic_resnet8's
  3x3/2 convs 1.2x / 1.12x slower on them, which the command term keeps them off). Tap jobs
  (ne16_geometry.taps, the whole map per channel tile, one job per kernel tap): _taps_cycles
  (256->504 14->7: 1,030,639 estimated, 1,022,693 measured). With the channel tiles inner (c_inner) the input is
  prepared once per row tile, and the weights come all at once or (w_stream) the next
  channel tile's beside NE16. The stem (stacked rows, channel tiles inner): 3,944,692
  measured against 4,593,530. The tiling is the one this estimate finds cheapest.
Cluster: the cluster tiler's estimate of its Xpulp kernels for the tiling it chose
(tiling._xp_cycles, fitted on pulp-open), times CLUSTER_SCALE; plain-C kernels at
PLAIN_MACS_PER_CYCLE. On the GAP9 model the cluster measured 1.1-1.5x that estimate on
8-512 input channels and ~3x with 1-3 input channels (ic_resnet8, simplecnn, ResNet-18):
CLUSTER_SCALE = 1.2, about the median of the first, for 3x3 kernels; 1x1 kernels measured
1.2-2.6x the estimate (the pointwise convs of vww_mobilenetv1, kws_dscnn, MobileNetV2):
POINTWISE_SCALE = 1.8; under 4 input channels (a partial word per pixel) it is
LOW_IC_SCALE (measured 2.4 on ic_resnet8's conv1, 3 channels, and 3.1 on simplecnn's, 1).
1x1 convs on the cluster's pointwise path (conv_paths.pointwise: a GEMM with its own loop,
faster than the direct path tiling.py models) have their own fit: PW_MAC_CYCLES per MAC,
PW_OUT_CYCLES per output and PW_LAYER_CYCLES per layer for 9 cores, least squares on the 34
1x1 convs of the zoo MobileNetV2 on the GAP9 model, cluster only (2,147,434 cycles; within
0.87-1.21x of each layer; the scaled tiler estimate was 1.25-5x too high there, which sent 25
layers to NE16 that ran faster on the cluster).
"""
from __future__ import annotations

import numpy as np

from .ne16_geometry import dense_cols, dr_rows, dr_slots, in_rows, tap_jobs, taps_slots

JOB_CYCLES = 700
PREP_CYCLES = 1.0          # per input byte on one core (word xor, load + store)
ROWS_RQ_CYCLES = 12.5      # rows mode: per output on one core, the short rule's hardware loop (measured
                           # 12.2 with bank conflicts on 64->128 1x1/2, core 0's counters)
ROWS_CH_CYCLES = 150       # rows mode: per channel and core (its constants, the short rule's check)
ROWS_RQ_FORK_CYCLES = 3000  # rows mode: per requantization (the fork, the output's DMA; 64->128 1x1/2
                            # measured ~4.7k more per tile over 12-16 tiles)
DMA_BYTES_PER_CYCLE = 7.6
TILE_CYCLES = 4000         # forks, DMA programming and waits per tile (one-tile layers)
PIPE_TILE_CYCLES = 6500    # the same per tile beside the pipeline (stride 1, PIPE_MIN_TILES or more)
PIPE_MIN_TILES = 8         # under this the serial sum fitted on small layers (simplecnn, ic_resnet8)
PREP_FORK_CYCLES = 4000    # rows mode: per input tile's prep beside the bytes (fork, pads, rows;
                           # measured 9.2k, 11k, 6.7k per tile on 64->128 and 128->256 3x3/2, 64->128 1x1/2)
DENSE_PREP_FORK_CYCLES = 1000  # the same for a dense tile's flip (ne16_geometry.dense: its words split evenly;
                           # measured 1.15k per tile with the bytes on 64->128 1x1/2's 2x28 tiles)
DR_PREP_CYCLES = 1.0       # per byte of the dense kernel-row buffers (ne16_geometry.dense_rows): flip
                           # and pads per pixel
TAPS_MARGIN = 0.85         # tap jobs when their estimate < this x the best other form's: measured one-layer, taps
                           # against the form chosen without them, 256->504 14->7 1,022,693 / 2,136,091 (estimates
                           # 0.49x), 128->200 14x14 246,247 / 281,526 (0.82x), 128->64 18x18 126,957 / 117,376 (0.92x:
                           # slower; the rows-mode estimates run 1.06-1.19x high on such small layers, tap jobs' 0.99-1.01x)
TAP_JOB_CYCLES = 590       # per tap job (ne16_geometry.taps) beyond _engine's figures: NE16's L1 latencies beside
                           # the weights' DMA, the cores' prep and requantization (256->504 14->7: 144 jobs of
                           # ~7,000 cycles measured, 6,458 by _engine; 6,801 without the weights' DMA). Still in
                           # line with jobs of two taps (ne16_geometry.tap_jobs): 256->480 929,742 estimated,
                           # 934,042 / 933,963 measured; 128->200 14x14 224,494 and 233,928
DR_CMD_CYCLES = 160        # per DMA command of a dense kernel-row tile, core 0 serial: fitted on ic_resnet8's
                           # 3x3/2 convs (16->32 32->16 63,693 cycles measured, 32->64 16->8 50,321: 1.2x and 1.12x
                           # the estimate without it, 34 commands per row tile)
STACK_CYCLES = 4.0         # per stacked byte on one core (ne16_geometry.stacked: byte copies)
LAYER_CYCLES = 5000        # rows mode: measured beyond the per-tile figures on one-tile layers
# dense 1x1/S tiles (ne16_geometry.dense): the template moves their job's pointers, splits the
# requantization evenly by outputs and takes the short rule's per-channel check from the WEIGHTS
# (ne16_layer.short_rule_shifts); fitted on 64->128 56->28 one-layer runs on the GAP9 model over 7
# tilings (191,126-205,667 cycles; the figures above said 1.40-1.60x of them)
DENSE_TILE_CYCLES = 2000   # per tile, serial (the fork, the job, the output DMA and the channels' set-up)
DENSE_RQ_FORK_CYCLES = 0   # per requantization beside that (the fit: none)
DENSE_RQ_CYCLES = 12.2     # per output on the busiest core
CLUSTER_SCALE = 1.2        # GAP9 model cycles / tiling.py's estimate: measured 1.1-1.5
POINTWISE_SCALE = 1.8
LOW_IC_SCALE = 2.4
PLAIN_MACS_PER_CYCLE = 2.0
PW_MAC_CYCLES = 0.0819     # pointwise path, 9 cores: ~1.36 MACs/cycle per core
PW_OUT_CYCLES = 1.68       # per output, 9 cores: ~15 cycles per output on one core (requantization)
PW_LAYER_CYCLES = 4500
FEW_TILE_CYCLES = 1320     # under PIPE_MIN_TILES (_few_cycles): per tile (forks, DMA programming)
FEW_LAYER_CYCLES = 820
FEW_FORK_CYCLES = 3150     # per requantization (the fork, the output's DMA)
FEW_CH_CYCLES = 11         # per (channel, pixel chunk) unit of a core (its bias/mult/shift, the short
                           # rule's check, the NE16 feed; _rq_units)
FEW_PX_CYCLES = 12.7       # per output of a unit: the short rule's hardware loop (rows mode's 12.5)
MARGIN = 0.95              # NE16 when its estimate < MARGIN x the cluster's: the cluster's own
                           # estimates are 0.87-1.21x, so a close call (vww_mobilenetv1's block3.pw:
                           # 0.96, NE16 measured 80.0k, cluster 74.1k) stays on the cluster


def _engine(m, rows, ow, chans, ic, kg, n_g) -> float:
    """NE16's cycles for one tile: n_g jobs (input-channel groups, or "rows" mode's kernel
    rows) over ic input channels in all, each job but the first streaming the sums back in."""
    sub = -(-rows // 3) * -(-ow // 3)
    total = 0.0
    for k in [32] * (chans // 32) + ([chans % 32] if chans % 32 else []):
        words = 9 * -(-k // 8)
        per_ic = 43 + 8 * k if m == "3x3" else 31 + k
        total += sub * (-(-ic // 16) * per_ic + words * (2 * n_g - 1))
    return total + JOB_CYCLES * n_g


def _taps_cycles(i, o, kh, t, cores) -> int:
    """Tap jobs on the whole map (ne16_geometry.taps): before NE16's first job buffer 0's DMA and
    its first tap's prep (the other pieces are prepared beside NE16, tap_prep); then per channel
    tile the tap_jobs (one or two taps: ic or 2 ic channels) queued back to back (the next job's
    weights come while NE16 runs one, the tile before requantized beside NE16) with TAP_JOB_CYCLES
    per job beyond the engine's figures, and the last tile's requantization."""
    kw = o["pw"] - (o["w"] - 1) * o["s"]
    n_taps, n_jobs, q0_bytes = kh * kw, len(tap_jobs(kh, o["s"])), taps_slots(o, kh)[0] * kw * i["c"]
    total = LAYER_CYCLES + q0_bytes / DMA_BYTES_PER_CYCLE + PREP_FORK_CYCLES + DR_PREP_CYCLES * q0_bytes / kw / cores \
        + DR_CMD_CYCLES * dr_rows(o, o["h"], kh)[0] * (1 + t["dr_edges"])
    pix = o["h"] * o["w"]
    for co in range(t["n_c"]):
        chans = min(t["tc"], o["c"] - co * t["tc"])
        total += _engine("1x1", 3, dense_cols(pix), chans, n_taps * i["c"], i["c"], n_jobs) \
            + (TAP_JOB_CYCLES - JOB_CYCLES) * n_jobs
    return int(total + ROWS_RQ_FORK_CYCLES + (ROWS_RQ_CYCLES * pix * chans + ROWS_CH_CYCLES * max(chans, cores)) / cores)


def _rows_cycles(i, o, kh, row, n_jobs, k_job, t, cores) -> int:
    """"rows" mode (stride 2): the template's pipeline, per tile TILE_CYCLES + the input's DMA
    and prep when it has one input buffer + max(NE16's jobs, the cores' requantization of the
    tile before and, with two input buffers, the next tile's prep); a new channel tile waits for
    its last weight row (kernel-row jobs, two input buffers: the template loads the new weights
    row by row behind the old jobs) or drains the pipeline (the tile before requantized alone)
    and waits for all its weights."""
    if t.get("taps"):
        return _taps_cycles(i, o, kh, t, cores)
    first = sum(dr_slots(o, t["th"], kh)) * k_job if t.get("dr") else min(in_rows(o, t["th"], kh), i["h"]) * i["w"] * i["c"]
    total = LAYER_CYCLES + first / DMA_BYTES_PER_CYCLE
    req_prev = 0.0
    inner = t.get("c_inner")
    stream = t.get("w_stream")
    if inner:               # every channel tile's weights before the first tile (streamed: the first's)
        total += (t["tc"] if stream else o["c"]) * row / DMA_BYTES_PER_CYCLE
    order = [(co, h) for h in range(t["n_h"]) for co in range(t["n_c"])] if inner else \
        [(co, h) for co in range(t["n_c"]) for h in range(t["n_h"])]
    for co, h in order:
        chans = min(t["tc"], o["c"] - co * t["tc"])
        rows = min(t["th"], o["h"] - h * t["th"])
        in_bytes = in_rows(o, rows, kh) * o["pw"] * i["c"]
        prep = PREP_FORK_CYCLES + PREP_CYCLES * in_bytes / cores
        if n_jobs == 1 and kh > 1:      # stacked rows: the cores copy kh rows per output row
            prep = PREP_FORK_CYCLES + STACK_CYCLES * rows * o["pw"] * kh * i["c"] / cores
        erows, ecols, dr_cmd = rows, o["w"], 0.0
        if t.get("dr"):                 # dense kernel-row buffers (ne16_geometry.dense_rows)
            in_bytes = sum(dr_slots(o, rows, kh)) * k_job
            prep = PREP_FORK_CYCLES + DR_PREP_CYCLES * in_bytes / cores
            erows, ecols = 3, dense_cols(rows * o["w"])
            # core 0 programs the DMA: per buffer row one strided command and one per edge pixel
            dr_cmd = DR_CMD_CYCLES * sum(dr_rows(o, rows, kh)) * (1 + t["dr_edges"])
        if t.get("dense"):              # the read pixels only, as 3 rows (ne16_geometry.dense)
            in_bytes = rows * o["w"] * i["c"]
            prep = DENSE_PREP_FORK_CYCLES + PREP_CYCLES * in_bytes / cores
            erows, ecols = 3, dense_cols(rows * o["w"])
        engine = _engine("1x1", erows, ecols, chans, n_jobs * -(-k_job // 16) * 16, k_job, n_jobs)
        serial = DENSE_TILE_CYCLES if t.get("dense") else TILE_CYCLES
        if inner and co:        # the row tile's input is in L1 and prepared
            prep, in_bytes, dr_cmd = 0.0, 0, 0.0
            if n_jobs > 1 and not t.get("dense"):
                # kernel-row jobs (3x3/2): no input wait nor prep fork either, measured on 14->7
                # 256->512 (504 ch) / 256->256 and 28->14 128->256 one-layer models, channel tiles
                # inner with streamed weights: 2,231,442 / 1,135,720 / 1,566,388 cycles, estimated
                # 1.16 / 1.17 / 1.11x of that with TILE_CYCLES here; the stem and the 1x1/2 keep it
                serial = 0.0
        serial += dr_cmd
        if h == 0 and co and not inner and t["in_bufs"] == 2 and n_jobs > 1 and not t.get("dense"):
            # a new channel tile: the tile before is requantized beside NE16, its weights come kernel
            # row by kernel row behind the jobs that read the old ones, only the last row's serial
            # (128->256 28->14: 1,085,118 cycles measured; the drain and whole load this charged
            # made 128->64 18x18's estimate 1.13x high and chose tap jobs, 8% slower there)
            serial += chans * row / n_jobs / DMA_BYTES_PER_CYCLE
        elif h == 0 and not inner:
            serial += req_prev + chans * row / DMA_BYTES_PER_CYCLE
            req_prev = 0.0
        if t["in_bufs"] == 1:
            serial += prep + in_bytes / DMA_BYTES_PER_CYCLE
            prep = 0.0
        w_next = chans * row / DMA_BYTES_PER_CYCLE if stream else 0.0     # the next tile's, beside NE16
        total += serial + max(engine, req_prev + prep, w_next)
        req_prev = ROWS_RQ_FORK_CYCLES + (ROWS_RQ_CYCLES * rows * o["w"] * chans
                                          + ROWS_CH_CYCLES * max(chans, cores)) / cores
        if t.get("dense"):
            req_prev = DENSE_RQ_FORK_CYCLES + DENSE_RQ_CYCLES * -(-rows * o["w"] * chans // cores)
    return int(total + req_prev)


def _rq_units(pix, chans, cores) -> tuple:
    """(units on the busiest core, pixels per unit) of the template's requant_worker: each
    channel in np = ceil(4 cores / chans) chunks of 16+ pixels (at least one), the chans x np
    units split evenly over the cores."""
    n_p = max(1, min(-(-4 * cores // chans), pix // 16))
    return -(-chans * n_p // cores), -(-pix // n_p)


def _rq_core(pix, chans, cores) -> float:
    """The busiest core's cycles requantizing a tile of pix pixels x chans channels."""
    units, n = _rq_units(pix, chans, cores)
    return units * (FEW_CH_CYCLES + FEW_PX_CYCLES * n)


def _few_cycles(i, o, kh, row, m, t, cores) -> int:
    """Under PIPE_MIN_TILES tiles: the template's stride-1 loop, tile by tile (see the docstring)."""
    def req(pix, chans):
        return FEW_FORK_CYCLES + _rq_core(pix, chans, cores)
    now = FEW_LAYER_CYCLES + min(in_rows(o, t["th"], kh), i["h"]) * i["w"] * i["c"] / DMA_BYTES_PER_CYCLE
    ne_end, pending = 0.0, None
    for co in range(t["n_c"]):
        chans = min(t["tc"], o["c"] - co * t["tc"])
        if pending:             # a new channel tile: the last one's requantized, its weights in
            now, pending = max(now, ne_end) + req(*pending), None
        now += chans * row / DMA_BYTES_PER_CYCLE
        for h in range(t["n_h"]):
            rows = min(t["th"], o["h"] - h * t["th"])
            in_bytes = in_rows(o, rows, kh) * o["pw"] * i["c"]
            if co and t["in_bufs"] == 2 and h == 0:
                now += in_bytes / DMA_BYTES_PER_CYCLE
            if t["in_bufs"] == 1:       # the input after NE16 read the last
                now = max(now, ne_end) + in_bytes / DMA_BYTES_PER_CYCLE
            now = max(now + PREP_CYCLES * in_bytes / cores + FEW_TILE_CYCLES, ne_end)
            ne_end = now + _engine(m, rows, o["w"], chans, i["c"], t["kg"], 1)
            if pending:
                now += req(*pending)
            pending = (rows * o["w"], chans)
    return int(max(now, ne_end) + req(*pending))


def ne16_cycles(layer, graph, m, t, cores) -> int:
    """Estimated cycles of the conv on NE16 with tiling t (ne16_layer.plan_tiling)."""
    from .ne16_geometry import geometry as _geometry, jobs, weight_row
    i, o, kh, kw = _geometry(layer, graph)
    row = weight_row(layer, m)
    n_jobs, k_job = jobs(m, kh, kw, i["c"])
    if m == "rows":
        return _rows_cycles(i, o, kh, row, n_jobs, k_job, t, cores)
    if t["n_tiles"] < PIPE_MIN_TILES and t["n_g"] == 1:
        return _few_cycles(i, o, kh, row, m, t, cores)
    if t["n_tiles"] < PIPE_MIN_TILES:
        tile_cycles, pipelined = TILE_CYCLES, False
    else:
        tile_cycles, pipelined = PIPE_TILE_CYCLES, True
    total, req_prev = 0.0, 0.0
    for co in range(t["n_c"]):
        chans = min(t["tc"], o["c"] - co * t["tc"])
        for h in range(t["n_h"]):
            rows = min(t["th"], o["h"] - h * t["th"])
            in_bytes = in_rows(o, rows, kh) * o["pw"] * i["c"]
            prep = 0 if t.get("resident") and (co or h) else PREP_CYCLES * in_bytes / cores
            engine = _engine(m, rows, o["w"], chans, i["c"], t["kg"], t["n_g"])
            if t["n_g"] > 1:        # the first group's weights before the engine, the others behind it
                w_wait = chans * t["w_grp"] / DMA_BYTES_PER_CYCLE
            else:                   # a channel tile's weights before its first row tile
                w_wait = chans * row / DMA_BYTES_PER_CYCLE if h == 0 else 0
            req = _rq_core(rows * o["w"], chans, cores)
            if not pipelined:       # few tiles: prep, NE16, requantization summed (as fitted)
                total += tile_cycles + w_wait + prep + engine + req
                continue
            serial = tile_cycles + w_wait
            if t["in_bufs"] == 1 and not t.get("resident"):     # the input after NE16 read the last
                serial += prep + in_bytes / DMA_BYTES_PER_CYCLE
                prep = 0.0
            total += serial + max(engine, req_prev + prep)
            req_prev = req
    first = min(in_rows(o, t["th"], kh), i["h"]) * i["w"] * i["c"] / DMA_BYTES_PER_CYCLE
    return int(total + req_prev + first)


def cluster_cycles(layer, graph, til, cores, xpulp) -> int:
    """Estimated cycles of the conv on the cluster's kernels with their tiling til."""
    from . import conv_paths, ops, tiling
    if xpulp and conv_paths.pointwise(layer, graph, xpulp):
        outs = int(np.prod(graph.tensor(layer.output).shape))
        macs = outs * int(np.prod(layer.weight.shape[1:]))
        return int((PW_MAC_CYCLES * macs + PW_OUT_CYCLES * outs) * 9 / cores + PW_LAYER_CYCLES)
    g = ops.window(layer, graph, cores, xpulp)
    if not getattr(g, "kernel", "") or til is None:
        return int(np.prod(graph.tensor(layer.output).shape) * np.prod(layer.weight.shape[1:])
                   / PLAIN_MACS_PER_CYCLE)
    one = np.zeros(1, np.int64)
    est = tiling._xp_cycles(g, np.array([til.th]), np.array([til.tw]), np.array([til.tc]), one, one, one,
                            np.array([til.l1_in]), np.array([til.l1_params]),
                            np.array([til.n_h * til.n_w == 1]))
    scale = LOW_IC_SCALE if g.c < 4 else POINTWISE_SCALE if g.kh * g.kw == 1 else CLUSTER_SCALE
    return int(float(np.asarray(est).reshape(-1)[0]) * scale)


def choose(layer, graph, m, t, til, cores, xpulp) -> tuple:
    """(on NE16?, {why}): the estimates and the verdict, for report.json and the console."""
    ne = ne16_cycles(layer, graph, m, t, cores)
    cl = cluster_cycles(layer, graph, til, cores, xpulp)
    on = ne < MARGIN * cl
    return on, {"ne16_estimate": ne, "cluster_estimate": cl,
                "why": f"estimate NE16 {ne:,} {'<' if on else '>='} cluster {cl:,} cycles"}
