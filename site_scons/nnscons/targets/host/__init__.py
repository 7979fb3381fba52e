"""The `host` target: C kernels built with the machine's C compiler and run natively (or under
qemu-x86_64 as another x86-64 CPU: platform qemu).

Activations are HWC int8 in one arena.  Conv (groups 1) and linear layers get generated
BRGEMM microkernels (nnscons.kernelgen: portable C, AVX2 and AVX-512 VNNI, chosen from CPUID at run
time or forced with `isa`), blocked per layer (`mr`, `nr`, `k_unroll`; cost model by
default, or a tuning file) and run on `threads` threads.  Convs and pools run in row bands
whose height comes from the layer's `l1_budget` (a conv's band is its int16 input buffer),
so tile settings are real and tested here.
"""
from __future__ import annotations

import os
import platform as _platform

from ...resources import data_path

from ...errors import UserError
from ...planning.buffers import plan_buffers
from .. import base, library
from ... import kernelgen
from . import dwtables, gemm, measure, autochoice
from . import tool  # noqa: F401  (the kind's SCons Tool: builders and the run step)
from .tool import check_tools  # noqa: F401  (the kind's hook: its compiler is here)
from .nodes import declare_nodes  # noqa: F401  (the kind's node hook)
from .ops import DEPTHWISE_CONV, OPS, depthwise, layer_spec
from .schema import SCHEMA  # noqa: F401  (the kind's manifest keys)

ADDRESSABLE = 1 << 47
# how long a waiting worker thread (and the caller waiting for the workers) polls before it
# sleeps (kernels/common/nn_threads.c); README "threads"
SPIN_US = 200
ISA_CODES = {"auto": 0, "portable": 1, "avx2": 2, "avx2u8": 2, "avx512vnni": 3, "avx512vnni512": 3, "avxvnni": 2}
TEMPLATES = data_path("templates", "host")

DEFAULTS = {
    "toolchain": {"cc": "gcc", "cflags": ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror"],
                  "ldflags": []},
    "memory": {"l1": 128 * 1024, "l2": 256 * 1024 * 1024},
    # 72 KiB: one Winograd tile row of 256 or 512 channels (73,728 B: ResNet-18's layer3 and 4)
    "tiling": {"l1_budget": 72 * 1024},
    "kernel": {"isa": "auto", "threads": 1, "spin_us": SPIN_US},
    # platform qemu: the firmware under qemu-x86_64 -cpu <cpu> (qemu-user), as an x86-64 CPU
    # this machine is not: EPYC-Rome (Zen 2) has AVX2 and no AVX-512, qemu64 only SSE2
    "run": {"platform": "native", "timeout": 600, "iterations": 0, "cpu": "EPYC-Rome",
            "qemu": "qemu-x86_64"},
}


def options(target_cfg) -> dict:
    """The target's sections with defaults filled in."""
    return base.merged_options(DEFAULTS, target_cfg)


def resolve_platform(opts, target_name, explicit) -> str:
    """qemu-x86_64 runs x86-64 programs: the firmware this machine's compiler makes must be one."""
    p = opts["run"]["platform"]
    if p == "qemu" and _platform.machine() not in ("x86_64", "AMD64"):
        raise UserError(f"target '{target_name}': platform=qemu runs the firmware under qemu-x86_64 "
                        f"as another x86-64 CPU, but this machine ({_platform.machine()}) compiles "
                        f"for itself; use platform=native")
    return p


