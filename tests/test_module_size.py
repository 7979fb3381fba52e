"""Small modules, one job each: no Python file of site_scons/nnscons over 500 lines (issue 27)."""
from __future__ import annotations

import os

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "site_scons", "nnscons")
LIMIT = 500


def test_no_module_over_the_limit():
    big = []
    for folder, _, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                with open(path, encoding="utf-8") as src:
                    n = sum(1 for _ in src)
                if n > LIMIT:
                    big.append(f"{os.path.relpath(path, PKG)}: {n} lines")
    assert not big, f"split by what they do (over {LIMIT} lines): " + "; ".join(sorted(big))
