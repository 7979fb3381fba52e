import os
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in (os.path.join(REPO, "site_scons"), REPO):
    if p not in sys.path:
        sys.path.insert(0, p)

import pytest  # noqa: E402

from nnscons.errors import ManifestError  # noqa: E402
from nnscons.manifest import load_manifest  # noqa: E402
from nnscons.sizes import parse_size  # noqa: E402

KINDS = {
    "host": {
        "toolchain": {"cc": "str", "cflags": "list[str]"},
        "memory": {"l1": "size", "l2": "size"},
        "tiling": {"l1_budget": "size"},
        "run": {"platform": ["native"], "timeout": "int"},
        "layer": {"l1_budget": "size"},
    },
    "gap9": {
        "toolchain": {"sdk": "path", "verbose": "bool"},
        "memory": {"l1": "size"},
        "run": {"platform": ["gvsoc", "board", "emul"]},
        "layer": {"l1_budget": "size", "tier": ["l1", "l2"]},
    },
}

GOOD = """\
defaults:
  target: host
  model: simplecnn
targets:
  host:
    kind: host
    description: portable C
    toolchain: {cc: gcc, cflags: [-O2, -Wall]}
    memory:
      l1: 64KiB
      l2: 1.5MiB
    tiling: {l1_budget: 32 KiB}
    run: {platform: native, timeout: 60}
  gap9:
    kind: gap9
    toolchain: {sdk: ../sdk, verbose: true}
models:
  simplecnn:
    zoo: simplecnn
    seed: 3
    input: in.npy
  resnet18:
    zoo: resnet18
    input_shape: [1, 3, 64, 64]
    quantization:
      calibration: {files: [cal0.npy], count: 4, seed: 1}
    targets:
      host:
        layers:
          conv1: {l1_budget: 16KiB}
          layer1.0.conv1: {l1_budget: 8192}
      gap9:
        layers:
          "123": {tier: l2}
  mine:
    source: m.onnx
    format: onnx
"""


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    for name in ("in.npy", "cal0.npy", "m.onnx"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "ares").mkdir()
    monkeypatch.chdir(tmp_path)  # errors then name the file as "targets.yaml"
    return tmp_path


def load(workdir, text):
    (workdir / "targets.yaml").write_text(textwrap.dedent(text))
    return load_manifest("targets.yaml", KINDS)


def error(workdir, text) -> str:
    with pytest.raises(ManifestError) as e:
        load(workdir, text)
    return str(e.value)


def edit(old, new, text=GOOD):
    assert old in text, old
    return text.replace(old, new, 1)


def test_happy_path(workdir):
    m = load(workdir, GOOD)
    assert m.defaults == {"target": "host", "model": "simplecnn"}
    host = m.targets["host"]
    assert (host.kind, host.description) == ("host", "portable C")
    assert host.sections == {
        "toolchain": {"cc": "gcc", "cflags": ["-O2", "-Wall"]},
        "memory": {"l1": 65536, "l2": 1572864},
        "tiling": {"l1_budget": 32768},
        "run": {"platform": "native", "timeout": 60},
    }
    assert m.targets["gap9"].sections["toolchain"] == {
        "sdk": os.path.normpath(str(workdir / ".." / "sdk")), "verbose": True}
    s = m.models["simplecnn"]
    assert (s.zoo, s.source, s.seed, s.input_shape) == ("simplecnn", None, 3, None)
    assert s.input == str(workdir / "in.npy")
    r = m.models["resnet18"]
    assert r.input_shape == (1, 3, 64, 64)
    assert r.calibration == {"files": [str(workdir / "cal0.npy")], "count": 4, "seed": 1}
    assert r.layer_overrides == {
        "host": {"conv1": {"l1_budget": 16384}, "layer1.0.conv1": {"l1_budget": 8192}},
        "gap9": {"123": {"tier": "l2"}},
    }
    mine = m.models["mine"]
    assert (mine.source, mine.fmt, mine.seed) == (str(workdir / "m.onnx"), "onnx", 0)
    assert m.where("models", "resnet18", "targets", "host", "layers", "layer1.0.conv1") == "targets.yaml:31"
    assert m.where("models", "resnet18", "targets", "host", "layers", "nope") == "targets.yaml:29"
    assert m.where("targets", "host", "memory", "l2") == "targets.yaml:11"


def test_anchors_and_merge_keys(workdir):
    m = load(workdir, """\
        targets:
          a: &base {kind: host, memory: {l1: 1KiB}}
          b: {<<: *base, description: b}
        """)
    assert m.targets["b"].sections == m.targets["a"].sections == {"memory": {"l1": 1024}}
    assert m.targets["b"].description == "b"


