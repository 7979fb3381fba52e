"""The `k210` target: Kendryte K210, KPU layers as 12-word arguments plus the rv64 CPU.

Every conv that the KPU can run (mapping.constraint) becomes a KPU layer: its weights,
batch-norm and activation tables in its .bin (SRAM), its 12 words in its C source; the
network step uploads its input into the AI RAM (unless the previous KPU layer left it
there), runs it through kpu_hal.h and downloads the output for the CPU layers and the
golden check. The other layers run the portable CHW kernels (kernels/common) through the
shared CPU templates (templates/cpu, cpu_ops.py). Goldens come from the K210 reference
(reference.py: the NumPy KPU model for KPU layers, the generic reference for CPU layers).

Platforms: emul (native, C KPU emulator), qemu (rv64imafc bare metal + emulator on
qemu-system-riscv64), board (Kendryte standalone SDK + kflash; platforms.py).
"""
from __future__ import annotations

import os

import numpy as np

from ... import ops
from ...errors import UserError
from ...resources import data_path
from ...planning.buffers import plan_buffers
from ...planning.keys import digest
from ...planning.tiling import min_bytes
from .. import base, library
from .cpu_ops import OPS as CPU_OPS, layer_spec as cpu_layer_spec
from . import kpu, mapping
from .board import goldens_mode
from .platforms import check_tools  # noqa: F401  (the kind's hook)
from . import tool  # noqa: F401  (the kind's SCons Tool: builders and the run step)
from .nodes import declare_nodes  # noqa: F401  (the kind's node hook)
from .schema import SCHEMA  # noqa: F401  (the kind's manifest keys)

TEMPLATES = data_path("templates", "k210")
CPU_SCRATCH = 16 * 1024     # per-layer row-band scratch budget of the CPU convs/pools (in the arena)
SCRATCH_ALIGN = 64          # the arena's scratch region starts 64-byte aligned after the activations
ARENA_ALIGN = 16            # init aligns the caller's arena up to this (nns.h's ARENA_ALIGN)


DEFAULTS = {
    "toolchain": {"cc": "gcc", "cflags": ["-std=gnu99", "-O2", "-Wall", "-Wextra", "-Werror"], "ldflags": [],
                  "cross_cc": "riscv64-unknown-elf-gcc", "sdk": "", "kflash": "kflash"},
    "memory": {"ai_ram": kpu.AI_RAM_BYTES, "sram": 6 * 1024 * 1024},
    "kpu": {"clock": 400},                   # MHz
    "run": {"platform": "emul", "timeout": 900, "port": "", "baud": 1500000, "goldens": "auto"},
}


def options(target_cfg) -> dict:
    return base.merged_options(DEFAULTS, target_cfg)


def _placement(layer, graph, overrides, where):
    """('kpu', pool type, None, KpuLayer) or ('cpu', None, reason, None)."""
    forced = overrides.get(layer.name, {}).get("on")
    pool_type, reason = mapping.constraint(layer, graph)
    kl = None
    if pool_type is not None:
        try:
            kl = mapping.build(layer, graph, pool_type)
        except kpu.KpuError as e:
            pool_type, reason = None, str(e)
    if forced == "kpu" and kl is None:
        raise UserError(f"{where(layer.name, 'on')}: layer '{layer.name}' cannot run on the KPU: {reason}; "
                        f"remove 'on: kpu' to let it run on the CPU")
    if forced == "cpu":
        return "cpu", None, "on: cpu in targets.yaml", None
    if kl is None:
        return "cpu", None, reason, None
    return "kpu", pool_type, None, kl


