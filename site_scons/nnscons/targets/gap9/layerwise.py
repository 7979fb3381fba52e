"""Layer by layer: a model whose parameters do not fit L2 on a simulator without L3.

The bare-metal GVSoC models (chip.py's Simulators: GVSoC's GAP9 model, and those of the kinds
reusing gap9) have no external RAM here, so when the whole network does not fit L2 on one of
them (whose point is counting cycles), every layer becomes its own program and run: its
inputs are the goldens of the layers that produce them (bit-exact by the check of those
layers), its parameters are loaded into L2, its output is checked against its golden and
its cycles are counted. A layer too large even alone (activations + parameters above L2) runs on
the first k output channels only (conv2d and linear: the parameters of channel o are a prefix of
each .bin section, the output channels the last axis of the HWC golden): its output is checked
on those k channels and its cycles are scaled by oc / k, which the report says.
"""
from __future__ import annotations

import copy
import math

import numpy as np

from ...builders.run import simrun
from ...errors import UserError
from ...fileio import write_if_changed
from ... import binfiles
from ... import ops as nnsops
from . import memory, ops

SLICE_STEP = 8           # output channels of a slice: a multiple of this (PULP-NN blocks 4)


def _slice_step(lp) -> int:
    """A slice is whole output-channel tiles of the layer's own plan (and a multiple of
    SLICE_STEP), so that its cycles scaled by oc / k count whole tiles as the full layer runs
    them: a partial last tile costs less than its channels' share (NE16 on 504 of 512 channels
    ran 15 tiles of 32 and one of 24: scaled by 512/504, 1.6% up, where 16 whole tiles cost about
    0.9% more than those)."""
    tc = ((lp.spec or {}).get("tile") or {}).get("tc")
    return math.lcm(SLICE_STEP, int(tc)) if tc else SLICE_STEP


