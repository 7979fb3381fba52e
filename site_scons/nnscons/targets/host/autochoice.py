"""What CPUID's order and the cost rules cannot settle, timed on this CPU (`kernel.choose:
auto`, the host's default); the rest of a layer's plan is CPUID's.

Two questions, each timed as `kernel.choose: measure` times variants (standalone programs of
the layer's own source and weights, one thread, process CPU time, ROUNDS alternated rounds,
the kernel forced by its index) and cached in the variant cache, so later builds time
nothing.  Only on platform native (under qemu the firmware runs as another CPU).

- Winograd or the direct kernel.  The cost rule (gemm.winograd_pays) runs a 3x3 stride-1
  conv as Winograd F(4,3) when its transformed weights U (int16, 8x the direct kernel's
  bytes) are at most 5 MiB.  Whether that pays depends on how fast this core streams U from
  beyond its L2: on a Zen 4 ResNet-18's layer3 (4.7 MB of U) ran 0.84x the direct kernel's
  time, on an Intel Xeon (family 6 model 207, 2 MiB L2) 2x.  Where U overflows this core's
  L2 (sysfs; unknown counts as overflowing) both are timed, each the variant its dispatch
  runs here (/proc/cpuinfo's flags), and the faster is built.
- avx2u8 or avx2, on a CPU without VNNI (the dispatch runs avx2): the exact vpmaddubsw
  variant is faster on some layers and slower on others (its correction quads depend on the
  weights; ResNet-18 on an Intel Xeon as an AVX2-only CPU: 0.80 of onnxruntime with every
  direct layer's better one, 0.85 with avx2 alone).  Layers of at least MIN_MACS are timed
  both ways; the faster goes first in the dispatch order.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile

from ... import kernelgen
from ...cpuinfo import cpu_info, l2_bytes
from . import measure


MIN_MACS = 5_000_000      # a layer whose avx2 / avx2u8 choice is timed (smaller ones: a few us)


def _native(opts: dict) -> bool:
    return opts["run"].get("platform", "native") == "native" and "build" in opts


def uncertain(spec: dict, opts: dict) -> bool:
    """A layer the cost rule ran as Winograd whose U overflows this core's L2, on this machine."""
    gm = spec["gemm"]
    if not gm.get("wino") or gm["wino"].get("why") != "cost rule" or not _native(opts):
        return False
    l2 = l2_bytes()
    return l2 is None or kernelgen.wino.u_bytes(gm["geom"]) > l2


def u8_open(spec: dict, macs: int, opts: dict, info: dict) -> bool:
    """A direct layer of at least MIN_MACS under isa auto whose dispatch runs avx2 here (no
    VNNI) and which can hold avx2u8."""
    gm = spec["gemm"]
    return (not gm.get("wino") and gm["isa"] == "auto" and macs >= MIN_MACS and _native(opts)
            and measure.running(gm["variants"], info) == "avx2" and kernelgen.u8_supported(gm["geom"]))


def alone(spec: dict, variant: str) -> dict:
    """The layer's spec on one thread (one core's speed) with only `variant`, the one its
    dispatch runs here: the timing program compiles that variant's kernels alone (all of a
    layer's variants took gcc 1.4-2.3 s per program, a cold ResNet-18 plan 7 s)."""
    gm = dict(spec["gemm"], threads=1, variants=[variant])
    if gm.get("wino"):
        gm["wino"] = dict(gm["wino"], variants=[variant])
    if gm.get("u8"):
        gm["u8"] = {iv: b for iv, b in gm["u8"].items() if iv == variant}
    return dict(spec, gemm=gm)


def _timed(name: str, kernels: dict, info: dict, opts: dict) -> dict:
    """kernels: {label: (plan_layer result, spec, the original layer, the graph)}: each timed as
    its own program on one thread, the programs compiled side by side; the cache entry."""
    from concurrent.futures import ThreadPoolExecutor
    with tempfile.TemporaryDirectory(prefix="nnscons-variants-") as work:
        def compiled(label):
            g, spec, orig, graph = kernels[label]
            # the variant the layer's dispatch runs on this CPU (as /proc/cpuinfo says)
            ran = measure.running(spec["gemm"]["variants"], info)
            one = alone(spec, ran)
            blob = g["pack"](orig, graph, g["layout"])
            cmd = measure.program(one, blob, kernelgen.scratch(one)["bytes"], work, label, opts["toolchain"]["cc"])
            return label, (cmd + ["0"], (ran, "wino-" + ran))
        with ThreadPoolExecutor(max_workers=len(kernels)) as pool:
            runs = dict(pool.map(compiled, list(kernels)))
        med = measure.alternate(name, runs, opts["run"]["timeout"])
    return {"layer": name, "median_ms": med, "best": min(med, key=lambda k: (med[k], k)), "skipped": {},
            "threads": 1, "clock": "process CPU time"}


