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


# ---- padding: DDR staging, border classes, the per-class bias correction

from types import SimpleNamespace  # noqa: E402

from nnscons.targets.aie2p import mapping, pack, runner  # noqa: E402


def _geom(H, W, C, O, kh, kw, s, pads):
    pt, pl, pb, pr = pads
    g = dict(H=H, W=W, C=C, O=O, kh=kh, kw=kw, sh=s, sw=s, pt=pt, pl=pl, pb=pb, pr=pr,
             OH=(H + pt + pb - kh) // s + 1, OW=(W + pl + pr - kw) // s + 1)
    g["Hp"], g["Wp"] = H + pt + pb, W + pl + pr
    g["Cp"] = mapping._staged_channels(C, kw, g["Wp"])
    g["Op"] = -(-O // 8) * 8
    g["ncls"] = mapping.classes(g)["n"]
    return g


def test_border_classes():
    assert mapping.border_classes(10, 10, 3, 1, 1) == ([0] + [1] * 8 + [2], [(1, 3), (0, 3), (0, 2)])
    # stride 2 on an even size: the last window ends inside, two classes
    assert mapping.border_classes(8, 4, 3, 2, 1) == ([0, 1, 1, 1], [(1, 3), (0, 3)])
    assert mapping.border_classes(7, 7, 1, 1, 0) == ([0] * 7, [(0, 1)])          # 1x1: one class
    assert mapping.border_classes(5, 5, 5, 1, 2)[1] == [(2, 5), (1, 5), (0, 5), (0, 4), (0, 3)]
    assert _geom(9, 9, 8, 8, 3, 3, 1, (1, 1, 1, 1))["ncls"] == 9
    assert _geom(9, 9, 8, 8, 3, 3, 2, (1, 1, 1, 1))["ncls"] == 9    # the last window hangs out
    assert _geom(8, 8, 8, 8, 3, 3, 2, (1, 1, 1, 1))["ncls"] == 4    # (1,3),(0,3) per axis


PAD_GEOMS = [
    (9, 10, 8, 16, 3, 3, 1, (1, 1, 1, 1)),       # 3x3 pad 1
    (9, 10, 8, 16, 3, 3, 2, (1, 1, 1, 1)),       # 3x3 pad 1 stride 2
    (7, 6, 3, 8, 3, 3, 1, (1, 1, 1, 1)),         # 3 channels staged to 8
    (6, 7, 4, 8, 3, 2, 1, (0, 1, 2, 1)),         # asymmetric
    (5, 8, 16, 24, 1, 1, 1, (0, 0, 0, 0)),       # 1x1
]


def _direct_conv(x, w, bias, zp, g):
    """The reference's definition: out = bias + sum over the window of (x - zp) * w, where
    padded taps hold zp (so contribute 0)."""
    H, W, C = x.shape
    xp = np.full((g["Hp"], g["Wp"], C), zp, np.int64)
    xp[g["pt"]:g["pt"] + H, g["pl"]:g["pl"] + W] = x
    win = np.lib.stride_tricks.sliding_window_view(xp - zp, (g["kh"], g["kw"], C))[::g["sh"], ::g["sw"], 0]
    win = win[:g["OH"], :g["OW"]].reshape(g["OH"], g["OW"], -1)
    return win @ w.reshape(w.shape[0], -1).T + bias


@pytest.mark.parametrize("geo", PAD_GEOMS)
def test_padded_conv_staging_emulator_and_correction_table(geo):
    """DDR staging (runner.stage) + emulated DMAs give the zero-padded im2col sum; adding the
    packed bias' of each pixel's border class gives exactly the zero-point-padded conv."""
    g = _geom(*geo)
    rng = np.random.default_rng(1)
    zp = -37
    x = rng.integers(-128, 128, (g["H"], g["W"], g["C"])).astype(np.int64)
    w4 = rng.integers(-128, 128, (g["O"], g["kh"], g["kw"], g["C"])).astype(np.int64)
    bias = rng.integers(-5000, 5000, g["O"]).astype(np.int64)
    layer = SimpleNamespace(weight=w4.transpose(0, 3, 1, 2), bias=bias, inputs=["x"], name="l")
    graph = SimpleNamespace(tensor=lambda n: SimpleNamespace(q=SimpleNamespace(zero_point=zp)),
                            producer=lambda n: None)
    tables = pack.class_biases(layer, graph, "int8", g)
    cls = mapping.classes(g)
    assert tables.shape == (cls["n"], g["O"])
    # the kernel's sum over the zero-padded window, through the staged DDR buffer and the DMAs
    t = plan.resolve_tiling(g, dict(tiles_per_call=4, channels_per_call=8, cores=1, columns=1,
                                    variant="scalar"), lambda k: k)
    dma = plan.dma_plan(g, t)
    K = g["kh"] * g["kw"] * g["Cp"]
    wk = np.zeros((g["Op"], g["kh"], g["kw"], g["Cp"]), np.int64)
    wk[:g["O"], :, :, :g["C"]] = w4
    wk = wk.reshape(g["Op"], K)
    blob = bytearray()
    for cb in range(g["Op"] // 8):
        blob += wk[cb * 8:cb * 8 + 8].T.astype(np.int8).tobytes() + bytes(lplan_param(g))
    staged = runner.stage(x.astype(np.int8).view(np.uint8).reshape(-1), dma["stage"])
    assert staged.size == dma["buffers"]["in"]
    out = emulator.run_layer(dma, staged, np.frombuffer(bytes(blob), np.uint8),
                             _python_kernel_signed(t["T"], K, t["Cc"]), "t")
    out = runner.unstage(out, dma["stage"]).view(np.int8).reshape(g["OH"], g["OW"], g["O"])
    xs = np.zeros((g["Hp"], g["Wp"], g["Cp"]), np.int64)
    xs[g["pt"]:g["pt"] + g["H"], g["pl"]:g["pl"] + g["W"], :g["C"]] = x
    win = np.lib.stride_tricks.sliding_window_view(xs, (g["kh"], g["kw"], g["Cp"]))[::g["sh"], ::g["sw"], 0]
    raw = win[:g["OH"], :g["OW"]].reshape(g["OH"], g["OW"], K) @ wk[:g["O"]].T
    assert np.array_equal(out, ((raw + 128) % 256 - 128).astype(np.int8))
    # the correction: raw sum + bias' of the pixel's class == the zero-point-padded conv
    pix_cls = np.array(cls["row"])[:, None] * len(cls["col_spans"]) + np.array(cls["col"])[None, :]
    assert np.array_equal(raw + tables[pix_cls], _direct_conv(x, w4, bias, zp, g))


def lplan_param(g):
    return plan.param_bytes(g["ncls"])


def _python_kernel_signed(T, K, Cc):
    """Like _python_kernel, on int8 activations (the staged bytes are raw int8)."""
    def calls(a, w):
        blocks = w.reshape(Cc // 8, -1)[:, :8 * K].view(np.int8).reshape(Cc // 8, K, 8).astype(np.int64)
        x = a.view(np.int8).reshape(-1, K // 8, T, 8).transpose(0, 2, 1, 3).reshape(-1, T, K).astype(np.int64)
        acc = np.einsum("ntk,bkc->nbtc", x, blocks)
        return (acc & 0xFF).astype(np.uint8).reshape(a.shape[0], -1)
    return calls


def test_the_emulator_rejects_a_staging_the_shim_cannot_read():
    g = _geom(9, 10, 8, 16, 3, 3, 1, (1, 1, 1, 1))
    t = plan.resolve_tiling(g, dict(tiles_per_call=5, channels_per_call=8, cores=1, columns=1,
                                    variant="scalar"), lambda k: k)
    dma = plan.dma_plan(g, t)
    x, w = np.zeros(dma["buffers"]["in"], np.uint8), np.zeros(dma["buffers"]["w"], np.uint8)
    kernel = _python_kernel(t["T"], 72, 8)
    emulator.run_layer(dma, x, w, kernel, "ok")
    bad = copy.deepcopy(dma)
    bad["stage"]["pad"] = [1, 1, 1, 2]                        # says 13 columns, pattern reads 12
    with pytest.raises(P.PatternError, match="is not 11x12x8"):
        emulator.run_layer(bad, x, w, kernel, "t")
    bad = copy.deepcopy(dma)
    bad["stage"].update({"from": [9, 9, 3], "pad": [1, 1, 1, 1], "to": [11, 11, 3]})
    bad["buffers"]["in"] = 11 * 11 * 3                        # 33-byte rows: not whole words
    with pytest.raises(P.PatternError, match="not a whole number of 32-bit words"):
        emulator.run_layer(bad, np.zeros(363, np.uint8), w, kernel, "t")
    bad = copy.deepcopy(dma)
    bad["stage"]["pad"] = [-1, 3, 1, 1]
    with pytest.raises(P.PatternError, match="DDR staging"):
        emulator.run_layer(bad, x, w, kernel, "t")
