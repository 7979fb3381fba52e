"""Winograd or the direct kernel, timed where the cost rule cannot tell (`kernel.choose: auto`,
the host's default).

The cost rule (gemm.winograd_pays) runs a 3x3 stride-1 conv as Winograd F(4,3) when its
transformed weights U (int16, 8x the direct kernel's bytes) are at most 5 MiB.  Whether that
pays depends on how fast this core streams U from beyond its L2: on a Zen 4 ResNet-18's
layer3 (4.7 MB of U) ran 0.84x the direct kernel's time, on an Intel Xeon (family 6 model
207, 2 MiB L2) 1.6x.  So where U overflows this core's L2 (sysfs; unknown counts as
overflowing), the layer is timed both ways, as `kernel.choose: measure` times variants: one
standalone program each (the layer's own source and weights, one thread, process CPU time,
ROUNDS alternated rounds), each running the kernel its dispatch picks on this CPU (by
/proc/cpuinfo's flags, forced by its index).  The
faster one is built.  The result is cached in the variant cache (one entry per pair of
shape keys) so later builds do not time it again.  Only on platform native: under qemu
the firmware runs as another CPU.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile

from ... import kernelgen
from ...cpuinfo import cpu_info, l2_bytes
from . import measure


def uncertain(spec: dict, opts: dict) -> bool:
    """A layer the cost rule ran as Winograd whose U overflows this core's L2, on this machine."""
    gm = spec["gemm"]
    if not gm.get("wino") or gm["wino"].get("why") != "cost rule":
        return False
    if opts["run"].get("platform", "native") != "native" or "build" not in opts:
        return False
    l2 = l2_bytes()
    return l2 is None or kernelgen.wino.u_bytes(gm["geom"]) > l2


def _timed(name: str, kernels: dict, info: dict, opts: dict) -> dict:
    """kernels: {label: (plan_layer result, spec, the original layer, the graph)}: each timed as
    its own program on one thread; the cache entry."""
    runs = {}
    with tempfile.TemporaryDirectory(prefix="nnscons-variants-") as work:
        for label, (g, spec, orig, graph) in kernels.items():
            one = dict(spec, gemm=dict(spec["gemm"], threads=1))     # one core's speed
            blob = g["pack"](orig, graph, g["layout"])
            cmd = measure.program(one, blob, kernelgen.scratch(one)["bytes"], work, label, opts["toolchain"]["cc"])
            # the variant the layer's dispatch runs on this CPU, forced by its index (as /proc/cpuinfo says)
            ran = measure.running(spec["gemm"]["variants"], info)
            runs[label] = (cmd + [str(spec["gemm"]["variants"].index(ran))], (ran, "wino-" + ran))
        med = measure.alternate(name, runs, opts["run"]["timeout"])
    return {"layer": name, "median_ms": med, "best": min(med, key=lambda k: (med[k], k)), "skipped": {},
            "threads": 1, "clock": "process CPU time"}


def settled(layer, orig, graph, g: dict, spec: dict, build, own: dict, opts: dict) -> tuple:
    """(plan_layer result, spec) of a layer under `choose: auto`: as planned, or, where the
    cost rule's Winograd is uncertain here, the faster of it and the direct kernel."""
    if not uncertain(spec, opts):
        return g, spec
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
