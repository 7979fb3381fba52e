"""The host's depthwise kernels (kernels/host/nn_simd.c, nn_dw_vnni.c) seen from the build:
the weights .bin's sections and the tables each vector kernel reads (packed here once, so
a call prepares nothing), which kernels a layer may run, and the planner's int32 check."""
from __future__ import annotations

import math

import numpy as np

from ... import ops as registry


def pack_depthwise(layer, graph, layout) -> bytes:
    """Depthwise conv weights [k_h*k_w][channels] (channels contiguous for the vector
    kernel); bias, mult, shift as usual."""
    from ..base import layout_bytes, param_arrays
    c, _, kh, kw = layer.weight.shape
    arrays = dict(param_arrays(layer, graph))
    arrays["weight"] = np.ascontiguousarray(layer.weight.reshape(c, kh * kw).T)
    sections = {section for section, *_ in layout}
    bias = None if layer.bias is None else arrays["bias"]
    if "vnni" in sections:
        arrays["vnni"] = dw_vnni_tables(layer.weight, bias, arrays["mult"], arrays["shift"],
                                        graph.tensor(layer.inputs[0]).q.zero_point, _dw_geometry(layer, graph))
    if "avx2dw" in sections:
        arrays["avx2dw"] = dw_avx2_tables(layer.weight, bias, arrays["mult"], arrays["shift"])
    blob = bytearray(layout_bytes(layout))
    for section, dtype, count, offset in layout:
        raw = np.ascontiguousarray(arrays[section], dtype=np.dtype(dtype).newbyteorder("<")).reshape(-1)
        assert raw.size == count, (section, raw.size, count)
        blob[offset:offset + raw.nbytes] = raw.tobytes()
    return bytes(blob)


def dw_vnni_geometry(c: int, out_w: int, kernel, stride, dilation) -> dict:
    """The VNNI depthwise kernel's sizes (kernels/host/nn_dw_vnni.c, geometry(): the same
    formulas; the kernel checks it is given enough scratch): `bytes` of scratch (a padded u8
    input row, a ring of quad rows), and its tables: a 64-byte header, the weights as
    [k_h][quads][lanes] dwords, bias and multipliers, tiled to lcm(c, 16) lanes."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    nq, nr = (kw + 3) // 4, (kh - 1) * dh + 1
    pw = (out_w - 1) * sw + (4 * nq - 1) * dw + 1
    lanes = c // math.gcd(c, 16) * 16
    qs = (out_w * c + 15) // 16 * 16 + 16
    w_at = 64
    b_at = w_at + kh * nq * lanes * 4
    m_at = b_at + lanes * 4
    return {"bytes": -(-(pw * c + 64) // 64) * 64 + nr * nq * qs * 4 + 64, "nq": nq, "lanes": lanes,
            "w_at": w_at, "b_at": b_at, "m_at": m_at, "table_bytes": m_at + lanes * 8}


def _dw_geometry(layer, graph) -> dict:
    a = layer.attrs
    c, _, kh, kw = layer.weight.shape
    return dw_vnni_geometry(int(c), int(graph.tensor(layer.output).shape[3]), (kh, kw),
                            tuple(a["stride"]), tuple(a["dilation"]))


def dw_tables_layout(layer, graph, layout) -> list:
    """The depthwise layer's sections plus the VNNI and AVX2 kernels' tables (`vnni`,
    `avx2dw`, 64-byte aligned in the .bin), sized from shapes only like the others."""
    end = max(off + count * np.dtype(dt).itemsize for _s, dt, count, off in layout)
    at = -(-end // 64) * 64
    vnni = _dw_geometry(layer, graph)["table_bytes"]
    c, _, kh, kw = layer.weight.shape
    return layout + [("vnni", "uint8", vnni, at),
                     ("avx2dw", "uint8", dw_avx2_geometry(int(c), kh, kw)["table_bytes"], -(-(at + vnni) // 64) * 64)]


def dw_vnni_tables(weight, bias, mult, shift, zp_in: int, geo: dict) -> np.ndarray:
    """The tables nn_dwconv_vnni reads (nn_dwconv_vnni_pack's bytes; weight [c, 1, kh, kw],
    per-channel bias/mult/shift, geo from dw_vnni_geometry): per lane j (channel j % c) the
    k_w taps of each kernel row in groups of four as dwords (0 past k_w), the bias less
    (128 + zp_in) * sum(w) (the kernel's u8 activations are x + 128), wrapping as its int32
    accumulator does, and mult / 2**shift; the header's first byte 1 when every shift is in
    [11, 62] (the fma epilogue's range), else 0 (the kernel declines)."""
    c, _, kh, kw = weight.shape
    nq, lanes = geo["nq"], geo["lanes"]
    out = np.zeros(geo["table_bytes"], np.uint8)
    shift = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), (c,))
    if shift.min() < 11 or shift.max() > 62:
        return out
    mult = np.broadcast_to(np.asarray(mult, np.int64).reshape(-1), (c,))
    ch = np.arange(lanes) % c
    w = np.zeros((c, kh, 4 * nq), np.int8)
    w[:, :, :kw] = weight.reshape(c, kh, kw)
    words = w[ch].reshape(lanes, kh, nq, 4).transpose(1, 2, 0, 3)      # [kh][nq][lanes][4]
    bias = np.zeros(c, np.int64) if bias is None else np.asarray(bias, np.int64).reshape(-1)
    folded = (bias - (128 + int(zp_in)) * weight.reshape(c, -1).astype(np.int64).sum(1))[ch]
    out[0] = 1
    out[geo["w_at"]:geo["b_at"]] = np.ascontiguousarray(words).view(np.uint8).reshape(-1)
    out[geo["b_at"]:geo["m_at"]] = ((folded + 2 ** 31) % 2 ** 32 - 2 ** 31).astype("<i4").view(np.uint8)
    out[geo["m_at"]:] = (mult[ch].astype(np.float64) / np.exp2(shift[ch].astype(np.float64))).astype("<f8").view(np.uint8)
    return out


