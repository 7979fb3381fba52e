"""report.html and matrix.html as a user sees them: rendered by a real headless Chromium
(DOM measured after layout, and a screenshot), besides what the files hold."""
from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, Project, _ignore

WIDTH, HEIGHT = 1280, 900          # a typical laptop window

# Runs in the page after layout; writes what it measured into <body data-probe>.
_PROBE = """<script>(function () {
  function box(e) { var b = e.getBoundingClientRect(); return {left: b.left, right: b.right, top: b.top,
                                                               bottom: b.bottom, width: b.width, height: b.height}; }
  var de = document.documentElement, r = {};
  r.scrollWidth = de.scrollWidth; r.clientWidth = de.clientWidth;
  r.body = box(document.body);
  r.tables = Array.prototype.map.call(document.querySelectorAll('table'), function (t) {
    return Array.prototype.map.call(t.querySelectorAll('th'), function (th) {
      var s = getComputedStyle(th), b = box(th);
      b.text = th.textContent; b.visible = s.visibility === 'visible' && s.display !== 'none'; return b; });
  });
  r.plots = Array.prototype.map.call(document.querySelectorAll('body > svg, h2 + svg'), function (svg) {
    var p = box(svg);
    p.texts = Array.prototype.map.call(svg.querySelectorAll('text'), function (t) {
      var b = box(t); b.text = t.textContent; return b; });
    p.legends = Array.prototype.map.call(svg.querySelectorAll('g[id^="legend"]'), box);
    p.axes = Array.prototype.map.call(svg.querySelectorAll('g[id^="axes"] > g[id^="patch"]:first-child'), box);
    return p;
  });
  var sortable = document.querySelector('table.sortable');
  if (sortable) {       // click a header twice: ascending, then descending
    r.sorted = {};
    Array.prototype.forEach.call(sortable.querySelectorAll('th'), function (th, col) {
      if (th.textContent !== 'params B') return;
      var order = function () { return Array.prototype.map.call(sortable.tBodies[0].rows,
                                                                function (row) { return row.cells[0].textContent; }); };
      th.click(); r.sorted.ascending = order(); r.sorted.ascendingAria = th.getAttribute('aria-sort');
      th.click(); r.sorted.descending = order();
    });
  }
  document.body.setAttribute('data-probe', JSON.stringify(r));
})();</script>"""


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)")


def _render(page: str, tmp_path, name: str) -> dict:
    """Chromium's measurements of `page` (a copy with the probe, outside build/) and its
    screenshot's path."""
    browser = _chromium()
    copy = tmp_path / f"{name}.html"
    copy.write_text(open(page, encoding="utf-8").read().replace("</body>", _PROBE + "</body>"))
    common = [browser, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
              f"--window-size={WIDTH},{HEIGHT}", "--virtual-time-budget=3000"]
    dom = subprocess.run(common + ["--dump-dom", copy.as_uri()], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=120)
    m = re.search(r'data-probe="([^"]*)"', dom.stdout)
    assert m, f"no probe result in Chromium's DOM:\n{dom.stderr[-2000:]}"
    import html as html_mod
    probe = json.loads(html_mod.unescape(m.group(1)))
    shot = tmp_path / f"{name}.png"
    subprocess.run(common + [f"--screenshot={shot}", copy.as_uri()], stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, timeout=120)
    probe["screenshot"] = str(shot)
    return probe


def _console_tables(stdout: str) -> dict:
    """{target: [column headers]} of the per-layer tables a build printed."""
    tables, header = {}, None
    for line in stdout.splitlines():
        if line.startswith("#  layer"):
            header = re.split(r"\s{2,}", line.strip())
        m = re.match(r"total: .* \[([^\]]+)\] ", line)
        if m and header:
            tables[m.group(1)], header = header, None
    return tables