def plan(graph, cnames: dict, opts: dict, overrides: dict, where, auto=gemm.AUTO, isa_codes=None,
         kind: str = "host", fuse_residual: bool | None = None) -> base.TargetPlan:
    """overrides: {layer name: {key: value}}; where(layer, *keys) -> 'targets.yaml:N: key.path'
    (layer None: keys under targets.<t>; else under the model's overrides of that layer).
    fuse_residual (default: kinds host and arm64): residual adds fused into the generated
    conv before them (gemm.fuse_residual_adds); the plan's layers and buffers follow the
    fused graph."""
    l1_size = opts["memory"]["l1"]
    # the cost model's register limits: this machine's core for the host (it runs here),
    # the defaults for a kind that reuses this plan (arm64 cross-builds for another CPU)
    limits = kernelgen.core_limits() if kind == "host" else gemm.LIMITS
    for mem in ("l1", "l2"):     # a 64-bit user address space is 2^47 bytes
        if opts["memory"][mem] > ADDRESSABLE:
            raise UserError(f"{where(None, 'memory', mem)}: memory.{mem} = {opts['memory'][mem]} B is more than "
                            f"a process can address ({ADDRESSABLE} B); give the size this machine has")
    default_budget = opts["tiling"]["l1_budget"]
    if default_budget > l1_size:
        raise UserError(f"{where(None, 'tiling', 'l1_budget')}: l1_budget {default_budget} B exceeds the "
                        f"target's L1 size memory.l1 = {l1_size} B")
    # auto: the generated kernels' ISA variants under `isa: auto`, best first; isa_codes:
    # the vector element-wise kernels' codes (nn_simd.h) per isa name (a kind reusing this
    # plan on another architecture, e.g. arm64, passes its own)
    isa_codes = isa_codes or ISA_CODES
    model = library.c_model_name(graph.name)
    layers, kernels, calls = [], set(), set()
    tuning = gemm.load_tuning(opts["kernel"].get("tuning"), where(None, "kernel", "tuning"), graph.name)
    # the variant order of `isa: auto` layers: measured on this CPU (cached in the build
    # tree, targets/host/measure.py) or CPUID's
    choose = opts["kernel"].get("choose", "auto")
    plan_inputs = set()
    source = graph
    if fuse_residual if fuse_residual is not None else kind in ("host", "arm64"):
        graph, fusions = gemm.fuse_residual_adds(source)
    else:
        fusions = {}
    for layer in graph.layers:
        impl = OPS.get(layer.op)
        dw = depthwise(layer, graph)
        if getattr(impl, "variant", None):
            impl = impl.variant(layer, graph) or impl
        if impl is None:
            raise base.unsupported(layer, kind, OPS)
        if impl.check and (reason := impl.check(layer, graph)):
            raise UserError(f"layer '{layer.name}': {reason} (target kind '{kind}')")
        budget, budget_at = base.layer_key(layer.name, "l1_budget", opts, overrides, where, "tiling",
                                           l1_size, f"the target's L1 size memory.l1 = {l1_size} B")
        if gemm.generated(layer):
            # a fused layer's weights and requantization are its conv's (the original layer)
            orig = next(l for l in source.layers if l.name == layer.name) if layer.name in fusions else layer
            own = overrides.get(layer.name, {})

            def build(own=own, auto=auto, layer=layer, orig=orig, budget=budget, budget_at=budget_at):
                g = gemm.plan_layer(orig, source, opts, own, tuning,
                                    base.layer_key_at(layer.name, overrides, where, "kernel"), auto=auto,
                                    limits=limits)
                if layer.name in fusions:
                    add = fusions[layer.name]
                    g["spec"]["residual"] = gemm.residual_spec(orig, add, source)
                    g["report"]["gemm"]["residual"] = add.name
                    g["report"]["blocking"] += " +add"
                    g["pack"] = lambda _l, gr, lay, _p=g["pack"], _o=orig: _p(_o, gr, lay)
                spec = layer_spec(layer, graph, cnames[layer.name], g["layout"], budget, budget_at)
                spec["symbol"] = f"nns_{model}_{cnames[layer.name]}"
                spec["gemm"] = dict(g["spec"], band=spec["tile"]["tile_oh"] if "tile" in spec else 1)
                return g, spec

            g, spec = build()
            if choose == "measure" and kind == "host":
                g, spec = measure.chosen(layer, orig, source, g, spec, build, own, tuning, opts)
            elif choose == "auto" and kind == "host":     # timed where CPUID and the cost rule cannot tell
                g, spec = autochoice.settled(layer, orig, source, g, spec, build, own, opts, base.macs(layer, graph))
            if "choice" in g["report"].get("gemm", {}):
                    plan_inputs.add(os.path.join(opts["build"]["dir"], g["report"]["gemm"]["choice"]["cache"]))
            layout = g["layout"]
        else:
            g = None
            layout = base.param_layout(layer, graph)
            if dw and kind == "host":       # the VNNI and AVX2 kernels' tables (nn_dw_vnni.c, nn_simd.c)
                layout = dwtables.dw_tables_layout(layer, graph, layout)
            spec = layer_spec(layer, graph, cnames[layer.name], layout, budget, budget_at)
        spec["symbol"] = f"nns_{model}_{cnames[layer.name]}"
        report = {"l1_budget": budget}
        if getattr(impl, "isa", False):              # vectorized kernels: nn_simd.c
            spec["isa"] = isa_codes.get(overrides.get(layer.name, {}).get("isa", opts["kernel"]["isa"]), 1)
            if dw and not dwtables.depthwise_vector_safe(layer):
                spec["isa"] = isa_codes["portable"]
            if dw and kind == "host":   # its dispatch order (nn_dwconv_band_fast): bench and the report say
                report["depthwise"] = {"variants": dwtables.dw_variants(layer, graph, spec["isa"])}
        if g is not None:
            report.update(g["report"])
            if "gemm" in report:     # how its threads share it (kernelgen.thread_split)
                split = kernelgen.thread_split(spec["gemm"])
                report["gemm"]["split"] = {"rows": split["rows"], "panels": split["panels"]}
        spec["scratch_at"], spec["scratch"] = scratch(spec, impl)
        if (dw and kind == "host" and choose == "measure" and spec["isa"] == isa_codes["auto"]
                and len(report["depthwise"]["variants"]) > 1 and "build" in opts):
            # the depthwise kernels timed on this CPU as the generated layers' variants are
            spec["isa"], choice = measure.chosen_depthwise(
                layer.name, spec, report["depthwise"]["variants"], dwtables.pack_depthwise(layer, graph, layout), opts)
            report["depthwise"] = {"variants": dwtables.dw_variants(layer, graph, spec["isa"]), "choice": choice}
            plan_inputs.add(os.path.join(opts["build"]["dir"], choice["cache"]))
        layers.append(base.LayerPlan(layer=layer, cname=cnames[layer.name], template=impl.template,
                                     kernels=impl.kernels, spec=spec, param_layout=layout,
                                     macs=base.macs(layer, graph),
                                     param_bytes=base.layout_bytes(layout),
                                     pack=g["pack"] if g else dwtables.pack_depthwise if dw else gemm.pack_hwc,
                                     pack_key=g["pack_key"] if g else None, report=report))
        kernels.update(impl.kernels)
        calls |= base.template_calls(TEMPLATES, impl.template)
    kernels = base.with_kernel_dependencies(kernels, calls)
    buffers = plan_buffers(graph)
    if buffers["arena_size"] > opts["memory"]["l2"]:
        raise UserError(f"{where(None, 'memory', 'l2')}: activations need {buffers['arena_size']} B, more than "
                        f"memory.l2 = {opts['memory']['l2']} B of target kind '{kind}'")
    network = network_spec(graph, layers, buffers, library.spec(graph, "hwc", model))
    network["spin_us"] = opts["kernel"].get("spin_us", SPIN_US)   # arm64 reuses this plan
    if not 0 <= network["spin_us"] <= 1000000:
        raise UserError(f"{where(None, 'kernel', 'spin_us')}: spin_us = {network['spin_us']}: must be between "
                        f"0 (sleep at once) and 1000000 microseconds")
    return base.TargetPlan(layers=layers, network=network, kernels=sorted(kernels),
                           templates_dir=TEMPLATES, network_files=_network_files(network, layers),
                           layout="hwc", tensor_layouts=base.flattened_layouts(graph),
                           columns=[("tiles", "n_tiles"), ("blocking", "blocking")],
                           extra={"library": library.files(model), "weights_py": gemm.weights_py(),
                                  "plan_inputs": sorted(plan_inputs),
                                  "link_libs": ["pthread", "m"]})


