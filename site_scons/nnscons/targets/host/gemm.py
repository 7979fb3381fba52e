"""The host target's side of the kernel generator: which layers it takes, their resolved
blocking (layer key > tuning file > target key > cost model), the weights .bin layout
and packing, and the report fields."""
from __future__ import annotations

import json
import os

import numpy as np

from ... import codegen, kernelgen, numerics
from ... import ops as registry
from ...planning import residual
from ...builders.graph.nodes import py_sources
from ...errors import UserError
from .ops import OPS

# templates/host/gemm.c.j2 is `{{ spec | kernelgen }}`: the layer's generated source
codegen.add_filter("kernelgen", kernelgen.layer_source)

KEYS = ("mr", "nr", "k_unroll", "order")
ORDERS = ("panel", "block")
X86_ISAS = ("portable", "avx2", "avx2u8", "avx512vnni", "avx512vnni512", "avxvnni")   # a tuning file's `isa`
# a weights .bin section's alignment, and the .bin's as the library links it (and as the
# variant timing program holds it, measure.program).  At 16 (as before) every 64-byte zmm weight load of a panel straddled two
# cache lines: ResNet-18 on an Intel Xeon (family 6 model 207) 7.2 -> 6.4 ms at 64.
SECTION_ALIGN = 64


def generated(layer) -> bool:
    return kernelgen.supports(layer)


def weights_py() -> list:
    return py_sources("kernelgen/*.py", "targets/host/gemm.py", "targets/host/dwtables.py")


def pack_hwc(layer, graph, layout) -> bytes:
    """Other layers: conv weights OHWI, linear columns in HWC order, gather indices in HWC
    slots (as on gap9)."""
    from ..base import pack_hwc as hwc
    return hwc(layer, graph, layout)


def load_tuning(path, at, model: str) -> dict:
    """{layer name: {mr, nr, k_unroll, order, isa}} for `model` from a tuning file: the `tune` alias's
    {"model": m, "layers": {...}}, or {"models": {m: {"layers": {...}}, ...}} for several
    models.  A file naming other models gives nothing for this one."""
    if not path:
        return {}
    if not os.path.isfile(path):
        raise UserError(f"{at}: tuning file '{path}' not found (write it with the `tune` alias)")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if "models" in data:
            layers = data["models"].get(model, {}).get("layers", {})
        else:
            layers = data["layers"] if data.get("model") == model else {}
        out = {}
        for name, v in layers.items():
            out[name] = {k: (str(v[k]) if k == "order" else int(v[k])) for k in KEYS if k in v}
            if out[name].get("order", "panel") not in ORDERS:
                raise ValueError(f"layer {name}: order must be one of {', '.join(ORDERS)}")
            if "isa" in v:      # a variant for the layer: overrides kernel.choose's measurement
                if v["isa"] not in X86_ISAS:
                    raise ValueError(f"layer {name}: isa must be one of {', '.join(X86_ISAS)}")
                out[name]["isa"] = str(v["isa"])
            if "winograd" in v:     # kernelgen.wino on or off for the layer (the `winograd` key)
                if not isinstance(v["winograd"], bool):
                    raise ValueError(f"layer {name}: winograd must be true or false")
                out[name]["winograd"] = v["winograd"]
        return out
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise UserError(f"{at}: tuning file '{path}' is not a tuning file: {e}") from None


