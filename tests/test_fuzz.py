"""Property-based fuzzing of what a user hands nnscons: mutated targets.yaml files and
mutated small ONNX and TFLite models.  Whatever the mutation, the outcome is a plan (the
build goes on) or a UserError with a message (the front end prints it, exit status 2),
never another exception (a traceback).

In-process (manifest loading and planning, what every `scons` call does before it builds)
so that a few dozen examples fit in about a minute; one test takes a few mutated manifests
through the real command line (`scons -n`) for the exit status and the message on stderr.
Deterministic (derandomized, no example database written): CI runs the same examples.
"""
from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import subprocess
import tempfile

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is not installed (pip install -r requirements.txt)")
from hypothesis.configuration import set_hypothesis_home_dir  # noqa: E402

# hypothesis keeps a .hypothesis/ folder in the working directory (the checkout) even without
# an example database: a temporary one instead, removed at exit
_HOME = tempfile.mkdtemp(prefix="nnscons-hypothesis-")
atexit.register(shutil.rmtree, _HOME, True)
set_hypothesis_home_dir(_HOME)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import ROOT, SCONS, _ignore  # noqa: E402

FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
PLANNED = [("host", "simplecnn"), ("gap9", "simplecnn"), ("pulp-open", "simplecnn"), ("k210", "simplecnn"),
           ("arm64", "simplecnn"), ("host", "tfl_autoencoder"), (None, None)]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A copy of the project (module-wide: hypothesis runs many examples in one test)."""
    dst = tmp_path_factory.mktemp("fuzz") / "proj"
    shutil.copytree(ROOT, dst, ignore=_ignore)
    return str(dst)


def _plan(workdir: str, manifest_text: str | None, target, model):
    """Load the manifest (when given, written first) and plan; the UserError or None."""
    from nnscons.builders.graph import network
    from nnscons.builders.reports import report
    from nnscons.errors import UserError
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        if manifest_text is not None:
            with open("targets.yaml", "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(manifest_text)
        try:
            manifest = network.load_manifest("targets.yaml")
            session = network.plan(manifest, target, model, root=workdir,
                                   platform="emul" if target in ("gap9", "k210") else None)
            report.plan_summary(session)             # the REPORT step's Value, at declaration
            return session
        except UserError as e:
            assert str(e).strip(), f"a UserError without a message ({type(e).__name__})"
            return e
    finally:
        os.chdir(cwd)


# --- targets.yaml ---------------------------------------------------------------------

_SCALAR = re.compile(r"^(\s*-?\s*[^:#\s][^:#]*:\s+)([^#\s][^#]*?)(\s*(#.*)?)$")
_VALUES = st.one_of(
    st.sampled_from(["0", "-1", "1", "3", "9", "1000", "1e400", "-0.5", "0.5", "999999999999999999999999",
                     "''", "null", "~", "[]", "{}", "[1, 2]", "[1, -1, 28, 28]", "[1, 1, 0, 28]", "abc",
                     "true", "false", "1KiB", "-4KiB", "1.5MiB", "64GiB", "all", '"\\0"', "!!binary aGk=",
                     "&a 1", "*a", "[[[[[[]]]]]]", "{a: {b: {c: 1}}}", "../../etc/passwd", "'*/'", "nan",
                     ".inf", "0x10", "2020-01-01", "? a", "|\n  text"]),
    st.integers(-2 ** 70, 2 ** 70).map(str),
    st.text(max_size=6).map(json.dumps))
_EDITS = st.one_of(
    st.tuples(st.just("value"), st.integers(0, 10 ** 6), _VALUES),
    st.tuples(st.just("delete"), st.integers(0, 10 ** 6), st.just("")),
    st.tuples(st.just("duplicate"), st.integers(0, 10 ** 6), st.just("")),
    st.tuples(st.just("indent"), st.integers(0, 10 ** 6), st.sampled_from([" ", "  ", "\t", "    "])),
    st.tuples(st.just("dedent"), st.integers(0, 10 ** 6), st.just("")),
    st.tuples(st.just("insert"), st.integers(0, 10 ** 6),
              st.sampled_from(["bogus: 1", "  bogus: 1", "    layers: {x: {l1_budget: 1}}", "- 1", "models:",
                               "targets:", "defaults: 3", "  host: {kind: gap9}", "      l1: 0",
                               "    targets: {host: {tiling: 1}}", "\x00", "\ufeff", ": :"])),
)


def mutate_manifest(text: str, edits) -> str:
    lines = text.splitlines(keepends=True)
    for kind, where, arg in edits:
        if not lines:
            break
        i = where % len(lines)
        line = lines[i]
        if kind == "value":
            m = _SCALAR.match(line.rstrip("\n"))
            if m:
                lines[i] = m.group(1) + arg.replace("\n", "\n" + " " * 8) + (m.group(3) or "") + "\n"
        elif kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, line)
        elif kind == "indent":
            lines[i] = arg + line
        elif kind == "dedent":
            lines[i] = line[2:] if line.startswith("  ") else line
        else:
            lines.insert(i, arg + "\n")
    return "".join(lines)


@settings(FUZZ, max_examples=80)
@given(edits=st.lists(_EDITS, min_size=1, max_size=3), which=st.sampled_from(PLANNED))
def test_a_mutated_manifest_plans_or_says_what_is_wrong(workdir, edits, which):
    with open(os.path.join(ROOT, "targets.yaml"), encoding="utf-8") as f:
        original = f.read()
    _plan(workdir, mutate_manifest(original, edits), *which)


@settings(FUZZ, max_examples=4)
@given(edits=st.lists(_EDITS, min_size=1, max_size=3))
def test_a_mutated_manifest_on_the_command_line_exits_0_or_2_with_a_message(workdir, edits):
    with open(os.path.join(ROOT, "targets.yaml"), encoding="utf-8") as f:
        original = f.read()
    with open(os.path.join(workdir, "targets.yaml"), "w", encoding="utf-8") as f:
        f.write(mutate_manifest(original, edits))
    proc = subprocess.run([SCONS, "-Q", "-n", "model=simplecnn"], cwd=workdir, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"), timeout=300)
    assert proc.returncode in (0, 2), proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout[-2000:] + proc.stderr[-2000:]
    if proc.returncode == 2:
        assert proc.stderr.startswith("nnscons: error: ") and len(proc.stderr.strip()) > 20, proc.stderr


# --- models -------------------------------------------------------------------------

def _zoo_bytes(workdir: str, name: str, seed: int, shape, suffix: str) -> bytes:
    from nnscons.resources import zoo
    path = os.path.join(workdir, "build", f"fuzz-original{suffix}")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    zoo().write(name, seed, shape, path)
    with open(path, "rb") as f:
        return f.read()


_BYTE_EDITS = st.lists(st.one_of(
    st.tuples(st.just("flip"), st.floats(0, 1), st.integers(1, 255)),
    st.tuples(st.just("set"), st.floats(0, 1), st.integers(0, 255)),
    st.tuples(st.just("cut"), st.floats(0, 1), st.just(0)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.integers(0, 255))), min_size=1, max_size=6)


def mutate_bytes(data: bytes, edits) -> bytes:
    buf = bytearray(data)
    for kind, where, arg in edits:
        if not buf:
            break
        i = min(int(where * len(buf)), len(buf) - 1)
        if kind == "flip":
            buf[i] ^= arg
        elif kind == "set":
            buf[i] = arg
        elif kind == "cut":
            del buf[i:]
        else:
            buf.insert(i, arg)
    return bytes(buf)


def _plan_model_file(workdir: str, data: bytes, suffix: str):
    path = os.path.join("fuzzed" + suffix)
    with open(os.path.join(workdir, path), "wb") as f:
        f.write(data)
    with open(os.path.join(ROOT, "targets.yaml"), encoding="utf-8") as f:
        original = f.read()                         # a manifest test may have left a mutated one
    got = _plan(workdir, original, "host", path)
    if got is not None and not isinstance(got, Exception):
        from nnscons.errors import UserError
        try:                                        # the INPUT and GOLDEN steps' Python
            got.quantized_input()
            got.reference()
        except UserError as e:
            assert str(e).strip()


_ONNX_EDITS = st.lists(st.one_of(
    st.tuples(st.just("attr"), st.integers(0, 99), st.integers(-3, 70)),
    st.tuples(st.just("dim"), st.integers(0, 99), st.integers(-2, 40)),
    st.tuples(st.just("drop_node"), st.integers(0, 99), st.just(0)),
    st.tuples(st.just("rewire"), st.integers(0, 99), st.integers(0, 99)),
    st.tuples(st.just("op"), st.integers(0, 99), st.sampled_from(["Relu", "Add", "Conv", "Gemm", "MaxPool", "Foo",
                                                                     "Reshape", "Softmax", ""])),
    st.tuples(st.just("dtype"), st.integers(0, 99), st.sampled_from([2, 3, 6, 7, 10, 11, 16]))), min_size=1, max_size=3)


def mutate_onnx(data: bytes, edits) -> bytes:
    """Structured edits of an ONNX model: attributes, shapes, nodes, wiring, op types, dtypes."""
    import onnx
    m = onnx.load_from_string(data)
    g = m.graph
    for kind, i, arg in edits:
        nodes = list(g.node)
        if kind == "attr":
            attrs = [a for n in nodes for a in n.attribute if a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.INTS)]
            if attrs:
                a = attrs[i % len(attrs)]
                if a.type == onnx.AttributeProto.INT:
                    a.i = arg
                elif a.ints:
                    a.ints[i % len(a.ints)] = arg
        elif kind == "dim":
            dims = [d for vi in list(g.input) + list(g.output) for d in vi.type.tensor_type.shape.dim] \
                + [(t, k) for t in g.initializer for k in range(len(t.dims))]
            if dims:
                d = dims[i % len(dims)]
                if isinstance(d, tuple):
                    d[0].dims[d[1]] = max(arg, 0)
                else:
                    d.dim_value = max(arg, 0)
        elif kind == "drop_node" and nodes:
            g.node.remove(nodes[i % len(nodes)])
        elif kind == "rewire" and nodes:
            names = [x.name for x in g.input] + [o for n in nodes for o in n.output] + [t.name for t in g.initializer]
            n = nodes[i % len(nodes)]
            if n.input and names:
                n.input[arg % len(n.input)] = names[arg % len(names)]
        elif kind == "op" and nodes:
            nodes[i % len(nodes)].op_type = arg
        elif kind == "dtype" and g.initializer:
            g.initializer[i % len(g.initializer)].data_type = arg
    return m.SerializeToString()


@FUZZ
@given(edits=_ONNX_EDITS)
def test_a_mutated_onnx_model_plans_or_says_what_is_wrong(workdir, edits):
    data = _zoo_bytes(workdir, "simplecnn", 1, (1, 1, 28, 28), ".onnx")
    _plan_model_file(workdir, mutate_onnx(data, edits), ".onnx")


@settings(FUZZ, max_examples=20)
@given(edits=_BYTE_EDITS)
def test_onnx_bytes_damaged_plan_or_say_what_is_wrong(workdir, edits):
    data = _zoo_bytes(workdir, "simplecnn", 1, (1, 1, 28, 28), ".onnx")
    _plan_model_file(workdir, mutate_bytes(data, edits), ".onnx")


@settings(FUZZ, max_examples=25)
@given(edits=_BYTE_EDITS)
def test_a_mutated_tflite_model_plans_or_says_what_is_wrong(workdir, edits):
    data = _zoo_bytes(workdir, "tfl_autoencoder", 0, None, ".tflite")
    _plan_model_file(workdir, mutate_bytes(data, edits), ".tflite")
