"""report.html: one self-contained page per build (and build/matrix.html per matrix), plots
made by matplotlib as inline SVG, numbers from report.json.

Plots: the activation arena over time (which tensor lives where, per layer, against the
memory limit when it is on the scale), per-layer MACs/cycle where the platform counts cycles
(else MACs, with the time where known), each layer's L1 tiling (tile count, budget used),
and the target's own memories where its report has them (k210's KPU RAM, aie2p's core L1
and memtile).  Each plot spans the page (the SVG scales to the page width), legends sit
beside the axes and name only what is drawn.  The table has the console's columns
(builders/reports/report.py: table_rows) plus the time per layer where known.  The page embeds the
report's numbers as JSON (<script id="report-data">) so tools and tests read exactly what
was plotted.  Output is deterministic: fixed SVG ids, no dates.
"""
from __future__ import annotations

import html
import io
import json
import math
import re

from . import matrix, report as report_mod

_MAX_TICK_LABELS = 64       # more layers than this: every k-th name on the x axis


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "nnscons"        # deterministic element ids
    matplotlib.rcParams["svg.fonttype"] = "none"           # text stays text (small, searchable)
    import matplotlib.pyplot as plt
    return plt


def _svg(fig) -> str:
    """The figure as an inline <svg> that scales to the page's width (its viewBox kept)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "nnscons"}, bbox_inches="tight",
                pad_inches=0.15)
    _pyplot().close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    head, rest = text.split(">", 1)
    head = re.sub(r'\s(width|height)="[^"]*"', "", head)
    return f'{head} class="plot" preserveAspectRatio="xMinYMin meet">{rest}'


def _names(layers):
    return [f"{i} {l['name'][:24]}" for i, l in enumerate(layers)]


def _layer_axis(ax, layers) -> None:
    """Layer names under the x axis, rotated; every k-th one when there are many (no overlap)."""
    step = max(1, math.ceil(len(layers) / _MAX_TICK_LABELS))
    ticks = list(range(0, len(layers), step))
    names = _names(layers)
    ax.set_xticks(ticks)
    ax.set_xticklabels([names[i] for i in ticks], rotation=90, fontsize=8)
    ax.set_xlim(-0.6, len(layers) - 0.4)
    if step > 1:
        ax.set_xlabel(f"layer (every {step}th named)")


def _legend(ax, handles=None) -> None:
    """The legend beside the axes (never over the data); only what is drawn has a label."""
    handles = handles if handles is not None else ax.get_legend_handles_labels()[0]
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def _figure(height=3.6):
    return _pyplot().subplots(figsize=(12, height))


def arena_plot(report: dict) -> str | None:
    arena = report.get("arena")
    if not arena or not arena.get("buffers"):
        return None
    n = len(report["layers"])
    fig, ax = _figure()
    for k, b in enumerate(arena["buffers"]):
        first, last = max(b["first"], -1), min(b["last"], n)
        ax.broken_barh([(first - 0.4, last - first + 0.8)], (b["offset"], b["size"]),
                       facecolors="#4c78a8", edgecolors="white", linewidth=0.4,
                       label="a tensor's bytes while it lives" if k == 0 else None)
    ax.axhline(arena["size"], color="#f58518", linewidth=1, label=f"arena {arena['size']:,} B")
    limit = arena.get("limit")
    top = max(arena["size"], min(limit or 0, arena["size"] * 1.5))
    title = "Activation arena over time"
    if limit and limit <= top:
        ax.axhline(limit, color="#e45756", linestyle="--", linewidth=1, label=f"limit {limit:,} B")
    elif limit:     # far above the arena: said in the title, not drawn (nor in the legend)
        title += f" (limit {limit:,} B, {100 * arena['size'] / limit:.2g}% used: off the scale)"
    ax.set_xlabel("layer (execution order; -1 = network input)")
    ax.set_ylabel("arena offset (bytes)")
    ax.set_title(title)
    _legend(ax)
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


def _times_ms(layers) -> list | None:
    """Per-layer time in ms where the run measured it (None when no layer has one)."""
    times = [_per_layer_value(l, "median_ms", "latency_ms") for l in layers]
    return times if any(v is not None for v in times) else None


def performance_plot(report: dict) -> tuple:
    """(title, svg): MACs/cycle per layer where cycles were counted; else MACs per layer, with
    the measured time per layer as a line where known."""
    layers = report["layers"]
    if not layers:
        return None, None
    fig, ax = _figure()
    x = list(range(len(layers)))
    if any(l.get("cycles") for l in layers):
        ax.bar(x, [l.get("macs_per_cycle") or 0 for l in layers], color="#4c78a8")
        ax.set_ylabel("MACs/cycle")
        title = "Per-layer MACs/cycle"
        ax.set_title(title + (f" ({report['macs_per_cycle']} for the network)"
                              if report.get("macs_per_cycle") else ""))
        _layer_axis(ax, layers)
        return title, _svg(fig)
    bars = ax.bar(x, [l["macs"] for l in layers], color="#4c78a8", label="MACs")
    ax.set_ylabel("MACs")
    _layer_axis(ax, layers)
    times = _times_ms(layers)
    title = "Per-layer MACs" + (" and time" if times else "")
    ax.set_title(title)
    if times:
        ax2 = ax.twinx()
        line, = ax2.plot(x, [v if v is not None else float("nan") for v in times], "o-", color="#f58518",
                         markersize=3, label="time (ms)")
        ax2.set_ylabel("time (ms)")
        _legend(ax2, [bars, line])
    return title, _svg(fig)


def engine_plot(report: dict) -> str | None:
    """gap9 with NE16: measured MACs/cycle per layer coloured by the engine that ran it (NE16 or
    the cluster), and for each conv NE16 could take the other engine's estimated MACs/cycle
    (ne16_cost.py's figures, the ones the choice was made on) as a marker; None without NE16."""
    layers = report["layers"]
    if not any(l.get("engine") == "ne16" or l.get("engine_why") for l in layers):
        return None
    fig, ax = _figure()
    x = list(range(len(layers)))
    mpc = [l.get("macs_per_cycle") or 0 for l in layers]
    handles = []
    for engine, color, label in (("ne16", "#f58518", "NE16 (measured)"), ("cluster", "#4c78a8", "cluster (measured)")):
        idx = [i for i in x if (layers[i].get("engine") == "ne16") == (engine == "ne16")]
        if idx and any(mpc[i] for i in idx):
            handles.append(ax.bar(idx, [mpc[i] for i in idx], color=color, label=label))
    for key, other, color, label in (("cluster_estimate", "ne16", "#4c78a8", "cluster (estimate) on an NE16 layer"),
                                     ("ne16_estimate", "cluster", "#f58518", "NE16 (estimate) on a cluster layer")):
        pts = [(i, layers[i]["macs"] / layers[i][key]) for i in x
               if layers[i].get(key) and (layers[i].get("engine") == "ne16") == (other == "ne16")]
        if pts:
            handles.append(ax.plot([p[0] for p in pts], [p[1] for p in pts], "D", color=color, markersize=5,
                                   markeredgecolor="black", markeredgewidth=0.5, linestyle="none", label=label)[0])
    _layer_axis(ax, layers)
    ax.set_ylabel("MACs/cycle")
    ax.set_title("MACs/cycle per layer: NE16 and the cluster")
    _legend(ax, handles)
    return _svg(fig)


def tiling_plot(report: dict) -> str | None:
    layers = report["layers"]
    used = [(l.get("tile") or {}).get("l1_bytes", l.get("l1_bytes")) for l in layers]
    budget = [l.get("l1_budget") for l in layers]
    tiles = [(l.get("tile") or {}).get("n_tiles", l.get("n_tiles")) for l in layers]
    if not any(v for v in used):
        return None
    fig, ax = _figure()
    x = list(range(len(layers)))
    ax.bar(x, [v or 0 for v in used], color="#54a24b", label="L1 bytes used")
    if any(b for b in budget):
        ax.plot(x, [b if b else float("nan") for b in budget], "_", color="#e45756", markersize=12,
                markeredgewidth=2, label="l1_budget")
    for i, n in enumerate(tiles):
        if n:
            ax.annotate(str(n), (i, used[i] or 0), ha="center", va="bottom", fontsize=7)
    _layer_axis(ax, layers)
    ax.set_ylabel("bytes")
    ax.set_title("L1 tiling per layer (numbers: tile count)")
    _legend(ax)
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
    fig, ax = _figure(3.4)
    x = list(range(len(layers)))
    width = 0.8 / len(series)
    for k, (label, vals) in enumerate(series):
        ax.bar([i + (k - (len(series) - 1) / 2) * width for i in x], [v or 0 for v in vals], width=width,
               label=label)
    _layer_axis(ax, layers)
    ax.set_ylabel("bytes")
    ax.set_title(f"{report.get('kind', '')} memory per layer")
    _legend(ax)
    return _svg(fig)


_STYLE = ("body{font-family:sans-serif;margin:1.5em}"
          "svg.plot{display:block;width:100%;height:auto;overflow:visible;margin-bottom:1em}"
          "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;"
          "text-align:right}td.t,th.t{text-align:left}th{background:#f4f4f4;white-space:nowrap}"
          "th.sort{cursor:pointer;user-select:none}th.sort:after{content:' \\2195';color:#999}"
          "th[aria-sort=ascending]:after{content:' \\2191';color:#000}"
          "th[aria-sort=descending]:after{content:' \\2193';color:#000}"
          ".fail{color:#c00}.pass{color:#070}.note{color:#555;font-size:13px}")

# matrix.html: a click on a column's header sorts the rows by it (numbers as numbers)
_SORT_SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, col) {
    th.classList.add('sort');
    th.addEventListener('click', function () {
      var up = th.getAttribute('aria-sort') !== 'ascending';
      table.querySelectorAll('th').forEach(function (h) { h.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', up ? 'ascending' : 'descending');
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      function key(row) { var c = row.cells[col]; return c.hasAttribute('data-v') ? c.getAttribute('data-v') : c.textContent; }
      var numeric = rows.every(function (r) { var k = key(r); return k === '' || !isNaN(Number(k)); });
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (numeric) { x = x === '' ? -Infinity : Number(x); y = y === '' ? -Infinity : Number(y); }
        return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""


def _page(title: str, head_html: str, sections: list, table_html: str, data: dict, script: str = "") -> str:
    body = [f"<h1>{html.escape(title)}</h1>", head_html]
    for heading, svg in sections:
        if svg:
            body.append(f"<h2>{html.escape(heading)}</h2>\n{svg}")
    body.append(table_html)
    payload = json.dumps(data, sort_keys=True).replace("</", "<\\/")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
            f"{html.escape(title)}</title><style>{_STYLE}</style></head><body>\n"
            + "\n".join(body)
            + f"\n<script type=\"application/json\" id=\"report-data\">{payload}</script>\n"
            + (f"<script>{script}</script>\n" if script else "") + "</body></html>\n")


_TEXT_COLUMNS = {"layer", "op", "in", "out", "fused", "status", "tile HxWxC", "tier", "blocking", "on",
                 "target", "model", "platform", "first wrong layer / reason"}


def _cls(header: str) -> str:
    return ' class="t"' if header in _TEXT_COLUMNS else ""


def _table(header, rows, sortable=False, values=None) -> str:
    """An HTML table; values: per row, the sort key of each cell (data-v) where it differs from
    its text (numbers with thousands separators, empty cells)."""
    out = [("<table class=\"sortable\">" if sortable else "<table>") + "<thead><tr>"
           + "".join(f"<th{_cls(h)}>{html.escape(h)}</th>" for h in header) + "</tr></thead><tbody>"]
    for r, row in enumerate(rows):
        cells = []
        for c, cell in enumerate(row):
            v = values[r][c] if values else None
            attr = f' data-v="{html.escape(str(v))}"' if v is not None else ""
            cells.append(f"<td{_cls(header[c])}{attr}>{html.escape(cell)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def layer_table(report: dict) -> str:
    """The console's per-layer table (every column), plus each layer's time where measured."""
    header, rows = report_mod.table_rows(report, width=None)
    times = _times_ms(report["layers"])
    if times:
        at = header.index("fused")
        header = header[:at] + ("time ms",) + header[at:]
        rows = [r[:at] + ("-" if t is None else f"{t:.3f}",) + r[at:] for r, t in zip(rows, times)]
    return _table(header, rows)


def _timing_note(report: dict) -> str:
    layers = report["layers"]
    if any(l.get("cycles") for l in layers) or _times_ms(layers):
        return ""
    hint = (" (<code>./nnscons bench iterations=N</code> times each layer on this machine: bench.json)"
            if report.get("kind") == "host" else "")
    return (f"<p class=\"note\">The {html.escape(str(report.get('platform', '')))} run counts no cycles and "
            f"times no layer, so the table has no time column{hint}.</p>")


def build_page(report: dict) -> str:
    ok = report.get("passed")
    lines = "".join(f"<li>{html.escape(line)}</li>" for line in report.get("summary_lines", []))
    head = (f"<p class=\"{'pass' if ok else 'fail'}\">{html.escape(report.get('verdict', ''))}</p>"
            f"<p>{report['total_macs']:,} MACs, {report['total_param_bytes']:,} parameter bytes, "
            f"activation arena {report['activation_arena_bytes']:,} B; platform "
            f"{html.escape(str(report.get('platform', '-')))}</p>"
            + (f"<ul class=\"note\">{lines}</ul>" if lines else ""))
    perf_title, perf = performance_plot(report)
    sections = [("Activation arena", arena_plot(report)), (perf_title or "", perf),
                ("NE16 and the cluster", engine_plot(report)),
                ("L1 tiling", tiling_plot(report)), ("Target memory", target_memory_plot(report))]
    table = "<h2>Layers</h2>\n" + _timing_note(report) + layer_table(report)
    return _page(f"nnscons [{report['target']}] {report['model']}", head, sections, table, report)


# matrix.html's columns: (header, row key, how a value is shown)
def _num(v):
    return f"{v:,}" if isinstance(v, int) else str(v)


_MATRIX_COLUMNS = (("target", "target"), ("model", "model"), ("platform", "platform"), ("status", "status"),
                   ("MACs", "macs"), ("params B", "param_bytes"), ("arena B", "activation_arena_bytes"),
                   ("peak L2 B", "peak_l2_bytes"), ("L3 B", "l3_bytes"), ("SRAM B", "sram_used_bytes"),
                   ("latency ms", "latency_ms"), ("cycles", "cycles"), ("build s", "build_s"), ("run s", "run_s"),
                   ("first wrong layer / reason", None))


def build_matrix_page(rows: list, wall_s=None) -> str:
    plt = _pyplot()
    labels = [f"{r['target']} / {r['model']}" for r in rows]
    fig, ax = plt.subplots(figsize=(12, 0.3 * len(rows) + 1.2))
    colors = ["#54a24b" if r["status"] == "passed" else "#e45756" for r in rows]
    ax.barh(range(len(rows)), [r["macs"] or 0 for r in rows], color=colors)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    for i, r in enumerate(rows):
        if r["status"] != "passed":
            ax.annotate(r["status"], (r["macs"] or 0, i), xytext=(4, 0), textcoords="offset points",
                        va="center", fontsize=8, color="#e45756")
    ax.set_xlabel("MACs (green: passed, red: failed or not built)")
    ax.set_title("MACs per combination")
    svg = _svg(fig)
    columns = [(h, k) for h, k in _MATRIX_COLUMNS if k is None or k in ("target", "model", "status")
               or any(r.get(k) is not None for r in rows)]      # a column no combination has: left out
    header = tuple(h for h, _ in columns)
    cells, values = [], []
    for r in rows:
        detail = r.get("first_wrong_layer") or (r.get("reason") or "")
        cells.append(tuple((detail.splitlines()[0] if detail else "") if k is None else
                           ("-" if r.get(k) is None else _num(r[k])) for _, k in columns))
        values.append(tuple(None if k is None or isinstance(r.get(k), str) else
                            ("" if r.get(k) is None else r[k]) for _, k in columns))
    passed = sum(r["status"] == "passed" for r in rows)
    wall = f" in {wall_s:.1f} s wall time" if wall_s is not None else ""
    head = (f"<p>{passed} of {len(rows)} combination(s) passed{wall}. The same rows as matrix.csv and "
            f"matrix.json; click a column's header to sort.</p>"
            f"<p class=\"note\">{html.escape(matrix.TIME_NOTE)}. Memory: arena B is the activation arena "
            f"(every target), peak L2 B and L3 B gap9's and pulp-open's L2 peak and L3 bytes, SRAM B k210's "
            f"SRAM in use.</p>")
    return _page("nnscons matrix", head, [("Combinations", svg)], _table(header, cells, True, values),
                 {"combinations": rows, "wall_s": wall_s}, _SORT_SCRIPT)