def settled(layer, orig, graph, g: dict, spec: dict, build, own: dict, opts: dict, macs: int) -> tuple:
    """(plan_layer result, spec) of a layer under `choose: auto`: as planned, or as the
    timings above decide."""
    if uncertain(spec, opts):
        g, spec = _winograd_or_direct(layer, orig, graph, g, spec, build, own, opts)
        if not spec["gemm"].get("wino"):        # measured slower: the direct kernel from here on
            own = dict(own, winograd=False)
    if u8_open(spec, macs, opts, cpu_info()):
        why, before = g["report"]["gemm"]["winograd"], g["report"]["gemm"].get("choice", {})
        g, spec = _u8_or_avx2(layer, orig, graph, g, spec, build, own, opts)
        g["report"]["gemm"]["winograd"] = why
        g["report"]["gemm"]["choice"] = {**before, **g["report"]["gemm"]["choice"]}
    return g, spec


def _u8_or_avx2(layer, orig, graph, g: dict, spec: dict, build, own: dict, opts: dict) -> tuple:
    """The layer's avx2u8 and avx2 variants timed: the faster first in its dispatch order."""
    g2, spec2 = build(own=own, auto=("avx2u8", "avx2"))
    if spec2["gemm"]["variants"] != ["avx2u8", "avx2"]:
        return g, spec
    info = cpu_info()
    path = measure.cache_path(opts["build"]["dir"], info)
    entries = measure.load(path, info)
    quads = g2["report"]["gemm"].get("u8", {}).get("correction_quads")
    key = "u8-" + measure.shape_key(spec2["gemm"], quads)
    entry = entries.get(key)
    if not entry or set(entry["median_ms"]) != {"avx2u8", "avx2"}:
        one = dict(spec2, gemm=dict(spec2["gemm"], threads=1))     # one core's speed
        blob = g2["pack"](orig, graph, g2["layout"])
        entry = measure.time_variants(layer.name, (one, blob, kernelgen.scratch(one)["bytes"]), info,
                                      opts["toolchain"]["cc"], opts["run"]["timeout"])
        entries[key] = entry
        measure.save(path, info, entries)
        print(f"VARIANTS {layer.name}: " + ", ".join(f"{v} {ms:.4f} ms" for v, ms in entry["median_ms"].items())
              + f" -> {entry['best']}")
    if entry["best"] == "avx2u8":
        g, spec = build(own=own, auto=tuple(["avx2u8"] + spec["gemm"]["variants"]))
    g["report"]["gemm"]["choice"] = {"by": "measure", "median_ms": entry["median_ms"], "skipped": {},
                                     "cache": os.path.relpath(path, opts["build"]["dir"])}
    return g, spec


def _winograd_or_direct(layer, orig, graph, g: dict, spec: dict, build, own: dict, opts: dict) -> tuple:
    """The cost rule's Winograd layer against its direct kernel: the faster one."""
    g_d, spec_d = build(own=dict(own, winograd=False))
    info = cpu_info()
    path = measure.cache_path(opts["build"]["dir"], info)
    entries = measure.load(path, info)
    quads = g_d["report"]["gemm"].get("u8", {}).get("correction_quads")
    key = "wd-" + hashlib.sha1(json.dumps([measure.shape_key(spec["gemm"], None),
                                           measure.shape_key(spec_d["gemm"], quads)]).encode()).hexdigest()[:16]
    entry = entries.get(key)
    if not entry or set(entry["median_ms"]) != {"winograd", "direct"}:
        entry = _timed(layer.name, {"winograd": (g, spec, orig, graph), "direct": (g_d, spec_d, orig, graph)},
                       info, opts)
        entries[key] = entry
        measure.save(path, info, entries)
        ms = entry["median_ms"]
        print(f"WINOGRAD {layer.name}: winograd {ms['winograd']:.4f} ms, direct {ms['direct']:.4f} ms -> "
              f"{entry['best']} (its transformed weights, {kernelgen.wino.u_bytes(spec['gemm']['geom'])} B, "
              f"overflow this core's L2)")
    ms = entry["median_ms"]
    won = (g, spec) if entry["best"] == "winograd" else (g_d, spec_d)
    won[0]["report"]["gemm"]["winograd"] = (f"measured {'faster' if entry['best'] == 'winograd' else 'slower'}"
                                            f" ({ms['winograd']} ms against direct {ms['direct']} ms)")
    won[0]["report"]["gemm"]["choice"] = {"by": "measure", "winograd_ms": ms["winograd"], "direct_ms": ms["direct"],
                                          "cache": os.path.relpath(path, opts["build"]["dir"])}
    return won
