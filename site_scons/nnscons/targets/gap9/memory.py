"""GAP9 memory plan: L2 activations by liveness, parameter tiers, L3 staging slabs.

Parameters of a layer whose weights exceed `memory.l3_threshold` live in L3 and move to
L2 one channel tile ("slab") at a time, through two staging buffers: while the cluster
computes with slab j, the read of slab j+1 (possibly the next layer's first) is in flight.
A slab has the layout of the layer's L1 parameter tile, so slab -> L1 is one copy per
section. Other parameters are loaded once into L2 at start-up.
"""
from __future__ import annotations

from ...errors import UserError
from ...planning.buffers import plan_buffers

COMPARE_CHUNK = 2048      # L2 bounce buffer for golden comparison and L3 loading


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
    peak = buffers["arena_size"] + l2_off + staging + COMPARE_CHUNK
    l2_avail = mem["l2"] - mem["l2_reserved"]
    if peak > l2_avail:
        raise UserError(
            f"{where(None, 'memory', 'l2')}: the model does not fit GAP9's L2: activations "
            f"{buffers['arena_size']} B (liveness-planned) + L2-resident parameters {l2_off} B + "
            f"L3 staging buffers {staging} B + {COMPARE_CHUNK} B = {peak} B, more than memory.l2 - "
            f"memory.l2_reserved = {l2_avail} B. Lower memory.l3_threshold to stage more weights "
            f"in L3, or use a smaller input")
    l3_size = mem["l3_size"]
    if l3_off > l3_size:
        raise UserError(
            f"{where(None, 'memory', 'l3_size')}: the L3-staged parameters need {l3_off} B, more than "
            f"the target's L3 {mem['l3_device']} of {l3_size} B (memory.l3_size)")
    return {
        "buffers": buffers, "params_l2": params_l2, "params_l2_bytes": l2_off, "staged": staged,
        "slabs": slabs, "slab_bytes": _align(slab_bytes, 16), "staging_bytes": staging,
        "l3_bytes": l3_off, "peak_l2": peak, "l2_avail": l2_avail,
    }
