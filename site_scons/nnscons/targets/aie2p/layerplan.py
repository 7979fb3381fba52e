"""Per-layer plan: resolved tiling, the DMA patterns of its design, memory use, report.

Data flow of one layer on `columns` columns of `cores` cores each (weight-stationary, as
mlir-aie's conv2d_14x14): per iteration a core holds the weights of `channels_per_call`
output channels and the whole input streams past it, one band of kh input rows per output
row; the memtile cuts each band into calls of `tiles_per_call` output pixels (im2col by
its MM2S pattern), broadcasts them to the column's cores, and turns their {C/8}{T}{C8}
outputs back into HWC on the way out. All addresses here are bytes of int8/uint8 buffers.
"""
from __future__ import annotations

from ...errors import UserError
from ... import numerics
from . import patterns as P

STACK_BYTES = 1024          # core stack reserved in L1 (the design's stack_size)


def param_bytes(ncls: int = 1) -> int:
    """Per 8-channel block: bias' per border class, mult, shift, each 8 x int32."""
    return 32 * (ncls + 2)


def staged_dims(g: dict):
    """(Hp, Wp, Cp, Op, ncls): the input as staged in DDR (zero-padded rows/columns, zero
    channels appended), output channels padded to 8, border classes (mapping.py)."""
    return (g.get("Hp", g["H"]), g.get("Wp", g["W"]), g.get("Cp", g["C"]),
            g.get("Op", g["O"]), g.get("ncls", 1))
MAX_CORES, MAX_COLUMNS = 4, 8   # npu2: compute rows 2..5, 8 columns


def _divisor_at_most(n: int, cap: int, step: int = 1) -> int:
    return max((d for d in range(step, min(n, cap) + 1, step) if n % d == 0), default=0)


def resolve_tiling(g: dict, req: dict, at) -> dict:
    """req: tiles_per_call, channels_per_call, cores, columns, variant; at(key) -> location."""
    for key in ("tiles_per_call", "channels_per_call", "cores", "columns"):
        if req[key] < 1:
            raise UserError(f"{at(key)}: must be >= 1, got {req[key]}")
    if req["channels_per_call"] % 8:
        raise UserError(f"{at('channels_per_call')}: must be a multiple of 8 (the kernel's "
                        f"C8 blocks), got {req['channels_per_call']}")
    if req["cores"] > MAX_CORES or req["columns"] > MAX_COLUMNS:
        raise UserError(f"{at('cores' if req['cores'] > MAX_CORES else 'columns')}: npu2 has "
                        f"{MAX_COLUMNS} columns of {MAX_CORES} compute cores")
    T = _divisor_at_most(g["OW"], req["tiles_per_call"])
    Op = staged_dims(g)[3]
    Cc = _divisor_at_most(Op, req["channels_per_call"], 8)
    groups = Op // Cc
    per_iter = req["cores"] * req["columns"]
    if groups % per_iter:
        raise UserError(f"{at('cores')}: {req['cores']} core(s) x {req['columns']} column(s) "
                        f"must divide the {groups} groups of {Cc} output channels")
    vector = req["variant"] == "vector" and T % 8 == 0
    return dict(T=T, Cc=Cc, cores=req["cores"], columns=req["columns"], groups=groups,
                n_iter=groups // per_iter, variant="vector" if vector else "scalar",
                requested_variant=req["variant"])


def _chunks(n: int):
    """Shim tasks repeat a BD at most 64 times: (first iteration, count) chunks."""
    return [(i, min(P.MAX_REPEAT, n - i)) for i in range(0, n, P.MAX_REPEAT)]