def plan(graph, cnames: dict, opts: dict, overrides: dict, where) -> base.TargetPlan:
    layers, kernels, kpu_layers, placements = [], set(), {}, {}
    model = library.c_model_name(graph.name)
    for layer in graph.layers:
        cname = cnames[layer.name]
        on, pool_type, reason, kl = _placement(layer, graph, overrides, where)
        placements[layer.name] = on
        if on == "kpu":
            kpu_layers[layer.name] = kl
            spec = dict(_kpu_spec(layer, cname, kl), symbol=f"nns_{model}_{cname}")
            lp = base.LayerPlan(layer=layer, cname=cname, template="kpu_conv.c.j2", kernels=(), spec=spec,
                                param_layout=[["kpu", "uint8", kl.param_bytes, 0]], macs=base.macs(layer, graph),
                                param_bytes=kl.param_bytes, pack=lambda _l, _g, _p, kl=kl: kl.pack(),
                                report={"runs_on": "kpu", "on": "kpu", "reason": None,
                                        "kpu_pool": kpu.POOL_NAMES[pool_type]})
        else:
            impl = CPU_OPS.get(layer.op)
            if impl is None:
                raise base.unsupported(layer, "k210", CPU_OPS)
            if impl.check and (why := impl.check(layer, graph)):
                raise UserError(f"layer '{layer.name}': {why} (target kind 'k210')")
            layout = base.param_layout(layer, graph)
            spec = cpu_layer_spec(layer, graph, cname, layout, _cpu_scratch(layer, graph), "k210")
            spec["symbol"] = f"nns_{model}_{cname}"    # the layer template's function name
            spec["scratch"] = _scratch_bytes(spec)      # its row bands in the arena's scratch region
            lp = base.LayerPlan(layer=layer, cname=cname, template=impl.template,
                                kernels=impl.kernels, spec=spec, param_layout=layout,
                                macs=base.macs(layer, graph), param_bytes=base.layout_bytes(layout),
                                report={"runs_on": "cpu", "on": "cpu", "reason": reason, "kpu_pool": None})
            kernels.update(impl.kernels)
        layers.append(lp)

    buffers = plan_buffers(graph)
    ai = _plan_ai_ram(graph, layers, kpu_layers, opts, where)
    params = sum(lp.param_bytes for lp in layers)
    arena = _arena(buffers, layers, kpu_layers)
    scratch = arena["scratch"]
    used = params + buffers["arena_size"] + scratch
    sram = opts["memory"]["sram"]
    if used > sram:
        top = sorted(layers, key=lambda lp: -lp.param_bytes)[:3]
        raise UserError(
            f"{where(None, 'memory', 'sram')}: the model does not fit the K210's SRAM: parameters "
            f"{params:,} B + CPU activations {buffers['arena_size']:,} B + CPU scratch {scratch:,} B = {used:,} B "
            f"> memory.sram = {sram:,} B (the 6 MiB beside the 2 MiB AI RAM); largest parameters: "
            + ", ".join(f"'{lp.layer.name}' {lp.param_bytes:,} B" for lp in top)
            + "; use a smaller model (fewer channels, e.g. MobileNetV1 with a width multiplier)")
    gmode = goldens_mode(opts)
    if gmode == "none" and opts["run"]["platform"] != "board":
        raise UserError(f"{where(None, 'run', 'goldens')}: run.goldens: none applies to platform=board only "
                        f"(the emul and qemu harnesses check every layer against its golden); remove it or use "
                        f"platform=board")
    if opts["run"]["platform"] == "board" and gmode == "embedded":
        goldens = sum(int(np.prod(graph.tensor(lp.layer.output).shape)) for lp in layers)
        image = used + goldens + sum(int(np.prod(graph.tensor(t).shape)) for t in graph.inputs)
        if image > sram:
            raise UserError(
                f"{where(None, 'run', 'goldens')}: platform=board with run.goldens: embedded: the firmware image with "
                f"every layer's golden does not fit the K210's SRAM: parameters {params:,} B + goldens {goldens:,} B "
                f"+ activations and scratch {used - params:,} B + input(s) = {image:,} B > memory.sram = {sram:,} B; "
                f"use run.goldens: none (the default on the board), check this model on platform=qemu or emul, "
                f"or use a smaller input_shape")
    clock = opts["kpu"]["clock"]
    for lp in layers:
        kl = kpu_layers.get(lp.layer.name)
        a = ai["layers"].get(lp.cname)
        if kl is not None:
            cycles = kl.cycles()
            lp.report.update(kpu_cycles=cycles, kpu_us=round(cycles / clock, 1), ai_ram_peak=a["peak"],
                             ai_ram_in=a["in_bytes"], ai_ram_out=a["out_bytes"], bn_frac_bits=kl.frac,
                             kpu_words=[f"{w:#018x}" for w in kl.words(a["src"], a["dst"], 0)])
        else:
            lp.report.update(kpu_cycles=None, kpu_us=None, ai_ram_peak=None)
        lp.report["why"] = _short(lp.report["reason"])
    network = _network_spec(graph, layers, buffers, ai, library.spec(graph, "chw", model), arena, opts)
    platform = opts["run"]["platform"]
    kernels.update([data_path("kernels", "k210", "kpu_layout.c")])
    peak = max((a["peak"] for a in ai["layers"].values()), default=0)
    n_kpu = len(kpu_layers)
    total_cycles = sum(kl.cycles() for kl in kpu_layers.values())
    here = os.path.dirname(os.path.abspath(__file__))
    return base.TargetPlan(
        layers=layers, network=network, kernels=sorted(kernels), templates_dir=TEMPLATES,
        network_files=_network_files(network, layers, platform),
        report={"kpu_layers": n_kpu, "cpu_layers": len(layers) - n_kpu, "ai_ram_peak_bytes": peak,
                "ai_ram_bytes": opts["memory"]["ai_ram"], "sram_bytes": sram,
                "sram_used_bytes": used, "sram_param_bytes": params, "sram_activation_bytes": buffers["arena_size"],
                "sram_scratch_bytes": scratch, "kpu_cycles": total_cycles,
                "kpu_clock_mhz": clock,
                "summary_lines": [
                    f"KPU: {n_kpu} of {len(layers)} layers, AI RAM peak {peak:,} of {opts['memory']['ai_ram']:,} B, "
                    f"~{total_cycles:,} KPU cycles (~{total_cycles / clock / 1000:.2f} ms at {clock} MHz); "
                    f"SRAM {params:,} B parameters + {buffers['arena_size']:,} B activations + {scratch:,} B CPU "
                    f"scratch = {used:,} of {sram:,} B"]},
        columns=[("on", "on"), ("pool", "kpu_pool"), ("AI RAM B", "ai_ram_peak"), ("KPU cyc", "kpu_cycles"),
                 ("QDQ chained own", "qdq_agree"), ("why cpu", "why")],
        extra={"library": library.files(model, _lib_dir(platform)),
               "weights_py": [os.path.join(here, f) for f in ("kpu.py", "mapping.py")],
               "golden_py": [os.path.join(here, f) for f in ("kpu.py", "mapping.py", "reference.py")],
               "kpu_layers": kpu_layers, "placements": placements},
        reference=_reference(kpu_layers),
        golden_tags=_golden_tags(graph, kpu_layers))


