"""ONNX's own conformance cases (onnx.backend.test.case.node) for every op type nnscons's
registry declares supported, through the frontend, the built-in PTQ and the integer
reference (tests/onnx_conformance.py adapts and runs them).

Every case must end one of three ways: it passes (float cases within the tolerance stated
in onnx_conformance.py, quantized cases code for code), nnscons refuses it with a
ModelError, or the adapter skips it with its reason (batch other than 1, an integer type
the IR has no tensor for, ...). A case nnscons accepts and computes wrongly, or any other
exception, fails. The op types come from the registry, so an op added there is picked up.

    .venv/bin/python -m pytest tests/test_onnx_conformance.py -n0 -q

The summary table (op type: passed / refused / skipped) is written to
build/onnx_conformance.json (NNSCONS_CONFORMANCE_JSON overrides the path).
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections import Counter
from pathlib import Path

_SITE = str(Path(__file__).resolve().parents[1] / "site_scons")
if _SITE not in sys.path:
    sys.path.insert(0, _SITE)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import pytest  # noqa: E402
from onnx import helper  # noqa: E402
from onnx.backend.test.case.test_case import TestCase  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import onnx_conformance as oc  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CASES = oc.cases()


def _op(case) -> str:
    return case.model.graph.node[0].op_type


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_passes_or_is_refused_or_skipped(tmp_path, case):
    v = oc.run(case, str(tmp_path))   # AssertionError: accepted but computed wrongly
    if v.outcome == "skipped":
        pytest.skip(v.detail)
    assert v.outcome in ("passed", "refused"), v


def test_summary_table(tmp_path):
    """Every case once more, into the op type: passed / refused / skipped table."""
    table, failed = {}, []
    for k, case in enumerate(CASES):
        folder = tmp_path / str(k)
        folder.mkdir()
        try:
            v = oc.run(case, str(folder))
        except Exception as e:   # noqa: BLE001 - AssertionError or a traceback: a failure
            v = oc.Verdict("failed", f"{type(e).__name__}: {e}")
            failed.append(case.name)
        row = table.setdefault(_op(case), {"passed": 0, "refused": 0, "skipped": 0,
                                           "failed": 0, "cases": {}})
        row[v.outcome] += 1
        row["cases"][case.name] = f"{v.outcome}: {v.detail}"
    totals = Counter()
    for row in table.values():
        totals.update({k: row[k] for k in ("passed", "refused", "skipped", "failed")})
    out = Path(os.environ.get("NNSCONS_CONFORMANCE_JSON",
                              ROOT / "build" / "onnx_conformance.json"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"onnx": onnx.__version__, "cases": len(CASES),
                               "totals": dict(totals), "ops": table}, indent=1, sort_keys=True))
    print(f"\nONNX conformance ({len(CASES)} cases, onnx {onnx.__version__}): "
          f"{dict(totals)} -> {out}")
    for op, row in sorted(table.items()):
        print(f"  {op:24s} passed {row['passed']:3d}  refused {row['refused']:3d}  "
              f"skipped {row['skipped']:3d}")
    assert not failed, {n: table[_op(c)]["cases"][n] for c in CASES for n in [c.name] if n in failed}
    assert totals["passed"] > 0


def test_cases_cover_the_registry():
    """The cases are chosen from the registry: a supported op type with backend cases has
    them collected (the QOperator converters of com.microsoft ops have none in onnx)."""
    ops = {_op(c) for c in CASES}
    assert ops <= oc.supported_op_types()
    assert {"Conv", "MaxPool", "Resize", "QLinearConv", "QuantizeLinear", "Add"} <= ops


# -- the adapter's paths that no batch-1 backend case reaches yet, on cases made like onnx's
# own (one node, inputs as graph inputs, expected output from onnx's reference evaluator)
def _case(name, node, inputs, opset=13):
    vis = [helper.make_tensor_value_info(t, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for t, a in zip(node.input, inputs)]
    graph = helper.make_graph([node], name, vis,
                              [helper.make_tensor_value_info(node.output[0], 0, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    (y,) = ReferenceEvaluator(model).run(None, dict(zip(node.input, inputs)))
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info(
        node.output[0], helper.np_dtype_to_tensor_dtype(y.dtype), y.shape))
    return TestCase(name, name, None, None, model, [(inputs, [y])], "node", 1e-3, 1e-7)


RNG = np.random.default_rng(0)
X = RNG.standard_normal((1, 3, 4, 4)).astype(np.float32)


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Sum"])
def test_two_activations_are_packed_into_the_one_input(tmp_path, op_type):
    """Add/Sub/Mul/Sum of two activations: both come from the one network input (a Slice
    and a Reshape each), so nnscons sees the two-activation op it supports."""
    b = RNG.standard_normal((1, 3, 4, 4)).astype(np.float32)
    case = _case(f"two_{op_type}", helper.make_node(op_type, ["a", "b"], ["y"]), [X, b])
    a = oc.adapt(case, str(tmp_path))
    assert isinstance(a, oc.Adapted) and a.x.shape == (1, 2 * X.size)
    v = oc.run(case, str(tmp_path))
    assert v.outcome == "passed", v


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_quantize_and_dequantize_linear_are_exact(tmp_path, dtype):
    zp = np.array(3, dtype)
    q = _case("q", helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"]),
              [X * 4, np.array(0.07, np.float32), zp], opset=19)
    (tmp_path / "q").mkdir()
    (tmp_path / "dq").mkdir()
    assert oc.run(q, str(tmp_path / "q")) == oc.Verdict("passed", "exact")
    codes = q.data_sets[0][1][0]
    dq = _case("dq", helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"]),
               [codes, np.array(0.07, np.float32), zp], opset=19)
    assert oc.run(dq, str(tmp_path / "dq")) == oc.Verdict("passed", "exact")


def test_int32_output_is_skipped_with_its_reason(tmp_path):
    w = RNG.integers(-5, 5, (2, 3, 1, 1)).astype(np.int8)
    case = _case("ci", helper.make_node("ConvInteger", ["x", "w"], ["y"]),
                 [RNG.integers(-5, 5, (1, 3, 4, 4)).astype(np.int8), w], opset=10)
    v = oc.run(case, str(tmp_path))
    assert v.outcome == "skipped" and "int32" in v.detail


def test_a_wrong_result_fails(tmp_path):
    """The check can fail: the first passing float case with its expected output moved by
    a few output steps is reported (the tolerance never reads the expected output)."""
    case = next(c for c in CASES if _op(c) == "Conv")
    (inputs, (y,)), = case.data_sets
    shifted = dataclasses.replace(case, data_sets=[(inputs, [y + 0.1 * np.ptp(y)])])
    (tmp_path / "ok").mkdir()
    (tmp_path / "bad").mkdir()
    assert oc.run(case, str(tmp_path / "ok")).outcome == "passed"
    with pytest.raises(AssertionError, match="beyond tolerance"):
        oc.run(shifted, str(tmp_path / "bad"))


@pytest.mark.parametrize("ratio,refused", [(0.75, True), (0.0, False)])
def test_training_mode_dropout_is_refused(tmp_path, ratio, refused):
    """A Dropout with training_mode true drops random elements (onnx's test_training_dropout
    cases, batch 3): nnscons used to read it as the identity and compute something else."""
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y"], seed=0)
    case = _case("td", node, [X, np.array(ratio, np.float32), np.array(True)])
    v = oc.run(case, str(tmp_path))
    assert v.outcome == ("refused" if refused else "passed"), v
    if refused:
        assert "training_mode is true" in v.detail


def test_split_into_equal_parts_by_its_outputs(tmp_path):
    """Opset 13 Split without sizes makes as many parts as the node has outputs (onnx's
    test_split_equal_parts_2d_opset13 on one row): each part used to be the whole tensor."""
    x = RNG.standard_normal((1, 6)).astype(np.float32)
    for k in range(3):
        outs = ["p0", "p1", "p2"]
        node = helper.make_node("Split", ["x"], outs[k:] + outs[:k], axis=1)
        case = _case(f"split{k}", node, [x])
        assert case.data_sets[0][1][0].shape == (1, 2)
        folder = tmp_path / str(k)
        folder.mkdir()
        assert oc.run(case, str(folder)).outcome == "passed"


def test_an_empty_slice_is_refused(tmp_path):
    """A Slice that selects nothing (onnx's test_slice_start_out_of_bounds on one row) used
    to reach the calibration and fail there with a numpy traceback."""
    consts = [np.array([1000], np.int64), np.array([1001], np.int64), np.array([1], np.int64)]
    case = _case("slice", helper.make_node("Slice", ["x", "s", "e", "a"], ["y"]),
                 [X] + consts)
    v = oc.run(case, str(tmp_path))
    assert v.outcome == "refused" and "is empty" in v.detail, v


@pytest.mark.parametrize("axes,starts,ends", [([2], [0], [1]), ([-1], [1], [3])])
def test_a_move_on_a_rank_3_tensor_is_refused(tmp_path, axes, starts, ends):
    """A 1-D network's (1, C, L) is (1, C, 1, L) inside nnscons, and a move's steps name the
    model's axes: a Slice over axis 2 (onnx's test_slice_default_axes on one row) sliced H
    and gave (1, C, 1, L) for (1, C, 1). Every move on a rank-3 tensor is refused until the
    axes are translated."""
    x = RNG.standard_normal((1, 4, 6)).astype(np.float32)
    consts = [np.array(v, np.int64) for v in (starts, ends, axes)]
    case = _case("s3", helper.make_node("Slice", ["x", "s", "e", "a"], ["y"]), [x] + consts)
    v = oc.run(case, str(tmp_path))
    assert v.outcome == "refused" and "rank-3 tensor" in v.detail, v
