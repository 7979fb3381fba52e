"""The 32-bit add rule (targets/gap9/add_short.py) is kept only where it is exact: here every
rule it returns is checked against the reference add (reference/eltwise.py's formula) on all
256 x 256 int8 pairs, over ResNet-like and extreme parameters, and it must find one for the
usual residual adds (the speed-up exists)."""
import numpy as np

from nnscons import numerics
from nnscons.targets.gap9.add_short import short_rule


def _all_pairs():
    v = np.arange(-128, 128, dtype=np.int64)
    return np.repeat(v, 256), np.tile(v, 256)


def _ref(m0, m1, s, za, zb, zo, lo, hi):
    a, b = _all_pairs()
    acc = (a - za) * m0 + (b - zb) * m1
    return np.clip(numerics.rshift_round(acc, s) + zo, lo, hi)


def _short(r, lo, hi):
    m0, m1, c, s = r
    a, b = _all_pairs()
    v = a * m0 + b * m1 + c
    assert v.min() >= -(1 << 31) and v.max() < (1 << 31)      # all of it in int32
    assert -(1 << 31) < c < (1 << 31) and abs(m0) < (1 << 31) and abs(m1) < (1 << 31)
    return np.clip(v >> s, lo, hi)


def _cases():
    rng = np.random.default_rng(2026)
    for i in range(120):
        s = int(rng.integers(29, 33)) if i % 3 else int(rng.integers(9, 45))
        m = rng.integers(1 << 28, 1 << 31, 2) if i % 5 else rng.integers(0, 1 << 31, 2)
        if i % 17 == 0:
            m[:] = (1 << 31) - 1
        za, zb, zo = (int(z) for z in rng.integers(-128, 128, 3))
        lo, hi = ((-128, 127), (zo, 127), (max(zo, -128), min(zo + 60, 127)))[i % 3]
        yield int(m[0]), int(m[1]), s, za, zb, zo, lo, hi
    # equal scales: every other sum a tie (ties to even must survive)
    yield 1 << 30, 1 << 30, 31, 0, 0, 0, -128, 127
    yield 1 << 30, 1 << 30, 31, 3, -5, 7, 7, 127


def test_every_short_rule_is_exact_on_all_pairs():
    found = 0
    for p in _cases():
        r = short_rule(*p)
        if r is not None:
            found += 1
            np.testing.assert_array_equal(_short(r, p[6], p[7]), _ref(*p), err_msg=str(p))
    assert found >= 80            # most residual-add parameters take the short rule


def test_no_rule_when_shift_out_of_range():
    assert short_rule(1 << 30, 1 << 30, 0, 0, 0, 0, -128, 127) is None
