"""GAP9 memory plan: L2 activations by liveness, parameter tiers, L3 staging slabs; the
network's run-time state (the library's context) and status codes.

Parameters of a layer whose weights exceed `memory.l3_threshold` live in L3 and move to
L2 one channel tile ("slab") at a time, through two staging buffers: while the cluster
computes with slab j, the read of slab j+1 (possibly the next layer's first) is in flight.
A slab has the layout of the layer's L1 parameter tile, so slab -> L1 is one copy per
section. Other parameters are loaded once into L2 at start-up.

Activations live in the L2 arena while they fit (liveness-planned). When they do not and the
target has L3 RAM, they live in L3 instead, at their liveness-planned offsets in an L3 arena,
and L2 holds one layer's working set: before each layer the fabric controller reads its inputs
from L3 into the L2 arena (pi_ram_read), after it writes its output back (pi_ram_write). The
input slot and the output slot are at the start of the L2 arena; the run moves them to and
from L3 once each; a network with several inputs (outputs) has them back to back there, each
at a 16-byte boundary, in the model's order.
"""
from __future__ import annotations

from ...errors import UserError
from ...planning.buffers import plan_buffers

COMPARE_CHUNK = 2048      # L2 bounce buffer for golden comparison and L3 loading
# the library aligns the caller's arena up to this (pi_l2_malloc's own alignment): the arena's
# size (NNS_<M>_ARENA_SIZE) counts the slack
ARENA_ALIGN = 4