ALIGN = 64          # the arena's alignment (init aligns it) and its regions
POOL_BYTES = 1024   # a worker pool (kernels/common/nn_threads.h NN_POOL_BYTES)


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def scratch(spec: dict, impl) -> tuple:
    """Where the layer's scratch parts sit in the arena's scratch region, and its bytes: the
    generated kernels' band buffers (kernelgen.scratch); the depthwise kernel's int16 band
    and repacked weights; a row-band kernel's L1 input and output bands."""
    from ... import kernelgen
    if "gemm" in spec:
        sc = kernelgen.scratch(spec)
        return {k: v for k, v in sc.items() if k != "bytes"}, sc["bytes"]
    if impl is DEPTHWISE_CONV:
        i, o = spec["inputs"][0], spec["out"]
        (kh, kw), (sh, sw), (dh, dw) = spec["kernel"], spec["stride"], spec["dilation"]
        wp = max(i["w"] + spec["pads"][1], (o["w"] - 1) * sw + (kw - 1) * dw + 1)
        band_in = (spec["tile"]["tile_oh"] - 1) * sh + (kh - 1) * dh + 1
        buf = _align((band_in * wp * i["c"] + 16) * 2)    # + 16: the AVX2 kernel's last reads
        wq = buf + _align(((i["c"] // 16) * ((kh * kw + 1) // 2) * 32 + 1) * 2)
        vq = dwtables.dw_vnni_geometry(i["c"], o["w"], (kh, kw), (sh, sw), (dh, dw))["bytes"]
        return {"buf": 0, "wq": buf, "vq": wq, "vq_bytes": vq}, wq + _align(vq)
    if "tile" in spec and getattr(impl, "bands", False):
        t = spec["tile"]
        return {"l1_in": 0, "l1_out": _align(t["l1_in"])}, _align(t["l1_in"]) + _align(t["l1_out"])
    return {}, 0


def arena_plan(activations: int, layers) -> dict:
    """The arena: the activations, the scratch region (the largest layer's: layers run one
    after the other), the worker pool when a layer runs on several threads, and the slack
    init needs to align an arena given at any address."""
    scratch_offset = _align(activations)
    scratch_bytes = _align(max([lp.spec.get("scratch", 0) for lp in layers] + [0]))
    threads = max([lp.spec.get("gemm", {}).get("threads", 1) for lp in layers] + [1])
    pool_offset = scratch_offset + scratch_bytes
    pool_bytes = POOL_BYTES if threads > 1 else 0
    return {"scratch_offset": scratch_offset, "scratch_bytes": scratch_bytes, "pool_offset": pool_offset,
            "pool_bytes": pool_bytes, "threads": threads, "total": pool_offset + pool_bytes + ALIGN - 1}


def _network_files(network, layers):
    """The library's sources and files, the harness, and per layer with parameters the
    assembly file that links its weights .bin in."""
    lib = network["lib"]
    return (library.generated_files(lib, TEMPLATES, network["total"], layers, "network.c.j2", network,
                                    link_libs=["pthread", "m"])   # the threads of threads: N; libm: pow, sqrt
            + [("src/main.c", "main.c.j2", {"lib": lib, "bins": library.harness_bins()})]
            + library.weights_files(lib, TEMPLATES, layers, align=gemm.SECTION_ALIGN))


def network_spec(graph, layers, buffers, lib) -> dict:
    """The library source's spec: layer order and names, buffer offsets, the library's
    facts (sizes, shapes, quantization of input and output); no weights, no tiling."""
    t = buffers["tensors"]
    lib = dict(lib, arena_align=ALIGN,
               context=[{"decl": "struct nn_pool *pool", "what": "the worker threads (NULL: the caller's thread only)"}])
    return {
        "lib": lib,
        "arena_size": buffers["arena_size"],
        **arena_plan(buffers["arena_size"], layers),
        # each input's and output's arena slot and its offset in the packed buffer
        "inputs": [dict(t[n], packed=io["offset"]) for n, io in zip(graph.inputs, lib["inputs"])],
        "outputs": [dict(t[n], packed=io["offset"]) for n, io in zip(graph.outputs, lib["outputs"])],
        "layers": [{"cname": lp.cname, "name": lp.layer.name, "symbol": lp.spec["symbol"],
                    "inputs": [t[i]["offset"] for i in lp.layer.inputs],
                    "output": t[lp.layer.output],
                    "params_bytes": lp.param_bytes}
                   for lp in layers],
    }
