"""target=pulp-open on platform=gvsoc-open: GVSoC's pulp-open runs the generated gap9 code on the
bare-metal runtime of kernels/gap9/open; per-layer cycles from the RI5CY counters.

The runs need GVSoC (GVSOC=... or gvsoc on PATH; `bash ../shared/gvsoc/install.sh DIR`) and
Debian's riscv64-unknown-elf-gcc with picolibc; without them those tests skip, saying which is
missing. The missing-gvsoc message and the slicing arithmetic need neither.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import SCONS, Project

from nnscons.targets.gap9 import layerwise
from nnscons.targets.pulp_open import gvsoc_open

CC = gvsoc_open.CC
HAVE_CC = bool(shutil.which(CC)) and os.path.isdir("/usr/lib/picolibc/riscv64-unknown-elf")
GVSOC = gvsoc_open.find_gvsoc()
needs_cc = pytest.mark.skipif(not HAVE_CC, reason=f"{CC} + picolibc not installed "
                              "(apt-get install gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf)")
needs_gvsoc = pytest.mark.skipif(GVSOC is None, reason="GVSoC not found (GVSOC unset, no gvsoc on PATH): "
                                 "bash ../shared/gvsoc/install.sh DIR, then GVSOC=DIR/gvsoc")

OUT = "build/pulp-open/simplecnn/gvsoc-open"


def scons(p: Project, *args, gvsoc=GVSOC, timeout=900):
    env = {k: v for k, v in os.environ.items() if k != "GVSOC"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if gvsoc is not None:
        env["GVSOC"] = gvsoc
    else:       # no gvsoc reachable at all: PATH without any folder holding one
        env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep)
                                      if not os.path.exists(os.path.join(d, "gvsoc")))
    return subprocess.run([SCONS, "-Q", *args], cwd=p.path, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)


def add_target(p: Project, name: str, body: str):
    """A pulp-open target with other keys (inserted before aie2p)."""
    y = p.read("targets.yaml")
    y = y.replace("  aie2p:\n    kind: aie2p", f"  {name}:\n    kind: pulp-open\n{body}\n  aie2p:\n    kind: aie2p", 1)
    p.write("targets.yaml", y)


@needs_cc
def test_a_missing_gvsoc_is_one_clear_error(project):
    proc = scons(project, "target=pulp-open", "model=simplecnn", "platform=gvsoc-open", gvsoc=None)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stdout
    assert "platform=gvsoc-open: GVSoC not found" in proc.stdout
    assert "bash ../shared/gvsoc/install.sh DIR" in proc.stdout and "github.com/gvsoc/gvsoc" in proc.stdout
    assert not os.path.exists(project.file(OUT))

    env_bad = scons(project, "target=pulp-open", "model=simplecnn", gvsoc=project.file("no/such/gvsoc"))
    assert env_bad.returncode != 0 and "Traceback" not in env_bad.stdout
    assert "is not an executable gvsoc launcher" in env_bad.stdout


def test_the_slice_of_a_bin_is_each_sections_first_channels():
    oc, k, per = 6, 4, 5
    layout = [("weight", "int8", oc * per, 0), ("bias", "int32", oc, 32), ("mult", "int32", oc, 56),
              ("shift", "int32", 1, 80)]
    w = np.arange(oc * per, dtype=np.int8)
    b, m, s = (np.arange(oc, dtype=np.int32) + 100 * i for i in (1, 2, 3))
    full = bytearray(84)
    full[0:30], full[32:56], full[56:80], full[80:84] = w.tobytes(), b.tobytes(), m.tobytes(), s[:1].tobytes()
    sliced = layerwise.slice_layout(layout, oc, k)
    assert sliced == [("weight", "int8", 20, 0), ("bias", "int32", 4, 20), ("mult", "int32", 4, 36),
                      ("shift", "int32", 1, 52)]
    got = layerwise.slice_bytes(bytes(full), layout, sliced)
    assert got == w[:k * per].tobytes() + b[:k].tobytes() + m[:k].tobytes() + s[:1].tobytes()


def _check_cycles(rep: dict):
    assert rep["passed"] and "pulp-open proxy" in rep["cycles_source"]
    for layer in rep["layers"]:
        m = layer["measured"]
        assert layer["cycles"] == m["cycles"] > 0
        assert m["instructions"] > 0
        if layer["macs"]:
            # 8 RI5CY cores: at most 8 x 4 int8 MACs (pv.sdotsp.b) per cycle
            assert 0 < layer["macs_per_cycle"] < 32, layer
            assert m["instructions"] >= layer["macs"] / 4 / 4, layer    # far below is impossible
    assert rep["total_cycles"] == sum(l["cycles"] for l in rep["layers"])
    assert rep["macs_per_cycle"] == round(rep["total_macs"] / rep["total_cycles"], 3)


@pytest.mark.slow
@needs_cc
@needs_gvsoc
def test_simplecnn_is_bit_exact_on_pulp_open_with_cycles(project):
    proc = scons(project, "target=pulp-open", "model=simplecnn")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "Test PASSED [pulp-open] simplecnn: all 6 layers match" in proc.stdout
    assert "MAC/cyc" in proc.stdout and "pulp-open proxy figures for GAP9" in proc.stdout
    rep = json.loads(project.read(f"{OUT}/report.json"))
    _check_cycles(rep)
    # report.html: MACs/cycle per layer (not MACs bars with a cycles line), the console's columns
    page = project.read(f"{OUT}/report.html")
    assert "<h2>Per-layer MACs/cycle</h2>" in page and "<th>cycles</th>" in page and "<th>MAC/cyc</th>" in page
    log = project.read(f"{OUT}/run.log")
    assert log.count("measure ") == 6 and "Test PASSED" in log
    # nothing else changes: a second call is a no-op (no RUN)
    again = scons(project, "target=pulp-open", "model=simplecnn")
    assert again.returncode == 0 and "RUN " not in again.stdout and "LINK " not in again.stdout


@pytest.mark.slow
@needs_cc
@needs_gvsoc
def test_layer_by_layer_runs_each_layer_from_its_producers_goldens(project):
    add_target(project, "pulp-open-lbl", "    run: {platform: gvsoc-open, layer_by_layer: always}")
    proc = scons(project, "target=pulp-open-lbl", "model=simplecnn")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "Test PASSED [pulp-open-lbl] simplecnn: all 6 layers match" in proc.stdout
    assert proc.stdout.count("RUN ") == 6 and "layer by layer" in proc.stdout
    out = "build/pulp-open-lbl/simplecnn/gvsoc-open"
    rep = json.loads(project.read(f"{out}/report.json"))
    _check_cycles(rep)
    net = project.read("build/pulp-open-lbl/simplecnn/src/runs/conv2/network.c")
    assert 'nn_fs_open_exact(net.fs, "pool1_golden.bin",' in net    # its input is its producer's golden
    # a wrong layer (max pooling that takes the minimum, a kernel bug: a damaged golden would
    # be rebuilt) fails that layer, named, and its consumer still runs from the right golden
    for path, old, new in (("kernels/gap9/nn_xp_pool.c", "return cfg->c % 4 == 0", "return 0 && cfg->c % 4 == 0"),
                           ("kernels/common/nn_hwc_pool.c", "px[i] > o[i] ?", "px[i] < o[i] ?")):
        assert old in project.read(path)
        project.write(path, project.read(path).replace(old, new))
    bad = scons(project, "target=pulp-open-lbl", "model=simplecnn")
    assert bad.returncode != 0
    assert "first wrong layer #1 'pool1'" in bad.stdout
    assert "layer 2 conv2: OK" in project.read(f"{out}/run.log")


@pytest.mark.slow
@needs_cc
@needs_gvsoc
def test_an_over_budget_dma_or_misuse_is_a_failed_run_not_a_pass(project):
    """The runtime's own errors (here: an L1 free out of order) end the run with its message."""
    tpl = project.read("templates/gap9/_gap9.j2")
    free = "    pi_cl_l1_free(io->cluster, l1, {{ spec.tile.l1_bytes }});"
    assert free in tpl
    project.write("templates/gap9/_gap9.j2", tpl.replace(free, free.replace("l1, ", "l1 + 8, ")))
    proc = scons(project, "target=pulp-open", "model=simplecnn")
    assert proc.returncode != 0
    assert "PULP-OPEN ERROR: pi_cl_l1_free" in proc.stdout
    assert not os.path.exists(project.file(f"{OUT}/check.txt"))