def _align(n, a=16):
    return -(-n // a) * a


def _numel(graph, t):
    return int(np.prod(graph.tensor(t).shape))


class _SliceView:
    """The graph as a sliced layer sees it: its output tensor has k channels."""

    def __init__(self, graph, name, tensor):
        self._graph, self._name, self._tensor = graph, name, tensor

    def tensor(self, name):
        return self._tensor if name == self._name else self._graph.tensor(name)

    def __getattr__(self, attr):
        return getattr(self._graph, attr)


def slice_layout(layout, oc, k) -> list:
    """The .bin layout of the first k of oc output channels: per-channel sections shrink."""
    out, off = [], 0
    for section, dtype, count, _ in layout:
        n = count // oc * k if count >= oc and count % oc == 0 else count
        out.append((section, dtype, n, off))
        off += -(-n * np.dtype(dtype).itemsize // 4) * 4
    return out


def slice_bytes(full: bytes, layout, sliced) -> bytes:
    """The sliced .bin from the full one: each section's prefix (channel-major sections)."""
    from ..base import layout_bytes
    blob = bytearray(layout_bytes(sliced))
    for (_, dtype, _, off), (_, _, n, soff) in zip(layout, sliced):
        size = n * np.dtype(dtype).itemsize
        blob[soff:soff + size] = full[off:off + size]
    return bytes(blob)


def sliced_layer(graph, layer, k) -> tuple:
    """(the layer on its first k output channels, the graph as that layer sees it)."""
    out = graph.tensor(layer.output)
    view_t = copy.copy(out)
    view_t.shape = (out.shape[0], k) + tuple(out.shape[2:])
    sl = copy.copy(layer)
    sl.weight = layer.weight[:k]
    sl.bias = None if layer.bias is None else layer.bias[:k]
    return sl, _SliceView(graph, layer.output, view_t)


def _slice(lp, graph, k, budget, at, opts):
    """Re-plan a conv2d/linear LayerPlan for its first k output channels (spec and tiling)."""
    layer = lp.layer
    out = graph.tensor(layer.output)
    sl, view = sliced_layer(graph, layer, k)
    til, need = ops.plan_tiling(sl, view, budget, opts["cluster"]["cores"], opts["kernels"]["xpulp"])
    if til is None:
        raise ops.budget_error(layer, need, budget, at)
    layout = slice_layout(lp.param_layout, int(out.shape[1]), k)
    return ops.layer_spec(sl, view, lp.cname, layout, "L2", til, opts["kernels"]["xpulp"]), layout


def plan(graph, layers, opts, budgets) -> dict:
    """Per layer its run: arena (its inputs, then its output), parameters, the files it loads;
    slices the layers that do not fit alone. budgets: cname -> (l1_budget, where)."""
    l2_avail = opts["memory"]["l2"] - opts["memory"]["l2_reserved"]
    producer = {lp.layer.output: lp for lp in layers}
    in_at, at = {}, 0               # each network input's offset in input.bin (back to back)
    for t in graph.inputs:
        in_at[t], at = at, at + _numel(graph, t)
    input_bytes = at
    runs, peak = [], 0
    for index, lp in enumerate(layers):
        layer = lp.layer
        offsets, off = {}, 0
        for t in layer.inputs:
            if t not in offsets:
                offsets[t] = off
                off += _align(_numel(graph, t))
        # a network input: its part of input.bin (file_size: the whole file, file_offset: where it starts)
        loads = [{"stem": binfiles.INPUT[:-4], "file_size": input_bytes, "file_offset": in_at[t],
                  "offset": o, "size": _numel(graph, t)} if t in in_at else
                 {"stem": binfiles.bin_stem("golden", producer[t].cname, "flat"), "file_size": _numel(graph, t),
                  "file_offset": 0, "offset": o, "size": _numel(graph, t)} for t, o in offsets.items()]
        alias = nnsops.get(layer.op).alias
        oc = int(graph.tensor(layer.output).shape[1])
        out_size, params, stem, k = _numel(graph, layer.output), lp.param_bytes, lp.cname, oc
        need = off + (0 if alias else _align(out_size)) + _align(params) + memory.COMPARE_CHUNK
        if need > l2_avail:
            if not nnsops.is_dense(layer):     # one GEMM: sliceable by output channels
                raise UserError(f"layer '{layer.name}' ({layer.op}) does not fit {opts['run']['platform']}'s L2 even alone: "
                                f"{need} B > memory.l2 - memory.l2_reserved = {l2_avail} B, and only conv2d and "
                                f"linear layers can run on a slice of their output channels")
            per_oc = params / oc + out_size / oc
            fixed = off + memory.COMPARE_CHUNK + 64
            for step in dict.fromkeys((_slice_step(lp), SLICE_STEP)):
                k = int((l2_avail - fixed) // per_oc) // step * step
                while k >= step and (fixed + _align(out_size // oc * k) +
                                     _align(sum(-(-n * np.dtype(d).itemsize // 4) * 4 for _, d, n, _ in
                                                slice_layout(lp.param_layout, oc, k)))) > l2_avail:
                    k -= step
                if k >= step:
                    break
            if k < SLICE_STEP:
                raise UserError(f"layer '{layer.name}': not even {SLICE_STEP} of its output channels fit "
                                f"{opts['run']['platform']}'s L2 ({l2_avail} B)")
            budget, at = budgets[lp.cname]
            lp.spec, layout = _slice(lp, graph, k, budget, at, opts)
            from ..base import layout_bytes
            params, out_size, stem = layout_bytes(layout), out_size // oc * k, f"{lp.cname}_slice"
            lp.report.update(slice={"channels": k, "of": oc, "layout": [list(x) for x in layout]},
                             cycles_scale=oc / k)
        out_off = offsets[layer.inputs[0]] if alias else off
        arena = off if alias else off + _align(out_size)
        peak = max(peak, arena + _align(params) + memory.COMPARE_CHUNK)
        runs.append({
            "arena_size": max(arena, 4), "loads": loads, "output": {"offset": out_off, "size": out_size},
            # only the runs of the network's outputs print their bytes (semihosting is slow)
            "print_output": layer.output in graph.outputs,
            "layers": [{"cname": lp.cname, "bin": stem, "index": index,
                        "inputs": [offsets[t] for t in layer.inputs],
                        "output": {"offset": out_off, "size": out_size}, "params_bytes": params,
                        "tier": "L2" if params else None, "params_l2": 0 if params else None,
                        "l3_offset": None, "first_slab": 0, "file": -1}],
            "params_l2_bytes": _align(params), "slabs": [], "slab_bytes": 0, "l3_bytes": 0,
            "l3_device": opts["memory"]["l3_device"], "compare_chunk": memory.COMPARE_CHUNK, "spill": None,
            "cluster": opts["cluster"], "l2_avail": l2_avail, "sliced": stem != lp.cname,
            "lib_l2": _align(params) + memory.COMPARE_CHUNK,
            "state": memory.state_fields(opts["memory"]["l3_device"], 0), "errors": memory.error_codes(),
        })
    return {"runs": runs, "peak_l2": peak, "l2_avail": l2_avail}


# ---- actions ------------------------------------------------------------------------------------

def write_slice(target, source, env):
    """target: [<cname>_slice_weights.bin, <cname>_slice_golden.bin]; source: the full ones."""
    session = env["NNS_SESSION"]
    lp = session.plan_by_cname[env["NNS_CNAME"]]
    s = lp.report["slice"]
    layout = [tuple(x) for x in s["layout"]]
    with open(str(source[0]), "rb") as f:
        write_if_changed(str(target[0]), slice_bytes(f.read(), lp.param_layout, layout))
    golden = np.fromfile(str(source[1]), dtype=np.int8).reshape(-1, s["of"])[:, :s["channels"]]
    write_if_changed(str(target[1]), np.ascontiguousarray(golden).tobytes())
    return 0


def run_layer(target, source, env):
    """One layer's program: target [its log]; the log is vetted as a whole network's would be."""
    from . import platforms, runstep
    session = env["NNS_SESSION"]
    platform, tname = env["NNS_PLATFORM"], session.target_cfg.name
    status, log = platforms.run(platform, session, str(source[0]), env["NNS_BIN_DIR"], show=env["NNS_VERBOSE"])
    if not simrun.vetted(f"RUN FAILED [{tname}] layer {env['NNS_LABEL']} on {platform}", session, status, log,
                         runstep.fatal(session)):
        return 1
    write_if_changed(str(target[0]), log)
    return 0


def merge_logs(target, source, env):
    """target [run.log, output.npy]; source: the layers' logs in model order. run.log holds every
    layer's lines, `Test PASSED` when every run passed, and the network output of the last run."""
    session = env["NNS_SESSION"]
    from . import runstep
    keep = ("layer ", "measure ", "ERROR") + tuple(runstep.error_tags(session))
    texts = []
    for node in source:
        with open(str(node), encoding="utf-8") as f:
            texts.append(f.read())
    lines = [f"nnscons run: layer by layer, {len(texts)} runs"]
    for text in texts:
        lines += [ln for ln in text.splitlines() if ln.startswith(keep)]
    graph, out_lines, at = session.graph, [], 0
    for name in graph.outputs:      # each output from the run of its layer, placed back to back
        k = next(i for i, lp in enumerate(session.plan.layers) if lp.layer.output == name)
        size = _numel(graph, name)
        own = [ln for ln in texts[k].splitlines() if ln.startswith("output ")]
        if simrun.output_bytes("\n".join(own), size) is None:
            lp = session.plan.layers[k]
            why = ""
            if "slice" in lp.report:
                sl = lp.report["slice"]
                why = (f": the layer does not fit L2 even alone, so it ran on {sl['channels']} of its "
                       f"{sl['of']} output channels (that slice checked like every layer); the network's "
                       f"whole output needs it whole: run it on platform=emul or qemu (L3 holds what L2 "
                       f"cannot) or on a board")
            print(f"RUN FAILED [{session.target_cfg.name}]: the run of layer '{lp.layer.name}' "
                  f"holds no complete network output '{name}'{why}")
            return 1
        for ln in own:
            _, off, hexes = ln.split()
            out_lines.append(f"output {int(off) + at} {hexes}")
        at += size
    lines += out_lines
    passed = all("Test PASSED" in t.splitlines() for t in texts)
    lines.append("Test PASSED" if passed else "Test FAILED: see the layer lines above")
    log = "\n".join(lines) + "\n"
    data = simrun.output_bytes("\n".join(out_lines), simrun.network_output_size(session))
    simrun.write_results(session, data, log, str(target[0]), str(target[1]))
    return 0
