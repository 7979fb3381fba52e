"""Memory sizes as written in targets.yaml.

Accepted: a non-negative integer (bytes), or a string "<number><unit>" with optional
spaces, e.g. "512B", "64KiB", "1.5MiB", "128 KiB", "2GiB". Binary units (KiB, MiB,
GiB) are 1024-based, as firmware memory maps are; decimal units (KB/kB, MB, GB) are
1000-based, as their SI spelling says. A bare number string ("65536") is bytes.
Units are case-sensitive so that "Kb" (kilobits) is not silently read as kilobytes.
"""
from __future__ import annotations

import re
from fractions import Fraction

UNITS = {
    "B": 1,
    "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3,
    "KB": 1000, "kB": 1000, "MB": 1000 ** 2, "GB": 1000 ** 3,
}

ACCEPTED = ("an integer number of bytes, or a string like '512B', '64KiB', '1.5MiB', "
            "'2GiB', '128 KiB' (KiB/MiB/GiB = 1024-based, KB/MB/GB = 1000-based)")

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_size(value) -> int:
    """Return `value` in bytes; ValueError (listing the accepted forms) otherwise."""
    # bool is an int subclass: `l1: yes` must not become 1 byte.
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"invalid size {value!r}; expected {ACCEPTED}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"invalid size {value}: negative; expected {ACCEPTED}")
        return value
    if value.strip().startswith("-"):
        raise ValueError(f"invalid size {value!r}: negative; expected {ACCEPTED}")
    m = _SIZE_RE.match(value)
    if not m:
        raise ValueError(f"invalid size {value!r}; expected {ACCEPTED}")
    number, unit = m.groups()
    if unit and unit not in UNITS:
        raise ValueError(f"invalid size {value!r}: unknown unit {unit!r}; expected {ACCEPTED}")
    # Fraction, not float: "1.1MiB" must be judged exactly, not after rounding.
    nbytes = Fraction(number) * UNITS[unit or "B"]
    if nbytes.denominator != 1:
        raise ValueError(f"invalid size {value!r}: {float(nbytes):g} is not a whole number "
                         f"of bytes; expected {ACCEPTED}")
    return int(nbytes)
