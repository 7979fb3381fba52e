"""report.html: one self-contained page per build (and build/matrix.html per matrix), plots
made by matplotlib as inline SVG, numbers from report.json.

Plots: the activation arena over time (which tensor lives where, per layer, against the
memory limit), per-layer MACs and latency or cycles, each layer's L1 tiling (tile count,
budget used), and the target's own memories where its report has them (k210's KPU RAM,
aie2p's core L1 and memtile).  The page embeds the report's numbers as JSON
(<script id="report-data">) so tools and tests read exactly what was plotted.  Output is
deterministic: fixed SVG ids, no dates.
"""
from __future__ import annotations

import html
import io
import json


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "nnscons"        # deterministic element ids
    matplotlib.rcParams["svg.fonttype"] = "none"           # text stays text (small, searchable)
    import matplotlib.pyplot as plt
    return plt


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "nnscons"}, bbox_inches="tight")
    _pyplot().close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _names(layers):
    return [f"{i} {l['name'][:24]}" for i, l in enumerate(layers)]


def arena_plot(report: dict) -> str | None:
    arena = report.get("arena")
    if not arena or not arena.get("buffers"):
        return None
    plt = _pyplot()
    n = len(report["layers"])
    fig, ax = plt.subplots(figsize=(9, 3.6))
    for b in arena["buffers"]:
        first, last = max(b["first"], -1), min(b["last"], n)
        ax.broken_barh([(first - 0.4, last - first + 0.8)], (b["offset"], b["size"]),
                       facecolors="#4c78a8", edgecolors="white", linewidth=0.4)
    ax.axhline(arena["size"], color="#f58518", linewidth=1, label=f"arena {arena['size']:,} B")
    if arena.get("limit"):
        ax.axhline(arena["limit"], color="#e45756", linestyle="--", linewidth=1,
                   label=f"limit {arena['limit']:,} B")
    ax.set_xlabel("layer (execution order; -1 = network input)")
    ax.set_ylabel("arena offset (bytes)")
    ax.set_title("Activation arena over time")
    ax.legend(loc="upper right", fontsize=8)
    top = max(arena["size"], min(arena.get("limit") or 0, arena["size"] * 1.5))
    ax.set_ylim(0, top * 1.05 if top else 1)
    ax.set_xlim(-1.5, n + 0.5)
    return _svg(fig)


def _per_layer_value(layer, *keys):
    for k in keys:
        v = layer.get(k)
        if v is None:
            v = (layer.get("measured") or {}).get(k)
        if v is not None:
            return v
    return None


def macs_plot(report: dict) -> str | None:
    layers = report["layers"]
    if not layers:
        return None
    plt = _pyplot()
    x = range(len(layers))
    timing = [_per_layer_value(l, "median_ms", "latency_ms") for l in layers]
    cycles = [_per_layer_value(l, "cycles") for l in layers]
    second, label = (timing, "latency (ms)") if any(v is not None for v in timing) else \
        ((cycles, "cycles") if any(v is not None for v in cycles) else (None, None))
    fig, ax = plt.subplots(figsize=(9, 3.6))
    ax.bar(x, [l["macs"] for l in layers], color="#4c78a8", label="MACs")
    ax.set_ylabel("MACs")
    ax.set_xticks(list(x))
    ax.set_xticklabels(_names(layers), rotation=90, fontsize=6)
    ax.set_title("Per-layer MACs" + (f" and {label}" if second else ""))
    if second:
        ax2 = ax.twinx()
        ax2.plot(list(x), [v if v is not None else float("nan") for v in second], "o-",
                 color="#f58518", markersize=3, label=label)
        ax2.set_ylabel(label)
    return _svg(fig)


def tiling_plot(report: dict) -> str | None:
    layers = report["layers"]
    used = [(l.get("tile") or {}).get("l1_bytes", l.get("l1_bytes")) for l in layers]
    budget = [l.get("l1_budget") for l in layers]
    tiles = [(l.get("tile") or {}).get("n_tiles", l.get("n_tiles")) for l in layers]
    if not any(v for v in used):
        return None
    plt = _pyplot()
    x = list(range(len(layers)))
    fig, ax = plt.subplots(figsize=(9, 3.6))
    ax.bar(x, [v or 0 for v in used], color="#54a24b", label="L1 bytes used")
    if any(b for b in budget):
        ax.plot(x, [b if b else float("nan") for b in budget], "_", color="#e45756", markersize=12,
                markeredgewidth=2, label="l1_budget")
    for i, n in enumerate(tiles):
        if n:
            ax.annotate(str(n), (i, used[i] or 0), ha="center", va="bottom", fontsize=6)
    ax.set_xticks(x)
    ax.set_xticklabels(_names(layers), rotation=90, fontsize=6)
    ax.set_ylabel("bytes")
    ax.set_title("L1 tiling per layer (numbers: tile count)")
    ax.legend(fontsize=8)
    return _svg(fig)


