"""A 32-bit rule for an int8 add, found at build time and proved exact over all its inputs.

The add's rule (reference/eltwise.py: add) is
    out = clamp(zo + round_even(((a - za) m0 + (b - zb) m1) / 2^s), lo, hi)
whose sum needs up to 40 bits, so nn_xp_add_s8 splits it into 32-bit words (about 37 cycles
an element on a cluster core).  An add has only 256 x 256 input pairs, so a shorter rule
    out = clamp((a m0' + b m1' + c) >> s', lo, hi)      (one mul, one mac, a shift, a clamp)
is exact for a layer when it gives the reference's output on every pair, which is cheap to
check here.  m0', m1' are m0, m1 scaled to s' (and their neighbours); for each the constants
c that put every pair in its output's interval form one interval, computed exactly below:
the zero points, the output zero point and the rounding all fold into c.  The rule is kept
only if every a m0' + b m1' + c fits int32.  None: no such rule, the kernel keeps its exact
64-bit arithmetic.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...reference import eltwise

_I32 = 1 << 31


def _pairs():
    v = np.arange(-128, 128, dtype=np.int64)
    return np.repeat(v, 256), np.tile(v, 256)


def reference(m0, m1, s, za, zb, zo, lo, hi):
    """The add's output for every (a, b) pair (a major), by the reference's own rule."""
    a, b = _pairs()
    return eltwise.add_rule(a, b, za, zb, zo, m0, m1, s, lo, hi)


@lru_cache(maxsize=256)         # a layer's spec may be asked for more than once in a build
def short_rule(m0, m1, s, za, zb, zo, lo, hi):
    """(m0', m1', c, s') such that clamp((a m0' + b m1' + c) >> s', lo, hi) is the add's output
    for every int8 pair, every intermediate in int32; None if none is found."""
    m0, m1, s = int(m0), int(m1), int(s)
    if s < 1 or s > 62 or lo > hi:
        return None
    want = reference(m0, m1, s, za, zb, zo, lo, hi)
    a, b = _pairs()
    # the widest s' whose products fit int32 first: precision falls with s', so a few below it
    top = max((s2 for s2 in range(1, min(s, 30) + 1)
              if 128 * (abs(_scaled(m0, s, s2)) + abs(_scaled(m1, s, s2)) + 2) < _I32), default=0)
    for s2 in range(top, max(top - 4, 0), -1):
        for d0 in (0, -1, 1):
            for d1 in (0, -1, 1):
                n0 = _scaled(m0, s, s2) + d0
                n1 = _scaled(m1, s, s2) + d1
                if not _may_fit(n0, n1, s2, za, zb, zo):
                    continue
                c = _constant(a * n0 + b * n1, want, s2, lo, hi)
                if c is not None:
                    return n0, n1, c, s2
    return None


def _may_fit(n0, n1, s2, za, zb, zo):
    """A quick screen (it only skips, _constant decides): with the c the rule needs, about
    zo 2^s2 - za n0 - zb n1, do the sums stay within int32 give or take 2^(s2+1)?"""
    c = (zo << s2) - za * n0 - zb * n1
    lo = c + min(-128 * n0, 127 * n0) + min(-128 * n1, 127 * n1)
    hi = c + max(-128 * n0, 127 * n0) + max(-128 * n1, 127 * n1)
    return lo > -_I32 - (2 << s2) and hi < _I32 + (2 << s2)


def _scaled(m, s, s2):
    """m 2^(s2 - s) rounded to nearest."""
    return (m + (1 << (s - s2 - 1))) >> (s - s2) if s > s2 else m << (s2 - s)


def _constant(p, want, s2, lo, hi):
    """A c with clamp((p + c) >> s2) == want on every pair and p + c in int32, or None:
    want t strictly inside (lo, hi) needs t 2^s2 <= p + c < (t + 1) 2^s2; t = lo needs only
    the upper bound, t = hi only the lower."""
    one = np.int64(1) << s2
    low = np.where(want > lo, want * one - p, np.iinfo(np.int64).min)
    high = np.where(want < hi, (want + 1) * one - 1 - p, np.iinfo(np.int64).max)
    c_lo, c_hi = int(low.max()), int(high.min())
    if lo == hi:
        c_lo, c_hi = -_I32, _I32 - 1
    # inside the interval, the c that keeps p + c nearest zero (the int32 bound)
    c_lo, c_hi = max(c_lo, 1 - _I32 - int(p.min())), min(c_hi, _I32 - 1 - int(p.max()))
    if c_lo > c_hi:
        return None
    c = min(max(-(int(p.max()) + int(p.min())) // 2, c_lo), c_hi)
    return c if -_I32 < c < _I32 else None


def layer_rule(add_params, za, zb, zo, lo, hi):
    """short_rule for an add's requant_params (None for TFLite's three-multiplier rule)."""
    mult, shift = add_params["mult"], add_params["shift"]
    if len(mult) != 2 or int(shift[0]) < 0:
        return None
    r = short_rule(int(mult[0]), int(mult[1]), int(shift[0]), za, zb, zo, lo, hi)
    return None if r is None else {"m0": r[0], "m1": r[1], "c": r[2], "s": r[3]}
