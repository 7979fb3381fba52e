"""The `gap9` target: PMSIS C for GreenWaves GAP9 (fabric controller + 8-core cluster).

Per layer the cluster runs one kernel over L1 tiles moved by the cluster DMA, double
buffered; activations are HWC in L2, planned by liveness; big weights live in L3 and are
staged to L2 slab by slab with the next slab prefetched (pi_cl_ram_read). The same
generated sources build for three platforms:
  gvsoc  the GAP SDK's compiler and gvsoc (through the SDK's Makefile rules)
  emul   natively against the PMSIS emulation in kernels/gap9/emul (threads, capped L1,
         DMA that lands at wait)
  qemu   rv32 cross-compiled with Debian's riscv64-unknown-elf-gcc, on qemu-system-riscv32
  gvsoc-gap9  the same cross compiler and a bare-metal runtime (baremetal.py) on GreenWaves'
         GVSoC model of GAP9 (9 cores, 128 KiB L1, no L3), with per-layer cycles and TCDM contention
Other PULP cluster chips reuse this code as kinds of their own: what differs is data, a Chip
(chip.py: defaults, platforms, bare-metal simulators) that options, plan and the nodes read.
"""
from __future__ import annotations

import os

from ...errors import UserError
from ...resources import data_path, data_relative
from ... import ops as nnsops
from .. import base, library
from ... import binfiles
from . import baremetal, gvsoc_gap9, layerwise, memory, ne16_layer, ops, platforms, residual
from .platforms import check_tools  # noqa: F401  (the kind's hook: what to install for the platform)
from .chip import Chip
from . import tool  # noqa: F401  (the kind's SCons Tool: builders and the run step)
from .nodes import declare_nodes  # noqa: F401  (the kind's node hook)
from .schema import SCHEMA  # noqa: F401  (the kind's manifest keys)

TEMPLATES = data_path("templates", "gap9")
# the modules the WEIGHTS nodes' bytes depend on
WEIGHTS_PY = ("ops.py", "conv_paths.py", "ne16_layer.py", "ne16_geometry.py", "ne16_weights.py")


DEFAULTS = {
    # emul compiles with the machine's C compiler; gvsoc and qemu bring their own
    "toolchain": {"cc": "gcc", "cflags": ["-std=gnu99", "-O2", "-Wall", "-Wextra", "-Werror"],
                  "ldflags": []},
    "memory": {"l1": 128 * 1024, "l1_reserved": 8 * 1024 + 8 * 1024, "l2": 1536 * 1024,
               "l2_reserved": 64 * 1024, "l3_device": "ram", "l3_size": 32 * 1024 * 1024,
               "l3_threshold": 36 * 1024},
    # cores: auto = the team PMSIS gives (8 workers; the ninth core orchestrates), and all 9
    # on GVSoC's GAP9 model, whose runtime forks on every core (measured faster: gvsoc_gap9.py)
    "cluster": {"cores": "auto", "stack_size": 2048, "slave_stack_size": 1024},
    "dma": {"max_inflight": 8, "max_transfer": 64 * 1024},
    "tiling": {"l1_budget": None},          # None: L1 minus memory.l1_reserved
    # conv and linear layers on the Xpulp SIMD kernels (nn_xp_*.c); false: the plain C ones
    # ne16: eligible convs on NE16 (ne16_layer.py); auto = on gvsoc-gap9, the only platform with it
    # fuse_residual: residual adds into the cluster conv producing them (residual.py); off by
    # default: the add run over each conv tile measured slower on ResNet-18 (README "Fusion")
    "kernels": {"xpulp": True, "ne16": "auto", "fuse_residual": False},
    # layer_by_layer (the bare-metal GVSoC platforms): auto = when the parameters do not fit L2
    "run": {"platform": "auto", "timeout": 900, "layer_by_layer": "auto"},
}


CHIP = Chip(kind="gap9", title="GAP9", defaults=DEFAULTS, platforms=tuple(SCHEMA["run"]["platform"]),
            simulators={"gvsoc-gap9": gvsoc_gap9.SIMULATOR},
            cores_note="the GAP SDK's team has 8 workers; GAP9's ninth core orchestrates; "
                       "platform=gvsoc-gap9 can fork on all 9")


