"""report.json and the per-layer table printed after a build."""
from __future__ import annotations

import json

from ...fileio import write_if_changed
from ..run import runlog


def plan_summary(session) -> dict:
    """The part of the report known at planning time (a Value node's content)."""
    g = session.graph
    layers = []
    for lp in session.plan.layers:
        layer = lp.layer
        layers.append({
            "name": layer.name,
            "cname": lp.cname,
            "op": layer.op,
            "source_ops": list(layer.source_ops),
            "fused": list(layer.fused),
            "inputs": [list(g.tensor(t).shape) for t in layer.inputs],
            "output": list(g.tensor(layer.output).shape),
            "macs": lp.macs,
            "param_bytes": lp.param_bytes,
            "tile": lp.spec.get("tile"),
        })
        layers[-1].update(lp.report)
    return {
        "arena": _arena(session),
        "model": session.model_cfg.name,
        "target": session.target_cfg.name,
        "kind": session.target_cfg.kind,
        "numerics": getattr(g, "numerics", "onnx") or "onnx",
        "input_shape": list(g.tensor(g.input).shape),
        "output_shape": list(g.tensor(g.output).shape),
        "total_macs": sum(l["macs"] for l in layers),
        "total_param_bytes": sum(l["param_bytes"] for l in layers),
        "activation_arena_bytes": session.plan.network["arena_size"],
        "platform": session.options["run"]["platform"],
        "columns": [list(c) for c in session.plan.columns],
        "layers": layers,
        **session.plan.report,
    }