def check_blocking(blk: dict, at, isa: str = "avx2") -> None:
    """The blocking fits the registers of the variant it is for (a forced vnni variant's
    own: 32 for the AVX-512 ones, zmm counting 16 channels)."""
    from ...kernelgen.isa import ISAS, REGISTERS
    mr, nr, ku = blk["mr"], blk["nr"], blk["k_unroll"]
    lanes = ISAS[isa].lanes if isa in kernelgen.VNNI_ISAS else 8
    regs = REGISTERS[isa] if isa in kernelgen.VNNI_ISAS else 16
    nv = -(-nr // lanes)
    if nr < 8 or nr % 8 or nr > 64:
        raise UserError(f"{at('nr')}: nr = {nr}: must be a multiple of 8 between 8 and 64")
    if not 1 <= mr <= 16 or mr * nv + nv + 1 > regs:
        raise UserError(f"{at('mr')}: mr = {mr} with nr = {nr} needs {mr * nv + nv + 1} vector registers "
                        f"(mr*nr/{lanes} accumulators + nr/{lanes} weights + 1); at most {regs}"
                        + ("" if isa in kernelgen.VNNI_ISAS else " (32 with isa avx512vnni or avx512vnni512)"))
    if not 1 <= ku <= 16:
        raise UserError(f"{at('k_unroll')}: k_unroll = {ku}: must be between 1 and 16")


# The cost model's register limits (kernelgen.core_limits): the Zen 1 ones unless the host
# target passes this machine's.
LIMITS = (kernelgen.MAX_ACCUMULATORS, 1)


def resolve(layer, graph, opts, own: dict, tuning: dict, limits: tuple = LIMITS) -> tuple:
    """(blocking, origin): each key from the layer, the tuning file, the target, else the
    cost model within `limits` (kernelgen.core_limits)."""
    g = kernelgen.geometry(layer, graph)
    k2 = kernelgen.padded(g)["k2"]
    blk = kernelgen.default_blocking(g["oh"] * g["ow"], g["oc"], k2, limits)
    origin = "model"
    tuned = tuning.get(layer.name, {})
    for k in KEYS:
        for src, name in ((opts["kernel"], "target"), (tuned, "tuned"), (own, "layer")):
            if k in src:
                blk[k] = src[k] if k == "order" else int(src[k])
                origin = name if name != "target" or origin == "model" else origin
    return blk, origin


# The x86-64 host's ISA set: `isa: auto` compiles these in, best first, and dispatches at
# run time; the vector ones need |acc + bias| < 2**31 (int32 epilogue adds).
# avx2u8 (exact vpmaddubsw, kernelgen.pack_u8) is not among them: on an AVX2-only host (AMD
# Zen 1) it measured no faster than avx2 in a ResNet-18 inference (README, "Target host");
# `isa: avx2u8` forces it.
# avx512vnni512 (zmm) neither: on a Zen 4 (256-bit units) it measured level with avx512vnni
# (ResNet-18's convs within 1-2% either way) for a second weights copy; `kernel: {choose:
# measure}` or a tuning file's isa compiles it in where it measures fastest (Zen 5).  avxvnni runs
# where AVX-512 VNNI does not (Intel since Alder Lake).  A Winograd layer's order is wino.CPUID:
# its zmm variant measured faster on the Zen 4 and reads the same weights.
AUTO = ("avx512vnni", "avxvnni", "avx2", "portable")
# CPUID's order runs the 512-bit VNNI variant in place of the 256-bit one from this width:
# level on a Zen 4 (double-pumped), twice the work per vpdpbusd on full-width cores (Zen 5,
# Intel); narrower layers ran 20-60% slower on zmm on Zen 4 (README, avx512vnni512)
ZMM_MIN_CHANNELS = 64


def vnni_width(oc: int) -> str:
    """The AVX-512 VNNI variant CPUID's order gives a layer of oc output channels."""
    return "avx512vnni512" if oc >= ZMM_MIN_CHANNELS and oc % 16 == 0 else "avx512vnni"


def plan_layer(layer, graph, opts, own: dict, tuning: dict, at, auto=AUTO, limits: tuple = LIMITS) -> dict:
    g = kernelgen.geometry(layer, graph)
    p = kernelgen.padded(g)
    blk, origin = resolve(layer, graph, opts, own, tuning, limits)
    # layer key > tuning file > target key
    isa = own.get("isa", tuning.get(layer.name, {}).get("isa", opts["kernel"]["isa"]))
    check_blocking(blk, at, isa)
    # a layer's own mr/nr (key or tuning) apply to the vnni variants too; k_unroll as well
    # when one is forced (tune's candidates)
    keyed = {k: blk[k] for k in ("mr", "nr") + (("k_unroll",) if isa in kernelgen.VNNI_ISAS else ())
             if k in own or k in tuning.get(layer.name, {})}
    if isa in kernelgen.VNNI_ISAS:   # mr/nr are the forced vnni variant's; the int16 copy's its model's
        dflt = kernelgen.default_blocking(g["oh"] * g["ow"], g["oc"], p["k2"], limits)
        blk = dict(blk, mr=dflt["mr"], nr=dflt["nr"])
    threads = int(own.get("threads", opts["kernel"]["threads"]))
    if not 1 <= threads <= 64:
        raise UserError(f"{at('threads')}: threads = {threads}: must be between 1 and 64")
    # a small layer gains less from a second thread than the hand-over costs: at most one
    # thread per min_macs_per_thread MACs (unset: every layer gets `threads`)
    requested = threads
    floor = int(own.get("min_macs_per_thread", opts["kernel"].get("min_macs_per_thread", 0)))
    if floor:
        threads = max(1, min(threads, (g["oh"] * g["ow"] * g["oc"] * g["kh"] * g["kw"] * g["ic"]) // floor))
    wm = kernelgen.weight_matrix(layer, graph)
    fb = kernelgen.folded_bias(wm, layer.bias, graph.tensor(layer.inputs[0]).q.zero_point)
    if np.abs(fb).max(initial=0) >= 2 ** 31:
        raise UserError(f"layer '{layer.name}': bias with the input zero point folded in does not fit int32")
    safe = kernelgen.vector_safe(wm, fb)
    if isa not in ("auto", "portable") and not safe:
        raise UserError(f"{at('isa')}: layer '{layer.name}': isa {isa} needs |acc + bias| < 2**31, which its "
                        f"weights do not guarantee; use auto or portable")
    if isa == "auto":
        variants = list(auto) if safe else ["portable"]
        if auto == AUTO and safe:
            variants[0] = vnni_width(g["oc"])
    else:
        variants = [isa]
    for iv in kernelgen.U8_ISAS:     # the variants on the u8 buffer need merged kernel rows
        if iv in variants and not kernelgen.u8_supported(g):
            if isa == iv:
                raise UserError(f"{at('isa')}: layer '{layer.name}': isa {iv} needs column dilation 1")
            variants.remove(iv)
    u8 = dict(kernelgen.U8_BLOCKING, order=blk["order"]) if "avx2u8" in variants else None
    if u8:
        pu = kernelgen.pack_u8(wm, g, u8["nr"])
    vns = {}       # the vnni variants' blockings
    for iv in kernelgen.VNNI_ISAS:
        if iv not in variants:
            continue
        vns[iv] = kernelgen.vnni_blocking(g["oh"] * g["ow"], g["oc"], kernelgen.u8_steps(g),
                                          blk["order"], iv)
        vns[iv].update(keyed)
    nr = blk["nr"]
    npad = kernelgen.panels(g["oc"], nr) * nr
    # the multipliers and shifts every variant's epilogue reads whole panels of: to the widest
    # panel (a vnni variant's 32 channels past 56 read padding, not the next section)
    epad = max([npad] + [kernelgen.panels(g["oc"], b["nr"]) * b["nr"] for b in list(vns.values()) + [u8] if b])
    k2 = p["k2"]
    layout, off = [], 0
    sections = [("weight", "int8", npad * k2 * 2), ("bias", "int32", npad),
                ("mult", "int32", epad), ("shift", "int32", epad)]
    if u8:   # the avx2u8 variant's own weights (with its correction quads) and bias
        sections += [("weight_u8", "int8", pu["weight"].size),
                     ("bias_u8", "int32", kernelgen.panels(g["oc"], u8["nr"]) * u8["nr"]),
                     ("xo", "int32", max(1, pu["xo"].size)), ("xidx", "int32", pu["xidx"].size)]
    # the vnni variants' weights ([K/4][NR][4], no split) and bias: one copy per panel width,
    # which the variants of that width share (a section of the same offset)
    alias = {}
    for iv, vb in vns.items():
        names = kernelgen.U8_VARIANTS[iv]
        same = next((o for o, ob in vns.items() if ob["nr"] == vb["nr"]), iv)
        if same != iv:
            alias[names["weight"]] = kernelgen.U8_VARIANTS[same]["weight"]
            alias[names["bias"]] = kernelgen.U8_VARIANTS[same]["bias"]
            continue
        # no correction quads: the size without packing (packing waits for the WEIGHTS node)
        vnni_bytes = kernelgen.panels(g["oc"], vb["nr"]) * vb["nr"] * kernelgen.u8_steps(g) * 4
        sections += [(names["weight"], "int8", vnni_bytes),
                     (names["bias"], "int32", kernelgen.panels(g["oc"], vb["nr"]) * vb["nr"])]
    wn, why_not = winograd(layer, g, wm, isa, safe, own, tuning, opts, auto)
    if wn:     # its transformed weights ([panel][36][ICP/2][16][2] int16) and per-16 epilogue arrays
        # only: the choice is made at build time (host-measured's too), so no kernel of the
        # image reads the direct kernels' copies (dead bytes in the .bin)
        wd = kernelgen.wino.dims(g)
        sections, alias, u8, vns = [], {}, None, {}
        sections += [("wino_u", "int16", wd["np"] * 36 * wd["icp"] * kernelgen.wino.NR)] + \
            [(k, "int32", wd["np"] * kernelgen.wino.NR) for k in ("wino_bias", "wino_mult", "wino_shift")]
    for section, dtype, count in sections:
        # each section on a cache line of its own (the .bin is linked 64-byte aligned):
        # a kernel's 64-byte weight loads never straddle two lines
        off = -(-off // SECTION_ALIGN) * SECTION_ALIGN
        layout.append((section, dtype, count, off))
        layout += [(a, dtype, count, off) for a, of in alias.items() if of == section]
        off += count * np.dtype(dtype).itemsize

    def pack(layer, graph, layout, nr=nr, seg=p["seg"], g=g):
        wm = kernelgen.weight_matrix(layer, graph)
        n = wm.shape[0]
        fb = kernelgen.folded_bias(wm, layer.bias, graph.tensor(layer.inputs[0]).q.zero_point)
        rq = registry.requant_params(layer, graph)
        arrays = {}
        if not wn:
            arrays = {"weight": kernelgen.pack_weights(kernelgen.segments(wm, g), seg, nr),
                      "bias": np.zeros(npad, np.int64), "mult": np.zeros(epad, np.int64),
                      "shift": np.full(epad, 31, np.int64)}   # padding: a shift the fma epilogue takes (nn_epi_t.fma)
            arrays["bias"][:n] = fb
            arrays["mult"][:n] = rq["mult"]
            arrays["shift"][:n] = rq["shift"]
        if u8:
            pu = kernelgen.pack_u8(wm, g, u8["nr"])
            arrays["weight_u8"] = pu["weight"]
            arrays["bias_u8"] = np.zeros(kernelgen.panels(n, u8["nr"]) * u8["nr"], np.int64)
            arrays["bias_u8"][:n] = kernelgen.bias_u8(wm, fb)
            arrays["xo"] = pu["xo"] if pu["xo"].size else np.zeros(1, np.int64)
            arrays["xidx"] = pu["xidx"]
        for iv, vb in vns.items():
            names = kernelgen.U8_VARIANTS[iv]
            if names["weight"] in alias:
                continue
            arrays[names["weight"]] = kernelgen.pack_u8(wm, g, vb["nr"], split=False)["weight"]
            arrays[names["bias"]] = np.zeros(kernelgen.panels(n, vb["nr"]) * vb["nr"], np.int64)
            arrays[names["bias"]][:n] = kernelgen.bias_u8(wm, fb)
        if wn:
            npw = kernelgen.wino.dims(g)["np"] * kernelgen.wino.NR
            arrays["wino_u"] = kernelgen.wino.pack_u(wm, g)
            for k, src, pad in (("wino_bias", fb, 0), ("wino_mult", rq["mult"], 0), ("wino_shift", rq["shift"], 31)):
                arrays[k] = np.full(npw, pad, np.int64)
                arrays[k][:n] = src
        for a, of in alias.items():
            arrays[a] = arrays[of]
        blob = bytearray(off)
        for section, dtype, count, o in layout:
            raw = np.ascontiguousarray(arrays[section]).astype(np.dtype(dtype).newbyteorder("<")).reshape(-1)
            assert raw.size == count, (section, raw.size, count)
            blob[o:o + raw.nbytes] = raw.tobytes()
        return bytes(blob)

    # the vector epilogue in double: proven exact for every input (kernelgen.f64_safe), else
    # checked for near-ties per vector (nn_avx2_requant8_f64c_i32); TFLite's rule: its own
    # integer epilogue (nn_avx2_tfl8), or its double rule lane by lane (FULLY_CONNECTED)
    rq = registry.requant_params(layer, graph)
    if numerics.graph_rule(graph) == "tflite":
        epilogue = "tfl64" if np.any(np.asarray(rq["shift"]) <= numerics.TFLITE_F64_FLAG) else "tfl"
    else:
        epilogue = "f64" if kernelgen.f64_safe(wm, fb, rq["mult"]) else "f64c"
    spec = {"geom": g, "blocking": blk, "isa": isa, "threads": threads, "variants": variants,
            "epilogue": epilogue, "u8": dict(([("avx2u8", u8)] if u8 else []) + list(vns.items()))}
    if wn:      # the layer runs Winograd only: its variants are the transform's
        spec.update(wino=wn, variants=list(wn["variants"]), u8={})
        variants = list(wn["variants"])
    report = {"blocking": (f"winograd F(4,3) {kernelgen.wino.block(variants[0], wn['band'] * kernelgen.wino.dims(g)['tw'])}t"
                           f" x{16 * min(kernelgen.wino.PANELS.get(variants[0], 1), kernelgen.wino.dims(g)['np'])} band {wn['band']}" if wn else
                           f"{blk['mr']}x{nr} u{blk['k_unroll']} {blk['order']}"),
              "gemm": {"m": g["oh"] * g["ow"], "n": g["oc"], "k": g["kh"] * g["kw"] * g["ic"],
                       "mr": blk["mr"], "nr": nr, "k_unroll": blk["k_unroll"], "order": blk["order"],
                       "origin": origin, "epilogue": epilogue,
                       "isa": isa, "variants": variants, "threads": threads,
                       "threads_requested": requested}}
    report["gemm"]["winograd"] = wn["why"] if wn else why_not
    if vns and not wn:    # the first vnni variant's blocking (avx512vnni's when it is compiled in)
        vb = next(iter(vns.values()))
        report["gemm"]["vnni"] = {"mr": vb["mr"], "nr": vb["nr"]}
    # every compiled variant's own blocking (the vnni ones and avx2u8 have theirs)
    report["gemm"]["variant_blocking"] = {v: {"mr": b["mr"], "nr": b["nr"]} for v, b in
                                          [(v, (u8 if v == "avx2u8" else vns.get(v, blk))) for v in variants]}
    if u8:
        report["gemm"]["u8"] = {"mr": u8["mr"], "nr": u8["nr"], "correction_quads": int(pu["xo"].size),
                                "quads": int(kernelgen.panels(g["oc"], u8["nr"]) * kernelgen.u8_steps(g))}
    return {"spec": spec, "layout": layout, "pack": pack,
            "pack_key": {"nr": nr, "seg": p["seg"], "ntaps": p["ntaps"], "u8": u8,
                         "vnni_nr": {iv: vb["nr"] for iv, vb in vns.items()}},   # its packing depends on nr only
            "report": report}


# ---- exact Winograd F(4,3) for 3x3 stride-1 convs (kernelgen.wino) ------------------------

def winograd_pays(g: dict) -> bool:
    """The cost rule of an unset `winograd` key, fitted on a Zen 4 (family 25 model 17; the
    ratios Winograd / direct of README "winograd"): the transformed weights, 36 x IC x OC
    int16 (8x the direct kernel's bytes), streamed once per band, must stay within a few MiB
    (ResNet-18 with the zmm variant: 56x56x64 0.73, 28x28x128 0.62, 14x14x256 0.84 -- its 4.5
    MiB, where a layer's l1_budget holds one tile row's V, 73,728 B --, 7x7x512's 18 MiB 2.4
    with ymm), and the per-tile transforms and the GEMM's K need enough input channels to
    amortise (ResNet-8: 32x32 16 -> 16 1.04-1.07, 16x16x32 0.88, 8x8x64 0.71; 56x56 IC -> OC
    with zmm: 16 -> 32 1.04, 16 -> 64 0.98, 24 -> 64 0.82, 64 -> 16 0.83)."""
    tiles = -(-g["oh"] // 4) * -(-g["ow"] // 4)
    return g["ic"] >= 24 and g["oc"] >= 16 and tiles >= 4 and 72 * g["ic"] * g["oc"] <= 5 * 1024 * 1024


def winograd_key(layer, own: dict, tuning: dict, opts: dict):
    """The `winograd` key in force for a layer (layer > tuning entry > target), None if unset."""
    return own.get("winograd", tuning.get(layer.name, {}).get("winograd", opts["kernel"].get("winograd")))


def winograd(layer, g: dict, wm, isa: str, safe: bool, own: dict, tuning: dict, opts: dict, auto) -> tuple:
    """({variants, band, why} or None, why not) of a layer: the layer key `winograd` > its
    tuning entry > the target's kernel.winograd: true where the layer allows it, false never,
    unset the cost rule (x86-64 only)."""
    from ...kernelgen import wino, winomath
    if not wino.supports(g):
        return None, None
    mode = winograd_key(layer, own, tuning, opts)
    if mode is False:
        return None, "off (winograd key)"
    if isa != "auto" and isa not in wino.VARIANTS:
        return None, f"not with isa {isa}"
    if not safe:
        return None, "|acc + bias| < 2**31 not proven (portable direct kernel)"
    if not winomath.bound_ok(wm):
        return None, "128 * max sum|w| >= 2**25: y not recoverable from 576*y mod 2**32"
    budget = int(own.get("l1_budget", opts["tiling"]["l1_budget"]))
    row = wino.row_bytes(g)
    if row > budget:    # the layer's budget bounds V as it bounds the direct kernel's band buffer
        return None, f"one tile row's transformed input is {row} B, over the l1_budget {budget} B"
    if mode is None and isa != "auto":     # a forced isa names the direct kernel's variant
        return None, f"isa {isa} forced (winograd: true runs its Winograd variant)"
    if mode is None and not ("avx2" in auto and winograd_pays(g)):
        return None, "cost rule: direct"
    # under isa auto the transform's variants in the order given (a measured one first); the
    # CPUID order runs the zmm one where AVX-512 VNNI is (wino.CPUID: it measured faster)
    order = [v for v in (wino.CPUID if auto == AUTO else auto) if v in wino.VARIANTS]
    variants = order + [v for v in wino.FALLBACK if v not in order and not (
        v == "avx512vnni" and "avx512vnni512" in order)] if isa == "auto" else [isa]
    return {"variants": variants, "band": wino.band_rows(g, budget),
            "why": "winograd key" if mode else "cost rule"}, None


# ---- residual add fused into the conv epilogue -----------------------------------------

def fuse_residual_adds(graph) -> tuple:
    """Plan-level fusion of a residual add into the generated conv that produces one of its
    operands: (the graph the target runs, {conv name: the add layer}).

    An add fuses into the producer P of one operand when P is a generated conv/linear
    (kernelgen.supports), P's output is read by that add only (and is not the network's
    output), and the other operand exists when P runs (the network input or the output of
    a layer before P).  Of two candidates the later producer wins (ResNet's downsample
    block: the add goes into the 1x1 downsample conv, the 3x3 conv's output is ready).
    The fused layer keeps P's name and weights, reads [P's input, the other operand],
    writes the add's output tensor (so it is checked against the add's golden; P's own
    output is no longer materialised) and lists the add in `fused`.  The buffer plan is
    made on the returned graph.  The add's arithmetic is unchanged (nn_res_add): the conv's
    int8 result, then the add's rule exactly."""
    from dataclasses import replace
    tflite = numerics.graph_rule(graph) == "tflite"
    fusions = residual.first_free(residual.candidates(graph, OPS, generated), graph.layers,
                                  # TFLite's SUB is not the fused epilogue's
                                  lambda add, p: not (tflite and add.attrs.get("sub")))
    into = {add.name: p for p, (add, _) in fusions.items()}
    if not fusions:
        return graph, {}
    layers = []
    for l in graph.layers:
        if l.name in into:
            continue
        if l.name in fusions:
            add, k = fusions[l.name]
            l = replace(l, inputs=[l.inputs[0], add.inputs[1 - k]], output=add.output,
                        fused=list(l.fused) + [add.name] + list(add.fused))
        layers.append(l)
    fused = replace(graph, layers=layers)
    return fused, {name: add for name, (add, _) in fusions.items()}


def residual_spec(conv, add, graph) -> dict:
    """The fused add's constants for the conv's generated epilogue (kernelgen: nn_res_init)."""
    rq = registry.requant_params(add, graph)
    k = add.inputs.index(conv.output)
    zp = {t: graph.tensor(t).q.zero_point for t in add.inputs}
    spec = {"name": add.name, "conv_zp": int(graph.tensor(conv.output).q.zero_point),
            "mult_conv": int(rq["mult"][k]), "zp_other": int(zp[add.inputs[1 - k]]),
            "mult_other": int(rq["mult"][1 - k]), "shift": int(rq["shift"][0]),
            "zp": int(graph.tensor(add.output).q.zero_point), "act": [int(add.act_min), int(add.act_max)]}
    if numerics.graph_rule(graph) == "tflite":     # TFLite's ADD: three multipliers, exponents
        e = [int(x) + numerics.TFLITE_SHIFT_BIAS for x in rq["shift"]]
        spec["tflite"] = {"e_conv": e[k], "e_other": e[1 - k], "mult_out": int(rq["mult"][2]), "e_out": e[2]}
    return spec
