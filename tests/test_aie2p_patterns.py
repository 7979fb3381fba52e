"""The DMA patterns: hardware limits, and the emulator moving data exactly as an im2col matmul
needs it (checked against a direct NumPy convolution, with a Python kernel)."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from nnscons.targets.aie2p import emulator, layerplan as plan, patterns as P


@pytest.mark.parametrize("tile,dims,msg", [
    ("core", [[2, 64], [2, 32], [2, 16], [8, 1]], "at most 3"),
    ("shim", [[2, 64], [2, 32], [2, 16], [8, 1]], "at most 3"),
    ("memtile", [[2, 256], [2, 64], [2, 32], [2, 16], [8, 1]], "at most 4"),
    ("memtile", [[4, 16], [8, 2]], "innermost stride 2"),
    ("memtile", [[4, 16], [6, 1]], "whole number of 32-bit words"),
    ("memtile", [[1024, 16], [8, 1]], "10-bit wrap"),
    ("core", [[2, 6], [4, 1]], "multiple of 4 bytes"),
    ("core", [[2, 4 * 8192 + 4], [4, 1]], "step field"),
    ("memtile", [[16, 64], [8, 1]], "past the end"),
])
def test_patterns_the_hardware_cannot_run_are_rejected(tile, dims, msg):
    with pytest.raises(P.PatternError, match=msg):
        P.check(tile, dims, 1 << 20 if "past" not in msg else 512, "t")


def test_linear_transfers_and_repeats():
    P.check("shim", [[3211264, 1]], 3211264, "t", repeat=64)            # one linear BD
    with pytest.raises(P.PatternError, match="repeat count 65"):
        P.check("shim", [[1024, 1]], 1024, "t", repeat=65)
    assert P.fit([[64, 73728], [64, 1152], [16, 1]]) == [[64, 73728], [64, 1152], [16, 1]]
    assert P.fit([[64, 50176], [14, 3584], [3584, 1]]) == [[3211264, 1]]
    assert P.fit([[10, 16384], [8192, 1]]) == [[10, 16384], [4, 2048], [2048, 1]]


GEOMS = [
    dict(H=9, W=10, C=8, OH=7, OW=8, O=16, kh=3, kw=3, sh=1, sw=1),      # 3x3
    dict(H=5, W=8, C=16, OH=5, OW=8, O=32, kh=1, kw=1, sh=1, sw=1),      # 1x1
    dict(H=28, W=56, C=4, OH=2, OW=4, O=32, kh=14, kw=14, sh=14, sw=14),  # patch
    dict(H=1, W=1, C=40, OH=1, OW=1, O=16, kh=1, kw=1, sh=1, sw=1),      # linear
]


def _python_kernel(T, K, Cc):
    """The kernel contract of nn_aie_gemm.h without requantization: int32 sums as bytes."""
    def calls(a, w):
        blocks = w.reshape(Cc // 8, -1)[:, :8 * K].reshape(Cc // 8, K, 8).astype(np.int64)
        x = a.reshape(-1, K // 8, T, 8).transpose(0, 2, 1, 3).reshape(-1, T, K).astype(np.int64)
        acc = np.einsum("ntk,bkc->nbtc", x, blocks)            # {C/8}{T}{C8}
        return (acc & 0xFF).astype(np.uint8).reshape(a.shape[0], -1)
    return calls


@pytest.mark.parametrize("g", GEOMS)
@pytest.mark.parametrize("cores,cols", [(1, 1), (2, 1), (1, 2)])
def test_emulated_dma_feeds_the_kernel_an_exact_im2col(g, cores, cols):
    rng = np.random.default_rng(0)
    req = dict(tiles_per_call=4 if g["OW"] > 1 else 1, channels_per_call=8, cores=cores,
               columns=cols, variant="scalar")
    t = plan.resolve_tiling(g, req, lambda k: k)
    dma = plan.dma_plan(g, t)
    K = g["kh"] * g["kw"] * g["C"]
    x = rng.integers(0, 8, (g["H"], g["W"], g["C"]), dtype=np.uint8)
    wmat = rng.integers(-4, 5, (g["O"], K)).astype(np.int64)
    blob = bytearray()
    for cb in range(g["O"] // 8):
        blob += wmat[cb * 8:cb * 8 + 8].T.astype(np.int8).tobytes() + bytes(96)
    out = emulator.run_layer(dma, x.reshape(-1), np.frombuffer(bytes(blob), np.uint8),
                             _python_kernel(t["T"], K, t["Cc"]), "t")
    win = np.lib.stride_tricks.sliding_window_view(x, (g["kh"], g["kw"], g["C"]))[::g["sh"], ::g["sw"], 0]
    ref = win[:g["OH"], :g["OW"]].reshape(g["OH"] * g["OW"], K).astype(np.int64) @ wmat.T
    assert np.array_equal(out, (ref & 0xFF).astype(np.uint8).reshape(-1))


def test_the_emulator_rejects_tampered_patterns():
    g = GEOMS[0]
    t = plan.resolve_tiling(g, dict(tiles_per_call=8, channels_per_call=8, cores=1, columns=1,
                                    variant="scalar"), lambda k: k)
    dma = plan.dma_plan(g, t)
    x, w = np.zeros(9 * 10 * 8, np.uint8), np.zeros(dma["buffers"]["w"], np.uint8)
    kernel = _python_kernel(t["T"], 72, 8)
    emulator.run_layer(dma, x, w, kernel, "ok")
    bad = copy.deepcopy(dma)
    bad["act_l1"]["mm2s"] = [[2, 80], [8, 8], [3, 80], [3, 8], [8, 1]]   # 5 dims on a memtile
    with pytest.raises(P.PatternError, match="at most 4"):
        emulator.run_layer(bad, x, w, kernel, "t")
    bad = copy.deepcopy(dma)
    bad["act_l1"]["s2mm"] = [[8, 0], [9, 64], [8, 1]]                      # double writes
    with pytest.raises(P.PatternError, match="exactly once"):
        emulator.run_layer(bad, x, w, kernel, "t")
    bad = copy.deepcopy(dma)
    bad["tasks"][0]["out"][0]["repeat_stride"] = 0                         # overwrites, leaves holes
    with pytest.raises(P.PatternError):
        emulator.run_layer(bad, x, w, kernel, "t")