def options(target_cfg, chip: Chip = CHIP) -> dict:
    merged = base.merged_options(chip.defaults, target_cfg)
    if merged["tiling"]["l1_budget"] is None:
        merged["tiling"]["l1_budget"] = merged["memory"]["l1"] - merged["memory"]["l1_reserved"]
    return merged


def resolve_platform(opts, target_name, explicit) -> str:
    return settle_platform(CHIP, opts, platforms.resolve(opts, target_name, explicit))


def settle_platform(chip: Chip, opts, platform) -> str:
    """What the chosen platform implies for the options: its simulator's memory (no L3 on
    GVSoC's models), cores auto = the most the platform runs on."""
    sim = chip.simulator(platform)
    if sim and sim.memory:
        sim.memory(opts)
    if opts["cluster"]["cores"] == "auto":
        opts["cluster"]["cores"] = chip.most_cores(platform)
    return platform


def _budget(layer, opts, overrides, where, chip: Chip = CHIP):
    l1_avail = opts["memory"]["l1"] - opts["memory"]["l1_reserved"]
    return base.layer_key(layer.name, "l1_budget", opts, overrides, where, "tiling", l1_avail,
                          f"{chip.title}'s usable L1: memory.l1 - memory.l1_reserved = {l1_avail} B")


# what the kernels' deepest call chains take on the cluster (their frames and the runtime's
# entry), below which a stack overflows silently into the neighbouring core's
MIN_STACK, MIN_SLAVE_STACK = 1024, 512


def check_limits(opts, where, chip: Chip = CHIP) -> None:
    """The cluster, DMA and memory settings a build for the chip can use, checked before
    anything is generated (else they fail in the C compiler or at run time)."""
    m, c, d = opts["memory"], opts["cluster"], opts["dma"]
    for mem in ("l1", "l2"):
        if m[f"{mem}_reserved"] >= m[mem]:
            raise UserError(f"{where(None, 'memory', mem + '_reserved')}: {mem}_reserved = {m[mem + '_reserved']} B "
                            f"leaves nothing of memory.{mem} = {m[mem]} B for the network; {mem}_reserved is what "
                            f"the stacks and the runtime take (default {chip.defaults['memory'][mem + '_reserved']} B)")
    most = chip.most_cores(opts["run"]["platform"])
    if not 1 <= c["cores"] <= most:
        fewer = chip.cores_note and most < max(chip.most_cores(p) for p in chip.platforms)
        raise UserError(f"{where(None, 'cluster', 'cores')}: cores = {c['cores']}: the cluster runs the kernels "
                        f"on 1 to {most} cores on platform={opts['run']['platform']}" +
                        (f" ({chip.cores_note})" if fewer else ""))
    if d["max_transfer"] <= 0 or d["max_transfer"] % 4:
        raise UserError(f"{where(None, 'dma', 'max_transfer')}: max_transfer = {d['max_transfer']} B: must be a "
                        f"positive multiple of 4 bytes (the DMA's 32-bit word); the default is 64KiB")
    for key, low in (("stack_size", MIN_STACK), ("slave_stack_size", MIN_SLAVE_STACK)):
        if c[key] < low:
            raise UserError(f"{where(None, 'cluster', key)}: {key} = {c[key]} B is below the {low} B the "
                            f"kernels' frames need; give at least {low} B (default "
                            f"{chip.defaults['cluster'][key]} B)")


def _on_ne16(layer, graph, cname, opts, overrides, where) -> bool:
    """Whether the NE16 choice of _plan_layers puts this conv on NE16."""
    if not ne16_layer.enabled(opts, opts["run"]["platform"], where):
        return False
    budget, _ = _budget(layer, opts, overrides, where)
    til, _ = ops.plan_tiling(layer, graph, budget, opts["cluster"]["cores"], opts["kernels"]["xpulp"])
    return bool(ne16_layer.plan_layer(layer, graph, cname, budget, til, opts["cluster"]["cores"],
                                      opts["kernels"]["xpulp"])[0])


