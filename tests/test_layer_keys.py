"""The plan base's one override-and-check path for per-layer keys (targets/base.layer_key)
and the one model -> C name function (names.c_model_name), as the host, gap9 and k210 use them."""
from __future__ import annotations

import types

import pytest

from nnscons import names
from nnscons.errors import UserError
from nnscons.targets import base, library
from nnscons.targets.gap9 import _budget as gap9_budget
from nnscons.targets.k210.board import project_name


def where(layer, *keys):
    """The manifest locations as the session gives them (a fake line number)."""
    return (f"targets.yaml:7: models.m.targets.t.layers.{layer}." if layer else "targets.yaml:3: targets.t.") \
        + ".".join(keys)


OPTS = {"tiling": {"l1_budget": 4096}, "kernel": {"mr": 4},
        "memory": {"l1": 8192, "l1_reserved": 1024}}


def test_a_layer_override_wins_and_says_where():
    overrides = {"conv1": {"l1_budget": 2048}}
    assert base.layer_key("conv1", "l1_budget", OPTS, overrides, where, "tiling") == \
        (2048, "targets.yaml:7: models.m.targets.t.layers.conv1.l1_budget")
    assert base.layer_key("conv2", "l1_budget", OPTS, overrides, where, "tiling") == \
        (4096, "targets.yaml:3: targets.t.tiling.l1_budget")


def test_a_value_over_the_limit_names_where_it_was_set():
    with pytest.raises(UserError) as e:
        base.layer_key("conv1", "l1_budget", OPTS, {"conv1": {"l1_budget": 9000}}, where, "tiling",
                       8192, "the target's L1 size memory.l1 = 8192 B")
    assert str(e.value) == ("targets.yaml:7: models.m.targets.t.layers.conv1.l1_budget: l1_budget 9000 B "
                            "exceeds the target's L1 size memory.l1 = 8192 B")


def test_gap9_checks_against_its_usable_l1():
    layer = types.SimpleNamespace(name="conv1")
    assert gap9_budget(layer, OPTS, {}, where) == (4096, "targets.yaml:3: targets.t.tiling.l1_budget")
    with pytest.raises(UserError, match=r"layers\.conv1\.l1_budget: l1_budget 7200 B exceeds GAP9's usable L1: "
                                        r"memory.l1 - memory.l1_reserved = 7168 B"):
        gap9_budget(layer, OPTS, {"conv1": {"l1_budget": 7200}}, where)


def test_key_locations_follow_the_override():
    at = base.layer_key_at("conv1", {"conv1": {"nr": 8}}, where, "kernel")
    assert at("nr") == "targets.yaml:7: models.m.targets.t.layers.conv1.nr"
    assert at("mr") == "targets.yaml:3: targets.t.kernel.mr"


@pytest.mark.parametrize("model, cname", [("resnet18", "resnet18"), ("My-Model.v2", "my_model_v2"),
                                          ("main", "l_main"), ("日本", None)])
def test_one_model_c_name_for_the_api_the_library_and_the_k210_project(model, cname):
    got = names.c_model_name(model)
    assert got.isidentifier() and (cname is None or got == cname)
    assert library.c_model_name is names.c_model_name
    session = types.SimpleNamespace(model_cfg=types.SimpleNamespace(name=model))
    assert project_name(session) == "nns_" + got