def dw_variants(layer, graph, isa_code: int) -> list:
    """The depthwise kernels nn_dwconv_band_fast may run, in its order (the first this CPU
    runs is the one): the VNNI kernel under isa auto or avx512vnni when every shift is in its
    range (dw_vnni_tables), AVX2 unless portable is forced, the portable kernel.  isa codes:
    0 auto, 1 portable, 2 avx2, 3 avx512vnni, 4 auto without VNNI (kernels/host/nn_simd.h)."""
    shift = np.asarray(registry.requant_params(layer, graph)["shift"], np.int64)
    vnni = isa_code in (0, 3) and shift.min() >= 11 and shift.max() <= 62
    return (["avx512vnni"] if vnni else []) + (["avx2"] if isa_code != 1 else []) + ["portable"]


def depthwise_vector_safe(layer) -> bool:
    """The vector depthwise epilogue adds bias in int32: |acc + bias| < 2**31."""
    bias = 0 if layer.bias is None else int(np.abs(np.asarray(layer.bias, np.int64)).max(initial=0))
    return bias + 255 * 128 * int(np.prod(layer.weight.shape[1:])) < 2 ** 31


def dw_avx2_geometry(c: int, kh: int, kw: int) -> dict:
    """The AVX2 depthwise kernel's tables (kernels/host/nn_simd.c, a2_geometry: the same
    formulas): a 64-byte header, the weights as [lanes/16][tap pairs][32] int16, the bias
    (int32) and mult / 2**shift (double) per lane, lcm(c, 16) lanes."""
    pairs, lanes = (kh * kw + 1) // 2, c // math.gcd(c, 16) * 16
    w_at = 64
    b_at = w_at + lanes // 16 * pairs * 64
    m_at = b_at + lanes * 4
    return {"pairs": pairs, "lanes": lanes, "w_at": w_at, "b_at": b_at, "m_at": m_at, "table_bytes": m_at + lanes * 8}


# lane of each of a chunk's 16 int16 slot pairs: unpacklo_epi16 pairs lanes 0-3 and 8-11 of
# two tap vectors, unpackhi_epi16 lanes 4-7 and 12-15
_A2_SLOTS = np.array([0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15])


def dw_avx2_tables(weight, bias, mult, shift) -> np.ndarray:
    """The tables nn_dwconv_band_fast's AVX2 path reads (weight [c, 1, kh, kw], per-channel
    bias/mult/shift): lane j is channel j % c; the taps in pairs (an odd count's last partner
    0) as vpmaddwd multiplies them with the zero-point-free int16 input; the header's first
    byte 1 only when the double epilogue is exact for every channel and input: shift >= 0
    (not TFLite's rules) and (|bias| + 255 * sum|w|) * |mult| < 2**53 with |bias| + 255 *
    sum|w| < 2**31 (then the kernel runs; else it takes its other path); the second byte 1
    when the fma epilogue is too: that bound times mult / 2**shift < 2**51."""
    c, _, kh, kw = weight.shape
    geo = dw_avx2_geometry(int(c), kh, kw)
    out = np.zeros(geo["table_bytes"], np.uint8)
    w = np.asarray(weight, np.int64).reshape(c, kh * kw)
    shift = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), (c,))
    mult = np.broadcast_to(np.asarray(mult, np.int64).reshape(-1), (c,))
    b = np.zeros(c, np.int64) if bias is None else np.asarray(bias, np.int64).reshape(-1)
    bound = np.abs(b) + 255 * np.abs(w).sum(1)
    if shift.min() < 0 or shift.max() > 62 or bound.max() >= 2 ** 31 or \
            any(int(x) * abs(int(m)) >= 2 ** 53 for x, m in zip(bound, mult)):
        return out
    pairs, lanes = geo["pairs"], geo["lanes"]
    ch = np.arange(lanes) % c
    taps = np.zeros((c, 2 * pairs), np.int16)
    taps[:, :kh * kw] = w
    slots = taps[ch].reshape(lanes // 16, 16, pairs, 2)[:, _A2_SLOTS]       # [chunk][slot][pair][2]
    out[0] = 1
    # the fma epilogue (a2_requant16_fma): v * mult / 2**shift + 1.5 * 2**52 keeps ulp 1
    out[1] = int(all(int(x) * abs(int(m)) < 2 ** (51 + int(s)) for x, m, s in zip(bound, mult, shift)))
    out[geo["w_at"]:geo["b_at"]] = np.ascontiguousarray(slots.transpose(0, 2, 1, 3)).astype("<i2").view(np.uint8).reshape(-1)
    out[geo["b_at"]:geo["m_at"]] = b[ch].astype("<i4").view(np.uint8)
    out[geo["m_at"]:] = (mult[ch].astype(np.float64) / np.exp2(shift[ch].astype(np.float64))).astype("<f8").view(np.uint8)
    return out