def _fuse_residuals(graph, cnames, opts, overrides, where) -> tuple:
    """(the graph the cluster runs, {conv name: its original layer}): residual adds fused into
    the cluster convs that produce them (residual.py); a conv on NE16 keeps its add; none with
    kernels.fuse_residual false."""
    if not opts["kernels"]["fuse_residual"]:
        return graph, {}
    return residual.fuse(graph, lambda conv: not _on_ne16(conv, graph, cnames[conv.name], opts, overrides, where))


def _plan_layers(graph, cnames, opts, overrides, where, threshold, source=None, origs=None, chip=CHIP) -> tuple:
    """(layer plans, kernel sources, {cname: (l1_budget, where)}): each layer's tiling, its
    parameters' layout and tier (L3 when its weights exceed threshold bytes), its spec.
    graph: the fused graph (residual.py), source: the model's graph, origs: the fused convs'
    own layers (their weights, requantization and MACs are those of source)."""
    layers, kernels, budgets = [], set(), {}
    ne16 = ne16_layer.enabled(opts, opts["run"]["platform"], where)
    source, origs = source or graph, origs or {}
    for layer in graph.layers:
        orig = origs.get(layer.name)
        impl = ops.OPS.get(layer.op)
        if impl is None:
            raise base.unsupported(layer, chip.kind, ops.OPS)
        if impl.check and (reason := impl.check(layer, graph)):
            raise UserError(f"layer '{layer.name}': {reason} (target kind '{chip.kind}')")
        budget, at = _budget(layer, opts, overrides, where, chip)
        budgets[cnames[layer.name]] = (budget, at)
        til, need = ops.plan_tiling(layer, graph, budget, opts["cluster"]["cores"], opts["kernels"]["xpulp"])
        if til is None and not nnsops.get(layer.op).alias:
            raise ops.budget_error(layer, need, budget, at)
        layout = base.param_layout(orig or layer, source if orig else graph,
                                   ops.weight_row(layer, graph, til, opts["kernels"]["xpulp"]))
        # staged from L3 in channel slabs: the convs' and linears' weights, an island pool's
        # per-channel tables (ops.staged_bytes; a lut's tables stay in L2)
        tier = "L3" if ops.staged_bytes(orig or layer) > threshold else "L2"
        cname = cnames[layer.name]
        spec = ops.layer_spec(layer, graph, cname, layout, tier, til, opts["kernels"]["xpulp"])
        on_ne16, why = ne16_layer.placement(layer, graph, cname, budget, til, opts, ne16 and not orig,
                                            overrides.get(layer.name, {}).get("on"), where)
        if on_ne16:
            spec, layout = on_ne16
        macs = base.macs(layer, graph)
        pack = ne16_layer.pack if on_ne16 else ops.pack_params
        if orig:                # a fused add: the conv's own parameters, the add's MACs counted too
            add = next(a for a in source.layers if a.name == layer.attrs["residual"]["add"])
            macs = base.macs(orig, source) + base.macs(add, source)
            pack = lambda _l, gr, lay, _o=orig: ops.pack_params(_o, gr, lay)   # noqa: E731
        lp = base.LayerPlan(layer=layer, cname=cname, template="conv2d_ne16.c.j2" if on_ne16 else impl.template,
                            kernels=impl.kernels + ((data_path("kernels", "gap9", "nn_xp_add.c"),
                                                     data_path("kernels", "common", "nn_eltwise.c")) if orig else ()),
                            spec=spec, param_layout=layout, macs=macs,
                            param_bytes=base.layout_bytes(layout),
                            pack=pack, pack_key="ne16" if on_ne16 else None,
                            report={"l1_budget": budget, "engine": "ne16" if on_ne16 else
                                    ("cluster" if nnsops.is_conv(layer) else "-"),
                                    **({"fused_add": layer.attrs["residual"]["add"]} if orig else {})})
        if why:
            lp.report.update(engine_why=why["why"], **{k: v for k, v in why.items() if k != "why"})
        layers.append(lp)
        kernels.update(lp.kernels)
    kernels.add(data_path("kernels", "gap9", "nn_gap9.c"))
    return layers, kernels, budgets


