"""nnscons inside a firmware repo: pip install into a fresh virtual environment, then the
examples built from copies outside the project tree, with the installed package only.
Their outputs equal the harness's output.npy for the same model and input, bit for bit."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig

import numpy as np
import pytest

from conftest import ROOT, steps

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("pip")]

_COPY_SKIP = shutil.ignore_patterns(".git", ".venv", "build", "__pycache__", "*.pyc", "*.egg-info",
                                    ".pytest_cache")


def _run(cmd, cwd, env=None, timeout=900):
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-5000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with `pip install <copy of this repo>`: (venv bin dir, repo copy).
    The heavy dependencies (numpy, onnx, onnxruntime, matplotlib, ...: 200 MB of wheels to
    unpack) come from this test run's own environment through a .pth file, so the test
    installs nnscons itself, with its console script, and scons (whose `scons` script the
    examples call); `pip check` then proves that every pinned requirement of the installed
    package is met by what the venv sees."""
    base = tmp_path_factory.mktemp("pip")
    repo = base / "nnscons-src"
    shutil.copytree(ROOT, repo, ignore=_COPY_SKIP)
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], base)
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "nnscons_test_deps.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    scons_pin = next(line.strip() for line in open(os.path.join(ROOT, "requirements.txt")) if line.startswith("scons=="))
    pip = [str(venv / "bin" / "pip"), "--disable-pip-version-check"]
    _run(pip + ["install", "--quiet", "--no-deps", "--ignore-installed", str(repo), scons_pin], base)
    _run(pip + ["check"], base)
    return venv / "bin", repo


def test_pip_install_writes_nothing_into_the_checkout(installed):
    """setuptools' build/lib, build/bdist.* and .egg-info go to a temporary folder: the
    checkout's build/ is nnscons's own, and nothing else is written there."""
    _, repo = installed
    written = [os.path.relpath(os.path.join(d, f), repo) for d, dirs, files in os.walk(repo)
               for f in files + dirs if f == "build" or f.endswith(".egg-info")]
    assert written == [], written


