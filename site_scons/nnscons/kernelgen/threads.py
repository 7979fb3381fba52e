"""How a generated layer's threads share it (README "threads"): output rows, output channel
panels, or both.

The layer's T threads take T cells of a grid of `rows` x `panels` = T: each cell is a range
of output rows (cut into bands no taller than the layer's band, so each fits the band
buffer) and a share of the channel panels.  A thread fills its own band buffer, so a split by
panels fills each band once per thread: cheap where pixels are few and channels many
(ResNet-18's layer4, 7x7 pixels, 512 channels, 2.4 MB of weights that each thread then
reads half of), and the way to share a layer whose rows do not divide (7 rows over 2
threads is 4 against 3: the slower thread does 14% more than half).  One hand-over per layer
(nn_parallel_for once), whatever the split.  The choice is a model: the largest cell's
padded microkernel work (pixel blocks x panels x K) plus its band fills, per grid; ties go
to rows (fewer fills).  A layer on one thread keeps the plain band loop.
"""
from __future__ import annotations

from .geometry import padded
from .packing import panels

# a band buffer element filled (widened or flipped, padded) costs about as long as this
# many multiply-adds in the microkernels (the split model's exchange rate)
FILL_MACS = 16


def _even_bands(r0: int, r1: int, band: int) -> list:
    """[(oh0, rows)] covering output rows [r0, r1) in as few bands of at most `band` rows as
    possible, their heights within one of each other."""
    n = -(-(r1 - r0) // band)
    return [(r0 + (r1 - r0) * k // n, (r1 - r0) * (k + 1) // n - (r1 - r0) * k // n) for k in range(n)]


def thread_split(gm: dict) -> dict:
    """{"rows": row groups, "panels": panel groups, "cells": [[(oh0, rows), ...] per cell]} of a
    layer's host spec (spec["gemm"]); cell c takes panel share c % panels of its rows."""
    g, threads, band, oh = gm["geom"], gm["threads"], gm["band"], gm["geom"]["oh"]
    if threads <= 1:
        return {"rows": 1, "panels": 1, "cells": [[(o, min(band, oh - o)) for o in range(0, oh, band)]]}
    # the blocking of the variant this CPU is likeliest to run (the first in dispatch order)
    blk = (gm.get("u8") or {}).get(gm["variants"][0], gm["blocking"])
    mr, nr = blk["mr"], blk["nr"]
    p = padded(g)
    npan, k = panels(g["oc"], nr), g["kh"] * g["kw"] * g["ic"]

    def fill(rows):
        return FILL_MACS * ((rows - 1) * g["sh"] + (g["kh"] - 1) * g["dh"] + 1) * p["wp"] * p["icp"]

    best = None
    for tn in [d for d in range(1, threads + 1) if threads % d == 0]:
        tm = threads // tn
        cells, cost = [], 0
        for ri in range(tm):
            r0, r1 = oh * ri // tm, oh * (ri + 1) // tm
            bands = _even_bands(r0, r1, band) if r1 > r0 else []
            for pj in range(tn):
                share = npan * (pj + 1) // tn - npan * pj // tn
                cost = max(cost, sum(-(-r * g["ow"] // mr) * mr * share * nr * k + fill(r) for _, r in bands))
                cells.append(bands)
        if best is None or cost < best[0]:
            best = (cost, {"rows": tm, "panels": tn, "cells": cells})
    return best[1]


def band_heights(split: dict) -> list:
    """Every band height the split runs (the microkernels' M edges come from these)."""
    return sorted({r for cell in split["cells"] for _, r in cell})


def part_source(split: dict, g: dict, sc: dict, u8: bool) -> list:
    """The C of part(arg, i, n): thread i of n runs cells i, i + n, ... of the split, each
    band filled into thread i's own buffer (sc: kernelgen.scratch), then its pixel blocks x
    its panel share."""
    cells = split["cells"]
    bands = [b for cell in cells for b in cell]
    at = [0]
    for cell in cells:
        at.append(at[-1] + len(cell))
    L = [f"/* the threads' split: {split['rows']} row group(s) x {split['panels']} panel group(s); cell c: bands "
         f"[cell_at[c], cell_at[c + 1]) and panel share c % {split['panels']} */",
         f"static const int band_oh0[{len(bands) or 1}] = {{ {', '.join(str(o) for o, _ in bands) or '0'} }};",
         f"static const int band_rows[{len(bands) or 1}] = {{ {', '.join(str(r) for _, r in bands) or '0'} }};",
         f"static const int cell_at[{len(at)}] = {{ {', '.join(str(a) for a in at)} }};",
         "",
         "/* thread i of n: cells i, i + n, ... in its own band buffer */",
         "static void part(void *arg, int i, int n)",
         "{",
         "    ctx_t t = *(const ctx_t *)arg;"]
    if len(cells) > 1:
        L.append(f"    t.buf = (int16_t *)(void *)((uint8_t *)(void *)t.buf + (long)i * {sc['buf_stride']});")
        if u8:
            L.append(f"    t.bufu8 += (long)i * {sc['bufu8_stride']};")
    L += [f"    for (int cell = i; cell < {len(cells)}; cell += n) {{",
          f"        t.pq = cell % {split['panels']};",
          f"        t.pt = {split['panels']};",
          "        for (int k = cell_at[cell]; k < cell_at[cell + 1]; ++k) {",
          "            t.oh0 = band_oh0[k];",
          "            t.rows = band_rows[k];",
          "            prep(&t);",
          f"            run(&t, 0, (t.rows * {g['ow']} + t.mr - 1) / t.mr);",
          "        }",
          "    }",
          "}"]
    return L