def dma_plan(g: dict, t: dict) -> dict:
    H, W, C, O, ncls = staged_dims(g)
    OH, OW = g["OH"], g["OW"]
    kh, kw, sh, sw = g["kh"], g["kw"], g["sh"], g["sw"]
    T, Cc, R, cols, n_iter = t["T"], t["Cc"], t["cores"], t["columns"], t["n_iter"]
    K = kh * kw * C
    band, a_bytes, o_bytes = kh * W * C, T * K, T * Cc
    gb = (Cc // 8) * (8 * K + param_bytes(ncls))
    w_total = (O // 8) * (8 * K + param_bytes(ncls))
    act_dims = P.fit([[OH, sh * W * C], [kh, W * C], [W * C, 1]])
    out_dims = P.fit([[OH, OW * O], [OW, O], [R * Cc, 1]])
    w_dims = P.fit([[R * gb, 1]])
    tasks = []
    for c in range(cols):
        col = {"act": [], "w": [], "out": []}
        for i0, n in _chunks(n_iter):
            col["act"].append(dict(offset=0, repeat=n, repeat_stride=0, dims=act_dims))
            col["out"].append(dict(offset=(i0 * cols + c) * R * Cc, repeat=n,
                                   repeat_stride=cols * R * Cc, dims=out_dims))
            if cols > 1:
                col["w"].append(dict(offset=(i0 * cols + c) * R * gb, repeat=n,
                                     repeat_stride=cols * R * gb, dims=w_dims))
        if cols == 1:   # consecutive groups: one linear transfer of all weights
            col["w"].append(dict(offset=0, repeat=1, repeat_stride=0, dims=[[w_total, 1]]))
        tasks.append(col)
    return {
        "device": "npu2", "columns": cols, "cores": R, "n_iter": n_iter,
        "calls_per_iter": OH * OW // T,
        "buffers": {"in": H * W * C, "w": w_total, "out": OH * OW * O},
        # what the runner writes into DDR for this layer (runner.stage): the HWC input
        # zero-padded by `pad` (top, bottom, left, right) to H x W x C, and how many of
        # the O output channels are real
        "stage": {"from": [g["H"], g["W"], g["C"]],
                  "pad": [g.get("pt", 0), g.get("pb", 0), g.get("pl", 0), g.get("pr", 0)],
                  "to": [H, W, C], "out_channels": [g["O"], O]},
        # the kernel's border-class tables (ROW_CLS, COL_CLS) in core data memory
        "l1_tables": -(-(OH + OW) // 4) * 4 if ncls > 1 else 0,
        "act_l2": {"bytes": band, "depth": 2},
        "act_l1": {"bytes": a_bytes, "depth": 2,
                   "mm2s": P.fit([[OW // T, T * sw * C], [T, sw * C], [kh, W * C], [kw * C, 1]]),
                   "s2mm": P.canonical([[T, 8], [K // 8, 8 * T], [8, 1]])},
        "w_l2": {"bytes": R * gb, "depth": 2},
        "w_l1": {"bytes": gb, "depth": 2, "offsets": [r * gb for r in range(R)]},
        "out_l1": {"bytes": o_bytes, "depth": 2},
        "out_l2": {"bytes": R * o_bytes, "depth": 2, "offsets": [r * o_bytes for r in range(R)],
                   "mm2s": P.canonical([[T, 8], [R * Cc // 8, 8 * T], [8, 1]])},
        "tasks": tasks,
    }


def check_dma(dma: dict, what: str) -> None:
    """Every pattern of the plan against the hardware limits (PatternError)."""
    b = dma["buffers"]
    check_stage(dma["stage"], b, what)
    P.check("memtile", dma["act_l1"]["mm2s"], dma["act_l2"]["bytes"], f"{what}: act memtile->core")
    P.check("core", dma["act_l1"]["s2mm"], dma["act_l1"]["bytes"], f"{what}: act core receive")
    P.check("memtile", dma["out_l2"]["mm2s"], dma["out_l2"]["bytes"], f"{what}: out memtile->shim")
    for c, col in enumerate(dma["tasks"]):
        for kind, buf in (("act", "in"), ("w", "w"), ("out", "out")):
            for task in col[kind]:
                P.check("shim", task["dims"], b[buf], f"{what}: column {c} {kind} shim task",
                        task["offset"], task["repeat"], task["repeat_stride"])
        bds = sum(len(col[k]) for k in col)
        if bds > P.SHIM_BDS:
            raise P.PatternError(f"{what}: column {c} needs {bds} shim BDs; a shim tile has "
                                 f"{P.SHIM_BDS}")


def check_stage(st: dict, b: dict, what: str) -> None:
    """The DDR staging must be one the runner can write and the shim can read: whole
    32-bit words per padded row, non-negative pads that add up, channels only appended."""
    (h, w, c), (pt, pb, pl, pr), (hp, wp, cp) = st["from"], st["pad"], st["to"]
    o, op = st["out_channels"]
    if min(pt, pb, pl, pr) < 0 or hp != h + pt + pb or wp != w + pl + pr or cp < c:
        raise P.PatternError(f"{what}: DDR staging {h}x{w}x{c} padded by {st['pad']} is not "
                             f"{hp}x{wp}x{cp}")
    if (wp * cp) % P.WORD:
        raise P.PatternError(f"{what}: a staged input row of {wp}x{cp} bytes is not a whole "
                             f"number of 32-bit words; the shim DMA cannot address its rows")
    if hp * wp * cp != b["in"] or op < o or op % 8 or b["out"] % op:
        raise P.PatternError(f"{what}: DDR staging {hp}x{wp}x{cp} / {o} of {op} output channels "
                             f"does not match the {b['in']}/{b['out']}-byte buffers")


def memory_use(dma: dict) -> dict:
    l1 = (dma["act_l1"]["depth"] * dma["act_l1"]["bytes"] + dma["w_l1"]["depth"] * dma["w_l1"]["bytes"]
          + dma["out_l1"]["depth"] * dma["out_l1"]["bytes"] + STACK_BYTES + dma.get("l1_tables", 0))
    mt = sum(dma[f]["depth"] * dma[f]["bytes"] for f in ("act_l2", "w_l2", "out_l2"))
    return {"l1_bytes": l1, "memtile_bytes": mt}


def fit_memory(dma: dict, l1_cap: int, mt_cap: int) -> dict:
    """Double-buffer the weights when they fit, else single; None if nothing fits."""
    for depth in (2, 1):
        dma["w_l1"]["depth"] = depth
        use = memory_use(dma)
        if use["l1_bytes"] <= l1_cap and use["memtile_bytes"] <= mt_cap:
            return use
    return None


def layer_spec(layer, graph, cname: str, g: dict, t: dict, act_dtype: str, opts: dict, at,
               cls: dict) -> dict:
    K = g["kh"] * g["kw"] * g["Cp"]
    if K > numerics.MAX_ACC_TERMS:
        raise UserError(f"layer '{layer.name}': {K} products per output exceed the exact int32 "
                        f"accumulator ({numerics.MAX_ACC_TERMS})")
    dma = dma_plan(g, t)
    try:
        check_dma(dma, f"layer '{layer.name}'")
    except P.PatternError as e:
        raise UserError(f"{at('tiles_per_call')}: {e}; choose another tiling") from None
    use = fit_memory(dma, opts["memory"]["l1"], opts["memory"]["memtile"])
    if use is None:
        use = memory_use(dma)
        raise UserError(f"{at('tiles_per_call')}: layer '{layer.name}' needs {use['l1_bytes']} B "
                        f"of core L1 (cap {opts['memory']['l1']}) and {use['memtile_bytes']} B of "
                        f"memtile (cap {opts['memory']['memtile']}) with T={t['T']} tiles and "
                        f"{t['Cc']} channels per call; lower tiles_per_call or channels_per_call")
    out_q = graph.tensor(layer.output).q
    return {
        "name": layer.name, "cname": cname, "func": f"nns_{cname}", "op": layer.op,
        "act_dtype": act_dtype, "variant": t["variant"], "geometry": g, "K": K,
        "T": t["T"], "Cc": t["Cc"], "block_bytes": 8 * K + param_bytes(cls["n"]),
        "classes": {"n": cls["n"], "n_col": len(cls["col_spans"]), "row": cls["row"],
                    "col": cls["col"]} if cls["n"] > 1 else {"n": 1},
        "zp_out": out_q.zero_point, "act": [layer.act_min, layer.act_max],
        "stack_bytes": STACK_BYTES, "dma": dma, "memory": use,
        "tile": {k: t[k] for k in ("T", "Cc", "cores", "columns", "n_iter", "variant")},
    }


def layer_report(spec: dict, macs: int) -> dict:
    d = spec["dma"]
    calls = d["n_iter"] * d["calls_per_iter"] * d["cores"] * d["columns"]
    return {
        "aie": {"kernel_calls": calls, "macs": macs,
                "call_bytes": {"act": d["act_l1"]["bytes"], "weights": d["w_l1"]["bytes"],
                               "out": d["out_l1"]["bytes"]},
                "l1_bytes": spec["memory"]["l1_bytes"], "memtile_bytes": spec["memory"]["memtile_bytes"],
                "variant": spec["variant"], "act_dtype": spec["act_dtype"],
                "border_classes": spec["classes"]["n"],
                "ddr_stage": {k: d["stage"][k] for k in ("pad", "to")}},
        "kernel_calls": calls,
        "call_bytes": d["act_l1"]["bytes"] + d["w_l1"]["bytes"] + d["out_l1"]["bytes"],
        "l1_bytes": spec["memory"]["l1_bytes"], "memtile_bytes": spec["memory"]["memtile_bytes"],
        "cores_x_cols": f"{d['cores']}x{d['columns']}",
    }
