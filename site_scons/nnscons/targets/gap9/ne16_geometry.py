"""NE16 layer geometry shared by the layer planner (ne16_layer) and its cost model (ne16_cost):
the bytes of a channel's packed weights, the padded input tile and the jobs of a tile."""
from __future__ import annotations

from . import ne16_weights


def stacked(m, ic) -> bool:
    """"rows" mode under 16 input channels (the 7x7/2 stem on 3): the cores stack the kh input
    rows of each output row into one row of kh * ic channels per pixel, so one 1x1 job of
    kw * kh * ic channels (the stem: 147, 10 of NE16's 16-channel groups) replaces kh jobs
    of kw * ic (7 jobs of 21 channels, 2 groups each: 14 groups and 6 streamins)."""
    return m == "rows" and ic < 16


def weight_row(layer, m) -> int:
    """Bytes of one output channel's NE16 weights ("rows": kh 1x1 rows of kw * ic channels,
    or stacked one of kw * kh * ic)."""
    ic, kh, kw = int(layer.weight.shape[1]), int(layer.weight.shape[2]), int(layer.weight.shape[3])
    n_jobs, k_job = jobs(m, kh, kw, ic)
    if m == "rows":
        return n_jobs * ne16_weights.packed_size("1x1", k_job, 1)
    return ne16_weights.packed_size(m, ic, 1)


def geometry(layer, graph):
    """(input, output, kh, kw); the output dict also holds the stride s and the padded tile's
    width pw = (ow - 1) * s + kw (NE16 computes the outputs themselves: 3x3 and 1x1 at
    stride 1, "rows" at any stride through its input strides)."""
    from .ops import hwc
    i, o = hwc(graph.tensor(layer.inputs[0]).shape), hwc(graph.tensor(layer.output).shape)
    kh, kw = layer.attrs["kernel"]
    o["s"] = int(layer.attrs["stride"][0])
    o["pw"] = (o["w"] - 1) * o["s"] + kw
    return i, o, kh, kw


def in_rows(o, th, kh) -> int:
    """Padded input rows of a tile of th output rows."""
    return (th - 1) * o["s"] + kh


def jobs(m, kh, kw, ic) -> tuple:
    """(jobs per tile, input channels per job): "rows" runs one 1x1 job per kernel row over
    kw * ic contiguous bytes per output pixel, the others one job over ic."""
    if stacked(m, ic):
        return 1, kw * kh * ic
    return (kh, kw * ic) if m == "rows" else (1, ic)


def stack_bytes(o, th, kh, ic) -> int:
    """L1 bytes of a tile's stacked rows (stacked()): th rows x pw pixels x kh * ic."""
    return th * o["pw"] * kh * ic


def dense(m, kh, kw, stride, pads, ic) -> bool:
    """"rows" mode 1x1 at stride > 1 without pads (ResNet's downsamples), ic a multiple of 4: the
    DMA brings only the pixels the conv reads (every s-th of every s-th row) into a dense tile,
    the cores flip only those, and NE16 runs one 1x1 job on the tile's pixels laid out as 3 rows
    of dense_cols (a 1x1 conv does not care where a pixel sits): its 3x3-pixel subtiles all
    filled (a 7x7 tile: 6 subtiles, not 9; 2 rows of 28: 7, not 10)."""
    return m == "rows" and kh == 1 and kw == 1 and stride > 1 and not any(pads) and ic % 4 == 0


def dense_cols(n_pix) -> int:
    """Columns of a dense tile's 3 rows (dense())."""
    return -(-n_pix // 3)


def dense_slots(n_pix) -> int:
    """Pixels of L1 a dense tile's input and accumulators take: its 3 x dense_cols and 3 more
    (NE16's last 3x3 subtile may reach past the row's end)."""
    return 3 * dense_cols(n_pix) + 3


def dense_rows(m, kh, stride, ic) -> bool:
    """"rows" mode with kernel rows (3x3/2) and ic a multiple of 4, not stacked: may run on
    dense kernel-row tiles (dr_slots): kernel row dy's "pixel" (r, c), the kw * ic bytes at
    padded row s r + dy, columns s c .., gathered by the DMA into buffer dy % s, row r + dy // s,
    so every output pixel of a tile is one NE16 pixel of a job laid out as 3 rows of
    dense_cols (14x14 outputs: 22 3x3 subtiles, not 25; 7x7: 6, not 9). Buffer q holds the
    padded rows s j + q: the kernel rows dy = q, q + s, .. of consecutive output rows share
    it (dy's job starts dy // s buffer rows in)."""
    return m == "rows" and kh > 1 and stride > 1 and ic % 4 == 0 and not stacked(m, ic)


def dr_rows(o, th, kh) -> list:
    """Rows of each dense kernel-row buffer q = 0 .. min(s, kh) - 1 for th output rows."""
    s = o["s"]
    return [th + (kh - 1 - q) // s for q in range(min(s, kh))]


def dr_slots(o, th, kh) -> list:
    """Pixels (kw * ic bytes each) of each buffer: its rows and NE16's margin past the last
    job's 3 x dense_cols (dense_slots)."""
    return [max(n * o["w"], (n - th) * o["w"] + dense_slots(th * o["w"])) for n in dr_rows(o, th, kh)]


def taps(m, kh, kw, stride, ic) -> bool:
    """dense_rows with ic a multiple of NE16's 16 and kw 3: the tile may run 1x1 jobs over one or
    two kernel taps (tap_jobs) instead of one per kernel row, each over the bytes of its window at
    dx * ic (the windows' 16-channel groups split at dx: the job's weights are the bytes dx * ic ..
    of the kernel row's), so a job's weights are tc x ic or tc x 2 ic bytes and stream in per job.
    Buffer 0 holds the first two jobs (each kernel row has two): the template prepares the input
    for those two before the other buffers' DMA goes out."""
    return dense_rows(m, kh, stride, ic) and ic % 16 == 0 and kw == 3


def tap_jobs(kh, stride) -> list:
    """A tap tile's jobs (dy, dx, taps) in run order: per kernel row the single tap dx 2, then the pair
    dx 0, 1 (their 2 ic bytes are contiguous in each window: one job of 2 ic input channels, one
    streamin and streamout of the sums fewer than two jobs), buffer 0's rows (dy = 0, s, ..) first.
    Singles and pairs alternate, so the template keeps singles' weights in one tc x ic buffer and
    pairs' in a 2 tc x ic region that overlaps the accumulator buffer free at the time."""
    return [j for q in range(min(stride, kh)) for dy in range(q, kh, stride) for j in ((dy, 2, 1), (dy, 0, 2))]


def taps_slots(o, kh) -> list:
    """Pixels of each dense kernel-row buffer of a whole-map tap tile: its rows, no margin (NE16's
    reads past a buffer's last pixel only feed the 3 x dense_cols slots past the map's outputs,
    which nobody requantizes: they land in the next buffer or the accumulators)."""
    return [n * o["w"] for n in dr_rows(o, o["h"], kh)]
