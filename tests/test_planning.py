"""Planning pieces: buffer plan, row-band tiling, requantization check at import."""
from __future__ import annotations

import numpy as np
import pytest

from nnscons import ir
from nnscons.errors import ModelError
from nnscons.planning import model_cache
from nnscons.planning.buffers import plan_buffers
from nnscons.planning.tiling import row_bands


def chain(out_scale=0.1):
    q = ir.QParams
    t = {"x": ir.Tensor("x", (1, 4, 8, 8), q(0.1, 0)), "a": ir.Tensor("a", (1, 4, 8, 8), q(0.1, 0)),
         "b": ir.Tensor("b", (1, 4, 8, 8), q(0.1, 0)), "y": ir.Tensor("y", (1, 4, 8, 8), q(out_scale, 0))}
    layers = [ir.Layer("r1", "requant", ["x"], "a"), ir.Layer("r2", "requant", ["a"], "b"),
              ir.Layer("add", "add", ["a", "b"], "y")]
    return ir.Graph("g", "x", "y", t, layers)


def test_buffers_never_overlap_while_live():
    plan = plan_buffers(chain())["tensors"]
    spans = {n: (p["offset"], p["offset"] + p["size"]) for n, p in plan.items()}
    live_together = [("x", "a"), ("a", "b"), ("a", "y"), ("b", "y")]
    for u, v in live_together:
        (a0, a1), (b0, b1) = spans[u], spans[v]
        assert a1 <= b0 or b1 <= a0, (u, v, spans)


def test_row_bands_fit_budget_and_cover_rows():
    t = row_bands(16, 56, 56, 32, 56, 56, 3, 1, 1, 32 * 1024)
    assert t["l1_bytes"] <= 32 * 1024 and t["tile_oh"] * t["n_tiles"] >= 56
    assert row_bands(16, 56, 56, 32, 56, 56, 3, 1, 1, 100) is None


def test_unrepresentable_scale_is_a_model_error_naming_the_layer():
    with pytest.raises(ModelError, match="layer 'add'"):
        model_cache._check_requantization(chain(out_scale=1e-12), "m.onnx")
    model_cache._check_requantization(chain(), "m.onnx")
