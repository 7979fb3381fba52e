"""The `aie2p` target: AMD XDNA2 NPU (npu2). Per layer an IRON placed design (Python,
run to aie.mlir), an AIE C++ kernel (Peano or xchesscc), aiecc.py -> final.xclbin +
insts.bin, run through XRT. platform=emul builds the network as a C library: each layer's
scalar kernel compiled natively, fed by nn_aie_emul.c moving the data as the declared DMA
patterns do (no NPU, no mlir-aie; emulator.py is its NumPy twin, tested against the
patterns), and runs the host target's harness on it.

Activations live in DDR as HWC int8; the network input goes to the NPU as uint8 when its
int8 zero point is -128 (uint8 with zero point 0: RGBA pixels). Layers that do not map
are an error naming the layer and the reason (mapping.py).
"""
from __future__ import annotations

from ...resources import data_path

import os
import sys

import numpy as np

from ...errors import UserError
from ...planning.buffers import plan_buffers
from ... import ops
from .. import base, library
from . import fallback, layerplan as lplan, mapping, pack
from .fallback import host_layer, host_scratch  # noqa: F401  (the plan of a host layer)
from . import tool  # noqa: F401  (the kind's SCons Tool: builders and the run step)
from .nodes import declare_nodes, layer_kind  # noqa: F401  (the kind's node hook)
from .tool import check_tools  # noqa: F401  (the kind's hook: its tools are the Tool's)
from .tools import find_tools
from .schema import SCHEMA, TILING_KEYS  # noqa: F401  (the kind's manifest keys)

TEMPLATES = data_path("templates", "aie2p")


