"""Generated BRGEMM microkernels for conv and linear layers (host target).

Per layer, one C source specialised to its exact shapes:

- Conv (groups 1) is a batch-reduce GEMM on HWC activations: M = output pixels,
  N = output channels, K = taps x input channels, reduced tap by tap through pointers to
  the shifted input rows of each output pixel (no im2col copy).  The input is first
  converted once into an int16 buffer padded with the input zero point (and to an even
  channel count, the extra channel 0), so every tap of every pixel is a plain pointer.
  Linear is the same with one pixel and one tap.
- Weights are prepacked at build time (pack_weights) in panels of NR channels,
  [K/2][NR][2] int8, the order the microkernels read; the bias in the weights .bin has
  -zp_in * sum(w) folded in, so accumulators are sum(w * x) over raw x.
- A main microkernel MR x NR, K unrolled by k_unroll, plus edge kernels for M % MR pixels
  and for the last, narrower channel panel; fused epilogue (bias, per-channel
  requantization with round half to even, clamp) while the accumulators are in registers.
- One source holds every ISA variant (isa.ISAS) behind its preprocessor guard; `isa: auto`
  picks one at run time from CPUID, a forced isa calls it directly.

A layer's code depends only on its spec (shapes, zero points, clamps, resolved blocking,
isa, threads), so editing one layer's blocking regenerates that layer only.
"""
from __future__ import annotations

import numpy as np

from dataclasses import replace

from .isa import ISAS, REGISTERS, Micro

ISA_CHOICES = ["auto", "portable", "avx2", "avx2u8", "avx512vnni"]
DEFAULT_NR_CHOICES = (8, 16, 24, 32)


# ---- geometry ------------------------------------------------------------------------

def geometry(layer, graph) -> dict:
    """The GEMM view of a conv (groups 1) or linear layer."""
    ins = graph.tensor(layer.inputs[0]).shape
    out = graph.tensor(layer.output).shape
    if layer.op == "linear":
        k = int(np.prod(ins[1:]))
        return dict(ic=k, ih=1, iw=1, oc=int(out[1]), oh=1, ow=1, kh=1, kw=1, sh=1, sw=1, dh=1, dw=1,
                    pt=0, pl=0, pb=0, pr=0)
    a = layer.attrs
    kh, kw = a["kernel"]
    dh, dw = a.get("dilation", (1, 1))
    pt, pl, pb, pr = a["pads"]
    return dict(ic=int(ins[1]), ih=int(ins[2]), iw=int(ins[3]), oc=int(out[1]), oh=int(out[2]),
                ow=int(out[3]), kh=kh, kw=kw, sh=a["stride"][0], sw=a["stride"][1], dh=dh, dw=dw,
                pt=pt, pl=pl, pb=pb, pr=pr)