def _cpu_scratch(layer, graph) -> int:
    """A CPU conv/pool's row-band scratch budget: CPU_SCRATCH, or the one output row band it
    needs when that is more."""
    if not ops.has_window(layer):
        return CPU_SCRATCH
    _, c, h, w = graph.tensor(layer.inputs[0]).shape
    _, o, _, ow = graph.tensor(layer.output).shape
    a = layer.attrs
    need = min_bytes(c, h, w, o, ow, a["kernel"][0], a["stride"][0], a.get("dilation", (1, 1))[0])
    return max(CPU_SCRATCH, need)


def _scratch_bytes(spec) -> int:
    """A CPU layer's scratch (templates/cpu/_layer.j2's scratch_bytes): its row bands'
    input, rounded up to 16 bytes, and output; 0 without bands."""
    t = spec.get("tile")
    return (t["l1_in"] + 15) // 16 * 16 + t["l1_out"] if t else 0


def _arena(buffers, layers, kpu_layers) -> dict:
    """The caller's arena: the CPU's activations (the buffer plan), then one scratch region
    (SCRATCH_ALIGN-aligned) the size of the largest CPU layer's scratch, which every CPU layer
    uses in turn.  size: what the header's ARENA_SIZE asks for, the slack init may skip to
    align the arena's start included."""
    act = buffers["arena_size"]
    scratch = max((lp.spec.get("scratch", 0) for lp in layers if lp.layer.name not in kpu_layers), default=0)
    at = (act + SCRATCH_ALIGN - 1) // SCRATCH_ALIGN * SCRATCH_ALIGN if scratch else act
    return {"activations": act, "scratch_at": at, "scratch": scratch, "size": at + scratch + ARENA_ALIGN - 1}


