"""Target plug-ins.

A target kind is a module (targets/<kind>/) exposing:
  SCHEMA     manifest keys it accepts: {section: {key: type}} plus "layer" for per-layer keys
  TOOL       the SCons Tool (site_scons/site_tools/<TOOL>.py) with toolchain detection and run step
  plan(graph, ctx) -> base.TargetPlan
Adding a target = a new package here + its Tool + templates/<kind>/ + an entry in KINDS.
"""
from __future__ import annotations

import importlib

KINDS = {
    "host": "nnscons.targets.host",
}


def kind_module(kind: str):
    return importlib.import_module(KINDS[kind])


def schemas() -> dict:
    return {kind: kind_module(kind).SCHEMA for kind in KINDS}