def plan(graph, cnames: dict, opts: dict, overrides: dict, where, chip: Chip = CHIP) -> base.TargetPlan:
    check_limits(opts, where, chip)
    sim = chip.simulator(opts["run"]["platform"])      # a bare-metal GVSoC model: no L3
    if sim:
        baremetal.check_memory(opts, where)
    threshold = opts["memory"]["l3_threshold"]
    source = graph
    graph, origs = _fuse_residuals(source, cnames, opts, overrides, where)
    layers, kernels, budgets = _plan_layers(graph, cnames, opts, overrides, where, threshold, source, origs, chip)
    if origs and not sim and memory.spills(graph, layers, opts, where):
        # activations in L3: an add streams its inputs from L3 chunk by chunk, fused into its
        # conv the residual would sit in L2 beside the conv's input and output: keep the adds
        graph, origs = source, {}
        layers, kernels, budgets = _plan_layers(graph, cnames, opts, overrides, where, threshold, chip=chip)
    if sim and opts["run"]["layer_by_layer"] == "always":
        return _layerwise_plan(graph, layers, kernels, opts, budgets, "run.layer_by_layer is 'always'", sim)
    notes = []
    try:
        mem = memory.plan_memory(graph, layers, opts, where)
    except UserError as e:
        if sim:     # the whole network's L2 plan does not fit: say it in the simulator's terms
            l2 = opts["memory"]["l2"] - opts["memory"]["l2_reserved"]
            params = sum(lp.param_bytes for lp in layers)
            return _layerwise_plan(graph, layers, kernels, opts, budgets,
                                   f"the network needs more than the {l2:,} B of L2 it may use ({params:,} B of "
                                   f"parameters) and {opts['run']['platform']} has no L3", sim)
        resident = sum(lp.param_bytes for lp in layers if lp.spec["tier"] == "L2")
        if not (resident and threshold and opts["memory"]["l3_device"] == "ram" and opts["memory"]["l3_size"]):
            raise
        # the L2-resident parameters may be what does not fit: stage every layer's from L3
        layers, kernels, budgets = _plan_layers(graph, cnames, opts, overrides, where, 0, source, origs, chip)
        try:
            mem = memory.plan_memory(graph, layers, opts, where)
        except UserError:
            raise e from None
        notes.append(f"memory.l3_threshold ({threshold:,} B) left {resident:,} B of parameters in L2, more than "
                     f"fits beside the activations: every layer's parameters are staged from L3 instead")
    for lp in layers:
        lp.report.update(_layer_report(lp, mem))
        if mem["spill"] and mem["spill"]["layers"][lp.cname]["stream"]:
            lp.spec["l3_stream"] = True
            lp.report["tier"] += " (in: L3)"
    model = library.c_model_name(graph.name)
    lib = _lib(library.spec(graph, "hwc", model), layers, mem, opts, _slots(graph, mem))
    network = dict(network_spec(graph, layers, mem, opts), lib=library.core(lib))
    files = library.generated_files(lib, TEMPLATES, network["arena_size"], layers, "network.c.j2", network,
                                    lib_dirs={_lib_dir(p): platforms.library_flags(
                                        opts, p, os.path.join(opts["build"]["dir"], _lib_dir(p)))
                                        for p in chip.lib_platforms()})
    return base.TargetPlan(
        layers=layers, network=network, kernels=sorted(kernels), templates_dir=TEMPLATES,
        network_files=files + [
            ("src/main.c", "main.c.j2", {"lib": library.core(lib), "bins": library.harness_bins("flat"),
                                         "chunk": memory.COMPARE_CHUNK}),
            ("Makefile", "Makefile.j2", _makefile_spec(layers, kernels, opts, library.files(model)))],
        layout="hwc", tensor_layouts=base.flattened_layouts(graph), bin_names="flat",
        report={**({"cycles_source": sim.cycles_source} if sim else {}),
                "peak_l2_bytes": mem["peak_l2"], "l2_bytes": mem["l2_avail"], "l3_bytes": mem["l3_bytes"],
                "l3_device": opts["memory"]["l3_device"],
                "activations_l3_bytes": mem["spill"]["l3_end"] - mem["spill"]["act_l3"] if mem["spill"] else 0,
                "summary_lines": _memory_lines(mem, opts) + notes + ne16_layer.summary_line(layers)},
        columns=[("engine", "engine"), ("tile HxWxC", "tile_shape"), ("tiles", "n_tiles"), ("L1 B/budget", "l1_use"),
                 ("L2<->L1 B/min", "l2_l1"), ("L3->L2 B", "l3_l2"), ("tier", "tier")],
        extra={"weights_py": [os.path.join(os.path.dirname(__file__), f) for f in WEIGHTS_PY], "memory": mem,
               # the export's gap_sdk.mk: the defines of a real GAP9 build (the gvsoc platform's)
               "sdk_defines": platforms.runtime_defines(opts) + platforms.xpulp_defines("gvsoc"),
               "library": library.files(model, _lib_dir(opts["run"]["platform"]))})