def _short(reason):
    if reason is None:
        return None
    return reason if len(reason) <= 40 else reason[:39] + "~"


def _reference(kpu_layers):
    from . import reference
    return lambda graph, x: reference.run_graph(graph, x, kpu_layers)


def _golden_tags(graph, kpu_layers) -> dict:
    """Per tensor: where it and everything upstream ran (KPU pool type or CPU), so that a
    placement edit rebuilds exactly the goldens whose numbers it changes."""
    tags = {t: None for t in graph.inputs}
    for layer in graph.layers:
        kl = kpu_layers.get(layer.name)
        here = ["kpu", mapping.MODEL_VERSION, kl.pool_type] if kl else "cpu"
        tags[layer.output] = digest(here, [tags[t] for t in layer.inputs])
    return tags


def _kpu_spec(layer, cname, kl) -> dict:
    """A KPU layer's C source depends on its words (addresses aside) and table offsets only."""
    words = kpu.pack_words(kl.fields)          # lines and addresses 0: filled in at run time
    return {"op": "kpu", "source_op": layer.op, "name": layer.name, "cname": cname,
            "words": [f"{w:#018x}" for w in words],
            "word_names": kpu.WORD_NAMES, "k": kl.k, "depthwise": kl.depthwise,
            "pool": kpu.POOL_NAMES[kl.pool_type], "in": list(kl.in_chw), "out": list(kl.out_chw), "fc": kl.fc,
            "bn_offset": kl.bn_offset, "act_offset": kl.act_offset, "param_bytes": kl.param_bytes}


def _plan_ai_ram(graph, layers, kpu_layers, opts, where) -> dict:
    """AI-RAM lines of every KPU layer: input at the bottom and output at the top, or the
    other way round when the input is the previous KPU layer's output, which stays in place
    (no upload). Input and output never overlap; a layer whose two maps exceed the AI RAM is
    an error naming it and the numbers."""
    total = opts["memory"]["ai_ram"] // kpu.LINE
    out, prev = {}, None     # prev: (output tensor, dst line, lines) of the previous layer if on the KPU
    for lp in layers:
        kl = kpu_layers.get(lp.layer.name)
        if kl is None:
            prev = None
            continue
        in_lines, out_lines = kpu.tensor_lines(*kl.in_chw), kpu.tensor_lines(*kl.out_chw)
        need = (in_lines + out_lines) * kpu.LINE
        if need > opts["memory"]["ai_ram"]:
            c, h, w = kl.in_chw
            o, oh, ow = kl.out_chw
            raise UserError(
                f"{where(None, 'memory', 'ai_ram')}: layer '{lp.layer.name}' does not fit the KPU's AI RAM: "
                f"input {c}x{h}x{w} takes {in_lines * kpu.LINE:,} B and output {o}x{oh}x{ow} "
                f"{out_lines * kpu.LINE:,} B in the KPU layout (64-byte lines, rows of ceil(W/64) lines), "
                f"{need:,} B > memory.ai_ram = {opts['memory']['ai_ram']:,} B; "
                f"run it on the CPU with 'on: cpu' under models.<model>.targets.<target>.layers")
        resident = prev is not None and prev[0] == lp.layer.inputs[0] and not kl.fc
        src = prev[1] if resident else 0
        dst = 0 if src > 0 else total - out_lines
        out[lp.cname] = {"src": src, "dst": dst, "upload": not resident, "in_bytes": in_lines * kpu.LINE,
                         "out_bytes": out_lines * kpu.LINE, "peak": need}
        prev = (lp.layer.output, dst, out_lines)
    return {"layers": out, "lines": total}


