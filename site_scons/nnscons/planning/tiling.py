"""Row-band tiling: the largest band of output rows whose input band (with halo)
and output band fit a scratch budget. Used for conv2d and pooling layers."""
from __future__ import annotations


def input_rows(out_rows: int, stride: int, k: int, dil: int) -> int:
    return (out_rows - 1) * stride + (k - 1) * dil + 1


def row_bands(in_c, in_h, in_w, out_c, out_h, out_w, k_h, stride_h, dil_h, budget):
    """Return {'tile_oh', 'n_tiles', 'band_ih', 'l1_in', 'l1_out', 'l1_bytes'} or None if
    even a single output row does not fit `budget` bytes."""
    def need(rows):
        band = min(in_h, input_rows(rows, stride_h, k_h, dil_h))
        return in_c * band * in_w, out_c * rows * out_w

    best = None
    for rows in range(out_h, 0, -1):
        if sum(need(rows)) <= budget:
            best = rows
            break
    if best is None:
        return None
    n_tiles = -(-out_h // best)
    rows = -(-out_h // n_tiles)        # balance the bands: same count, less waste
    l1_in, l1_out = need(rows)
    return {"tile_oh": rows, "n_tiles": n_tiles,
            "band_ih": min(in_h, input_rows(rows, stride_h, k_h, dil_h)),
            "l1_in": l1_in, "l1_out": l1_out, "l1_bytes": l1_in + l1_out}


def min_bytes(in_c, in_h, in_w, out_c, out_w, k_h, stride_h, dil_h) -> int:
    band = min(in_h, input_rows(1, stride_h, k_h, dil_h))
    return in_c * band * in_w + out_c * out_w