def load(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _arena(session) -> dict:
    """The activation arena's buffers over time (for report.html): offset, size and the
    layers between which each lives, against the target's memory limit for activations."""
    from ...planning.buffers import plan_buffers
    plan = plan_buffers(session.graph)
    opts = session.options.get("memory", {})
    limit = opts.get("l2")
    if limit is not None and "l2_reserved" in opts:
        limit -= opts["l2_reserved"]
    buffers = [{"tensor": t, "offset": plan["tensors"][t]["offset"], "size": plan["tensors"][t]["size"],
                "first": first, "last": last} for t, (first, last) in sorted(plan["lives"].items())]
    return {"size": plan["arena_size"], "limit": limit, "buffers": buffers}


def write(session, summary: dict, log_text: str, path: str, extra=()) -> dict:
    """Merge run results, their verdict and a target's extra JSON (per-layer fields by layer
    name, network fields, summary lines) into the summary, write report.json."""
    result = runlog.parse(log_text)
    passed, verdict, first_wrong = runlog.check(session, log_text)
    report = json.loads(json.dumps(summary))
    for more in extra:
        failure = more.get("check_failure")
        if failure and passed:      # an extra check (builders/reports/consistency.py) overrules a pass
            passed, verdict, first_wrong = False, failure["verdict"], failure["layer"]
        for layer in report["layers"]:
            layer.update(more.get("layers", {}).get(layer["name"], {}))
        report.update({k: v for k, v in more.items()
                       if k not in ("layers", "summary_lines", "check_failure")})
        report["summary_lines"] = list(report.get("summary_lines", [])) + list(more.get("summary_lines", []))
    for i, layer in enumerate(report["layers"]):
        entry = result["layers"].get(i)
        layer["status"] = "missing" if entry is None else ("ok" if entry["ok"] else "mismatch")
        layer["mismatches"] = 0 if entry is None else entry["mismatches"]
        if i in result["measured"]:
            layer["measured"] = result["measured"][i]
    _cycles(report)
    report["passed"] = passed
    report["verdict"] = verdict
    report["first_wrong_layer"] = first_wrong
    write_if_changed(path, json.dumps(report, indent=2, sort_keys=True) + "\n")
    return report


def _cycles(report: dict) -> None:
    """Per layer `cycles` and `macs_per_cycle` from a measured `cycles` count (a platform that
    counts cycles prints it in its measure lines), times the layer's `cycles_scale` when only a
    part of it ran (a slice of its output channels); for the network `total_cycles` and
    `macs_per_cycle` when every layer was measured. What the figures are is the plan's
    `cycles_source`, printed under the table."""
    total = 0
    for layer in report["layers"]:
        measured = (layer.get("measured") or {}).get("cycles")
        if measured is None:
            continue
        cycles = int(round(measured * layer.get("cycles_scale", 1)))
        layer["cycles"] = cycles
        layer["macs_per_cycle"] = round(layer["macs"] / cycles, 3) if cycles else None
        contention = layer["measured"].get("tcdm_contention")     # a simulator that models L1 banks
        if contention is not None:
            layer["tcdm_contention"] = int(round(contention * layer.get("cycles_scale", 1)))
        total += cycles
    if any("cycles" in layer for layer in report["layers"]):
        missing = [layer["name"] for layer in report["layers"] if "cycles" not in layer]
        report["total_cycles"] = total if not missing else None
        report["macs_per_cycle"] = round(report["total_macs"] / total, 3) if total and not missing else None
        scaled = [layer["name"] for layer in report["layers"] if layer.get("cycles_scale", 1) != 1]
        line = (f"cycles: {total:,} in total, {report['total_macs'] / total:.3f} MACs/cycle" if total and not missing
                else f"cycles: {len(missing)} layer(s) not measured ({', '.join(missing[:4])})")
        if scaled:
            line += f"; {len(scaled)} layer(s) measured on a slice of their output channels and scaled"
        if report.get("cycles_source"):
            line += f" [{report['cycles_source']}]"
        report["summary_lines"] = list(report.get("summary_lines", [])) + [line]


def _shape(s):
    return "x".join(str(d) for d in s[1:])


def printable(name: str, width: int | None = None) -> str:
    """An untrusted name made safe for a terminal line, optionally cut to `width`."""
    name = "".join(ch if ch.isprintable() else "?" for ch in name)
    return name if width is None or len(name) <= width else name[:width - 1] + "~"


def _cell(v) -> str:
    if v is None:
        return "-"
    return f"{v:,}" if isinstance(v, int) else str(v)


def table_rows(report: dict, width: int | None = 28) -> tuple:
    """The per-layer table as (header, rows of cell strings): the console's table and
    report.html's (builders/reports/html.py) have the same columns. width: where long names are cut
    (None: never)."""
    columns = list(report.get("columns") or [("tiles", "n_tiles")])
    if any("cycles" in layer for layer in report["layers"]):
        columns += [("cycles", "cycles"), ("MAC/cyc", "macs_per_cycle")]
    if any(layer.get("tcdm_contention") for layer in report["layers"]):
        columns += [("TCDM cont", "tcdm_contention")]   # cycles lost to L1 bank conflicts, all cores
    if any("sqnr_db" in layer for layer in report["layers"]):
        columns += [("SQNR dB", "sqnr_db")]     # fidelity to the float model (builders/reports/fidelity.py)
    header = ("#", "layer", "op", "in", "out", "MACs", "params B") + tuple(h for h, _ in columns) + ("fused", "status")
    rows = []
    for i, l in enumerate(report["layers"]):
        tile = l.get("tile") or {}
        extra = tuple(_cell(l.get(key, tile.get(key))) for _, key in columns)
        rows.append((str(i), printable(l["name"], width), l["op"], ",".join(_shape(s) for s in l["inputs"]),
                     _shape(l["output"]), f"{l['macs']:,}", f"{l['param_bytes']:,}") + extra
                    + (printable("+".join(l["fused"]), width and 24) or "-", l.get("status", "-")))
    return header, rows


def table(report: dict) -> str:
    header, body = table_rows(report)
    rows = [header] + body
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.append(f"total: {report['total_macs']:,} MACs, {report['total_param_bytes']:,} parameter bytes, "
                 f"{report['activation_arena_bytes']:,} B activation arena "
                 f"[{report['target']}] {report['model']}")
    for line in report.get("summary_lines", []):
        lines.append(line)
    return "\n".join(lines)