def _lib_dir(platform: str) -> str:
    return f"{platform}/lib"


def _offset_macros(lib, io) -> list:
    """Where in ctx->arena the input and output may be given in place: NNS_<M>_INPUT_OFFSET and
    _OUTPUT_OFFSET for a model with one of each, else one per tensor (NNS_<M>_INPUT_<NAME>_OFFSET)."""
    M, (ins, outs) = lib["macro"], io
    if len(ins) == 1 and len(outs) == 1:
        return [f"#define {M}_INPUT_OFFSET {ins[0]['offset']}      /* in ctx->arena: the input may be given in place */",
                f"#define {M}_OUTPUT_OFFSET {outs[0]['offset']}     /* and the output */"]
    lines = ["/* in ctx->arena: each input and output may be given in place there (the outputs' places",
             " * may overlap the inputs': a run overwrites its inputs there) */"]
    for kind, tensors, slots in (("INPUT", lib["inputs"], ins), ("OUTPUT", lib["outputs"], outs)):
        lines += [f"#define {M}_{kind}_{t['id']}_OFFSET {s['offset']}" for t, s in zip(tensors, slots)]
    return lines


def _lib(lib, layers, mem, opts, io) -> dict:
    """The header's GAP9 part: what the application flashes (the readfs files) and the memory
    it gives the library (L1, L2, L3 from the plan), the context's state, nns_<model>_open/close,
    the error codes."""
    P, M = lib["prefix"], lib["macro"]
    files = [binfiles.bin_name("weights", lp.cname, "flat") for lp in layers if lp.param_layout]
    l1 = opts["memory"]["l1"] - opts["memory"]["l1_reserved"]     # every l1_budget's bound: no tiling in it
    c = opts["cluster"]
    staged = "flash: read by the cluster from their readfs files" if opts["memory"]["l3_device"] == "flash" \
        else "ram: copied into the external RAM by the open"
    notes = [
        "Target gap9 (PMSIS): the weights are not linked in.  They are readfs files the",
        "application flashes (NNS_..._READFS_FILES, the GAP SDK's READFS_FILES; the names",
        "are fixed), and " + P + "_open(ctx, fs) loads them from the application's mounted",
        "readfs (pi_fs_mount): L2-resident parameters into L2, the others (L3) per",
        "memory.l3_device, " + staged + ".",
        "After " + P + "_init, call " + P + "_open once before any run (it opens the cluster",
        "and, when the network has L3 parameters in RAM, the default RAM; a run before it",
        "returns NNS_..._ERR_NOT_OPEN), " + P + "_close at the end (deinit closes too).",
        "Memory: arena NNS_..._ARENA_SIZE bytes in L2 (pi_l2_malloc: the cluster DMA moves it",
        "to L1), the caller's; the open allocates NNS_..._L2_LIB_SIZE more bytes of L2;",
        "NNS_..._L2_SIZE = both, checked against memory.l2.  A layer takes at most its",
        "l1_budget <= NNS_..._L1_SIZE bytes of L1 (pi_cl_l1_malloc) besides the cluster's",
        f"stacks ({c['stack_size']} B for the master core, {c['slave_stack_size']} B per other core).",
        "L3: NNS_..._L3_SIZE bytes of external RAM.  The context holds PMSIS devices and the",
        "running layer's buffers, which the cluster reads: keep it in L2 (the FC's memory).",
        "Input and output: anywhere the fabric controller reads and writes, or in place at",
        *(["ctx->arena + NNS_..._INPUT_OFFSET and ctx->arena + NNS_..._OUTPUT_OFFSET (no copy,",
           "no more L2; a run may overwrite the input there)."] if len(lib["inputs"]) == len(lib["outputs"]) == 1
          else ["ctx->arena + NNS_..._INPUT_<NAME>_OFFSET and NNS_..._OUTPUT_<NAME>_OFFSET per",
                "tensor (no copy, no more L2; a run may overwrite the inputs there)."]),
        "Runs happen on the fabric controller, one inference at a time per context.  Each",
        "open opens cluster 0 (pi_cluster_open) for its context: the PMSIS emulation lets a",
        "cluster be open once at a time, so there open one context at a time (close it",
        "before opening another).  The library prints nothing; a failed open or run says",
        "why in its status and, for a weights file or a layer's L1, ctx->failed_layer.",
        "Emulation (platform emul, qemu): the readfs is the folder NN_EMUL_FS_DIR (default",
        "the working directory); the emulation prints the path it failed to open on stderr.",
    ]
    staged_l3 = mem["l3_bytes"] if opts["memory"]["l3_device"] == "ram" else 0
    decls = [
        "/* GAP9: the readfs files the application flashes (weights), and the memory it gives */",
        f"#define {M}_NUM_READFS_FILES {len(files)}",
        f"#define {M}_READFS_FILES {{ " + ", ".join(f'"{f}"' for f in files) + " }",
        *_offset_macros(lib, io),
        "",
        f"/* Loads the weights from the mounted readfs fs, opens the cluster (and the RAM when",
        f" * L3_SIZE > 0), on a context {P}_init set up: {M}_OK or a status ({P}_strerror).",
        f" * Once before any run. */",
        f"int {P}_open({P}_t *ctx, struct pi_device *fs);",
        f"/* Frees what open took; a run after it returns {M}_ERR_NOT_OPEN. */",
        f"void {P}_close({P}_t *ctx);",
    ]
    memory_macros = [
        {"name": "L1_SIZE", "bytes": l1, "what": "L1 a layer may take (memory.l1 - l1_reserved)"},
        {"name": "L2_LIB_SIZE", "bytes": mem["lib_l2"], "what": f"L2 allocated by {P}_open (params, staging, load buffer)"},
        {"name": "L2_SIZE", "bytes": mem["peak_l2"], "what": "ARENA_SIZE + L2_LIB_SIZE: the L2 the network takes"},
        {"name": "L3_SIZE", "bytes": staged_l3, "what": "external RAM allocated by the open"},
    ]
    errors = [{"name": n, "code": code, "what": what.format(P=P)} for n, code, what in memory.ERRORS]
    n_staged = len(mem["staged"])
    return dict(lib, notes=notes, declarations=decls, errors=errors, memory=memory_macros,
                includes=['"pmsis.h"', '"nn_gap9.h"'], arena_align=memory.ARENA_ALIGN,
                context=memory.state_fields(opts["memory"]["l3_device"], n_staged))


