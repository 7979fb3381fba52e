import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in (os.path.join(REPO, "site_scons"), REPO):
    if p not in sys.path:
        sys.path.insert(0, p)

import pytest  # noqa: E402

from nnscons.names import c_names  # noqa: E402

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,47}$")

HOSTILE = ["../../etc/passwd", "a b", "conv/1", "conv\\1", "int", "_Bool", "while", "class", "é",
           "日本語", "", "..", ".", "conv", "conv", "Conv", "CONV", "conv_2", "x" * 200, "x" * 199 + "y",
           "__init", "_Reserved", "nn_run", "net_input", "NN_x", "1conv", "con", "LPT1", "a__b",
           "/abs/path", "layer1.0.conv1", "l_", "main", "\x00", "a\nb"]


def check_safe(mapping):
    values = list(mapping.values())
    for v in values:
        assert IDENT.match(v), v
        assert not ({"/", "\\", "."} & set(v)) and v != ".."
        assert "__" not in v and not re.match(r"_[A-Z]", v)
        assert not v.lower().startswith(("nn_", "net_"))
    assert len({v.lower() for v in values}) == len(values), "not unique case-insensitively"


def test_hostile_names_are_safe_and_unique():
    result = c_names(HOSTILE)
    assert set(result) == set(HOSTILE)
    check_safe(result)


@pytest.mark.parametrize("name,expected", [
    ("../../etc/passwd", "etc_passwd"), ("a b", "a_b"), ("conv/1", "conv_1"), ("int", "l_int"),
    ("while", "l_while"), ("é", "e"), ("", "l_"), ("1conv", "l_1conv"), ("nn_run", "l_nn_run"),
    ("_Bool", "Bool"), ("__x__", "x"), ("layer1.0.conv1", "layer1_0_conv1"), ("con", "l_con"),
    ("a---b", "a_b"),
])
def test_single(name, expected):
    assert c_names([name]) == {name: expected}


def test_dedupe_in_order_case_insensitive_and_avoiding_later_names():
    assert c_names(["conv", "Conv", "conv.", "conv_2"]) == {
        "conv": "conv", "Conv": "Conv_3", "conv.": "conv_4", "conv_2": "conv_2"}


def test_repeated_input_maps_once():
    assert c_names(["a", "a", "b"]) == {"a": "a", "b": "b"}


def test_long_names_truncated_and_unique():
    a, b = "x" * 200, "x" * 199 + "y"
    result = c_names([a, b])
    assert all(len(v) <= 48 for v in result.values())
    assert result[a] != result[b]
    # Truncation depends on the name alone, not on its neighbours.
    assert c_names([b])[b] == result[b]


def test_dot_names_are_hashed_not_counted():
    # Stable under insertion of other names, so files are not renamed needlessly.
    assert c_names(["..", "日本"])[".."] == c_names(["日本", ".."])[".."]
    check_safe(c_names(["..", "."]))


def test_deterministic():
    assert c_names(HOSTILE) == c_names(list(HOSTILE))