def _align(n, a=4):
    return -(-n // a) * a


def plan_memory(graph, layers, opts, where) -> dict:
    mem = opts["memory"]
    buffers = plan_buffers(graph)
    params_l2, l2_off = {}, 0
    staged, l3_off, slabs = {}, 0, []
    for lp in layers:
        if not lp.param_bytes:
            continue
        if lp.spec["tier"] == "L3":
            staged[lp.cname] = {"l3_offset": l3_off, "first_slab": len(slabs), "file": len(staged)}
            # RAM: one allocation holds every staged layer; flash: each layer's own file
            base = l3_off if mem["l3_device"] == "ram" else 0
            sections = lp.spec["sections"]
            tc, oc = lp.spec["tile"]["tc"], lp.spec["out"]["c"]
            for c0 in range(0, oc, tc):
                n = min(tc, oc - c0)
                reads = [{"l3": base + s["src"] + c0 * s["per_oc"], "size": n * s["per_oc"],
                          "dst": s["offset"]} for s in sections]
                slabs.append({"layer": lp.cname, "reads": reads, "file": staged[lp.cname]["file"]})
            staged[lp.cname]["bytes"] = sum(r["size"] for sl in slabs[staged[lp.cname]["first_slab"]:]
                                            for r in sl["reads"])
            l3_off += _align(lp.param_bytes, 64)
        else:
            params_l2[lp.cname] = l2_off
            l2_off += _align(lp.param_bytes, 16)
    slab_bytes = max((lp.spec["tile"]["l1_params"] for lp in layers if lp.cname in staged), default=0)
    staging = 2 * _align(slab_bytes, 16)
    arena = buffers["arena_size"] + ARENA_ALIGN - 1
    lib_l2 = l2_off + staging + COMPARE_CHUNK       # the library's own L2 block (its open)
    peak = arena + lib_l2
    l2_avail = mem["l2"] - mem["l2_reserved"]
    spill = None
    if peak > l2_avail and mem["l3_device"] == "ram" and mem["l3_size"] > 0:
        spill = spill_plan(graph, layers, buffers, _align(l3_off, 64))
        arena = spill["l2_arena"] + ARENA_ALIGN - 1
        peak = arena + lib_l2
        l3_off = spill["l3_end"]
    if peak > l2_avail:
        what = (f"the largest layer's inputs and output (activations in L3) {arena} B" if spill else
                f"activations {arena} B (liveness-planned, {ARENA_ALIGN - 1} B alignment slack)")
        raise UserError(
            f"{where(None, 'memory', 'l2')}: the model does not fit GAP9's L2: {what} + L2-resident parameters "
            f"{l2_off} B + L3 staging buffers {staging} B + {COMPARE_CHUNK} B = {peak} B, more than memory.l2 - "
            f"memory.l2_reserved = {l2_avail} B. Lower memory.l3_threshold to stage more weights "
            f"in L3, or use a smaller input" + ("" if spill or mem["l3_device"] == "ram" else
                                               "; with memory.l3_device: ram the activations could live in L3"))
    l3_size = mem["l3_size"]
    if l3_off > l3_size:
        raise UserError(
            f"{where(None, 'memory', 'l3_size')}: the L3-staged parameters need {l3_off} B, more than "
            f"the target's L3 {mem['l3_device']} of {l3_size} B (memory.l3_size)" +
            (f" with the activations ({spill['l3_end'] - spill['act_l3']} B)" if spill else ""))
    return {
        "spill": spill,
        "buffers": buffers, "params_l2": params_l2, "params_l2_bytes": l2_off, "staged": staged,
        "slabs": slabs, "slab_bytes": _align(slab_bytes, 16), "staging_bytes": staging,
        "l3_bytes": l3_off, "peak_l2": peak, "l2_avail": l2_avail, "arena_bytes": arena, "lib_l2": lib_l2,
    }


# the element-wise layers whose templates (add.c.j2, nary.c.j2) can read their inputs from L3
STREAMED_OPS = ("add", "nary")


def spill_plan(graph, layers, buffers, act_l3: int) -> dict:
    """Activations in L3 (see the module's docstring): every tensor at act_l3 + its
    liveness-planned offset; per layer its inputs (each once) then its output in the L2 arena
    (an alias layer's output is its input); the network's input and output slots at 0."""
    t = buffers["tensors"]
    inputs, outputs = _io_slots(graph.inputs, t), _io_slots(graph.outputs, t)
    per_layer, l2_arena = {}, max(_slots_end(inputs), _slots_end(outputs))
    for lp in layers:
        layer, at, reads = lp.layer, {}, []
        if layer.op in STREAMED_OPS:
            # an element-wise layer: its inputs stream from L3 chunk by chunk through an L2
            # bounce buffer (a residual add's two inputs and output may not fit L2 together)
            tile = lp.spec["tile"]
            pars = [i["size"] for i, (kind, _) in zip(lp.spec["inputs"], lp.spec.get("slots", [])) if kind == "par"]
            bounce = max([tile["tw"] * lp.spec.get("unit", 1)] + pars)
            out = {"l3": t[layer.output]["offset"], "l2": 0, "size": t[layer.output]["size"]}
            per_layer[lp.cname] = {"reads": [], "inputs": [0] * len(layer.inputs), "write": out,
                                   "stream": {"l3_in": [t[n]["offset"] for n in layer.inputs],
                                              "bounce": _align(out["size"], 16)}}
            l2_arena = max(l2_arena, _align(out["size"], 16) + _align(bounce, 16))
            continue
        for name in layer.inputs:
            if name not in at:
                at[name] = sum(_align(r["size"], 16) for r in reads)
                reads.append({"l3": t[name]["offset"], "l2": at[name], "size": t[name]["size"]})
        end = sum(_align(r["size"], 16) for r in reads)
        out_l2 = at[layer.inputs[0]] if lp.spec["tile"] is None and len(layer.inputs) == 1 else end
        out = {"l3": t[layer.output]["offset"], "l2": out_l2, "size": t[layer.output]["size"]}
        per_layer[lp.cname] = {"reads": reads, "inputs": [at[n] for n in layer.inputs], "write": out, "stream": None}
        l2_arena = max(l2_arena, end if out_l2 < end else end + _align(out["size"], 16))
    return {"act_l3": act_l3, "l3_end": act_l3 + buffers["arena_size"], "l2_arena": l2_arena, "layers": per_layer,
            "inputs": inputs, "outputs": outputs}


def _io_slots(names, tensors) -> list:
    """The network inputs' (outputs') slots at the L2 arena's start while their tensors live in
    L3: [{l3, l2, size}] back to back, 16-byte aligned (the input slots are read before the
    first layer and the output slots written after the last, so the two sets may overlap)."""
    slots, at = [], 0
    for n in names:
        slots.append({"l3": tensors[n]["offset"], "l2": at, "size": tensors[n]["size"]})
        at += _align(tensors[n]["size"], 16)
    return slots


def _slots_end(slots) -> int:
    return slots[-1]["l2"] + _align(slots[-1]["size"], 16)


def state_fields(l3_device: str, n_staged: int) -> list:
    """The network's run-time state (network.c.j2): the library's context fields (the header's
    nns_<model>_t) and, for a layer-by-layer program, its own struct of the same fields."""
    f = [{"decl": "struct pi_device cluster_dev", "what": "the cluster, opened by open"},
         {"decl": "struct pi_device ram_dev", "what": "the L3 RAM, opened by open when L3_SIZE > 0"},
         {"decl": "struct pi_device *fs", "what": "the readfs open read the weights from"}]
    if l3_device == "flash":
        f.append({"decl": f"pi_fs_file_t *staged_files[{max(n_staged, 1)}]",
                  "what": "the L3-staged layers' weights files, open (read by the cluster)"})
    return f + [
        {"decl": "nn_stage_t stage", "what": "L3 -> L2 staging of parameter slabs"},
        {"decl": "nn_layer_io_t io", "what": "the running layer's buffers (read by the cluster)"},
        {"decl": "int layer", "what": "the layer the cluster task runs"},
        {"decl": "int layer_status", "what": "what it reported (0, or NN_LAYER_* when it failed)"},
        {"decl": "uint8_t *l2", "what": "open's L2 block (L2_LIB_SIZE bytes): params_l2, staging, chunk"},
        {"decl": "uint8_t *params_l2", "what": "the L2-resident parameters"},
        {"decl": "uint8_t *staging", "what": "two slab buffers"},
        {"decl": "uint8_t *chunk", "what": "the bounce buffer of open's L3 loads"},
        {"decl": "int taken", "what": "what open took: 1 the RAM, 2 the cluster, 4 the L2 block; 8 once it succeeded"},
        {"decl": "int failed_layer", "what": "after an ERR_FILE_* or ERR_L1_ALLOC: the layer (index) that failed, else -1"},
    ]


# the library's own status codes (the header's NNS_<M>_<name>, strerror's texts)
ERRORS = [("ERR_NOT_OPEN", -101, "run before {P}_open (or after {P}_close)"),
          ("ERR_FILE_MISSING", -102, "a weights file is missing from the readfs (ctx->failed_layer says whose)"),
          ("ERR_FILE_SIZE", -103, "a weights file in the readfs has the wrong size (ctx->failed_layer says whose)"),
          ("ERR_FILE_READ", -104, "reading a weights file from the readfs failed (ctx->failed_layer says whose)"),
          ("ERR_CLUSTER", -105, "the cluster could not be opened"),
          ("ERR_RAM", -106, "the L3 RAM could not be opened or L3_SIZE bytes of it allocated"),
          ("ERR_L2_ALLOC", -107, "L2_LIB_SIZE bytes of L2 could not be allocated (pi_l2_malloc)"),
          ("ERR_L1_ALLOC", -108, "a layer could not allocate its L1 block (pi_cl_l1_malloc, at most L1_SIZE bytes; "
                                 "ctx->failed_layer says which)")]


def error_codes() -> dict:
    """{name: code} for the network source (a layer-by-layer program has no header)."""
    return {n: code for n, code, _ in ERRORS}


def spills(graph, layers, opts, where) -> bool:
    """Whether the memory plan puts the activations in L3 (or finds none that fits)."""
    try:
        return bool(plan_memory(graph, layers, opts, where)["spill"])
    except UserError:
        return True