def target_memory_plot(report: dict) -> str | None:
    """k210: KPU RAM per layer; aie2p: core L1 and memtile bytes per layer."""
    layers = report["layers"]
    series = []
    for key, label in (("kpu_ram_bytes", "KPU RAM"), ("ai_ram_peak", "KPU RAM peak"),
                       ("core_l1_bytes", "core L1"), ("memtile_bytes", "memtile")):
        vals = [_per_layer_value(l, key) or ((l.get("aie") or {}).get(key)) for l in layers]
        if any(v for v in vals):
            series.append((label, vals))
    if not series:
        return None
    plt = _pyplot()
    x = list(range(len(layers)))
    fig, ax = plt.subplots(figsize=(9, 3.2))
    width = 0.8 / len(series)
    for k, (label, vals) in enumerate(series):
        ax.bar([i + k * width for i in x], [v or 0 for v in vals], width=width, label=label)
    ax.set_xticks(x)
    ax.set_xticklabels(_names(layers), rotation=90, fontsize=6)
    ax.set_ylabel("bytes")
    ax.set_title(f"{report.get('kind', '')} memory per layer")
    ax.legend(fontsize=8)
    return _svg(fig)


_STYLE = ("body{font-family:sans-serif;margin:1.5em;max-width:1100px}table{border-collapse:collapse;"
          "font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
          "td:nth-child(2),th:nth-child(2){text-align:left}.fail{color:#c00}.pass{color:#070}")


def _page(title: str, verdict_html: str, sections: list, table_html: str, data: dict) -> str:
    body = [f"<h1>{html.escape(title)}</h1>", verdict_html]
    for heading, svg in sections:
        if svg:
            body.append(f"<h2>{html.escape(heading)}</h2>\n{svg}")
    body.append(table_html)
    payload = json.dumps(data, sort_keys=True).replace("</", "<\\/")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
            f"{html.escape(title)}</title><style>{_STYLE}</style></head><body>\n"
            + "\n".join(body)
            + f"\n<script type=\"application/json\" id=\"report-data\">{payload}</script>\n</body></html>\n")


def build_page(report: dict) -> str:
    layers = report["layers"]
    rows = ["<table><tr><th>#</th><th>layer</th><th>op</th><th>MACs</th><th>params B</th>"
            "<th>status</th></tr>"]
    for i, l in enumerate(layers):
        rows.append(f"<tr><td>{i}</td><td>{html.escape(l['name'])}</td><td>{html.escape(l['op'])}</td>"
                    f"<td>{l['macs']:,}</td><td>{l['param_bytes']:,}</td>"
                    f"<td>{html.escape(str(l.get('status', '-')))}</td></tr>")
    rows.append("</table>")
    ok = report.get("passed")
    verdict = (f"<p class=\"{'pass' if ok else 'fail'}\">{html.escape(report.get('verdict', ''))}</p>"
               f"<p>{report['total_macs']:,} MACs, {report['total_param_bytes']:,} parameter bytes, "
               f"activation arena {report['activation_arena_bytes']:,} B</p>")
    sections = [("Activation arena", arena_plot(report)), ("MACs and timing", macs_plot(report)),
                ("L1 tiling", tiling_plot(report)), ("Target memory", target_memory_plot(report))]
    return _page(f"nnscons [{report['target']}] {report['model']}", verdict, sections, "\n".join(rows),
                 report)


def build_matrix_page(rows: list) -> str:
    plt = _pyplot()
    labels = [f"{r['target']} / {r['model']}" for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(rows) + 1.2))
    colors = ["#54a24b" if r["status"] == "passed" else "#e45756" for r in rows]
    ax.barh(range(len(rows)), [r["macs"] or 0 for r in rows], color=colors)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel("MACs (green: passed, red: failed)")
    ax.set_title("Matrix")
    svg = _svg(fig)
    table = ["<table><tr><th>target</th><th>model</th><th>status</th><th>MACs</th><th>detail</th></tr>"]
    for r in rows:
        detail = r.get("first_wrong_layer") or (r.get("reason") or "")
        table.append(f"<tr><td>{html.escape(r['target'])}</td><td>{html.escape(r['model'])}</td>"
                     f"<td>{html.escape(r['status'])}</td><td>{r['macs'] or 0:,}</td>"
                     f"<td>{html.escape(detail.splitlines()[0] if detail else '')}</td></tr>")
    table.append("</table>")
    passed = sum(r["status"] == "passed" for r in rows)
    return _page("nnscons matrix", f"<p>{passed} of {len(rows)} combination(s) passed</p>",
                 [("Combinations", svg)], "\n".join(table), {"combinations": rows})