@pytest.mark.slow
@needs_cc
@needs_gvsoc
def test_resnet18_runs_layer_by_layer_with_sliced_layers(project):
    """resnet18's 11.7 MB of parameters do not fit pulp-open's L2: one run per layer; its
    layer4 3x3 convs (2.4 MB each) do not fit even alone and run on a slice of their output
    channels. 32x32 input to keep the simulation short; 224x224 is the same plan."""
    y = project.read("targets.yaml")
    project.write("targets.yaml", y.replace("models:\n", "models:\n  resnet18s:\n    zoo: resnet18\n    seed: 0\n"
                                            "    input_shape: [1, 3, 32, 32]\n"
                                            "    quantization:\n      calibration: {count: 2, seed: 0}\n", 1)
                  .replace("  pulp-open:\n    kind: pulp-open\n",       # fused adds on sliced layers too
                           "  pulp-open:\n    kind: pulp-open\n    kernels: {fuse_residual: true}\n", 1))
    proc = scons(project, "target=pulp-open", "model=resnet18s", timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    # 32 layers less the 8 residual adds fused into their convs (targets/gap9/residual.py)
    assert ("Test PASSED [pulp-open] resnet18s: all 24 layers match (3 of them on a slice of their output "
            "channels)") in proc.stdout
    rep = json.loads(project.read("build/pulp-open/resnet18s/gvsoc-open/report.json"))
    assert rep["layer_by_layer"] and rep["passed"]
    sliced = {l["name"]: l for l in rep["layers"] if l.get("slice")}
    assert set(sliced) == {"layer4.0.conv2", "layer4.1.conv1", "layer4.1.conv2"}
    assert "layer4.1.add" in sliced["layer4.1.conv2"]["fused"]      # sliced and fused: its residual's channels
    for layer in sliced.values():
        k, oc = layer["slice"]["channels"], layer["slice"]["of"]
        assert k % 8 == 0 and 0 < k < oc and layer["cycles_scale"] == oc / k
        assert layer["cycles"] == round(layer["measured"]["cycles"] * oc / k)
        assert os.path.getsize(project.file(f"build/pulp-open/resnet18s/bin/{layer['cname']}_slice_golden.bin")) == k
    assert rep["total_cycles"] == sum(l["cycles"] for l in rep["layers"])
    assert "measured on a slice of their output channels and scaled" in proc.stdout


# ---------------------------------------------------------------- the kind of its own (issue 27.3)

OLD_ENTRY = """\
targets:
  pulp-open:
    kind: gap9
    memory: {l1: 64KiB, l1_reserved: 12KiB, l2: 1.5MiB, l2_reserved: 320KiB, l3_device: flash, l3_size: 0,
             l3_threshold: 1GiB}
    cluster: {cores: 8, stack_size: 2KiB, slave_stack_size: 1KiB}
    dma: {max_inflight: 8, max_transfer: 64KiB}
    tiling: {l1_budget: 52KiB}
    run: {platform: gvsoc-open, timeout: 1800}
"""


def _load(tmp_path, text):
    from nnscons.manifest import load_manifest
    from nnscons.targets import schemas
    (tmp_path / "targets.yaml").write_text(text)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        return load_manifest("targets.yaml", schemas())
    finally:
        os.chdir(cwd)


def test_an_old_gap9_manifest_on_gvsoc_open_is_one_line_naming_the_new_kind(tmp_path):
    from nnscons.errors import ManifestError
    with pytest.raises(ManifestError) as e:
        _load(tmp_path, OLD_ENTRY)
    msg = str(e.value)
    assert msg.startswith("targets.yaml:9: targets.pulp-open.run.platform: ") and "\n" not in msg, msg
    assert "invalid value a string ('gvsoc-open'); expected one of: auto, gvsoc, emul, qemu, gvsoc-gap9; " \
        "gvsoc-open is kind pulp-open's platform" in msg
    assert "write `kind: pulp-open` for target 'pulp-open'" in msg
    # the one-word edit is the whole fix: the same keys are pulp-open's
    m = _load(tmp_path, OLD_ENTRY.replace("kind: gap9", "kind: pulp-open"))
    assert m.targets["pulp-open"].kind == "pulp-open"


def test_gap9_with_platform_gvsoc_open_on_the_command_line_names_the_kind(project):
    proc = scons(project, "target=gap9", "model=simplecnn", "platform=gvsoc-open", "codegen")
    assert proc.returncode != 0 and "Traceback" not in proc.stdout
    assert ("platform=gvsoc-open: target 'gap9' (kind gap9) runs on: auto, gvsoc, emul, qemu, gvsoc-gap9; "
            "gvsoc-open is kind pulp-open's platform: choose a target of that kind") in proc.stdout
    assert not os.path.exists(project.file("build/gap9/simplecnn/src"))


def test_pulp_opens_defaults_are_the_old_manifest_entry(tmp_path):
    """The chip's geometry moved from targets.yaml into the kind: a bare `kind: pulp-open` plans
    with the options the old explicit entry gave, and the shipped entries are that bare kind."""
    from nnscons.targets import gap9, pulp_open
    old = _load(tmp_path, OLD_ENTRY.replace("kind: gap9", "kind: pulp-open")).targets["pulp-open"]
    bare = _load(tmp_path, "targets:\n  p:\n    kind: pulp-open\n").targets["p"]
    assert pulp_open.options(bare) == pulp_open.options(old)
    opts = pulp_open.options(bare)
    assert opts["tiling"]["l1_budget"] == 52 * 1024 and opts["memory"]["l3_size"] == 0
    assert pulp_open.resolve_platform(opts, "p", False) == "gvsoc-open" and opts["cluster"]["cores"] == 8
    # gap9 keeps its own chip: no pulp-open platform, 9 cores on its GAP9 model
    assert "gvsoc-open" not in gap9.SCHEMA["run"]["platform"]
    g = gap9.options(_load(tmp_path, "targets:\n  g:\n    kind: gap9\n").targets["g"])
    assert gap9.settle_platform(gap9.CHIP, g, "gvsoc-gap9") == "gvsoc-gap9" and g["cluster"]["cores"] == 9
    from nnscons.manifest import load_manifest
    from nnscons.targets import schemas
    shipped = load_manifest(os.path.join(os.path.dirname(__file__), "..", "targets.yaml"), schemas()).targets
    assert {n: t.kind for n, t in shipped.items() if n.startswith("pulp-open")} == \
        {"pulp-open": "pulp-open", "pulp-open-plainc": "pulp-open"}
    assert pulp_open.options(shipped["pulp-open"]) == dict(opts, run=dict(opts["run"], platform="gvsoc-open"))


def test_gap9_holds_no_pulp_open_branch():
    """pulp-open is data gap9's code reads (its Chip), not a branch in targets/gap9/: no string
    (docstrings and comments aside: facts measured on pulp-open stay there) and no name in its
    code says gvsoc-open or pulp-open."""
    import ast
    import re
    here = os.path.join(os.path.dirname(__file__), "..", "site_scons", "nnscons", "targets", "gap9")
    hits = []
    for name in sorted(f for f in os.listdir(here) if f.endswith(".py")):
        tree = ast.parse(open(os.path.join(here, name)).read())
        docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))
                and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            text = (node.value if isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in docs else getattr(node, "id", None) or getattr(node, "attr", None)
                    or getattr(node, "name", None) or getattr(node, "module", None))
            if isinstance(text, str) and re.search(r"gvsoc.open|pulp.open", text, re.I):
                hits.append(f"{name}:{node.lineno}: {text[:60]}")
    assert hits == []


