"""User mistakes through the real command line: one clear message, exit status 2,
no traceback, nothing written outside build/."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import modelgen
from conftest import as_unprivileged_user


def fails(project, *args, expect):
    before = project.snapshot()
    proc = project.scons(*args, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out, out
    for text in expect:
        assert text in out, out
    assert project.snapshot() == before
    return out


def test_unknown_target_lists_known_ones(project):
    fails(project, "target=gap10", expect=["gap10", "host", "host-asan"])


def test_unknown_model_lists_known_ones(project):
    fails(project, "model=resnet19", expect=["resnet19", "resnet18", "simplecnn"])


def test_unknown_command_line_option(project):
    fails(project, "modle=simplecnn", expect=["modle", "target, model, input, platform, shard, cache, iterations, verbose"])


def test_malformed_yaml_names_file_and_line(project):
    text = project.read("targets.yaml").replace("    kind: host\n", "    kind: [host\n", 1)
    project.write("targets.yaml", text)
    fails(project, expect=["targets.yaml:", "YAML"])


def test_unknown_manifest_key_names_line_and_choices(project):
    text = project.read("targets.yaml").replace("conv1: {l1_budget: 8KiB}", "conv1: {l1_budgt: 8KiB}")
    project.write("targets.yaml", text)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "l1_budgt" in l)
    fails(project, expect=[f"targets.yaml:{line}", "l1_budgt", "l1_budget"])


def test_override_for_a_layer_the_model_does_not_have(project):
    text = project.read("targets.yaml").replace("conv1: {l1_budget: 8KiB}", "conv9: {l1_budget: 8KiB}")
    project.write("targets.yaml", text)
    fails(project, "model=simplecnn", expect=["targets.yaml:", "conv9", "conv1"])


def test_budget_too_small_for_one_row_names_layer_and_need(project):
    text = project.read("targets.yaml").replace("conv1: {l1_budget: 8KiB}", "conv1: {l1_budget: 100}")
    project.write("targets.yaml", text)
    fails(project, "model=simplecnn", expect=["targets.yaml:", "conv1", "needs at least", "l1_budget"])


def test_input_with_wrong_shape(project):
    np.save(project.file("x.npy"), np.zeros((1, 3, 28, 28), np.float32))
    fails(project, "model=simplecnn", "input=x.npy", expect=["x.npy", "(1, 3, 28, 28)", "(1, 1, 28, 28)"])


def test_missing_input_file(project):
    fails(project, "input=nope.npy", expect=["nope.npy"])


def test_missing_model_file(project):
    fails(project, "model=models/missing.onnx", expect=["missing.onnx"])


def test_truncated_onnx(project):
    fp = modelgen.float_cnn(project.file("m/t.onnx"))
    data = open(fp, "rb").read()
    project.write("m/t.onnx", data[: len(data) // 2])
    fails(project, "model=m/t.onnx", expect=["t.onnx"])


def test_unsupported_op_names_node_and_supported_ops(project):
    import onnx
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Hardmax", ["x"], ["y"], "the_hardmax")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10, 4, 4])])
    project.write("m/hardmax.onnx", helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
                  .SerializeToString())
    fails(project, "model=m/hardmax.onnx", expect=["the_hardmax", "Hardmax", "Conv"])


def test_help_lists_targets_models_and_options(project):
    proc = project.scons("-h")
    for text in ("target", "model", "input", "verbose", "host-asan", "resnet18", "simplecnn"):
        assert text in proc.stdout


# -- each of these once ended in a traceback, or was wrongly accepted or refused ------------

@pytest.mark.parametrize("seed", ["-1", "1.5", "1099511627776", "'7'"])
def test_bad_zoo_seed(project, seed):
    text = project.read("targets.yaml").replace("    zoo: simplecnn\n    seed: 1\n",
                                                f"    zoo: simplecnn\n    seed: {seed}\n")
    project.write("targets.yaml", text)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if l.strip() == f"seed: {seed}")
    fails(project, "model=simplecnn", expect=[f"targets.yaml:{line}", "seed", "0 to 4294967295"])


@pytest.mark.parametrize("timeout", ["0", "-5"])
def test_run_timeout_must_be_positive(project, timeout):
    text = project.read("targets.yaml").replace("      timeout: 600\n", f"      timeout: {timeout}\n", 1)
    project.write("targets.yaml", text)
    fails(project, expect=["targets.yaml:", "run.timeout", ">= 1", timeout])


def test_unknown_kind_reads_well(project):
    project.write("targets.yaml", project.read("targets.yaml").replace("    kind: host\n", "    kind: hots\n", 1))
    out = fails(project, expect=["unknown kind 'hots'", "host", "gap9"])
    assert "a string" not in out


def test_onnx_file_with_an_empty_name(prebuilt):
    import shutil
    project, _ = prebuilt("target=host", "model=simplecnn")
    shutil.copy(project.file("build/host/simplecnn/model.onnx"), project.file(".onnx"))
    fails(project, "model=.onnx", expect=["model=.onnx", "rename"])
    assert not [d for d in os.listdir(project.file("build/host")) if d.startswith("file-")]


def test_nan_in_the_input_is_named(project):
    x = np.zeros((1, 1, 28, 28), np.float32)
    x[0, 0, 3, 4] = np.nan
    np.save(project.file("x.npy"), x)
    fails(project, "model=simplecnn", "input=x.npy", expect=["x.npy", "1 value(s) are NaN or infinite"])


def test_unknown_file_kind_names_the_manifest_key(project):
    project.write("m/net.bin", b"\0" * 16)
    out = fails(project, "model=m/net.bin", expect=["net.bin", "format: onnx"])
    assert "fmt=" not in out


def test_failed_import_leaves_no_empty_build_folders(project):
    project.write("m/t.onnx", b"not an onnx file")
    fails(project, "model=m/t.onnx", expect=["t.onnx"])
    assert set(os.listdir(project.file("build/host"))) <= {".lock"}


def test_format_onnx_as_documented(prebuilt):
    import shutil
    project, _ = prebuilt("target=host", "model=simplecnn")
    project.write("m/net.onnx", project.read("build/host/simplecnn/model.onnx", "rb"))
    project.write("targets.yaml", project.read("targets.yaml") +
                  "\n  mynet:\n    source: m/net.onnx\n    format: onnx\n")
    assert "Test PASSED [host] mynet" in project.scons("model=mynet").stdout


def test_read_only_build_folder(prebuilt):
    import subprocess
    import sys
    from conftest import SCONS
    project, _ = prebuilt("target=host", "model=simplecnn")
    prefix = as_unprivileged_user(project)
    for dirpath, _, files in os.walk(project.file("build")):
        os.chmod(dirpath, 0o555)
    try:
        before = project.snapshot()
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", HOME="/tmp")
        proc = subprocess.run(prefix + [sys.executable, SCONS, "-Q", "model=simplecnn"], cwd=project.path,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 2, out
        assert "Traceback" not in out and "cannot write to build/host/" in out and "chmod" in out, out
        assert project.snapshot() == before
    finally:
        for dirpath, _, files in os.walk(project.file("build")):
            os.chmod(dirpath, 0o755)


def test_nul_bytes_in_the_manifest_name_the_line(project):
    project.write("targets.yaml", project.read("targets.yaml") + "models:\n  a\x00b: {}\n")
    fails(project, "model=simplecnn", expect=["targets.yaml:", "character #x0000 is not allowed",
                                              "Save it as UTF-8 text"])


def test_a_huge_input_shape_is_refused_before_anything_is_allocated(project):
    project.write("targets.yaml", project.read("targets.yaml").replace(
        "    input_shape: [1, 1, 28, 28]\n", "    input_shape: [1, 1, 100000, 100000]\n", 1))
    fails(project, "model=simplecnn", expect=["models.simplecnn.input_shape", "10,000,000,000 values per input",
                                              "give a smaller input_shape"])


def test_input_files_of_the_wrong_kind_say_what_to_give(project):
    np.savez(project.file("two.npz"), a=np.zeros((1, 1, 28, 28), np.float32), b=np.zeros(3))
    project.write("text.npy", "hello")
    os.makedirs(project.file("folder"))
    fails(project, "model=simplecnn", "input=two.npz", expect=["an .npz holding ['a', 'b']", "one named 'input'"])
    fails(project, "model=simplecnn", "input=text.npy", expect=["not a .npy (or .npz) array file", "numpy.save"])
    fails(project, "model=simplecnn", "input=folder", expect=["input=folder: is a folder"])
    # an .npz holding the one input is taken
    np.savez(project.file("one.npz"), input=np.zeros((1, 1, 28, 28), np.float32))
    assert "Test PASSED" in project.scons("model=simplecnn", "input=one.npz").stdout


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_inf_in_a_float_models_weights_is_named(project, bad):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    w[0, 0, 0, 0] = bad
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, project.file("damaged.onnx"))
    fails(project, "model=damaged.onnx", expect=["weights 'w' (used by 'conv') hold 1 NaN or infinite value(s)",
                                                  "re-export the model"])


@pytest.mark.parametrize("old,new,expect", [
    ("cluster: {cores: auto, stack_size: 2KiB, slave_stack_size: 1KiB}",
     "cluster: {cores: 9, stack_size: 2KiB, slave_stack_size: 1KiB}", "cores = 9: the cluster runs the kernels on 1 to 8"),
    ("cluster: {cores: auto, stack_size: 2KiB, slave_stack_size: 1KiB}",
     "cluster: {cores: auto, stack_size: 2KiB, slave_stack_size: 1}", "slave_stack_size = 1 B is below the 512 B"),
    ("dma: {max_inflight: 8, max_transfer: 64KiB}", "dma: {max_inflight: 8, max_transfer: 0}",
     "max_transfer = 0 B: must be a positive multiple of 4 bytes"),
    ("l1_reserved: 16KiB ", "l1_reserved: 200KiB ", "l1_reserved = 204800 B leaves nothing of memory.l1 = 131072 B"),
    ("l2_reserved: 64KiB ", "l2_reserved: 2MiB ", "l2_reserved = 2097152 B leaves nothing of memory.l2"),
])
def test_gap9_limits_are_checked_before_anything_is_generated(project, old, new, expect):
    text = project.read("targets.yaml")
    assert old in text
    project.write("targets.yaml", text.replace(old, new, 1))
    fails(project, "target=gap9", "model=simplecnn", "platform=emul", expect=["targets.yaml:", expect])


def test_a_host_memory_beyond_the_address_space_is_refused(project):
    project.write("targets.yaml", project.read("targets.yaml").replace(
        "      l1: 128KiB          # scratchpad", "      l1: 1000000000000000000000 # scratchpad", 1))
    fails(project, "model=simplecnn", expect=["targets.host.memory.l1", "more than a process can address"])


def test_a_mistyped_alias_gets_the_closest_ones(project):
    fails(project, "model=simplecnn", "lib", expect=["'lib' is not something this build makes: did you mean library?",
                                                     "export"])


def test_a_source_folder_that_is_not_an_ares_export_says_so(project):
    """An empty folder given as source: is not blamed on calibration of ARES exports."""
    os.makedirs(project.file("models/empty"))
    project.write("targets.yaml", project.read("targets.yaml") + "  empty:\n    source: models/empty\n")
    out = fails(project, "model=empty", expect=["models.empty.source", "is an empty folder, not an ARES export",
                                                "point source: at a .onnx or .tflite model file"])
    assert "calibration" not in out
    out = fails(project, "model=empty", "calibration=models", expect=["is an empty folder, not an ARES export"])
    assert "already quantized" not in out


def _bootstrap_venv(project):
    """A .venv for ./nnscons made of links to this interpreter and its scons, with the stamp of
    requirements.txt: the bootstrap neither rebuilds it nor touches the real one."""
    import hashlib
    import sys
    bindir = project.file(".venv/bin")
    os.makedirs(bindir)
    for name, real in (("python", sys.executable), ("scons", os.path.join(os.path.dirname(sys.executable), "scons"))):
        os.symlink(real, os.path.join(bindir, name))
    digest = hashlib.sha256(open(project.file("requirements.txt"), "rb").read()).hexdigest()
    project.write(".venv/.requirements.sha256", digest + "\n")


def test_nnscons_from_a_subfolder_builds_the_project(project):
    """./nnscons typed in a subfolder works as from the root (SCons's -u), relative paths
    from that subfolder, not `No SConstruct file found` with an internal frame line."""
    import subprocess
    _bootstrap_venv(project)
    sub = project.file("models")
    np.save(os.path.join(sub, "x.npy"), np.random.default_rng(3).standard_normal((1, 1, 28, 28)).astype(np.float32))
    proc = subprocess.run([os.path.join("..", "nnscons"), "model=simplecnn", "input=x.npy"], cwd=sub,
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"), capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Test PASSED [host] simplecnn" in proc.stdout and "Traceback" not in proc.stderr
    assert os.path.isfile(project.file("build/host/simplecnn/report.json"))
    assert not os.path.exists(os.path.join(sub, "build"))
    # x.npy is only in the subfolder: from the root, input=x.npy would be `no such file`
    assert not os.path.exists(project.file("x.npy"))
