"""Fidelity to the float model (issue 23, part 5): a float model quantized here reports, on
the run's input, its output's SQNR, largest error in LSB and top-1 agreement against the
float model, each layer's SQNR, and warns (without failing the build) when the input
saturates or the output drifts below 20 dB."""
from __future__ import annotations

import json

import numpy as np
import pytest

from nnscons.builders.reports.fidelity import EXACT_DB, sqnr_db

B = "build/host/simplecnn"


def test_sqnr_of_known_signals():
    ref = np.array([1.0, -2.0, 3.0, 0.5])
    assert sqnr_db(ref, ref) == EXACT_DB
    noise = np.array([0.01, -0.01, 0.01, -0.01])
    want = 10 * np.log10(np.sum(ref ** 2) / np.sum(noise ** 2))
    assert abs(sqnr_db(ref, ref + noise) - want) < 0.01
    assert sqnr_db(ref, ref * 0) < 1


def test_float_model_reports_its_fidelity_and_warns_when_the_input_saturates(prebuilt):
    project, proc = prebuilt("target=host", "model=simplecnn")
    assert "Test PASSED [host] simplecnn" in proc.stdout
    rep = json.loads(project.read(f"{B}/report.json"))
    fid = rep["fidelity"]
    assert fid["output_sqnr_db"] > 20 and fid["top1_agrees"] is True
    assert fid["calibration"].startswith("random calibration")
    assert all(layer["sqnr_db"] > 20 for layer in rep["layers"])
    assert "fidelity to the float model on this input: output SQNR" in proc.stdout
    assert "SQNR dB" in proc.stdout           # the table's column

    x = (np.random.default_rng(0).standard_normal((1, 1, 28, 28)) * 20).astype(np.float32)
    np.save(project.file("big.npy"), x)
    proc = project.scons("target=host", "model=simplecnn", "input=big.npy")
    assert "Test PASSED [host] simplecnn" in proc.stdout    # a warning, not a failure
    assert "warning: the output's SQNR" in proc.stdout
    assert "% of the input lies outside the input's quantization range" in proc.stdout
    fid = json.loads(project.read(f"{B}/report.json"))["fidelity"]
    assert fid["output_sqnr_db"] < 20 and fid["input_saturated"] > 0.5 and fid["output_max_err_lsb"] > 100


@pytest.mark.slow   # 18.4 s of CPU
def test_calibration_on_the_command_line_requantizes_everything_the_input_included(project):
    """calibration=FILE.npz (or a folder of .npy) replaces the manifest's calibration; the
    new scales reach the weights, the goldens and the quantized input (same float input, a
    new input scale: the input .bin is rewritten, the check still passes), and the
    fidelity of a wide input improves."""
    from conftest import steps
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((1, 1, 28, 28)) * 20).astype(np.float32)
    np.save(project.file("big.npy"), x)
    project.scons("target=host", "model=simplecnn", "input=big.npy")
    before = json.loads(project.read(f"{B}/report.json"))["fidelity"]["output_sqnr_db"]
    np.savez(project.file("cal.npz"), a=(rng.standard_normal((4, 1, 28, 28)) * 20).astype(np.float32))
    proc = project.scons("target=host", "model=simplecnn", "input=big.npy", "calibration=cal.npz")
    assert "Test PASSED [host] simplecnn" in proc.stdout, proc.stdout[-2000:]
    assert "INPUT simplecnn" in steps(proc.stdout)
    fid = json.loads(project.read(f"{B}/report.json"))["fidelity"]
    assert fid["calibration"] == "calibration files (1)" and fid["output_sqnr_db"] > before + 10
    proc = project.scons("target=host", "model=simplecnn", "calibration=nowhere", check=False)
    assert proc.returncode == 2 and "calibration=nowhere: no such file or folder" in proc.stderr


@pytest.mark.slow   # 21.5 s of CPU
def test_a_quantized_model_measures_its_fidelity_against_its_float_source(project):
    """`float_source:` names the float model a QDQ or QOperator model was made from: the
    same report, tensors matched by name (QDQ) and the output by position (QOperator)."""
    from test_asymmetric_weights import float_model, quantize
    f = float_model(project.file("f.onnx"))
    quantize(f, project.file("qdq.onnx"), "QDQ", "QInt8", True)
    quantize(f, project.file("qop.onnx"), "QOperator", "QUInt8", False)
    with open(project.file("targets.yaml"), "a") as fh:
        fh.write("  qdqf:\n    source: qdq.onnx\n    float_source: f.onnx\n"
                 "  qopf:\n    source: qop.onnx\n    float_source: f.onnx\n")
    proc = project.scons("target=host", "model=qdqf,qopf", "-j2")
    for m in ("qdqf", "qopf"):
        assert f"Test PASSED [host] {m}" in proc.stdout, proc.stdout[-2000:]
        rep = json.loads(project.read(f"build/host/{m}/report.json"))
        assert rep["fidelity"]["calibration"] == "the model's own quantization"
        assert rep["fidelity"]["output_sqnr_db"] > 20
    qdq_layers = json.loads(project.read("build/host/qdqf/report.json"))["layers"]
    assert sum("sqnr_db" in l for l in qdq_layers) >= 4           # matched by tensor name
    assert "fidelity to the float model on this input: output SQNR" in proc.stdout
    with open(project.file("targets.yaml"), "a") as fh:
        fh.write("  badf:\n    source: qdq.onnx\n    float_source: qdq.onnx.missing\n")
    bad = project.scons("target=host", "model=badf", check=False)
    assert bad.returncode != 0 and "float model not found: qdq.onnx.missing" in bad.stdout + bad.stderr