def _layerwise_plan(graph, layers, kernels, opts, budgets, why, sim) -> base.TargetPlan:
    """Every layer its own program and run (layerwise.py): on a bare-metal GVSoC model (sim),
    when the model does not fit L2 (no simulator has L3) or when run.layer_by_layer says so."""
    lw = layerwise.plan(graph, layers, opts, budgets)
    for lp in layers:           # a sliced NE16 layer: layerwise re-planned it for the cluster
        if lp.report.get("engine") == "ne16" and lp.report.get("slice"):
            lp.spec = ne16_layer.reslice(lp, graph, budgets[lp.cname][0])
    sliced = []
    for lp in layers:
        s = lp.report.get("slice")
        lp.report.update(_layer_report(lp, {"staged": {}}))
        if s:
            lp.report["tile_shape"] += f" ({s['channels']}/{s['of']} ch)"
            sliced.append(f"{lp.layer.name} {s['channels']}/{s['of']}")
    files = [(f"src/runs/{lp.cname}/network.c", "network.c.j2", run) for lp, run in zip(layers, lw["runs"])]
    lines = [f"layer by layer ({why}): {len(layers)} runs, each layer's inputs are its producers' goldens; "
             f"L2 peak {lw['peak_l2']:,} of {lw['l2_avail']:,} B"]
    if sliced:
        lines.append(f"{len(sliced)} layer(s) too large for L2 even alone ran on their first output channels "
                     f"(checked on those, cycles scaled by all/run): {', '.join(sliced)}")
    return base.TargetPlan(
        layers=layers, network={"layerwise": True, "arena_size": max(r["arena_size"] for r in lw["runs"]),
                                "runs": [lp.cname for lp in layers]},
        kernels=sorted(kernels), templates_dir=TEMPLATES,
        network_files=[("src/network.h", "network.h.j2", {}), ("src/main.c", "main.c.j2", {})] + files,
        layout="hwc", tensor_layouts=base.flattened_layouts(graph), bin_names="flat",
        report={"cycles_source": sim.cycles_source, "layer_by_layer": True, "peak_l2_bytes": lw["peak_l2"],
                "l2_bytes": lw["l2_avail"], "l3_bytes": 0,
                "summary_lines": lines + ne16_layer.summary_line(layers)},
        columns=[("engine", "engine"), ("tile HxWxC", "tile_shape"), ("tiles", "n_tiles"), ("L1 B/budget", "l1_use"),
                 ("L2<->L1 B/min", "l2_l1"), ("tier", "tier")],
        extra={"weights_py": [os.path.join(os.path.dirname(__file__), f) for f in WEIGHTS_PY], "layerwise": lw})


