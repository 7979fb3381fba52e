"""The host's kernel variant chosen by measurement (kernel.choose: measure, targets/host/measure.py):
the cache per CPU, the choice from a recorded cache (no timings), variants this CPU cannot run
skipped with the reason, an interrupted or foreign cache measured again."""
from __future__ import annotations

import glob
import json
import os

import pytest

from conftest import steps
from nnscons import kernelgen
from nnscons.targets.host import measure

ZEN3 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC 7763 64-Core Processor
flags\t\t: fpu sse2 avx avx2 fma bmi2
"""
ZEN4 = ZEN3.replace("model\t\t: 1", "model\t\t: 17").replace("7763", "9654").replace(
    "bmi2", "bmi2 avx512f avx512bw avx512vl avx512_vnni")


def test_cpu_key_and_what_a_cpu_runs():
    z3, z4 = measure.cpu_info(ZEN3), measure.cpu_info(ZEN4)
    assert measure.cpu_key(z3) != measure.cpu_key(z4)
    assert measure.cpu_key(z3) == measure.cpu_key(measure.cpu_info(ZEN3 + "bugs\t: none\n"))
    assert measure.cpu_key(z3).startswith("AuthenticAMD-f25-m1-")
    assert measure.cannot_run("avx512vnni", z3) == "this CPU (AMD EPYC 7763 64-Core Processor) lacks avx512_vnni, avx512vl"
    assert measure.cannot_run("avx512vnni", z4) is None and measure.cannot_run("avx2u8", z3) is None
    # AVX-VNNI (VEX): its own cpuid bit, which AVX-512 VNNI does not imply (Zen 4 has only the latter)
    assert measure.cannot_run("avx512vnni512", z4) is None
    assert measure.cannot_run("avxvnni", z4) == f"this CPU ({z4['model_name']}) lacks avx_vnni"
    assert measure.running(["avx512vnni", "avx2", "portable"], z3) == "avx2"
    assert measure.running(["avx512vnni", "avx2", "portable"], z4) == "avx512vnni"
    assert measure.running(["avx2", "portable"], measure.cpu_info("flags : sse2\n")) == "portable"


def _entry(best, **ms):
    return {"best": best, "median_ms": ms, "skipped": {}, "layer": "x"}


def test_choice_is_the_recorded_cache_s(tmp_path):
    """The dispatch order follows the cache: the measured best first, the rest in CPUID order;
    an entry whose best this CPU cannot run, or the layer cannot hold, is measured again."""
    z3, z4 = measure.cpu_info(ZEN3), measure.cpu_info(ZEN4)
    cands = ["avx512vnni", "avx2u8", "avx2", "portable"]
    assert measure.choose(_entry("avx2u8", avx2u8=1.0, avx2=1.2), cands, z3) == ["avx2u8", "avx512vnni", "avx2", "portable"]
    assert measure.choose(_entry("avx2", avx2=1.0), cands, z4) == ["avx2", "avx512vnni", "avx2u8", "portable"]
    assert measure.choose(_entry("avx512vnni", avx512vnni=1.0), cands, z3) is None
    assert measure.choose(_entry("avx2u8", avx2u8=1.0), ["avx2", "portable"], z3) is None
    assert measure.choose(None, cands, z3) is None
    # the file: written whole, read back only for the same CPU and version, entries checked
    path = str(tmp_path / "variants" / (measure.cpu_key(z3) + ".json"))
    entries = {"k1": _entry("avx2", avx2=1.0, avx2u8=1.5), "k2": _entry("portable", portable=0.5)}
    measure.save(path, z3, entries)
    assert os.listdir(tmp_path / "variants") == [os.path.basename(path)]     # no temporary left
    assert measure.load(path, z3) == entries
    assert measure.load(path, z4) == {}                                       # another CPU measures again
    doc = json.loads(open(path).read())
    doc["layers"]["k3"] = {"best": "avx2", "median_ms": {}}                   # incomplete: not trusted
    doc["layers"]["k4"] = {"best": "avx2", "median_ms": {"avx2": -1}}
    open(path, "w").write(json.dumps(doc))
    assert measure.load(path, z3) == entries
    open(path, "w").write(json.dumps(doc)[:40])                              # cut short: nothing trusted
    assert measure.load(path, z3) == {}
    doc["version"] = measure.VERSION + 1
    open(path, "w").write(json.dumps(doc))
    assert measure.load(path, z3) == {}


@pytest.mark.slow   # two builds of simplecnn and one measurement (about 40 s on a loaded Zen 3)
def test_measured_choice_on_a_model_follows_the_cache(project):
    """A first build measures every generated layer's variants and caches them (the
    variants this CPU lacks skipped with the reason); a recorded cache then decides the
    dispatch order without timing anything (here: portable for conv2, which the build then
    runs, bit-exact); a cache cut short is measured again."""
    proc = project.scons("target=host-measured", "model=simplecnn")
    assert "Test PASSED [host-measured] simplecnn" in proc.stdout
    b = "build/host-measured/simplecnn"
    info = measure.cpu_info()
    files = glob.glob(os.path.join(project.path, b, "variants", "*.json"))
    assert [os.path.basename(f) for f in files] == [measure.cpu_key(info) + ".json"]
    doc = json.loads(open(files[0]).read())
    # each layer's direct-kernel entry (every variant timed or skipped); the 3x3 stride-1 convs
    # also have a Winograd entry of their own (kernelgen.wino's variants)
    wino = {k: e for k, e in doc["layers"].items()
            if set(e["median_ms"]) | set(e["skipped"]) == set(kernelgen.wino.VARIANTS)}
    assert sorted(e["layer"] for e in wino.values()) == ["conv1", "conv2"]
    assert proc.stdout.count("VARIANTS conv1 winograd: ") == proc.stdout.count("VARIANTS conv2 winograd: ") == 1
    by_layer = {e["layer"]: (k, e) for k, e in doc["layers"].items() if k not in wino}
    assert sorted(by_layer) == ["conv1", "conv2", "fc"]
    for name, (_, e) in by_layer.items():
        assert proc.stdout.count(f"VARIANTS {name}: ") == 1
        for v in measure.ORDER:   # timed, or skipped with the reason (avxvnni on a Zen 4)
            assert (v in e["median_ms"]) != (v in e["skipped"]), (name, v)
            if v in e["skipped"]:
                assert e["skipped"][v] == measure.cannot_run(v, info)
                assert f"{v} not timed: {e['skipped'][v]}" in proc.stdout
    # a recorded choice: conv2 runs portable (first in its dispatch), nothing is measured; its
    # Winograd entry (a 3x3 stride-1 conv) is recorded slower than any direct time, so the direct
    # portable kernel runs
    key, e = by_layer["conv2"]
    doc["layers"][key] = dict(e, best="portable")
    for key, e in wino.items():
        if e["layer"] == "conv2":
            doc["layers"][key] = dict(e, median_ms={v: 1e3 for v in e["median_ms"]})
    open(files[0], "w").write(json.dumps(doc))
    proc = project.scons("target=host-measured", "model=simplecnn")
    assert "VARIANTS" not in proc.stdout and "Test PASSED [host-measured] simplecnn" in proc.stdout
    assert "CODEGEN conv2" in steps(proc.stdout) and "CODEGEN conv1" not in steps(proc.stdout)
    gemm = {l["name"]: l.get("gemm") for l in json.loads(project.read(f"{b}/report.json"))["layers"]}
    assert gemm["conv2"]["variants"][0] == "portable" and gemm["conv2"]["choice"]["by"] == "measure"
    assert "variant conv2 portable" in project.read(f"{b}/run.log")
    # the same cache again: the same plan, nothing rebuilt
    assert not [s for s in steps(project.scons("target=host-measured", "model=simplecnn").stdout)
                if s.startswith(("CODEGEN", "CC"))]
    # an interrupted write (the file cut short) leaves nothing trusted: measured again
    open(files[0], "w").write(json.dumps(doc)[:100])
    proc = project.scons("target=host-measured", "model=simplecnn")
    # (every entry again: the 3 layers' direct kernels and the 3x3 convs' Winograd ones)
    assert proc.stdout.count("VARIANTS ") == len(doc["layers"]) and "Test PASSED [host-measured] simplecnn" in proc.stdout


@pytest.mark.slow   # tune of simplecnn (about 60 timing programs) and one build: about 60 s
def test_tune_searches_every_variant_and_its_winner_builds(project):
    """`tune` times each variant this CPU runs with that variant's own blockings (the vnni
    ones' wider, 32-register ones where it has AVX-512) and writes the winner's `isa`; a
    variant this CPU cannot run is not among the candidates; the tuning file then builds
    bit-exact with each layer's chosen variant first."""
    proc = project.scons("target=host", "model=simplecnn", "tune")
    assert "TUNE [host] simplecnn: 3 layers" in proc.stdout, proc.stdout[-2000:]
    doc = json.loads(project.read("build/host/simplecnn/tuning.json"))
    info = measure.cpu_info()
    runs = [v for v in measure.ORDER if v != "portable" and not measure.cannot_run(v, info)]
    for name, entry in doc["layers"].items():
        tried = {c.get("isa") for c in entry["candidates"]} - {None}
        # the fc layer's single pixel: every variant the layer holds (the u8 ones need K quads)
        assert set(runs) <= tried | {"avx2u8"}, (name, tried)
        assert not tried - set(runs), (name, tried)
        # the layer's current blocking under its dispatch may win: no isa, it stays `auto`
        assert entry.get("isa", "auto") in runs + ["auto"]
        if "avx512vnni512" in runs and name == "conv2":
            assert any(c.get("isa") == "avx512vnni512" and c["nr"] % 16 == 0 for c in entry["candidates"])
    project.write("tuning.json", json.dumps(doc))
    text = project.read("targets.yaml")
    project.write("targets.yaml", text.replace("    kind: host\n    description: generated",
                                               "    kind: host\n    kernel: {tuning: tuning.json}\n"
                                               "    description: generated", 1))
    proc = project.scons("target=host", "model=simplecnn")
    assert "Test PASSED [host] simplecnn" in proc.stdout
    gemm = {l["name"]: l.get("gemm") for l in json.loads(project.read("build/host/simplecnn/report.json"))["layers"]}
    for name, entry in doc["layers"].items():
        assert gemm[name]["origin"] == "tuned"
        if "isa" in entry:      # forced: the variant runs the tuned blocking (avx2u8: its fixed one)
            assert gemm[name]["variants"] == [entry["isa"]]
            if entry["isa"] != "avx2u8":
                vb = gemm[name]["variant_blocking"][entry["isa"]]
                assert (vb["mr"], vb["nr"]) == (entry["mr"], entry["nr"]), (name, vb, entry)
