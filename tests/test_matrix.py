"""Matrix builds (lists, all, shards, merge), report.html per build and per matrix."""
from __future__ import annotations

import csv
import json
import os
import re
import subprocess

import pytest

from conftest import ROOT


def nnscons(project, *args):
    """The README's front end (./nnscons), which adds -k for matrix builds."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    os.symlink(os.path.join(ROOT, ".venv"), project.file(".venv")) if not os.path.exists(
        project.file(".venv")) else None
    return subprocess.run([project.file("nnscons"), "-Q", *args], cwd=project.path, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)


@pytest.mark.slow   # 24.4 s of CPU
def test_matrix_builds_every_combination_and_reports_failures(project):
    proc = nnscons(project, "target=host,aie2p,host-asan", "model=simplecnn", "-j2")
    assert proc.returncode != 0, proc.stdout          # aie2p cannot map simplecnn's pools
    assert "PLAN FAILED [aie2p] simplecnn" in proc.stdout
    assert "Test PASSED [host] simplecnn" in proc.stdout and "Test PASSED [host-asan] simplecnn" in proc.stdout
    rows = {(r["target"], r["model"]): r for r in json.load(open(project.file("build/matrix.json")))["combinations"]}
    assert rows[("host", "simplecnn")]["status"] == "passed"
    assert rows[("host-asan", "simplecnn")]["status"] == "passed"
    failed = rows[("aie2p", "simplecnn")]
    assert failed["status"] == "not planned" and "does not map onto target kind 'aie2p'" in failed["reason"]
    assert rows[("host", "simplecnn")]["macs"] == 299488
    with open(project.file("build/matrix.csv")) as f:
        table = list(csv.DictReader(f))
    assert {(r["target"], r["status"]) for r in table} == {("host", "passed"), ("host-asan", "passed"),
                                                          ("aie2p", "not planned")}
    page = project.read("build/matrix.html")
    assert "<svg" in page and "2 of 3 combination(s) passed" in page
    # a wrong layer in one combination is named in the summary, the others still pass
    tpl = project.read("templates/cpu/pool.c.j2")
    project.write("templates/cpu/pool.c.j2", tpl.replace(".out_zp = {{ o.zp }}", ".out_zp = {{ o.zp }} + 1"))
    proc = nnscons(project, "target=host,gap9", "model=simplecnn", "platform=emul")
    rows = {r["target"]: r for r in json.load(open(project.file("build/matrix.json")))["combinations"]}
    assert rows["host"]["status"] == "failed", (rows["host"], proc.stdout[-3000:])
    assert rows["host"]["status"] == "failed" and rows["host"]["first_wrong_layer"] == "pool1"
    assert rows["gap9"]["status"] == "passed"


def _drop_targets(text: str, names) -> str:
    """targets.yaml without the named targets' entries."""
    for name in names:
        text = re.sub(rf"^  {re.escape(name)}:\n(?:(?:    .*)?\n)*?(?=^  \S|^\S)", "", text, count=1, flags=re.M)
    return text


@pytest.mark.slow   # 38.3 s of CPU
def test_shards_cover_the_matrix_and_merge(project):
    # `all` over a manifest without the targets that run under qemu-aarch64, qemu-system-arm
    # (CMSIS-NN from ../shared, not beside this copy) or GVSoC (each tested on its own): the
    # shards split and merge the same whatever the targets
    project.write("targets.yaml", _drop_targets(project.read("targets.yaml"),
                                                ("arm64", "arm64-a53", "arm64-a76", "pulp-open", "pulp-open-plainc",
                                                 "cortex-m55", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m3")))
    args = ("target=all", "model=simplecnn")
    out = []
    for i in (1, 2):
        proc = nnscons(project, *args, f"shard={i}/2")
        os.replace(project.file("build/matrix.json"), project.file(f"build/shard{i}.json"))
        out.append({(r["target"], r["model"]) for r in
                    json.load(open(project.file(f"build/shard{i}.json")))["combinations"]})
    assert out[0] and out[1] and not (out[0] & out[1])
    targets = re.findall(r"^  ([\w.-]+):\n    kind:", project.read("targets.yaml"), re.M)
    assert out[0] | out[1] == {(t, "simplecnn") for t in targets} and len(targets) >= 5
    merged = subprocess.run([project.file("nnscons"), "merge", project.file("build/all.json"),
                             project.file("build/shard1.json"), project.file("build/shard2.json")],
                            cwd=project.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rows = json.load(open(project.file("build/all.json")))["combinations"]
    assert {(r["target"], r["model"]) for r in rows} == out[0] | out[1]
    assert os.path.isfile(project.file("build/all.csv")), merged.stdout


def test_report_html_holds_the_report(prebuilt):
    project, _ = prebuilt("target=host", "model=simplecnn")
    page = project.read("build/host/simplecnn/report.html")
    report = json.loads(project.read("build/host/simplecnn/report.json"))
    data = json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>',
                                page, re.S).group(1).replace("<\\/", "</"))
    assert data == report
    assert page.count("<svg") >= 3                         # arena, MACs, tiling
    for title in ("Activation arena over time", "Per-layer MACs", "L1 tiling per layer"):
        assert title in page, title
    for layer in report["layers"]:
        assert f"{layer['macs']:,}" in page