def _fused_kernel(layer):
    """The GAP9 kernel's name for the recipe the IR passes fused into the layer, else None."""
    impl = ops.OPS.get(layer.op)
    return impl.fused_name if impl and (layer.fused or impl.fused_always) else None


def _layer_report(lp, mem) -> dict:
    t = lp.spec["tile"]
    staged = mem["staged"].get(lp.cname)
    l3_bytes = staged["bytes"] if staged else 0     # each parameter byte crosses once
    budget = lp.report["l1_budget"]
    r = {"tier": lp.spec["tier"] if lp.param_bytes else "-",
         "l3_l2_bytes": l3_bytes, "l3_l2_lower_bound": l3_bytes,
         "fused_kernel": _fused_kernel(lp.layer)}
    if "residual" in lp.spec:          # residual.py: the add runs in the conv's tiles
        r["fused_kernel"] += " + fused add"
    if t is None:
        r.update(tile_shape="alias", n_tiles=0, l1_use="0", l2_l1="0", l3_l2="-")
        return r
    r.update(tile_shape=f"{t['th']}x{t['tw']}x{t['tc']}", n_tiles=t["n_tiles"], l1_bytes=t["l1_bytes"],
             l2_l1_bytes=t["l2_l1_bytes"], l2_l1_lower_bound=t["lower_bound"],
             l1_use=f"{t['l1_bytes']}/{budget}", l2_l1=f"{t['l2_l1_bytes']}/{t['lower_bound']}",
             l3_l2=f"{l3_bytes}" if staged else "-")
    return r


def _makefile_spec(layers, kernels, opts, lib_files) -> dict:
    """What the GAP SDK Makefile of the output folder needs (gvsoc.py, Makefile.j2): sources, kernels,
    bin files, defines; nothing from the tiling, so a tiling edit does not regenerate it."""
    return {"sources": ["src/main.c", lib_files["source"], lib_files["api"]]
            + [p for lp in layers for p, _, _ in lp.sources() if p.endswith(".c")],
            "kernels": sorted(data_relative(k) for k in kernels), "include": ["kernels/common", "kernels/gap9"],
            "bins": [binfiles.INPUT] + sorted(binfiles.bin_name(k, lp.cname, "flat") for lp in layers
                                              for k in (["golden"] + (["weights"] if lp.param_layout else []))),
            "defines": platforms.runtime_defines(opts) + platforms.xpulp_defines("gvsoc")}