def test_minimal_manifest(workdir):
    m = load(workdir, "targets: {host: {kind: host}}\n")
    assert m.targets["host"].sections == {} and m.models == {} and m.defaults == {}


def test_select(workdir):
    m = load(workdir, GOOD)
    t, model = m.select(None, None)
    assert (t.name, model.name) == ("host", "simplecnn")
    t, model = m.select("gap9", "resnet18")
    assert (t.name, model.name) == ("gap9", "resnet18")
    _, adhoc = m.select(None, "m.onnx")
    assert (adhoc.name, adhoc.source, adhoc.zoo, adhoc.fmt) == ("m", str(workdir / "m.onnx"), None, "auto")
    _, adhoc = m.select(None, "ares/")
    assert (adhoc.name, adhoc.source) == ("ares", str(workdir / "ares"))


@pytest.mark.parametrize("target,model,expected", [
    ("k210", None, ["target=k210", "unknown target", "host, gap9"]),
    (None, "vgg", ["model=vgg", "unknown model", "simplecnn, resnet18, mine"]),
    (None, "nothere/x.onnx", ["file not found", "nothere/x.onnx"]),
])
def test_select_errors(workdir, target, model, expected):
    m = load(workdir, GOOD)
    with pytest.raises(ManifestError) as e:
        m.select(target, model)
    for part in expected:
        assert part in str(e.value)


def test_select_without_defaults(workdir):
    m = load(workdir, "targets: {host: {kind: host}, gap9: {kind: gap9}}\n")
    with pytest.raises(ManifestError, match=r"no target selected.*target=<name>.*host, gap9"):
        m.select(None, None)
    with pytest.raises(ManifestError, match="no model selected"):
        m.select("host", None)


def test_the_only_target_or_model_declared_needs_no_default(workdir):
    """A firmware's manifest with one target and no defaults: `nnscons model=m library` uses it."""
    m = load(workdir, "targets: {mcu: {kind: host}}\nmodels: {m: {zoo: simplecnn}, n: {zoo: simplecnn}}\n")
    target, model = m.select(None, "m")
    assert (target.name, model.name) == ("mcu", "m")
    with pytest.raises(ManifestError, match="no model selected"):
        m.select(None, None)
    m = load(workdir, "targets: {mcu: {kind: host}}\nmodels: {m: {zoo: simplecnn}}\n")
    assert [c.name for c in m.select(None, None)] == ["mcu", "m"]