DEFAULTS = {
    "toolchain": {"kernel_compiler": "peano", "python": "python3", "cxx": "g++",
                  "cxxflags": ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror"],
                  "cc": "gcc", "cflags": ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror"]},
    "kernel": {"variant": "vector"},
    "memory": {"l1": 64 * 1024, "memtile": 512 * 1024},
    "tiling": {"tiles_per_call": 16, "channels_per_call": 16, "cores": 1, "columns": 1},
    "run": {"platform": "auto", "timeout": 1800},
    "mapping": {"fallback": "none"},
}


def options(target_cfg) -> dict:
    return base.merged_options(DEFAULTS, target_cfg)


def resolve_platform(opts, target_name, explicit) -> str:
    """auto: the NPU flow when mlir-aie (aiecc.py) is installed, else the emulator."""
    p = opts["run"]["platform"]
    if p != "auto":
        return p
    aiecc = find_tools(os.environ, opts)["aiecc"]
    chosen = "npu" if aiecc else "emul"
    why = f"aiecc.py at {aiecc}" if aiecc else "mlir-aie's aiecc.py not found (MLIR_AIE_DIR unset, not on PATH)"
    print(f"nnscons: target {target_name}: platform=auto -> {chosen} ({why}); choose with platform=npu|emul")
    return chosen


def plan(graph, cnames: dict, opts: dict, overrides: dict, where) -> base.TargetPlan:
    layers = []
    on_host = opts["mapping"]["fallback"] == "host"
    model = library.c_model_name(graph.name)
    emul = opts["run"]["platform"] == "emul"
    if not on_host:
        mapping.check(graph)
    for layer in graph.layers:
        cname = cnames[layer.name]
        if on_host and mapping.why_not(layer, graph):
            impl = fallback.OPS.get(layer.op)
            if impl is None:
                raise UserError(f"layer '{layer.name}' ({'+'.join(layer.source_ops) or layer.op}): op "
                                f"'{layer.op}' has no AIE kernel and no host fallback kernel "
                                f"(host_layers.py); the fallback runs: {', '.join(fallback.OPS)}")
            if impl.check and (why := impl.check(layer, graph)):
                raise UserError(f"layer '{layer.name}': {why} (target kind 'aie2p')")
            lp = host_layer(layer, graph, cname, mapping.why_not(layer, graph))
            if emul:        # the library's C for it
                lp.files += fallback.host_files(lp, model)
            layers.append(lp)
            continue
        if ops.get(layer.op).alias:      # a Flatten/Reshape: a view of its input on the host
            layers.append(base.LayerPlan(layer=layer, cname=cname, template="", kernels=(),
                                         spec={"op": layer.op, "cname": cname}, param_layout=[],
                                         macs=0, param_bytes=0,
                                         files=[(f"src/layers/{cname}_view.json", "view.json.j2",
                                                 {"cname": cname})],
                                         report={"aie": {"host_view": True, "runs_on": "host (view)"},
                                                 "runs_on": "view"}))
            continue
        own = overrides.get(layer.name, {})

        def at(key, own=own, layer=layer):
            if key in own:
                return where(layer.name, key)
            return where(None, "kernel", "variant") if key == "variant" else where(None, "tiling", key)
        req = {k: own.get(k, opts["tiling"][k]) for k in TILING_KEYS}
        req["variant"] = own.get("variant", opts["kernel"]["variant"])
        g = mapping.geometry(layer, graph)
        cls = mapping.classes(g)
        g["ncls"] = cls["n"]
        first = layer.inputs[0] in graph.inputs and graph.tensor(layer.inputs[0]).q.zero_point == -128
        act_dtype = "uint8" if first else "int8"
        spec = fit_layer(layer, graph, cname, g, req, own, act_dtype, opts, at, cls)
        nbytes = spec["dma"]["buffers"]["w"]
        macs = base.macs(layer, graph)
        layers.append(base.LayerPlan(
            layer=layer, cname=cname, template="kernel.cc.j2", kernels=(), spec=spec,
            param_layout=[("blocks", "int8", nbytes, 0), ("act_dtype", act_dtype, 0, nbytes)],
            macs=macs, param_bytes=nbytes,
            files=[(f"src/layers/{cname}_design.py", "design.py.j2", spec),
                   (f"src/layers/{cname}.cc", "kernel.cc.j2", spec),
                   (f"src/layers/{cname}_dma.json", "dma.json.j2", spec)]
            + ([(f"src/layers/{cname}_emul.c", "emul.c.j2", emul_spec(spec, model))] if emul else []),
            report=lplan.layer_report(spec, macs),
            pack=lambda layer, graph, layout, d=act_dtype, g=g: pack.pack(layer, graph, d, g)))
    buffers = plan_buffers(graph)
    for lp in layers:
        if layer_kind(lp) == "npu":
            lp.report["runs_on"] = lp.report["aie"]["runs_on"] = "npu"
    network = network_spec(graph, layers, buffers)
    lib = dict(library.spec(graph, "hwc", model), notes=NOTES, errors=ERRORS)
    if emul:    # the library and its harness
        files = library_files(graph, layers, buffers, lib)
    else:       # the runner's network.json; no C library for the NPU yet: the header says what to ship
        files = [("src/network.json", "network.json.j2", network)] + [
            f for f in library.generated_files(lib, TEMPLATES, buffers["arena_size"], layers, "", {}, lib_dirs=())
            if f[0].endswith(".h")]
    kernels = [data_path("kernels", "aie2p", "nn_aie_emul.c")] if emul else []
    if emul and any(layer_kind(lp) == "host" for lp in layers):
        from .nodes import HOST_KERNELS
        kernels += HOST_KERNELS
    return base.TargetPlan(
        layers=layers, network=network, kernels=sorted(kernels), templates_dir=TEMPLATES,
        network_files=files, layout="hwc",
        tensor_layouts=mapping.flattened_layouts(graph),
        columns=[("on", "runs_on"), ("T", "T"), ("Cc", "Cc"), ("cores", "cores_x_cols"), ("calls", "kernel_calls"),
                 ("B/call", "call_bytes"), ("L1 B", "l1_bytes"), ("memtile B", "memtile_bytes")],
        report={"aie": {"device": "npu2", "l1_cap": opts["memory"]["l1"],
                        "memtile_cap": opts["memory"]["memtile"]}},
        extra={"weights_py": [os.path.join(os.path.dirname(__file__), f)
                              for f in ("pack.py", "mapping.py")],
               "library": library.files(model)})


NOTES = [
    "Target aie2p: each layer that maps onto the NPU is one tiled matrix product (its AIE",
    "kernel, its DMA patterns); the others (mapping.fallback: host) run the portable C",
    "kernels on the host CPU.  Activations are HWC int8 in the arena.",
    "platform=emul: lib/libnns_<model>.a runs everything on this machine: each NPU layer's",
    "DMA patterns are moved by nn_aie_emul.c and its kernel (compiled natively, scalar) is",
    "called as the cores would; the weights are linked in.  Link it with the C++ compiler's",
    "driver or gcc alike (the kernels use no C++ runtime).  The NPU layers' staged DDR",
    "buffers and the emulator's scratch, and the host layers' transposes, are in the arena",
    "(one scratch region after the activations, the size of the largest layer's).",
    "On the NPU (platform=npu) nnscons builds no C library yet: the run goes through XRT",
    "from Python (targets/aie2p/xrt_runner.py).  An application there must ship, per NPU",
    "layer L, aie/L/final.xclbin and aie/L/insts.bin (register the xclbin, load insts.bin",
    "as 32-bit words, buffers in group ids 3, 4, 5: staged input, bin/weights/L.bin,",
    "output; opcode 3), and bin/weights/<L>.bin for the host layers.",
    "arena: NNS_..._ARENA_SIZE bytes, any alignment, owned by the caller; the input and",
    "output buffers may not overlap it.",
]
ERRORS = [{"name": "ERR_DMA", "code": -101,
           "what": "an emulated NPU layer's DMAs left an output byte unwritten or wrote one twice"}]


def emul_spec(spec: dict, model: str) -> dict:
    """What the layer's emulated-NPU C (emul.c.j2) depends on: its DMA patterns, kernel name,
    activation type, and the scratch nn_aie_emul.c needs (nn_aie_scratch_bytes)."""
    d = spec["dma"]
    reps = lambda tasks, whole: [int(np.prod([s for s, _ in t["dims"]])) * (t["repeat"] if whole else 1)  # noqa: E731
                                 for t in tasks]
    act = max(max(reps(c["act"], False)) for c in d["tasks"])
    w = max(sum(reps(c["w"], True)) for c in d["tasks"])
    calls, cores = d["calls_per_iter"], d["cores"]
    join = int(np.prod([s for s, _ in d["out_l2"]["mm2s"]]))
    scratch = (act + 2 * calls * d["act_l1"]["bytes"] + w + calls * d["out_l1"]["bytes"]
               + calls * cores * d["out_l1"]["bytes"] + calls * join + d["buffers"]["out"])
    # in the arena's scratch region: the staged input (DDR), the output (DDR), the emulator's scratch
    at_out = _align(d["buffers"]["in"], 16)
    at_work = at_out + _align(d["buffers"]["out"], 16)
    return {k: spec[k] for k in ("name", "cname", "op", "func", "act_dtype", "dma")} | {
        "symbol": f"nns_{model}_{spec['cname']}", "scratch": scratch,
        "scratch_at": {"ddr_in": 0, "ddr_out": at_out, "work": at_work, "bytes": at_work + scratch}}


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


SCRATCH_ALIGN = 64      # the arena's scratch region starts 64-byte aligned after the activations
ARENA_ALIGN = 16        # init aligns the caller's arena up to this (nns.h's ARENA_ALIGN)


def layer_scratch(lp, model: str) -> int:
    """The bytes of the arena's scratch region a layer of the emulated library uses."""
    kind = layer_kind(lp)
    if kind == "npu":
        return emul_spec(lp.spec, model)["scratch_at"]["bytes"]
    if kind == "host":
        return host_scratch(lp.spec)["scratch_at"]["bytes"]
    return 0


def library_files(graph, layers, buffers, lib) -> list:
    """platform=emul: the library's network source, header, API source, .cmake/.mk, the
    weights' .S files and the harness (the host target's, on this library)."""
    t = buffers["tensors"]
    act = buffers["arena_size"]
    scratch = max((layer_scratch(lp, lib["model"]) for lp in layers), default=0)
    at = _align(act, SCRATCH_ALIGN) if scratch else act
    arena = {"activations": act, "scratch_at": at, "scratch": scratch, "size": at + scratch + ARENA_ALIGN - 1}
    lib = dict(lib, arena_align=ARENA_ALIGN)
    net = {"lib": lib, "inputs": [t[n] for n in graph.inputs], "outputs": [t[n] for n in graph.outputs],
           "arena": arena,
           "layers": [{"cname": lp.cname, "kind": layer_kind(lp), "symbol": f"nns_{lib['model']}_{lp.cname}",
                       "inputs": [t[i]["offset"] for i in lp.layer.inputs], "output": t[lp.layer.output],
                       "params_bytes": lp.param_bytes} for lp in layers]}
    harness = os.path.join(os.path.relpath(library.TEMPLATES, TEMPLATES), "main.c.j2")
    return (library.generated_files(lib, TEMPLATES, arena["size"], layers, "nns.c.j2", net)
            + [("src/main.c", harness, {"lib": library.core(lib), "bins": library.harness_bins()})]
            + library.weights_files(lib, TEMPLATES, layers))


def fit_layer(layer, graph, cname, g, req, own, act_dtype, opts, at, cls) -> dict:
    """The layer's spec at the requested tiling. The target-wide tiles_per_call and
    channels_per_call are upper bounds: when a layer does not fit L1/memtile (or its
    patterns) with them, smaller T (divisors of OW) and then 8-channel calls are tried.
    A per-layer value is taken as given: it fits or is an error naming the key."""
    def attempt(r):
        t = lplan.resolve_tiling(g, r, at)
        return lplan.layer_spec(layer, graph, cname, g, t, act_dtype, opts, at, cls)
    try:
        return attempt(req)
    except UserError:
        if "tiles_per_call" in own and "channels_per_call" in own:
            raise
        first_error = sys.exc_info()[1]
    t_caps = ([req["tiles_per_call"]] if "tiles_per_call" in own else
              [d for d in range(min(req["tiles_per_call"], g["OW"]), 0, -1) if g["OW"] % d == 0])
    c_caps = [req["channels_per_call"]] if "channels_per_call" in own else sorted(
        {req["channels_per_call"], 8}, reverse=True)
    for cc in c_caps:
        for tc in t_caps:
            try:
                return attempt(dict(req, tiles_per_call=tc, channels_per_call=cc))
            except UserError:
                continue
    raise first_error


def network_spec(graph, layers, buffers) -> dict:
    """The runner's view: layer order and which DDR tensor each reads and writes (no
    tiling, no names -- those are untrusted and live in the report)."""
    ids = {name: k for k, name in enumerate(graph.inputs)}
    for lp in layers:
        ids.setdefault(lp.layer.output, len(ids))
    nbytes = {name: int(np.prod(graph.tensor(name).shape)) for name in ids}
    return {
        "arena_size": buffers["arena_size"],
        "inputs": [ids[n] for n in graph.inputs], "outputs": [ids[n] for n in graph.outputs],
        "tensors": [nbytes[n] for n in sorted(ids, key=ids.get)],
        "layers": [{"cname": lp.cname, "kind": layer_kind(lp),
                    "input": ids[lp.layer.inputs[0]], "output": ids[lp.layer.output],
                    "inputs": [ids[t] for t in lp.layer.inputs],
                    "act_dtype": lp.spec.get("act_dtype", "int8"),
                    "stage": lp.spec["dma"]["stage"] if "dma" in lp.spec else None}
                   for lp in layers],
    }