def test_each_chips_runtime_errors_fail_the_run():
    """The bare-metal runtime prints "<chip> ERROR: ..." (open_fc.c's OPEN_CHIP_NAME): each kind's
    run step knows its own simulators' name from their Simulator, nothing else's."""
    from types import SimpleNamespace
    from nnscons.builders.run import simrun
    from nnscons.targets import gap9, pulp_open
    from nnscons.targets.gap9 import runstep
    log = "layer 1 conv1: OK\nPULP-OPEN ERROR: pi_cl_l1_free: 52 B at 0x10000008 is not the last block\n"
    on = lambda kind: SimpleNamespace(kind=kind)      # noqa: E731  (what fatal() reads of a session)
    assert simrun.fatal_in(log, runstep.fatal(on(pulp_open)))[0] == "bare-metal GVSoC runtime error"
    assert simrun.fatal_in(log.replace("PULP-OPEN", "GAP9"), runstep.fatal(on(gap9)))[0] == \
        "bare-metal GVSoC runtime error"
    assert runstep.error_tags(on(pulp_open)) == ["PULP-OPEN ERROR"] and runstep.error_tags(on(gap9)) == ["GAP9 ERROR"]
    assert simrun.fatal_in("layer 1 conv1: OK\nTest PASSED\n", runstep.fatal(on(pulp_open))) is None
