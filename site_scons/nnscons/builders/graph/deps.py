"""Dependency helpers for declaring nodes: the generator's own Python files a node depends on,
and a Value node of a JSON-able key.  Below nodes.py and export.py, which both use them."""
from __future__ import annotations

import glob
import json
import os

_PKG = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # site_scons/nnscons


def py_sources(*patterns):
    """The generator's own Python files (relative to site_scons/nnscons), as dependencies.
    A pattern that matches no file is a stale path (a module moved): an error here, not a
    dependency silently lost."""
    found = []
    for p in patterns:
        files = glob.glob(os.path.join(_PKG, p))
        if not files:
            raise FileNotFoundError(f"py_sources: no file of site_scons/nnscons matches {p!r}")
        found += files
    return sorted(found)


def value(env, obj):
    return env.Value(json.dumps(obj, sort_keys=True, separators=(",", ":")))