def padded(g: dict) -> dict:
    """The int16 buffer and the K structure.  Buffer: rows/cols the windows reach, icp
    channels per pixel.  With column dilation 1 the kw taps of a kernel row are one
    contiguous run of kw*IC values in an HWC row, so a kernel row is one batch-reduce
    segment (kh segments of seg values; an odd run reads one value past its end, times a
    zero weight); otherwise every tap is a segment of IC values, channels padded to even.
    k2: multiply-add pairs per output (K/2)."""
    hp = max(g["ih"] + g["pt"], (g["oh"] - 1) * g["sh"] + (g["kh"] - 1) * g["dh"] + 1)
    wp = max(g["iw"] + g["pl"], (g["ow"] - 1) * g["sw"] + (g["kw"] - 1) * g["dw"] + 1)
    merged = g["dw"] == 1
    if merged:
        icp, run, ntaps = g["ic"], g["kw"] * g["ic"], g["kh"]
    else:
        icp = g["ic"] + (g["ic"] & 1)
        run, ntaps = icp, g["kh"] * g["kw"]
    seg = run + (run & 1)
    return dict(hp=hp, wp=wp, icp=icp, seg=seg, ntaps=ntaps, k2=ntaps * seg // 2, merged=merged)


def tap_offsets(g: dict) -> tuple:
    """Element offset of each segment from a pixel's window origin in the buffer."""
    p = padded(g)
    if p["merged"]:
        return tuple(ky * g["dh"] * p["wp"] * p["icp"] for ky in range(g["kh"]))
    return tuple((ky * g["dh"] * p["wp"] + kx * g["dw"]) * p["icp"]
                 for ky in range(g["kh"]) for kx in range(g["kw"]))


def segments(wm: np.ndarray, g: dict) -> np.ndarray:
    """(N, kh*kw, IC) weights -> (N, segments, run) in the order the kernel reduces."""
    if padded(g)["merged"]:
        return wm.reshape(wm.shape[0], g["kh"], g["kw"] * g["ic"])
    return wm


def supports(layer) -> bool:
    return layer.op == "linear" or (layer.op == "conv2d" and layer.attrs.get("groups", 1) == 1)


# ---- blocking ------------------------------------------------------------------------

# At most this many accumulators: on this host (AMD Zen 1: one vector multiply pipe, each
# 256-bit op two 128-bit halves) the 4x16 microkernel ran at 18.2 GMAC/s in L1 against
# 17.5 for 5x16, 17.1 for 3x16, 17.2 for 6x8, 16.5-17.3 for 2x32, 4x24, 3x24 (K = 576,
# paired runs), and a ResNet-18 inference took 2.6% longer with 5x16 than with 4x16.
MAX_ACCUMULATORS = 8


def candidates(isa: str = "avx2"):
    """(mr, nr) pairs whose accumulators, weight vectors, one broadcast and one product
    temporary fit the register file with one register to spare (gcc spills an accumulator
    of a blocking that uses all 16, e.g. 6x16: measured slower than 5x16), with at most
    MAX_ACCUMULATORS accumulators (measured)."""
    regs = REGISTERS[isa]
    out = []
    for nr in DEFAULT_NR_CHOICES:
        nv = nr // 8
        for mr in range(1, 15):
            if mr * nv + nv + 2 <= regs - 1 and mr * nv <= MAX_ACCUMULATORS:
                out.append((mr, nr))
    return out


def cost(m: int, n: int, k2: int, mr: int, nr: int) -> float:
    """Cycles, roughly: per K pair the padded multiply-adds at 2 per cycle, all vector ops
    (multiply-add + add per accumulator, a widening per weight vector, counted twice: a
    lane-crossing 256-bit op, two on Zen 1, a broadcast per pixel) on 4 pipes, or the
    loads (nv weight vectors + mr broadcasts, 2 per cycle), whichever dominates; plus a
    per-call epilogue and call overhead."""
    nv = nr // 8
    calls = -(-m // mr) * -(-n // nr)
    per_pair = max(mr * nv / 2.0, (2 * mr * nv + 2 * nv + mr) / 4.0, (mr + nv) / 2.0)
    return calls * (k2 * per_pair + 12 * mr * nv + 20)


def default_blocking(m: int, n: int, k2: int) -> dict:
    """The cheapest candidate; loop order: pixel blocks outer ("block", a block's
    activations stay in L1 across the channel panels) when all the int8 weights fit in
    128 KiB, else panels outer ("panel", each weight panel streamed once per band)."""
    best = min(candidates(), key=lambda c: (cost(m, n, k2, *c), -c[0] * c[1], c))
    weights = k2 * 2 * -(-n // best[1]) * best[1]
    return {"mr": best[0], "nr": best[1], "k_unroll": 2,
            "order": "block" if weights <= 128 * 1024 else "panel"}


# ---- weights -------------------------------------------------------------------------

def weight_matrix(layer, graph) -> np.ndarray:
    """(N, taps, IC) int8: conv OIHW -> O,(kh kw),I; linear columns in HWC order when the
    layer reads a flattened 4-D tensor (activations are HWC on the host)."""
    from ..tensor_layout import flattened_from
    w = np.asarray(layer.weight)
    if layer.op == "conv2d":
        o, i, kh, kw = w.shape
        return w.transpose(0, 2, 3, 1).reshape(o, kh * kw, i)
    src = flattened_from(layer, graph)
    if src is not None:
        _, c, h, wd = src
        w = w.reshape(w.shape[0], c, h, wd).transpose(0, 2, 3, 1).reshape(w.shape[0], -1)
    return w.reshape(w.shape[0], 1, -1)


def panels(oc: int, nr: int) -> int:
    return -(-oc // nr)


def pack_weights(wm: np.ndarray, icp: int, nr: int) -> np.ndarray:
    """(N, segments, run) int8 -> panels of nr channels, each [segments*icp/2][nr][2] (each
    segment zero-padded to icp values, even), flat int8."""
    n, taps, ic = wm.shape
    npad = panels(n, nr) * nr
    full = np.zeros((npad, taps, icp), dtype=np.int8)
    full[:n, :, :ic] = wm
    k2 = taps * icp // 2
    return np.ascontiguousarray(full.reshape(npad // nr, nr, k2, 2).transpose(0, 2, 1, 3)).reshape(-1)


def folded_bias(wm: np.ndarray, bias, in_zp: int) -> np.ndarray:
    """bias - zp_in * sum(w), int64 (the caller checks it fits int32)."""
    s = wm.astype(np.int64).reshape(wm.shape[0], -1).sum(axis=1)
    b = np.zeros(wm.shape[0], dtype=np.int64) if bias is None else np.asarray(bias, dtype=np.int64)
    return b - int(in_zp) * s


def vector_safe(wm: np.ndarray, fb: np.ndarray) -> bool:
    """True when acc + bias' fits int32 for every input: the vector epilogues add in int32.
    |acc| <= 128 * sum|w| per channel."""
    bound = np.abs(fb) + 128 * np.abs(wm.astype(np.int64)).reshape(wm.shape[0], -1).sum(axis=1)
    return bool(bound.max(initial=0) < 2 ** 31)


def f64_safe(wm: np.ndarray, fb: np.ndarray, mult) -> bool:
    """True when |acc + bias'| * mult < 2**53 for every channel and input: the vector
    epilogue may requantize in double, exactly (nn_avx2_requant8_f64)."""
    bound = np.abs(fb) + 128 * np.abs(wm.astype(np.int64)).reshape(wm.shape[0], -1).sum(axis=1)
    m = np.asarray(mult, dtype=np.int64)
    return bool(np.all(bound.astype(object) * m.astype(object) < 2 ** 53))


# ---- the exact vpmaddubsw variant (isa avx2u8) -----------------------------------------

# Its own register blocking: 2 accumulators per output vector (isa.Avx2U8), so 8 channels
# x 5 pixels (10 accumulators, a weight vector, a broadcast, a temporary, a constant).
U8_BLOCKING = {"mr": 5, "nr": 8, "k_unroll": 2}
# u8 x s8 pair sums x0*w0 + x1*w1, x in [0, 255]: no saturation iff the positive and the
# negative parts of (w0, w1) are each at most 128 (255 * 128 = 32640 <= 32767).
U8_PAIR_MAX = 128


# The variants that read the u8 buffer (x + 128): their weights .bin sections, and their
# weights pointer (ctx_t) and epilogue arrays in the layer source.
_U8 = {"avx2u8": {"weight": "weight_u8", "bias": "bias_u8", "ptr": "wu", "epi": "epiu"},
       "avx512vnni": {"weight": "weight_vnni", "bias": "bias_vnni", "ptr": "wv", "epi": "epiv"}}
U8_ISAS = tuple(_U8)

# avx512vnni's blockings (mr pixels x nr channels): nr/8 weight vectors, a broadcast and
# at most 20 accumulators within its 32 registers.  On a Zen 4 (ResNet-18, one blocking for
# every layer, bench medians of 40): 5x32 9.94 ms, 4x32 9.97, 3x32 10.12, 8x16 10.26,
# 6x16 10.39, 6x32 (24 accumulators) 10.38, 4x24 10.48, 2x32 17.2.
VNNI_NR = (8, 16, 24, 32)
VNNI_MAX_ACCUMULATORS = 20
VNNI_LATENCY = 5          # cycles before an accumulator's next vpdpbusd can issue


def vnni_blocking(m: int, n: int, q: int, order: str) -> dict:
    """The cheapest avx512vnni blocking for an M x N GEMM of q quads per output, by a
    rough cycle count per quad: the vector ops (a vpdpbusd per accumulator and a
    broadcast per pixel, two per cycle), the loads (nv weight vectors + mr broadcasts, two
    per cycle) or the accumulators' latency, whichever is largest, over the padded M x N
    calls, plus a per-call epilogue."""
    best = None
    for nr in VNNI_NR:
        nv = nr // 8
        for mr in range(1, 13):
            if mr * nv > VNNI_MAX_ACCUMULATORS or mr * nv + nv + 2 > 32:
                continue
            calls = -(-m // mr) * -(-n // nr)
            c = calls * (q * max((mr * nv + mr) / 2.0, (mr + nv) / 2.0, VNNI_LATENCY) + 12 * mr * nv + 20)
            key = (c, -mr * nr, mr, nr)
            if best is None or key < best[0]:
                best = (key, mr, nr)
    return {"mr": best[1], "nr": best[2], "k_unroll": 2, "order": order}


def u8_supported(g: dict) -> bool:
    """The u8 buffer is the int16 one's geometry (merged kernel rows: column dilation 1)."""
    return padded(g)["merged"]


def u8_quads(g: dict) -> int:
    """Groups of 4 K values per segment (a kernel row of kw*IC values, zero-padded)."""
    return -(-g["kw"] * g["ic"] // 4)


def u8_split(pairs: np.ndarray) -> tuple:
    """pairs (..., 2) int -> (A, B), A + B = pairs, every pair of A and of B safe: a pair
    whose same-sign parts sum to s > 128 keeps 128 of it in A (taking the excess from its
    first weight, then its second) and puts the excess s - 128 <= 128 in B."""
    w = pairs.astype(np.int32)
    sign = np.where(w.sum(-1) < 0, -1, 1)
    mag = w * sign[..., None]                          # the dominant sign made positive
    same = (mag >= 0).all(-1)
    excess = np.where(same, np.maximum(mag.sum(-1) - U8_PAIR_MAX, 0), 0)
    b0 = np.where(same, np.minimum(mag[..., 0], excess), 0)
    b = np.stack([b0, excess - b0], -1) * sign[..., None]
    return w - b, b


def u8_pairs_safe(weights: np.ndarray) -> bool:
    """The proof the avx2u8 variant needs: every (even, odd) pair of its packed int8
    weights has positive part <= 128 and negative part <= 128, so no vpmaddubsw pair sum of
    u8 activations saturates."""
    w = weights.astype(np.int32).reshape(-1, 2)
    return bool((np.clip(w, 0, None).sum(-1) <= U8_PAIR_MAX).all()
                and (np.clip(-w, 0, None).sum(-1) <= U8_PAIR_MAX).all())


def pack_u8(wm: np.ndarray, g: dict, nr: int, split: bool = True) -> dict:
    """(N, taps, IC) int8 -> the avx2u8 variant's parameters: per panel of nr channels the
    main weights A as [segments][quads][nr][4], then the panel's correction quads (those
    where B is nonzero for any of its channels) as [nx][nr][4]; `xo` their element offsets
    in a pixel's window, `xidx` the prefix count of correction quads per panel, `steps`
    the quads each panel's microkernel runs (main + correction).  split=False (avx512vnni,
    whose vpdpbusd never saturates): A = W, no correction quads."""
    seg = segments(wm, g)
    n, ntaps, run = seg.shape
    q = u8_quads(g)
    npan = panels(n, nr)
    full = np.zeros((npan * nr, ntaps, q * 4), np.int32)
    full[:n, :, :run] = seg
    if split:
        a, b = u8_split(full.reshape(npan * nr, ntaps, q, 2, 2))
    else:
        a, b = full, np.zeros_like(full)
    # -> (panel, segment, quad, channel, 4)
    a = a.reshape(npan, nr, ntaps, q, 4).transpose(0, 2, 3, 1, 4)
    b = b.reshape(npan, nr, ntaps, q, 4).transpose(0, 2, 3, 1, 4)
    taps = np.asarray(tap_offsets(g), np.int64)
    used = b.any(axis=(3, 4))                          # (panel, segment, quad)
    parts, xo, xidx = [], [], [0]
    for pn in range(npan):
        t, k = np.nonzero(used[pn])
        parts += [a[pn].reshape(-1), b[pn][t, k].reshape(-1)]
        xo += list(taps[t] + 4 * k)
        xidx.append(len(xo))
    weights = np.concatenate(parts).astype(np.int8)
    assert (u8_pairs_safe(weights) or not split) and (a + b == full.reshape(npan, nr, ntaps, q, 4).transpose(0, 2, 3, 1, 4)).all()
    counts = np.diff(xidx)
    return {"weight": weights, "xo": np.asarray(xo, np.int64), "xidx": np.asarray(xidx, np.int64),
            "steps": ntaps * q + counts, "correction": len(xo) / (npan * ntaps * q)}


def bias_u8(wm: np.ndarray, fb: np.ndarray, steps, nr: int) -> np.ndarray:
    """The avx2u8 variant's bias, wrapped to int32: fb - 128 * sum(w) (its activations are
    x + 128) - 32768 * (the panel's steps) (the widening's offset, isa.Avx2U8); steps
    None: avx512vnni's, fb - 128 * sum(w)."""
    if steps is None:
        steps = np.zeros(panels(wm.shape[0], nr), np.int64)
    s = wm.astype(np.int64).reshape(wm.shape[0], -1).sum(axis=1)
    per = np.repeat(np.asarray(steps, np.int64), nr)[:wm.shape[0]]
    v = (np.asarray(fb, np.int64) - 128 * s - 32768 * per) & 0xFFFFFFFF
    return np.where(v >= 2 ** 31, v - 2 ** 32, v)


# ---- C source ------------------------------------------------------------------------

def micro_set(g: dict, blk: dict, band: int = 0, res: bool = False,
              epilogue: str = "f64c") -> dict:
    """{(mr, nv): Micro} needed by a layer: main, M edge, N edge, corner; res: their
    epilogue adds a residual; epilogue: the requantization (Micro.epilogue)."""
    p = padded(g)
    taps = tap_offsets(g)
    mr, nr = blk["mr"], blk["nr"]
    band = band or g["oh"]
    sizes = {band * g["ow"], (g["oh"] % band or band) * g["ow"]}
    mrs = sorted({mr for m in sizes if m >= mr} | {m % mr for m in sizes if m % mr})
    rem = g["oc"] % nr
    nvs = [nr // 8] if g["oc"] >= nr else []
    if rem:
        nvs.append(-(-rem // 8))
    return {(r, nv): Micro(mr=r, nv=nv, nr=nr, taps=taps, pairs=p["seg"] // 2, ku=blk["k_unroll"],
                         ostride=g["oc"], res=res, epilogue=epilogue)
            for r in mrs for nv in nvs}


def _align(n: int, a: int = 64) -> int:
    return -(-n // a) * a


def scratch(spec: dict) -> dict:
    """The layer's scratch in the arena (x->scratch, 64-byte aligned): the int16 band buffer
    (the input rows of `band` output rows, padded, + the value an odd run reads past its end)
    and, with a u8-buffer variant, the u8 one (+ the 3 values a run's last quad reads past its
    end); one of each per thread when the threads split the bands.  {part: offset, part +
    "_stride": bytes per thread, "bytes": the total}."""
    gm = spec["gemm"]
    g = gm["geom"]
    p = padded(g)
    band = gm["band"]
    band_in = (band - 1) * g["sh"] + (g["kh"] - 1) * g["dh"] + 1
    nbuf = gm["threads"] if gm["threads"] > 1 and -(-g["oh"] // band) >= 2 * gm["threads"] else 1
    elems = band_in * p["wp"] * p["icp"]
    out = {"buf": 0, "buf_stride": _align((elems + 2) * 2)}
    at = nbuf * out["buf_stride"]
    if gm.get("u8"):
        out.update(bufu8=at, bufu8_stride=_align(elems + 4))
        at += nbuf * out["bufu8_stride"]
    out["bytes"] = at
    return out


def layer_source(spec: dict) -> str:
    """The C source of one conv/linear layer from its host spec (spec['gemm'])."""
    gm = spec["gemm"]
    g, blk = gm["geom"], gm["blocking"]
    p = padded(g)
    hp, wp, icp = p["hp"], p["wp"], p["icp"]
    ic, oc = g["ic"], g["oc"]
    m = g["oh"] * g["ow"]
    mr, nr = blk["mr"], blk["nr"]
    npan = panels(oc, nr)
    k2 = p["k2"]
    variants = gm["variants"]            # isa names compiled in, best first
    cn = spec["cname"]
    symbol = spec.get("symbol", f"layer_{cn}")      # the function the network calls
    prefix = f"mk_{cn}"
    # a residual add fused into the epilogue (plan-level fusion: the add layer is gone,
    # this layer reads its other operand as in[1] and writes the add's output)
    res = gm.get("residual")
    epilogue = gm.get("epilogue", "f64c")
    micros = micro_set(g, blk, gm["band"], res=bool(res), epilogue=epilogue)
    u8 = gm.get("u8") or {}             # {u8-buffer variant: its blocking} (variants has them)
    micros_u8 = {iv: {key: replace(mk, pairs=u8_quads(g))
                      for key, mk in micro_set(g, ub, gm["band"], res=bool(res),
                                               epilogue=epilogue).items()}
                 for iv, ub in u8.items()}
    par = spec["params"]
    L = []
    L.append(f"/* Generated by nnscons kernelgen for target kind 'host'. Do not edit.\n"
             f" * layer: {_comment(spec['name'])} ({spec['op']}), BRGEMM M={m} N={oc} K={p['ntaps']}x{p['seg']}\n"
             f" * blocking mr={mr} nr={nr} k_unroll={blk['k_unroll']}, isa {gm['isa']}, threads {gm['threads']}\n"
             + (f" * fused residual add: {_comment(res['name'])} (the other operand is in[1])\n" if res else "")
             + " */")
    L += ["#include <stdint.h>", "#include <string.h>", '#include "nn_exec.h"', '#include "nn_gemm.h"',
          '#include "nn_threads.h"', ""]
    L.append(f"void {symbol}(const int8_t *const *in, int8_t *out, const uint8_t *params, nn_exec_t *x);")
    L.append("")
    if gm["isa"] != "auto" and ISAS[gm["isa"]].guard != "1":
        L.append(f"#if !({ISAS[gm['isa']].guard})")
        L.append(f'#error "isa {gm["isa"]} is forced for this layer but this compiler cannot build it"')
        L.append("#endif")
        L.append("")
    tapoff = f"tapoff_{cn}"
    if p["ntaps"] > 1:
        taps = tap_offsets(g)
        L.append(f"static const long {tapoff}[{len(taps)}] = {{ {', '.join(str(t) for t in taps)} }};")
        L.append("")
    for isa_name in variants:
        isa = ISAS[isa_name]
        if isa.guard != "1":
            L.append(f"#if {isa.guard}")
        ms = micros_u8.get(isa_name, micros)
        for key in sorted(ms):
            L.append(isa.microkernel(ms[key], ms[key].name(isa_name, prefix), tapoff))
        if isa.guard != "1":
            L.append("#endif")
        L.append("")
    # the int16 band buffer: the input rows of `band` output rows, padded
    band = gm["band"]
    sc = scratch(spec)       # the band buffers, in the arena's scratch region (x->scratch)
    zp_in = spec["inputs"][0]["zp"]
    L.append("")
    L.append("typedef struct {")
    L.append("    const int8_t *w;")
    L.append("    const int32_t *bias, *mult, *shift;")
    L.append("    int8_t *out;")
    L.append("    const int8_t *x, *res;")
    L.append("    int16_t *buf;")
    for iv, names in _U8.items():
        L.append(f"    const int8_t *{names['ptr']};              /* {iv}: its weights */")
    L.append("    const int32_t *xo, *xidx;      /* avx2u8: correction offsets, per-panel counts */")
    L.append("    uint8_t *bufu8;")
    L.append("    int v, oh0, rows, wide;")
    L.append("    int mr;                        /* the running variant's pixels per block */")
    L.append("    const nn_epi_t *epi;           /* per channel panel, set up once per call */")
    for iv, ub in u8.items():
        L.append(f"    const nn_epi_t *{_U8[iv]['epi']};          /* {iv}: per panel of its own, its bias */")
    L.append("} ctx_t;")
    L.append("")
    full = oc // nr
    rem = oc % nr
    classes = ([(nr // 8, 8, f"pn < {full}")] if full else []) + \
        ([(-(-rem // 8), rem % 8 or 8, f"pn == {npan - 1}")] if rem else [])
    for isa_name in variants:
        isa = ISAS[isa_name]
        if isa_name in u8:
            L += _run_u8(isa_name, g, u8[isa_name], micros_u8[isa_name], prefix, cn, p)
            continue
        if isa.guard != "1":
            L.append(f"#if {isa.guard}")
        L.append(f"static void run_{isa_name}(const ctx_t *c, int b0, int b1)")
        L.append("{")
        L.append(f"    const int m = c->rows * {g['ow']};")
        # panel-outer streams each weight panel once per band (big weights); block-outer
        # keeps a pixel block's activations in L1 across the panels (small weights)
        loops = [f"for (int pn = 0; pn < {npan}; ++pn) {{", "for (int b = b0; b < b1; ++b) {"]
        if blk.get("order", "panel") == "block":
            loops.reverse()
        L.append(f"    {loops[0]}")
        L.append(f"        {loops[1]}")
        L.append(f"            const int n0 = pn * {nr};")
        L.append(f"            const int8_t *wp = c->w + (long)pn * {k2 * nr * 2};")
        L.append("            const nn_epi_t *e = &c->epi[pn];")
        L.append(f"            const int p0 = b * {mr};")
        L.append(f"            const int cnt = m - p0 < {mr} ? m - p0 : {mr};")
        L.append(f"            const int16_t *a[{mr}];")
        L.append(f"            const long at = ((long)c->oh0 * {g['ow']} + p0) * {oc} + n0;")
        L.append("            int8_t *o = c->out + at;")
        L.append("            const int8_t *r = c->res ? c->res + at : 0;")
        L.append("            for (int i = 0; i < cnt; ++i) {")
        L.append(f"                const int oy = (p0 + i) / {g['ow']}, ox = (p0 + i) % {g['ow']};")
        L.append(f"                a[i] = c->buf + ((long)oy * {g['sh'] * wp} + (long)ox * {g['sw']}) * {icp};")
        L.append("            }")
        first = True
        for r in sorted({r for r, _ in micros}):
            for nv, last, n_cond in classes:
                L.append(f"            {'if' if first else 'else if'} (cnt == {r} && {n_cond})")
                L.append(f"                {micros[(r, nv)].name(isa_name, prefix)}(a, wp, e, o, {last}, r);")
                first = False
        L.append("        }")
        L.append("    }")
        L.append("}")
        if isa.guard != "1":
            L.append("#endif")
        L.append("")
    threads = gm["threads"]
    nbands = -(-g["oh"] // band)
    by_bands = threads > 1 and nbands >= 2 * threads   # each thread its own bands and buffer
    L.append("/* the input rows of output rows [oh0, oh0 + rows) into buf: int16, zp padding */")
    L.append("static void fill(int16_t *buf, const int8_t *x, int oh0, int rows, int wide)")
    L.append("{")
    L.append(f"    const int in_rows = (rows - 1) * {g['sh']} + {(g['kh'] - 1) * g['dh'] + 1};")
    L.append("    (void)wide;")
    L.append("    for (int y = 0; y < in_rows; ++y) {")
    L.append(f"        const int iy = oh0 * {g['sh']} - {g['pt']} + y;")
    if icp == ic:   # whole rows: zp borders, the input row widened in one run
        L.append(f"        int16_t *d = buf + (long)y * {wp * icp};")
        L.append(f"        if (iy >= 0 && iy < {g['ih']}) {{")
        if g["pl"]:
            L.append(f"            nn_fill_s16(d, {zp_in}, {g['pl'] * icp}, wide);")
        L.append(f"            nn_widen_s8(d + {g['pl'] * icp}, x + (long)iy * {g['iw'] * ic}, {g['iw'] * ic}, wide);")
        right = (wp - g["pl"] - g["iw"]) * icp
        if right > 0:
            L.append(f"            nn_fill_s16(d + {(g['pl'] + g['iw']) * icp}, {zp_in}, {right}, wide);")
        L.append("        } else {")
        L.append(f"            nn_fill_s16(d, {zp_in}, {wp * icp}, wide);")
        L.append("        }")
    else:
        L.append(f"        for (int xx = 0; xx < {wp}; ++xx) {{")
        L.append(f"            const int ix = xx - {g['pl']};")
        L.append(f"            int16_t *d = buf + ((long)y * {wp} + xx) * {icp};")
        L.append(f"            if (iy >= 0 && iy < {g['ih']} && ix >= 0 && ix < {g['iw']}) {{")
        L.append(f"                const int8_t *s = x + ((long)iy * {g['iw']} + ix) * {ic};")
        L.append(f"                for (int k = 0; k < {ic}; ++k)")
        L.append("                    d[k] = s[k];")
        L.append("            } else {")
        L.append(f"                for (int k = 0; k < {ic}; ++k)")
        L.append(f"                    d[k] = {zp_in};")
        L.append("            }")
        L.append(f"            d[{ic}] = 0;")
        L.append("        }")
    L.append("    }")
    L.append("}")
    L.append("")
    if u8:
        L += _fill_u8(g, p, zp_in)
    L.append("/* the running variant's buffer: u8 for avx2u8 and avx512vnni, else int16 */")
    L.append("static void prep(const ctx_t *c)")
    L.append("{")
    if u8:
        L.append("    if (" + " || ".join(f"c->v == {variants.index(iv)}" for iv in u8) + ") {")
        L.append("        fill_u8(c->bufu8, c->x, c->oh0, c->rows);")
        L.append("        return;")
        L.append("    }")
    L.append("    fill(c->buf, c->x, c->oh0, c->rows, c->wide);")
    L.append("}")
    L.append("")
    L.append("static void run(const ctx_t *c, int b0, int b1)")
    L.append("{")
    for idx, isa_name in enumerate(variants):
        isa = ISAS[isa_name]
        if isa.guard != "1":
            L.append(f"#if {isa.guard}")
        L.append(f"    if (c->v == {idx}) {{")
        L.append(f"        run_{isa_name}(c, b0, b1);")
        L.append("        return;")
        L.append("    }")
        if isa.guard != "1":
            L.append("#endif")
    L.append("    (void)c; (void)b0; (void)b1;")
    L.append("}")
    L.append("")
    if by_bands:
        L.append(f"/* thread i of n: bands [i*{nbands}/n, (i+1)*{nbands}/n), in its own buffer */")
        L.append("static void part(void *arg, int i, int n)")
        L.append("{")
        L.append("    ctx_t t = *(const ctx_t *)arg;")
        L.append(f"    t.buf = (int16_t *)(void *)((uint8_t *)(void *)t.buf + (long)i * {sc['buf_stride']});")
        if u8:
            L.append(f"    t.bufu8 += (long)i * {sc['bufu8_stride']};")
        L.append(f"    for (int k = {nbands} * i / n; k < {nbands} * (i + 1) / n; ++k) {{")
        L.append(f"        t.oh0 = k * {band};")
        L.append(f"        t.rows = {g['oh']} - t.oh0 < {band} ? {g['oh']} - t.oh0 : {band};")
        L.append("        prep(&t);")
        L.append(f"        run(&t, 0, (t.rows * {g['ow']} + t.mr - 1) / t.mr);")
        L.append("    }")
        L.append("}")
    else:
        L.append("/* thread i of n: its share of one band's pixel blocks */")
        L.append("static void part(void *arg, int i, int n)")
        L.append("{")
        L.append("    const ctx_t *c = (const ctx_t *)arg;")
        L.append(f"    const int nb = (c->rows * {g['ow']} + c->mr - 1) / c->mr;")
        L.append("    run(c, (int)((long)nb * i / n), (int)((long)nb * (i + 1) / n));")
        L.append("}")
    L.append("")
    L.append(f"void {symbol}(const int8_t *const *in, int8_t *out, const uint8_t *params, nn_exec_t *x)")
    L.append("{")
    L.append(f"    nn_epi_t epi[{npan}];")
    for iv, ub in u8.items():
        L.append(f"    nn_epi_t {_U8[iv]['epi']}[{panels(oc, ub['nr'])}];")
    if res:
        L.append(f"    nn_res_t res;   /* the fused add: {_comment(res['name'])} */")
    L.append(f"    ctx_t c = {{ (const int8_t *)(const void *)(params + {par['weight']['offset']}),")
    for s_ in ("bias", "mult", "shift"):
        L.append(f"                 (const int32_t *)(const void *)(params + {par[s_]['offset']}),")
    L.append(f"                 out, in[0], {'in[1]' if res else '0'}, (int16_t *)(void *)(x->scratch + {sc['buf']}),")
    for iv, names in _U8.items():
        L.append(f"                 (const int8_t *)(const void *)(params + {par[names['weight']]['offset']}),"
                 if iv in u8 else "                 0,")
    if "avx2u8" in u8:
        L.append(f"                 (const int32_t *)(const void *)(params + {par['xo']['offset']}),")
        L.append(f"                 (const int32_t *)(const void *)(params + {par['xidx']['offset']}),")
    else:
        L.append("                 0, 0,")
    L.append(f"                 {f'x->scratch + ' + str(sc['bufu8']) if u8 else '0'},")
    L.append("                 -1, 0, 0, 0, 1, epi" + "".join(f", {_U8[iv]['epi']}" for iv in u8) + " };")
    for idx, isa_name in enumerate(variants):
        cond = ISAS[isa_name].runtime if gm["isa"] == "auto" else "1"
        L.append(f"    if (c.v < 0 && {cond})")
        L.append(f"        c.v = {idx};")
    names = ", ".join(f'"{v}"' for v in variants)
    L.append("    {   /* which variant runs: the layer report's */")
    L.append(f"        static const char *const names[] = {{ {names} }};")
    L.append("        x->variant = c.v >= 0 ? names[c.v] : 0;")
    L.append("    }")
    avx2_idx = variants.index("avx2") if "avx2" in variants else -1
    L.append(f"    c.wide = c.v == {avx2_idx};   /* the AVX2 variant runs: widen with AVX2 too */")
    # the blocks are counted with the running variant's mr (the u8 variants have their own)
    mrs = ", ".join(str(u8[iv]["mr"] if iv in u8 else mr) for iv in variants)
    L.append(f"    {{ static const int mrs[] = {{ {mrs} }}; c.mr = c.v >= 0 ? mrs[c.v] : 1; }}")
    for iv, ub in u8.items():
        nu, epi = ub["nr"], _U8[iv]["epi"]
        L.append(f"    if (c.v == {variants.index(iv)}) {{")
        L.append(f"        const int32_t *bu = (const int32_t *)(const void *)(params + {par[_U8[iv]['bias']]['offset']});")
        L.append(f"        for (int pn = 0; pn < {panels(oc, nu)}; ++pn) {{")
        L.append(f"            nn_epi_init(&{epi}[pn], bu + pn * {nu}, c.mult + pn * {nu}, c.shift + pn * {nu}, {nu}, "
                 f"{res['conv_zp'] if res else spec['out']['zp']}, {spec['act'][0]}, {spec['act'][1]});")
        if res:
            L.append(f"            {epi}[pn].res = &res;")
        L.append("        }")
        L.append("    }")
    conv_zp = res["conv_zp"] if res else spec["out"]["zp"]
    if res and res.get("tflite"):
        t = res["tflite"]
        L.append(f"    nn_res_init_tfl(&res, {conv_zp}, {res['mult_conv']}, {t['e_conv']}, {res['zp_other']}, "
                 f"{res['mult_other']}, {t['e_other']}, {t['mult_out']}, {t['e_out']}, {res['zp']}, "
                 f"{res['act'][0]}, {res['act'][1]});")
    elif res:
        L.append(f"    nn_res_init(&res, {conv_zp}, {res['mult_conv']}, {res['zp_other']}, {res['mult_other']}, "
                 f"{res['shift']}, {res['zp']}, {res['act'][0]}, {res['act'][1]});")
    L.append(f"    for (int pn = 0; pn < {npan}; ++pn) {{")
    L.append(f"        nn_epi_init(&epi[pn], c.bias + pn * {nr}, c.mult + pn * {nr}, c.shift + pn * {nr}, {nr}, "
             f"{conv_zp}, {spec['act'][0]}, {spec['act'][1]});")
    if res:
        L.append("        epi[pn].res = &res;")
    L.append("    }")
    if by_bands:
        L.append(f"    nn_parallel_for(x->pool, {threads}, part, &c);")
    else:
        L.append(f"    for (int oh0 = 0; oh0 < {g['oh']}; oh0 += {band}) {{")
        L.append(f"        c.oh0 = oh0;")
        L.append(f"        c.rows = {g['oh']} - oh0 < {band} ? {g['oh']} - oh0 : {band};")
        L.append("        prep(&c);")
        L.append(f"        nn_parallel_for(x->pool, {threads}, part, &c);")
        L.append("    }")
    L.append("}")
    return "\n".join(L) + "\n"


def _run_u8(iv: str, g: dict, u8: dict, micros: dict, prefix: str, cn: str, p: dict) -> list:
    """run_<iv> of a u8-buffer variant: the pixel blocks x its own channel panels; each
    panel's weights are its main quads then (avx2u8) its correction quads (kernelgen.pack_u8)."""
    mr, nr, oc, icp = u8["mr"], u8["nr"], g["oc"], p["icp"]
    corr = iv == "avx2u8"
    npan, main = panels(oc, nr), p["ntaps"] * u8_quads(g) * nr * 4
    full, rem = oc // nr, oc % nr
    classes = ([(nr // 8, 8, f"pn < {full}")] if full else []) + \
        ([(-(-rem // 8), rem % 8 or 8, f"pn == {npan - 1}")] if rem else [])
    L = [f"#if {ISAS[iv].guard}",
         f"static void run_{iv}(const ctx_t *c, int b0, int b1)",
         "{",
         f"    const int m = c->rows * {g['ow']};",
         # the loop order as the int16 variant's (blk order): panels outer streams each
         # weight panel once per band, blocks outer keeps a block's activations in L1
         *(["    for (int b = b0; b < b1; ++b) {", f"        for (int pn = 0; pn < {npan}; ++pn) {{"]
           if u8.get("order") == "block" else
           [f"    for (int pn = 0; pn < {npan}; ++pn) {{", "        for (int b = b0; b < b1; ++b) {"]),
         *(["            const int32_t *xo = c->xo + c->xidx[pn];",
            "            const int nx = c->xidx[pn + 1] - c->xidx[pn];",
            f"            const int8_t *wp = c->{_U8[iv]['ptr']} + (long)pn * {main} + (long)c->xidx[pn] * {nr * 4};"]
           if corr else
           ["            const int32_t *xo = 0;",
            "            const int nx = 0;",
            f"            const int8_t *wp = c->{_U8[iv]['ptr']} + (long)pn * {main};"]),
         f"            const nn_epi_t *e = &c->{_U8[iv]['epi']}[pn];",
         f"            const int p0 = b * {mr};",
         f"            const int cnt = m - p0 < {mr} ? m - p0 : {mr};",
         f"            const uint8_t *a[{mr}];",
         f"            const long at = ((long)c->oh0 * {g['ow']} + p0) * {oc} + pn * {nr};",
         "            int8_t *o = c->out + at;",
         "            const int8_t *r = c->res ? c->res + at : 0;",
         "            for (int i = 0; i < cnt; ++i) {",
         f"                const int oy = (p0 + i) / {g['ow']}, ox = (p0 + i) % {g['ow']};",
         f"                a[i] = c->bufu8 + ((long)oy * {g['sh'] * p['wp']} + (long)ox * {g['sw']}) * {icp};",
         "            }"]
    first = True
    for r in sorted({r for r, _ in micros}):
        for nv, last, n_cond in classes:
            L.append(f"            {'if' if first else 'else if'} (cnt == {r} && {n_cond})")
            L.append(f"                {micros[(r, nv)].name(iv, prefix)}(a, wp, e, o, {last}, r, xo, nx);")
            first = False
    L += ["        }", "    }", "}", "#endif", ""]
    return L


def _fill_u8(g: dict, p: dict, zp_in: int) -> list:
    """fill_u8: the input rows of output rows [oh0, oh0 + rows) as x + 128 (u8), padding
    zp_in + 128 (merged kernel rows only: kernelgen.u8_supported)."""
    icp, wp = p["icp"], p["wp"]
    pad = (zp_in + 128) & 0xFF
    right = (wp - g["pl"] - g["iw"]) * icp
    L = ["/* avx2u8: the input rows of output rows [oh0, oh0 + rows) into buf as x + 128 (u8) */",
         "static void fill_u8(uint8_t *buf, const int8_t *x, int oh0, int rows)",
         "{",
         f"    const int in_rows = (rows - 1) * {g['sh']} + {(g['kh'] - 1) * g['dh'] + 1};",
         "    for (int y = 0; y < in_rows; ++y) {",
         f"        const int iy = oh0 * {g['sh']} - {g['pt']} + y;",
         f"        uint8_t *d = buf + (long)y * {wp * icp};",
         f"        if (iy >= 0 && iy < {g['ih']}) {{"]
    if g["pl"]:
        L.append(f"            memset(d, {pad}, {g['pl'] * icp});")
    L.append(f"            nn_flip_s8(d + {g['pl'] * icp}, x + (long)iy * {g['iw'] * g['ic']}, {g['iw'] * g['ic']});")
    if right > 0:
        L.append(f"            memset(d + {(g['pl'] + g['iw']) * icp}, {pad}, {right});")
    L += ["        } else {",
          f"            memset(d, {pad}, {wp * icp});",
          "        }",
          "    }",
          "}",
          ""]
    return L


def _u8_test_driver(iv: str, tag: str, k: int, mr: int, nr: int, ku: int, f64: bool, max_mn: int) -> list:
    """The kernel test's driver of a u8-buffer variant (avx2u8, avx512vnni): the same
    interface as the others (the int16 drivers' packed weights w, int16 activations a); it
    redoes kernelgen.pack_u8 in C on them (avx2u8: split of every pair whose same-sign
    parts exceed 128, correction quads per panel; x + 128, the variant's bias) whenever
    main() refills the data, then runs the microkernels."""
    split = iv == "avx2u8"
    kp = k + (k & 1)
    q = -(-k // 4)
    kq = 4 * q
    npan = -(-max_mn // nr)
    micros = {(r, nv): Micro(mr=r, nv=nv, nr=nr, taps=(0,), pairs=q, ku=ku, ostride=max_mn,
                           epilogue="f64" if f64 else "f64c")
              for r in range(1, mr + 1) for nv in range(1, nr // 8 + 1)}
    name = f"gemm_{iv}_{tag}"
    L = [f"#if {ISAS[iv].guard}"]
    for key in sorted(micros):
        L.append(ISAS[iv].microkernel(micros[key], micros[key].name(iv, "mk_" + tag), "tapoff"))
    L += [f"static void {name}(int m, int n, const int16_t *a, const int8_t *w, const int32_t *bias, "
          "const int32_t *mult, const int32_t *shift, int zp, int lo, int hi, int8_t *out)",
          "{",
          "    static int gen = -1;",
          f"    static uint8_t xu[MAXMN * {kq} + 4];",
          f"    static int8_t wu[{npan} * {2 * q * nr * 4}];      /* main + at most every quad again */",
          f"    static int32_t xo[{npan * q} + 1], xidx[{npan} + 1], bu[{npan * nr}];",
          "    nn_epi_t e;",
          "    if (gen != pack_gen) {",
          "        gen = pack_gen;",
          f"        for (int i = 0; i < MAXMN; ++i)",
          f"            for (int kk = 0; kk < {kq}; ++kk)   /* past kp: any value, its weight is 0 */",
          f"                xu[i * {kq} + kk] = kk < {kp} ? (uint8_t)(a[i * {kp} + kk] + 128) : 255;",
          "        xidx[0] = 0;",
          f"        for (int pn = 0; pn < {npan}; ++pn) {{",
          f"            int8_t *main_w = wu + (long)pn * {q * nr * 4} + (long)xidx[pn] * {nr * 4};",
          f"            int8_t *corr = main_w + {q * nr * 4};",
          f"            int nx = 0, steps;",
          f"            for (int qq = 0; qq < {q}; ++qq) {{",
          f"                int8_t b[{nr * 4}];",
          "                int any = 0;",
          f"                for (int ch = 0; ch < {nr}; ++ch)",
          "                    for (int h = 0; h < 2; ++h) {",
          "                        int v[2], s, m0, m1, ex = 0, c0;",
          "                        for (int j = 0; j < 2; ++j) {",
          "                            const int kk = qq * 4 + h * 2 + j, nn = pn * " + str(nr) + " + ch;",
          f"                            v[j] = nn < MAXMN && kk < {k} ? w[(long)(nn / {nr}) * {kp * nr} + (kk / 2) * {nr * 2} + (nn % {nr}) * 2 + kk % 2] : 0;",
          "                        }",
          "                        s = v[0] + v[1] < 0 ? -1 : 1;",
          "                        m0 = v[0] * s;",
          "                        m1 = v[1] * s;",
          f"                        if ({int(split)} && m0 >= 0 && m1 >= 0 && m0 + m1 > 128)",
          "                            ex = m0 + m1 - 128;",
          "                        c0 = ex && m0 < ex ? m0 : ex;   /* ex > 0: both parts >= 0 */",
          "                        b[ch * 4 + h * 2] = (int8_t)(s * c0);",
          "                        b[ch * 4 + h * 2 + 1] = (int8_t)(s * (ex - c0));",
          f"                        main_w[(qq * {nr} + ch) * 4 + h * 2] = (int8_t)(v[0] - s * c0);",
          f"                        main_w[(qq * {nr} + ch) * 4 + h * 2 + 1] = (int8_t)(v[1] - s * (ex - c0));",
          "                        any |= ex;",
          "                    }",
          "                if (any) {",
          f"                    memcpy(corr + nx * {nr * 4}, b, sizeof b);",
          "                    xo[xidx[pn] + nx++] = qq * 4;",
          "                }",
          "            }",
          "            xidx[pn + 1] = xidx[pn] + nx;",
          f"            steps = {q} + nx;",
          f"            for (int ch = 0; ch < {nr}; ++ch) {{",
          f"                const int nn = pn * {nr} + ch;",
          "                int64_t sw = 0;",
          f"                for (int kk = 0; kk < {k} && nn < MAXMN; ++kk)",
          f"                    sw += w[(long)(nn / {nr}) * {kp * nr} + (kk / 2) * {nr * 2} + (nn % {nr}) * 2 + kk % 2];",
          f"                bu[nn] = (int32_t)(uint32_t)((uint64_t)((int64_t)bias[nn] - 128 * sw - {32768 * int(split)} * (int64_t)steps));",
          "            }",
          "        }",
          "    }",
          f"    for (int n0 = 0; n0 < n; n0 += {nr}) {{",
          f"        const int nn = n - n0 < {nr} ? n - n0 : {nr};",
          "        const int nv = (nn + 7) / 8, last = nn - (nv - 1) * 8, pn = n0 / " + str(nr) + ";",
          f"        const int8_t *wp = wu + (long)pn * {q * nr * 4} + (long)xidx[pn] * {nr * 4};",
          f"        nn_epi_init(&e, bu + n0, mult + n0, shift + n0, {nr}, zp, lo, hi);",
          f"        for (int p0 = 0; p0 < m; p0 += {mr}) {{",
          f"            const int cnt = m - p0 < {mr} ? m - p0 : {mr};",
          f"            const uint8_t *ap[{mr}];",
          f"            for (int i = 0; i < cnt; ++i) ap[i] = xu + (long)(p0 + i) * {kq};",
          f"            int8_t *o = out + (long)p0 * MAXMN + n0;",
          "            switch (cnt * 16 + nv) {"]
    for (r, nv) in sorted(micros):
        L.append(f"            case {r * 16 + nv}: {micros[(r, nv)].name(iv, 'mk_' + tag)}"
                 "(ap, wp, &e, o, last, 0, xo + xidx[pn], xidx[pn + 1] - xidx[pn]); break;")
    L += ["            default: abort();",
          "            }",
          "        }",
          "    }",
          "}",
          "#endif",
          ""]
    return L


def _comment(text) -> str:
    from ..codegen import c_comment
    return c_comment(text)


# ---- the kernel test's GEMM drivers --------------------------------------------------

def _fits(isa_name: str, mr: int, nr: int) -> bool:
    """A test case's blocking fits the ISA's register file (accumulators, weight vectors,
    a broadcast); the portable C has no such limit."""
    nv = nr // 8
    return isa_name == "portable" or mr * nv + nv + 1 <= REGISTERS[isa_name]


def gemm_test_source(cases, max_mn: int = 64) -> str:
    """A standalone C file: for every (K, mr, nr, k_unroll) in cases, GEMM drivers per ISA on a
    plain (M, K) int8 matrix, M and N at run time up to max_mn, built from the same
    microkernels as the layers; main() compares every variant with the portable one."""
    L = ["/* Generated by nnscons kernelgen: kernel test driver. */",
         "#include <stdint.h>", "#include <stdio.h>", "#include <stdlib.h>", "#include <string.h>",
         '#include "nn_gemm.h"', "",
         "static int pack_gen;   /* main() bumps it when it refills the data (avx2u8 repacks) */",
         f"#define MAXMN {max_mn}", ""]
    drivers = []
    for case in cases:
        k, mr, nr, ku = case[:4]
        f64 = case[4:] == ("f64",)     # the double-precision epilogue (|v| * mult < 2**53 here)
        kp = k + (k & 1)
        if True:
            tag = f"k{k}_m{mr}n{nr}u{ku}" + ("_f64" if f64 else "")
            micros = {(r, nv): Micro(mr=r, nv=nv, nr=nr, taps=(0,), pairs=kp // 2, ku=ku, ostride=max_mn,
                           epilogue="f64" if f64 else "f64c")
                      for r in range(1, mr + 1) for nv in range(1, nr // 8 + 1)}
            for isa_name, isa in ISAS.items():
                if not _fits(isa_name, mr, nr):
                    continue
                if isa_name in U8_ISAS:
                    L += _u8_test_driver(isa_name, tag, k, mr, nr, ku, f64, max_mn)
                    continue
                if isa.guard != "1":
                    L.append(f"#if {isa.guard}")
                for key in sorted(micros):
                    L.append(isa.microkernel(micros[key], micros[key].name(isa_name, "mk_" + tag), "tapoff"))
                L.append(f"static void gemm_{isa_name}_{tag}(int m, int n, const int16_t *a, const int8_t *w, "
                         "const int32_t *bias, const int32_t *mult, const int32_t *shift, int zp, int lo, int hi, int8_t *out)")
                L.append("{")
                L.append("    nn_epi_t e;")
                L.append(f"    for (int n0 = 0; n0 < n; n0 += {nr}) {{")
                L.append(f"        const int nn = n - n0 < {nr} ? n - n0 : {nr};")
                L.append("        const int nv = (nn + 7) / 8, last = nn - (nv - 1) * 8;")
                L.append(f"        nn_epi_init(&e, bias + n0, mult + n0, shift + n0, {nr}, zp, lo, hi);")
                L.append(f"        for (int p0 = 0; p0 < m; p0 += {mr}) {{")
                L.append(f"            const int cnt = m - p0 < {mr} ? m - p0 : {mr};")
                L.append(f"            const int16_t *ap[{mr}];")
                L.append(f"            for (int i = 0; i < cnt; ++i) ap[i] = a + (long)(p0 + i) * {kp};")
                L.append(f"            const int8_t *wp = w + (long)(n0 / {nr}) * {kp // 2 * nr * 2};")
                L.append(f"            int8_t *o = out + (long)p0 * {max_mn} + n0;")
                L.append("            switch (cnt * 16 + nv) {")
                for (r, nv) in sorted(micros):
                    L.append(f"            case {r * 16 + nv}: "
                             f"{micros[(r, nv)].name(isa_name, 'mk_' + tag)}(ap, wp, &e, o, last, 0); break;")
                L.append("            default: abort();")
                L.append("            }")
                L.append("        }")
                L.append("    }")
                L.append("}")
                if isa.guard != "1":
                    L.append("#endif")
                L.append("")
            drivers.append((k, mr, nr, ku, tag))
    L.append("typedef void (*gemm_fn)(int, int, const int16_t *, const int8_t *, const int32_t *, const int32_t *,"
             " const int32_t *, int, int, int, int8_t *);")
    L.append("typedef struct { int k, mr, nr, ku; gemm_fn fn[%d]; } case_t;" % len(ISAS))
    L.append("static const char *const isa_names[] = { " + ", ".join(f'"{n}"' for n in ISAS) + " };")
    L.append("static const case_t cases[] = {")
    for k, mr, nr, ku, tag in drivers:
        fns = []
        for isa_name, isa in ISAS.items():
            fns.append(f"gemm_{isa_name}_{tag}" if isa.guard == "1" and _fits(isa_name, mr, nr) else "NULL")
        L.append(f"    {{ {k}, {mr}, {nr}, {ku}, {{ {', '.join(fns)} }} }},")
    L.append("};")
    L.append(f"#define NCASES {len(drivers)}")
    L.append("static case_t table[NCASES];")
    L.append("static void fill_table(void)")
    L.append("{")
    L.append("    memcpy(table, cases, sizeof table);")
    for i, (k, mr, nr, ku, tag) in enumerate(drivers):
        for j, (isa_name, isa) in enumerate(ISAS.items()):
            if isa.guard != "1" and _fits(isa_name, mr, nr):
                L.append(f"#if {isa.guard}")
                L.append(f"    table[{i}].fn[{j}] = gemm_{isa_name}_{tag};")
                L.append("#endif")
    L.append("}")
    L.append(_TEST_MAIN)
    return "\n".join(L) + "\n"


_TEST_MAIN = r"""
static int runtime_ok(int j)
{
    if (strcmp(isa_names[j], "avx2") == 0 || strcmp(isa_names[j], "avx2u8") == 0)
        return nn_cpu_has_avx2();
    if (strcmp(isa_names[j], "avx512vnni") == 0)
        return nn_cpu_has_avx512vnni();
    if (strcmp(isa_names[j], "neon") == 0)
        return nn_cpu_has_neon();
    if (strcmp(isa_names[j], "dotprod") == 0)
        return nn_cpu_has_dotprod();
    if (strcmp(isa_names[j], "i8mm") == 0)
        return nn_cpu_has_i8mm();
    return 1;
}

static uint32_t rng = 12345u;
static int rnd(int lo, int hi)
{
    rng = rng * 1664525u + 1013904223u;
    return lo + (int)((rng >> 8) % (uint32_t)(hi - lo + 1));
}

/* fill 0 random, 1 all -128, 2 all 127, 3 random -128/127 */
static int value(int fill)
{
    return fill == 1 ? -128 : fill == 2 ? 127 : fill == 3 ? (rnd(0, 1) ? -128 : 127) : rnd(-128, 127);
}

/* usage: kerneltest ISA [FILLS [MAX_MN [MAX_K]]]: every case with K <= MAX_K (default all),
 * every M, N in 1..MAX_MN (default and at most MAXMN), against a plain C
 * reference of the whole MAXMN x MAXMN product (each output depends on its row and column
 * only) and untouched bytes outside M x N.  Exit 0 all equal, 1 mismatch, 77 skipped. */
int main(int argc, char **argv)
{
    int j, ci, m, n, fill, bad = 0;
    long shapes = 0;
    const char *want = argc > 1 ? argv[1] : "avx2";
    const int fills = argc > 2 ? atoi(argv[2]) : 4;
    const int max_mn = argc > 3 && atoi(argv[3]) > 0 && atoi(argv[3]) < MAXMN ? atoi(argv[3]) : MAXMN;
    const int max_k = argc > 4 ? atoi(argv[4]) : 1 << 30;
    fill_table();
    for (j = 0; j < (int)(sizeof isa_names / sizeof isa_names[0]); ++j)
        if (strcmp(isa_names[j], want) == 0)
            break;
    if (j == (int)(sizeof isa_names / sizeof isa_names[0])) {
        printf("unknown isa %s\n", want);
        return 2;
    }
    for (ci = 0; ci < NCASES && !table[ci].fn[j]; ++ci)
        ;
    if (!runtime_ok(j) || ci == NCASES) {
        printf("SKIP %s: not supported by this CPU or compiler\n", want);
        return 77;
    }
    for (ci = 0; ci < NCASES; ++ci) {
        const case_t *c = &table[ci];
        if (c->k > max_k || !c->fn[j])   /* the case's blocking exceeds this ISA's registers */
            continue;
        const int kp = c->k + (c->k & 1);
        const int npad = (MAXMN + c->nr - 1) / c->nr * c->nr;
        int16_t *a = calloc((size_t)MAXMN * kp, sizeof *a);
        int8_t *w = calloc((size_t)npad * kp, 1);
        int8_t *wm = calloc((size_t)MAXMN * kp, 1);
        int32_t bias[MAXMN + 64], mult[MAXMN + 64], shift[MAXMN + 64];
        int8_t *ref = calloc((size_t)MAXMN * MAXMN, 1), *o = calloc((size_t)MAXMN * MAXMN, 1);
        for (fill = 0; fill < (c->k >= 16 ? fills : 1 + (fills > 1)); ++fill) {
            int i, kk, zp = fill == 1 ? 127 : fill == 2 ? -128 : rnd(-128, 127);
            for (i = 0; i < MAXMN; ++i)
                for (kk = 0; kk < kp; ++kk)
                    a[i * kp + kk] = (int16_t)(kk >= c->k ? 0 : value(fill));
            for (i = 0; i < MAXMN; ++i)
                for (kk = 0; kk < kp; ++kk)
                    wm[i * kp + kk] = (int8_t)(kk >= c->k ? 0 : value(fill));
            memset(w, 0, (size_t)npad * kp);
            for (i = 0; i < MAXMN; ++i)           /* pack: panel, pair, channel, 2 */
                for (kk = 0; kk < kp; ++kk)
                    w[(long)(i / c->nr) * kp * c->nr + (kk / 2) * c->nr * 2 + (i % c->nr) * 2 + kk % 2] = wm[i * kp + kk];
            ++pack_gen;
            for (i = 0; i < MAXMN + 64; ++i) {
                bias[i] = fill == 0 ? rnd(-100000, 100000) : fill == 1 ? -(127 * 128 * c->k) : 0;
                mult[i] = (int32_t)(((uint32_t)1 << 30) + (uint32_t)rnd(0, (1 << 30) - 1));
                shift[i] = fill == 3 ? rnd(1, 62) : rnd(c->k > 64 ? 28 : 20, 40);
                if (i % 7 == 3)
                    mult[i] = 1 << 30;    /* exact halves: ties */
            }
            for (m = 0; m < MAXMN; ++m)
                for (n = 0; n < MAXMN; ++n) {
                    int32_t acc = 0;
                    for (kk = 0; kk < kp; ++kk)
                        acc += a[m * kp + kk] * wm[n * kp + kk];
                    ref[m * MAXMN + n] = nn_requantize((int64_t)acc + bias[n], mult[n], shift[n], zp, -128, 127);
                }
            for (m = 1; m <= max_mn; ++m) {
                for (n = 1; n <= max_mn; ++n) {
                    int y, x, wrong = 0;
                    memset(o, 0x55, (size_t)MAXMN * MAXMN);
                    c->fn[j](m, n, a, w, bias, mult, shift, zp, -128, 127, o);
                    ++shapes;
                    for (y = 0; y < MAXMN; ++y)
                        for (x = 0; x < MAXMN; ++x)
                            wrong |= o[y * MAXMN + x] != (y < m && x < n ? ref[y * MAXMN + x] : 0x55);
                    if (wrong && bad++ < 10)
                        printf("MISMATCH %s K=%d mr=%d nr=%d ku=%d M=%d N=%d fill=%d\n", want, c->k,
                               c->mr, c->nr, c->ku, m, n, fill);
                }
            }
        }
        free(a); free(w); free(wm); free(ref); free(o);
    }
    printf("%s: %ld shapes, %d mismatching\n", want, shapes, bad);
    return bad ? 1 : 0;
}
"""