# Each case: manifest text, then fragments that must all appear in the message.
CASES = {
    "malformed yaml": ("targets:\n  host:\n    kind: host\n   bad: [1\n",
                       ["targets.yaml:4:", "invalid YAML"]),
    "tab indentation": ("targets:\n\thost: {}\n", ["targets.yaml:2:", "invalid YAML"]),
    "top level list": ("- a\n- b\n", ["targets.yaml:1:", "top level must be a mapping", "a list"]),
    "empty file": ("", ["targets.yaml:1:", "top level must be a mapping"]),
    "unknown top key": (edit("models:", "modles:"),
                        ["targets.yaml:17: modles: unknown key; expected one of: defaults, targets, models",
                         "did you mean 'models'"]),
    "missing targets": ("models: {}\n", ["missing required key 'targets'"]),
    "empty targets": ("targets: {}\n", ["targets.yaml:1: targets: at least one target"]),
    "unknown target key": (edit("    description:", "    descrption:"),
                           ["targets.yaml:7: targets.host.descrption: unknown key; expected one of: "
                            "kind, description, toolchain, memory, tiling, run"]),
    "section not in kind": (edit("    toolchain: {sdk", "    tiling: {}\n    toolchain: {sdk"),
                            ["targets.yaml:16: targets.gap9.tiling: unknown key; expected one of: "
                             "kind, description, toolchain, memory, run"]),
    "unknown section key": (edit("l2: 1.5MiB", "l3: 1.5MiB"),
                            ["targets.yaml:11: targets.host.memory.l3: unknown key; expected one of: l1, l2"]),
    "missing kind": (edit("    kind: gap9\n", ""),
                     ["targets.yaml:14: targets.gap9: missing required key 'kind'; expected one of: host, gap9"]),
    "unknown kind": (edit("kind: gap9", "kind: gap8"),
                     ["targets.yaml:15: targets.gap9.kind: unknown kind", "'gap8'", "expected one of: host, gap9"]),
    "wrong type int": (edit("timeout: 60", "timeout: soon"),
                       ["targets.yaml:13: targets.host.run.timeout: expected an integer, got a string ('soon')"]),
    "wrong type bool": (edit("verbose: true", "verbose: 1"),
                        ["targets.yaml:16: targets.gap9.toolchain.verbose: expected true or false"]),
    "wrong type str": (edit("cc: gcc", "cc: 12"),
                       ["targets.yaml:8: targets.host.toolchain.cc: expected a string", "quote it"]),
    "wrong list item": (edit("[-O2, -Wall]", "[-O2, 3]"),
                        ["targets.yaml:8: targets.host.toolchain.cflags[1]: expected a string"]),
    "bad choice": (edit("platform: native", "platform: gvsoc"),
                   ["targets.yaml:13: targets.host.run.platform: invalid value a string ('gvsoc'); "
                    "expected one of: native"]),
    "section not a mapping": (edit("      l1: 64KiB\n      l2: 1.5MiB\n", "").replace("memory:", "memory: 64KiB"),
                              ["targets.yaml:9: targets.host.memory: expected a mapping, got a string"]),
    "bad size unit": (edit("l1: 64KiB", "l1: 64Kb"),
                      ["targets.yaml:10: targets.host.memory.l1: invalid size '64Kb': unknown unit 'Kb'", "KiB"]),
    "fractional size": (edit("l1: 64KiB", "l1: 0.3KiB"),
                        ["targets.yaml:10: targets.host.memory.l1:", "not a whole number of bytes"]),
    "negative size": (edit("l1: 64KiB", "l1: -4"), ["targets.yaml:10:", "negative"]),
    "duplicate key": (edit("      l2: 1.5MiB\n", "      l2: 1.5MiB\n      l1: 1KiB\n"),
                      ["targets.yaml:12: targets.host.memory.l1: duplicate key (first defined on line 10)"]),
    "duplicate target": (GOOD + "targets: {}\n", ["targets.yaml:38: targets: duplicate key (first defined on line 4)"]),
    "zoo and source": (edit("    seed: 3\n", "    source: m.onnx\n"),
                       ["targets.yaml:18: models.simplecnn: exactly one of 'zoo' or 'source' is required, got both",
                        "hint"]),
    "neither zoo nor source": (edit("    zoo: resnet18\n", ""),
                               ["targets.yaml:22: models.resnet18: exactly one of 'zoo' or 'source'",
                                "got neither", "simplecnn"]),
    "unknown zoo": (edit("zoo: resnet18", "zoo: resnet34"),
                    ["targets.yaml:23: models.resnet18.zoo: unknown zoo model 'resnet34'; expected one of:",
                     "resnet18", "simplecnn"]),
    "missing source": (edit("source: m.onnx", "source: models/missing.onnx"),
                       ["targets.yaml:36: models.mine.source: model source not found: models/missing.onnx "
                        "(relative to the folder of targets.yaml)"]),
    "format mismatch": (edit("source: m.onnx", "source: ares"),
                        ["targets.yaml:36: models.mine.source: format onnx expects a .onnx file"]),
    "bad format": (edit("format: onnx", "format: tensorflow"),
                   ["targets.yaml:37: models.mine.format: invalid value", "expected one of: auto, onnx, tflite, ares"]),
    "seed on source model": (edit("format: onnx", "seed: 1"),
                             ["targets.yaml:37: models.mine.seed: applies only to 'zoo' models"]),
    "missing input": (edit("input: in.npy", "input: nope.npy"),
                      ["targets.yaml:21: models.simplecnn.input: input file not found: nope.npy"]),
    "missing calibration file": (edit("[cal0.npy]", "[cal0.npy, cal9.npy]"),
                                 ["targets.yaml:26: models.resnet18.quantization.calibration.files[1]:",
                                  "calibration file not found: cal9.npy"]),
    "calibration count": (edit("count: 4", "count: 0"),
                          ["targets.yaml:26: models.resnet18.quantization.calibration.count: expected an integer >= 1"]),
    "input_shape batch": (edit("[1, 3, 64, 64]", "[2, 3, 64, 64]"),
                          ["targets.yaml:24: models.resnet18.input_shape: batch size must be 1"]),
    "input_shape rank": (edit("[1, 3, 64, 64]", "[1, 3, 64, 64, 1]"),
                         ["targets.yaml:24: models.resnet18.input_shape: expected [1, C, H, W], [1, C, L] or [1, F]"]),
    "input_shape values": (edit("[1, 3, 64, 64]", "[1, 3, 0, 64]"),
                           ["targets.yaml:24: models.resnet18.input_shape: expected [1, C, H, W]"]),
    "input_shape for zoo": (edit("[1, 3, 64, 64]", "[1, 3, 16, 16]"),
                            ["targets.yaml:24: models.resnet18.input_shape: zoo model 'resnet18':", "H, W >= 32"]),
    "unknown model key": (edit("    seed: 3\n", "    sead: 3\n"),
                          ["targets.yaml:20: models.simplecnn.sead: unknown key; expected one of: zoo, source,",
                           "did you mean 'seed'"]),
    "override undeclared target": (edit("      gap9:\n        layers:", "      gap8:\n        layers:"),
                                   ["targets.yaml:32: models.resnet18.targets.gap8: unknown target 'gap8'; "
                                    "expected one of: host, gap9"]),
    "override unknown layer key": (edit("conv1: {l1_budget: 16KiB}", "conv1: {l1_budgt: 16KiB}"),
                                   ["targets.yaml:30: models.resnet18.targets.host.layers.conv1.l1_budgt: "
                                    "unknown key; expected one of: l1_budget"]),
    "override bad layer value": (edit("{tier: l2}", "{tier: l3}"),
                                 ["targets.yaml:34: models.resnet18.targets.gap9.layers.123.tier: "
                                  "invalid value", "expected one of: l1, l2"]),
    "override dotted layer name": (edit("{l1_budget: 8192}", "{l1_budget: big}"),
                                   ["targets.yaml:31: models.resnet18.targets.host.layers.\"layer1.0.conv1\".l1_budget: "
                                    "invalid size 'big'"]),
    "non-scalar key": ("targets:\n  ? [a, b]\n  : {}\n", ["targets.yaml:2:", "mapping keys must be plain names"]),
    "override unknown section": (edit("        layers:\n          conv1", "        layer:\n          conv1"),
                                 ["targets.yaml:29: models.resnet18.targets.host.layer: unknown key; "
                                  "expected one of: layers"]),
    "defaults unknown target": (edit("target: host", "target: hots"),
                                ["targets.yaml:2: defaults.target: unknown target 'hots'; expected one of: host, gap9"]),
    "defaults unknown model": (edit("model: simplecnn", "model: lenet"),
                               ["targets.yaml:3: defaults.model: unknown model 'lenet'; expected one of: "
                                "simplecnn, resnet18, mine"]),
    "unsafe target name": (edit("  gap9:\n", "  ../gap9:\n").replace("gap9:\n        layers", "x:\n        layers"),
                           ["targets.yaml:14: targets.\"../gap9\": invalid name"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_errors(workdir, case):
    text, fragments = CASES[case]
    message = error(workdir, text)
    assert "Traceback" not in message
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in:\n{message}"


def test_unreadable_manifest(workdir):
    with pytest.raises(ManifestError, match="nope.yaml: cannot read the manifest"):
        load_manifest("nope.yaml", KINDS)


def test_absolute_path_inside_cwd_is_shown_relative(workdir):
    (workdir / "targets.yaml").write_text("targets: {host: {kind: hst}}\n")
    with pytest.raises(ManifestError, match=r"^targets\.yaml:1: targets\.host\.kind"):
        load_manifest(str(workdir / "targets.yaml"), KINDS)


@pytest.mark.parametrize("value,expected", [
    (0, 0), (512, 512), ("512B", 512), ("64KiB", 65536), ("128 KiB", 131072),
    ("1.5MiB", 1572864), ("2GiB", 2 << 30), ("64KB", 64000), ("1.5kB", 1500),
    ("1MB", 10 ** 6), ("65536", 65536),
])
def test_parse_size(value, expected):
    assert parse_size(value) == expected


@pytest.mark.parametrize("value", [-1, "-1KiB", True, 1.5, None, "", "KiB", "0.3KiB", "1.5B",
                                   "64Kb", "64 KiBs", [64]])
def test_parse_size_rejects(value):
    with pytest.raises(ValueError, match="expected an integer number of bytes, or a string like"):
        parse_size(value)


def test_shipped_manifest_names_only_files_in_the_checkout():
    """The committed targets.yaml works in any clone: every model's source is a file inside the
    checkout (a scratch entry naming a local folder once broke every build on other machines)."""
    import yaml
    with open(os.path.join(REPO, "targets.yaml")) as f:
        models = yaml.safe_load(f)["models"]
    for name, model in models.items():
        source = model.get("source")
        if source is None:
            continue
        assert not os.path.isabs(source), f"models.{name}.source is absolute: {source}"
        path = os.path.normpath(os.path.join(REPO, source))
        assert path.startswith(REPO + os.sep) and os.path.isfile(path), \
            f"models.{name}.source {source} is not a file in the checkout"