NOTES = [
    "Target k210: the KPU layers push their 12 argument words through kpu_hal.h (the",
    "archive <platform>/lib/libnns_<model>.a holds the HAL of its platform: emul and qemu",
    "link the C KPU emulator kernels/k210/kpu_emul.c, a K210 links kpu_board.c, the real",
    "registers); the other layers run the portable C kernels on the CPU.",
    "The weights are linked into the library (read-only data, 256-byte aligned as the",
    "KPU's tables require): nothing to load or flash besides the program.  init registers",
    "them with kpu_hal_map() and keeps the KPU's addresses in the context.",
    "arena: NNS_..._ARENA_SIZE bytes, any alignment, owned by the caller: the CPU's int8",
    "CHW activations, then the CPU layers' row-band scratch.  Memory besides the arena:",
    "NNS_..._PARAMS_SIZE bytes of weights (read-only data), NNS_..._SRAM_SIZE in all.",
    "The KPU and its AI RAM (NNS_..._AI_RAM_SIZE bytes, 0x40600000 on a K210) are one",
    "device that every context shares: contexts run concurrently on the CPU, but only one",
    "inference at a time may use the KPU -- the application serializes the run calls of",
    "all its contexts (e.g. one mutex around them), and nothing else may use the KPU or",
    "its AI RAM during a run.  The emulator (emul, qemu) models the AI RAM as one static",
    "array, the same rule holds there.",
]


def _lib_dir(platform: str) -> str:
    """One archive per platform (each its own compiler): <platform>/lib."""
    return f"{platform}/lib"


def _network_files(network, layers, platform) -> list:
    """The library (network source, header, API source, the .cmake/.mk of the emul and qemu
    archives: both, so a platform switch generates nothing), the harness, the weights'
    assembly files.  platform=board builds no archive of its own (the SDK's CMake project
    compiles the sources): no .cmake/.mk."""
    lib = network["lib"]
    dirs = () if platform == "board" else tuple(_lib_dir(p) for p in ("emul", "qemu"))
    files = library.generated_files(lib, TEMPLATES, network["arena"]["size"], layers, "nns.c.j2", network,
                                    lib_dirs=dirs)
    # the harness reads nothing the header alone says (notes, context, memory): core(lib)
    return (files + [("src/main.c", "main.c.j2", {"lib": library.core(lib), "bins": library.harness_bins()})]
            + library.weights_files(lib, TEMPLATES, layers, align=256))


def _network_spec(graph, layers, buffers, ai, lib, arena, opts) -> dict:
    t = buffers["tensors"]
    entries = []
    n_kpu = 0
    for lp in layers:
        e = {"cname": lp.cname, "inputs": [t[i]["offset"] for i in lp.layer.inputs], "output": t[lp.layer.output],
             "params_bytes": lp.param_bytes, "kpu": lp.cname in ai["layers"], "symbol": lp.spec["symbol"]}
        if e["kpu"]:
            a = ai["layers"][lp.cname]
            e.update(src=a["src"], dst=a["dst"], upload=a["upload"], in_chw=lp.spec["in"], out_chw=lp.spec["out"],
                     fc=lp.spec["fc"], kpu_index=n_kpu)
            n_kpu += 1
        else:
            e["scratch"] = lp.spec.get("scratch", 0)
        entries.append(e)
    params = sum(lp.param_bytes for lp in layers)
    peak = max((a["peak"] for a in ai["layers"].values()), default=0)
    ai_ram = opts["memory"]["ai_ram"] if n_kpu else 0
    lib = dict(lib, notes=NOTES, arena_align=ARENA_ALIGN, context=[
        {"decl": f"uint32_t kpu_params[{max(n_kpu, 1)}]",
         "what": "the KPU's 32-bit addresses of the KPU layers' parameters (kpu_hal_map, by init)"}],
        memory=[
            {"name": "AI_RAM_SIZE", "bytes": ai_ram,
             "what": "bytes of the KPU's AI RAM the KPU layers address (peak %d B at once): one device that every "
                     "context shares, one inference at a time" % peak},
            {"name": "PARAMS_SIZE", "bytes": params, "what": "weights, linked in (read-only data, in the SRAM)"},
            {"name": "SRAM_SIZE", "bytes": params + arena["size"], "what": "PARAMS_SIZE + ARENA_SIZE"}])
    return {"lib": lib, "arena": arena, "arena_size": arena["activations"],
            "inputs": [t[n] for n in graph.inputs], "outputs": [t[n] for n in graph.outputs],
            "layers": entries, "n_kpu": n_kpu}