def _clean_env():
    """No PYTHONPATH to our checkout: the installed package only."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _harness_output(bindir, where, x):
    """output.npy of the installed `nnscons` command for model simplecnn on input x."""
    np.save(where / "x.npy", x)
    shutil.copy(os.path.join(ROOT, "targets.yaml"), where / "targets.yaml")
    out = _run([str(bindir / "nnscons"), "model=simplecnn", "input=x.npy"], where, _clean_env())
    assert "Test PASSED [host] simplecnn" in out
    return np.load(where / "build" / "host" / "simplecnn" / "output.npy")


def test_scons_firmware_example(installed, tmp_path):
    bindir, repo = installed
    fw = tmp_path / "firmware"
    shutil.copytree(repo / "examples" / "scons-firmware", fw)
    env = _clean_env()
    out = _run([str(bindir / "scons"), "-Q", "app"], fw, env)
    assert (fw / "app").exists() and (fw / "nn" / "lib" / "libnns_net.a").exists()
    assert not (fw / "nn" / "run.log").exists()          # `scons app`: the library only

    x = np.random.default_rng(4).standard_normal((1, 1, 28, 28)).astype(np.float32)
    x.tofile(fw / "x.f32")
    _run([str(fw / "app"), "x.f32", "y.f32"], fw)
    ours = np.fromfile(fw / "y.f32", dtype=np.float32)
    harness = _harness_output(bindir, tmp_path, x).reshape(-1)
    np.testing.assert_array_equal(ours, harness)

    # the whole build includes nnscons's own harness run and its per-layer check
    out = _run([str(bindir / "scons"), "-Q", "."], fw, env)
    assert "Test PASSED [host] net" in out

    # one layer's budget in the firmware's manifest: that layer, the library, the program
    text = (fw / "nn.yaml").read_text()
    (fw / "nn.yaml").write_text(text.replace("conv1: {l1_budget: 8KiB}", "conv1: {l1_budget: 3KiB}"))
    out = _run([str(bindir / "scons"), "-Q", "app"], fw, env)
    assert steps(out) == ["CODEGEN conv1", "CC conv1", "AR libnns_net.a"], out
    assert "-o app" in out
    _run([str(fw / "app"), "x.f32", "y2.f32"], fw)
    np.testing.assert_array_equal(np.fromfile(fw / "y2.f32", dtype=np.float32), harness)
    assert _run([str(bindir / "scons"), "-Q", "app"], fw, env).count("\n") <= 1     # nothing to do
    _run([str(bindir / "scons"), "-Q", "export"], fw, env)          # the standalone export
    _run(["make", "-s"], fw / "nn" / "export")
    assert (fw / "nn" / "export" / "lib" / "libnns_net.a").is_file()


def test_two_networks_side_by_side_and_clear_errors(installed, tmp_path):
    bindir, repo = installed
    fw = tmp_path / "fw2"
    shutil.copytree(repo / "examples" / "scons-firmware", fw)
    (fw / "SConstruct").write_text(
        "import nnscons\n"
        "env = Environment(tools=['default', nnscons.tool])\n"
        "a, ha = env.NnsNetwork('nn_a', manifest='nn.yaml', model='net', target='host')\n"
        "b, hb = env.NnsNetwork('nn_b', manifest='nn.yaml', model='net', target='host-small')\n"
        "Default(a, b)\n")
    (fw / "nn.yaml").write_text((fw / "nn.yaml").read_text().replace(
        "targets:\n  host:\n    kind: host\n",
        "targets:\n  host:\n    kind: host\n  host-small:\n    kind: host\n    tiling: {l1_budget: 4KiB}\n", 1))
    _run([str(bindir / "scons"), "-Q"], fw, _clean_env())
    assert (fw / "nn_a" / "lib" / "libnns_net.a").exists() and (fw / "nn_b" / "lib" / "libnns_net.a").exists()

    (fw / "SConstruct").write_text("import nnscons\nenv = Environment(tools=['default', nnscons.tool])\n"
                                   "env.NnsNetwork('nn', manifest='nn.yaml', model='nett', target='host')\n")
    proc = subprocess.run([str(bindir / "scons"), "-Q"], cwd=fw, env=_clean_env(), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.returncode != 0 and "Traceback" not in proc.stdout
    assert "model=nett: unknown model" in proc.stdout and "net" in proc.stdout


@pytest.mark.skipif(not shutil.which("cmake"), reason="cmake not installed (apt-get install cmake)")
def test_cmake_app_links_the_library(installed, tmp_path):
    bindir, repo = installed
    x = np.random.default_rng(9).standard_normal((1, 1, 28, 28)).astype(np.float32)
    harness = _harness_output(bindir, tmp_path, x).reshape(-1)     # also builds the library
    nns_build = tmp_path / "build" / "host" / "simplecnn"
    app = tmp_path / "cmake-app"
    shutil.copytree(repo / "examples" / "cmake-app", app)
    _run(["cmake", "-S", ".", "-B", "out", f"-DNNS_BUILD={nns_build}"], app)
    _run(["cmake", "--build", "out"], app)
    x.tofile(app / "x.f32")
    _run([str(app / "out" / "app"), "x.f32", "y.f32"], app)
    np.testing.assert_array_equal(np.fromfile(app / "y.f32", dtype=np.float32), harness)


def test_library_alias_builds_only_the_library(project):
    proc = project.scons("model=simplecnn", "library")
    b = "build/host/simplecnn"
    for rel in ("lib/libnns_simplecnn.a", "include/nns_simplecnn.h", "lib/nns_simplecnn.cmake",
                "lib/nns_simplecnn.mk"):
        assert os.path.isfile(project.file(f"{b}/{rel}")), rel
    assert not os.path.exists(project.file(f"{b}/run.log")) and "RUN" not in proc.stdout
    header = project.read(f"{b}/include/nns_simplecnn.h")
    for name in ("nns_simplecnn_init(", "nns_simplecnn_run(", "nns_simplecnn_run_float(",
                 "nns_simplecnn_strerror(", "NNS_SIMPLECNN_ARENA_SIZE", "NNS_SIMPLECNN_ERR_ARENA_TOO_SMALL",
                 "NNS_SIMPLECNN_INPUT_INPUT_BYTES 784", "NNS_SIMPLECNN_OUTPUT_OUTPUT_ELEMENTS 10",
                 "NNS_SIMPLECNN_INPUT_INPUT_SCALE", "NNS_SIMPLECNN_OUTPUT_OUTPUT_ZERO_POINT",
                 '#define NNS_SIMPLECNN_INPUT_INPUT_LAYOUT "NHWC"', "NNS_SIMPLECNN_INPUT_INPUT_DIMS { 1, 28, 28, 1 }",
                 "NNS_SIMPLECNN_INPUT_INPUT_H 28", "NNS_SIMPLECNN_INPUT_INPUT_C 1",
                 "NNS_SIMPLECNN_INPUT_INPUT_FLOAT_DIMS { 1, 1, 28, 28 }", "nns_simplecnn_layer_callback"):
        assert name in header, name


def test_foreign_sconstruct_builds_a_tflite_model(installed, tmp_path):
    """NnsNetwork on a manifest model whose source is an int8 .tflite file: the installed
    package builds it, its check passes, output.npy is LiteRT's output bit for bit, and the
    application's run_float on NHWC float arrays gives the same values."""
    from litert_oracle import HAVE_LITERT, SKIP_REASON
    if not HAVE_LITERT:
        pytest.skip(SKIP_REASON)
    from tflite_cases import CASES
    from test_tflite import litert_output
    bindir, repo = installed
    fw = tmp_path / "fw-tflite"
    shutil.copytree(repo / "examples" / "scons-firmware", fw)
    b, _ = CASES["conv/same_stride2_relu"](np.random.default_rng(0))
    (fw / "net.tflite").write_bytes(b.finish())
    (fw / "nn.yaml").write_text("targets:\n  host:\n    kind: host\nmodels:\n  net:\n    source: net.tflite\n")
    out = _run([str(bindir / "scons"), "-Q", "."], fw, _clean_env())
    assert "Test PASSED [host] net" in out
    want = litert_output(str(fw / "net.tflite"))
    np.testing.assert_array_equal(np.load(fw / "nn" / "output.npy"), want)
    x = np.random.default_rng(0).standard_normal((1, 9, 9, 3)).astype(np.float32)   # NHWC
    x.tofile(fw / "x.f32")
    _run([str(fw / "app"), "x.f32", "y.f32"], fw)
    np.testing.assert_array_equal(np.fromfile(fw / "y.f32", dtype=np.float32), want.reshape(-1))