def _memory_lines(mem, opts) -> list:
    """What lives where, under the table."""
    spill = mem["spill"]
    acts = (f"one layer's inputs and output {mem['arena_bytes']:,}" if spill
            else f"activations {mem['buffers']['arena_size']:,}")
    lines = [f"L2 peak {mem['peak_l2']:,} of {mem['l2_avail']:,} B ({acts}, resident params "
             f"{mem['params_l2_bytes']:,}, staging {mem['staging_bytes']:,}); "
             f"L3 {opts['memory']['l3_device']} {mem['l3_bytes']:,} B"]
    if spill:
        lines.append(f"activations in L3: the liveness-planned arena of {spill['l3_end'] - spill['act_l3']:,} B "
                     f"does not fit L2, so every tensor lives in L3 RAM and each layer reads its inputs into L2 "
                     f"and writes its output back (fabric controller, pi_ram_read/pi_ram_write)")
    return lines


def _slots(graph, mem) -> tuple:
    """([input slots], [output slots]) {offset, size}: where each network input and output is in
    the L2 arena while it runs, in the model's order: their planned buffers, or slots at the
    arena's start when the activations live in L3 (memory.spill_plan)."""
    t, spill = mem["buffers"]["tensors"], mem["spill"]
    if spill:
        return tuple([{"offset": s["l2"], "size": s["size"]} for s in spill[k]] for k in ("inputs", "outputs"))
    return [t[n] for n in graph.inputs], [t[n] for n in graph.outputs]


def _layer_buffers(lp, mem) -> tuple:
    """(input offsets, output {offset, size}) of a layer in the L2 arena."""
    t, spill = mem["buffers"]["tensors"], mem["spill"]
    if spill:
        own = spill["layers"][lp.cname]
        return own["inputs"], {"offset": own["write"]["l2"], "size": own["write"]["size"]}
    return [t[i]["offset"] for i in lp.layer.inputs], t[lp.layer.output]


def network_spec(graph, layers, mem, opts) -> dict:
    """Everything the library's network source (network.c.j2) depends on: order, buffer offsets,
    tiers, slabs, memory sizes, and the L3 homes of the activations when they live there."""
    slots_in, slots_out = _slots(graph, mem)
    return {
        "arena_size": mem["arena_bytes"],
        "inputs": slots_in,
        "outputs": slots_out,
        "spill": mem["spill"],
        "layers": [{"cname": lp.cname, "bin": lp.cname, "index": i,
                    "inputs": _layer_buffers(lp, mem)[0],
                    "output": _layer_buffers(lp, mem)[1],
                    "params_bytes": lp.param_bytes,
                    "tier": "L3" if lp.cname in mem["staged"] else ("L2" if lp.param_bytes else None),
                    "params_l2": mem["params_l2"].get(lp.cname),
                    "l3_offset": mem["staged"].get(lp.cname, {}).get("l3_offset"),
                    "first_slab": mem["staged"].get(lp.cname, {}).get("first_slab", 0),
                    "file": mem["staged"].get(lp.cname, {}).get("file", -1)}
                   for i, lp in enumerate(layers)],
        "params_l2_bytes": mem["params_l2_bytes"],
        "slabs": mem["slabs"],
        "slab_bytes": mem["slab_bytes"],
        "l3_bytes": mem["l3_bytes"],
        "l3_device": opts["memory"]["l3_device"],
        "compare_chunk": memory.COMPARE_CHUNK,
        "cluster": opts["cluster"],
        "l2_avail": mem["l2_avail"],
        "lib_l2": mem["lib_l2"],
        "state": memory.state_fields(opts["memory"]["l3_device"], len(mem["staged"])),
        "errors": memory.error_codes(),
    }