pytestmark = pytest.mark.xdist_group("reports-built")   # the module's fixture (compiled or built once) on one worker


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A matrix of host and gap9 (emul) with simplecnn, and aie2p, which cannot map it."""
    project = Project(tmp_path_factory.mktemp("reports") / "proj")
    shutil.copytree(ROOT, project.path, ignore=_ignore)
    proc = project.scons("-k", "target=host,gap9,aie2p", "model=simplecnn", "platform=emul", check=False)
    assert "Test PASSED [host] simplecnn" in proc.stdout and "Test PASSED [gap9] simplecnn" in proc.stdout, \
        proc.stdout[-3000:] + proc.stderr[-3000:]
    return project, proc.stdout


def _assert_fits(probe, what):
    assert probe["scrollWidth"] <= probe["clientWidth"], \
        f"{what}: horizontal overflow, {probe['scrollWidth']} px of content in {probe['clientWidth']} px"
    for table in probe["tables"]:
        for th in table:
            assert th["visible"] and th["width"] > 0 and th["height"] > 0, f"{what}: column {th['text']!r} hidden"
            assert 0 <= th["left"] and th["right"] <= probe["clientWidth"], \
                f"{what}: column {th['text']!r} outside the window ({th['left']:.0f}..{th['right']:.0f} px)"
    for k, plot in enumerate(probe["plots"]):
        assert plot["width"] >= 0.98 * probe["body"]["width"], \
            f"{what}: plot {k} is {plot['width']:.0f} px wide in a {probe['body']['width']:.0f} px page"
        for t in plot["texts"]:     # every label, tick and legend entry inside its plot: nothing clipped
            assert plot["left"] - 1 <= t["left"] and t["right"] <= plot["right"] + 1 \
                and plot["top"] - 1 <= t["top"] and t["bottom"] <= plot["bottom"] + 1, \
                f"{what}: plot {k}'s text {t['text']!r} sticks out of the plot"
        for legend in plot["legends"]:  # legends never over the data
            for ax in plot["axes"]:
                overlap = min(legend["right"], ax["right"]) - max(legend["left"], ax["left"]) > 0 and \
                    min(legend["bottom"], ax["bottom"]) - max(legend["top"], ax["top"]) > 0
                assert not overlap, f"{what}: plot {k}'s legend overlaps its axes"


def _assert_screenshot(path):
    import matplotlib.image
    img = matplotlib.image.imread(path)
    assert img.shape[:2] == (HEIGHT, WIDTH), img.shape
    ink = (img[:, :, :3].mean(axis=2) < 0.9).mean()
    assert ink > 0.01, f"{path}: the page rendered (almost) blank"


def test_report_html_in_a_browser(built, tmp_path):
    project, stdout = built
    consoles = _console_tables(stdout)
    assert set(consoles) >= {"host", "gap9"}, stdout[-3000:]
    for target, folder in (("host", "build/host/simplecnn"), ("gap9", "build/gap9/simplecnn/emul")):
        probe = _render(project.file(f"{folder}/report.html"), tmp_path, f"report-{target}")
        _assert_fits(probe, f"{target} report.html")
        _assert_screenshot(probe["screenshot"])
        headers = [th["text"] for th in probe["tables"][0]]
        assert [h for h in headers if h != "time ms"] == consoles[target], (headers, consoles[target])
        assert len(probe["plots"]) >= 3, f"{target}: arena, per-layer and tiling plots"
        report = json.loads(project.read(f"{folder}/report.json"))
        legend_text = " ".join(t["text"] for t in probe["plots"][0]["texts"])
        limit = report["arena"]["limit"]
        # host's 256 MiB limit is far off the arena's scale: not drawn, so not in the legend
        if limit and limit > 1.5 * report["arena"]["size"]:
            assert "limit" not in legend_text.replace("(limit", ""), legend_text


def test_matrix_html_and_csv_show_every_column(built, tmp_path):
    project, stdout = built
    with open(project.file("build/matrix.csv")) as f:
        rows = list(csv.DictReader(f))
    assert {r["target"]: r["status"] for r in rows} == {"host": "passed", "gap9": "passed", "aie2p": "not planned"}
    assert not [v for r in rows for v in r.values() if v and v.lstrip().startswith("{")], "a JSON cell in matrix.csv"
    by = {r["target"]: r for r in rows}
    assert by["host"]["activation_arena_bytes"] == "7840" and int(by["gap9"]["peak_l2_bytes"]) > 0
    assert "wall time" in stdout.splitlines()[-1] or any("wall time" in l for l in stdout.splitlines())

    probe = _render(project.file("build/matrix.html"), tmp_path, "matrix")
    _assert_fits(probe, "matrix.html")
    _assert_screenshot(probe["screenshot"])
    from nnscons.builders.reports import html
    shown = [th["text"] for th in probe["tables"][0]]
    header_of = {key: h for h, key in html._MATRIX_COLUMNS if key}
    for key in rows[0]:
        if any(r[key] for r in rows):           # every column matrix.csv has a value in
            want = header_of.get(key, "first wrong layer / reason")
            assert want in shown, (key, shown)
    for h in ("platform", "build s", "run s", "arena B", "peak L2 B", "L3 B"):
        assert h in shown, h
    assert probe["sorted"]["ascendingAria"] == "ascending"
    assert probe["sorted"]["ascending"] == ["aie2p", "gap9", "host"]       # params B: -, 9,512, 28,240
    assert probe["sorted"]["descending"] == ["host", "gap9", "aie2p"]
    import html as html_mod
    page = html_mod.unescape(project.read("build/matrix.html"))
    assert "build s: from the combination's first step to its last" in page and "run s: from its RUN" in page
    assert "wall time" in page


def _layers(n, cycles=False):
    out = []
    for i in range(n):
        layer = {"name": f"layer{i}", "macs": 1000 * (i + 1)}
        if cycles:
            layer.update(cycles=500 * (i + 1), macs_per_cycle=2.0)
        out.append(layer)
    return out


def test_per_layer_plot_is_macs_per_cycle_where_cycles_are_counted():
    from nnscons.builders.reports import html
    title, svg = html.performance_plot({"layers": _layers(4, cycles=True), "macs_per_cycle": 2.0})
    assert title == "Per-layer MACs/cycle" and "MACs/cycle" in svg
    title, svg = html.performance_plot({"layers": _layers(4)})
    assert title == "Per-layer MACs" and 'id="legend' not in svg    # one series: no legend
    # many layers: the names stay apart (every k-th one)
    _, svg = html.performance_plot({"layers": _layers(200)})
    names = re.findall(r">(\d+) layer\1<", svg)
    assert names[:3] == ["0", "4", "8"] and len(names) <= 64, names


def test_engine_plot_shows_ne16_and_the_cluster_per_layer():
    """gap9 with NE16: bars coloured by engine, the other engine's estimate as a marker; absent
    when no layer could run on NE16."""
    from nnscons.builders.reports import html
    assert html.engine_plot({"layers": _layers(3, cycles=True)}) is None
    layers = _layers(3, cycles=True)
    layers[0].update(engine="ne16", cluster_estimate=4000, ne16_estimate=300, engine_why="estimate ...")
    layers[1].update(engine="cluster", cluster_estimate=900, ne16_estimate=5000, engine_why="estimate ...")
    layers[2].update(engine="-")
    svg = html.engine_plot({"layers": layers})
    legend = svg[svg.index('id="legend'):]
    for label in ("NE16 (measured)", "cluster (measured)", "cluster (estimate) on an NE16 layer",
                  "NE16 (estimate) on a cluster layer"):
        assert label in legend, label
    for l in layers:
        l.update(op="conv2d", inputs=[[1, 8, 4, 4]], output=[1, 8, 4, 4], param_bytes=0, fused=[])
    page = html.build_page({"layers": layers, "total_macs": 6000, "total_param_bytes": 0,
                            "activation_arena_bytes": 0, "target": "gap9", "model": "m", "platform": "gvsoc-gap9"})
    assert "<h2>NE16 and the cluster</h2>" in page
    layers[1].pop("ne16_estimate")
    legend = html.engine_plot({"layers": layers})
    assert "NE16 (estimate) on a cluster layer" not in legend[legend.index('id="legend'):]


def test_arena_legend_names_only_what_is_drawn():
    from nnscons.builders.reports import html
    report = {"layers": _layers(2), "arena": {"size": 1000, "limit": 268435456, "buffers": [
        {"tensor": "x", "offset": 0, "size": 1000, "first": -1, "last": 1}]}}
    svg = html.arena_plot(report)
    legend = svg[svg.index('id="legend'):]
    assert "limit" not in legend and "off the scale" in svg
    report["arena"]["limit"] = 1200
    svg = html.arena_plot(report)
    assert "limit 1,200 B" in svg[svg.index('id="legend'):]
