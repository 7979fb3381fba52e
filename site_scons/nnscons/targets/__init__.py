"""Target plug-ins, discovered by folder: every package targets/<kind>/ is a target kind.

A kind's package exposes:
  SCHEMA     manifest keys it accepts: {section: {key: type}} plus "layer" for per-layer keys;
             SCHEMA["run"]["platform"] lists the platforms (platform= on the command line)
  tool       its SCons Tool module (tool.py: generate/exists): builders and the run step
  options(target_cfg) -> dict            the target's sections with defaults filled in
  resolve_platform(options, target_name, explicit) -> str    optional (e.g. 'auto')
  check_tools(env, session)              raise UserError naming what to install
  plan(graph, cnames, options, overrides, where) -> base.TargetPlan
  declare_nodes(env, session, common) -> {"firmware": nodes, "run": [run.log, output.npy], ...}
             common: builders.graph.nodes.CommonNodes (generated files, weights, goldens, input);
             optionally "report_extra": JSON nodes merged into report.json (k210's agreement)
Adding a target = a new package here + templates/<kind>/ + kernels/<kind>/ (README: "How
to add a target").
"""
from __future__ import annotations

import importlib
import os
import pkgutil

_HERE = os.path.dirname(os.path.abspath(__file__))


def kinds() -> list:
    """The target kinds: the sub-packages of this folder, sorted (a folder's '_' is the
    kind's '-': targets/cortex_m/ is kind `cortex-m`)."""
    return sorted(m.name.replace("_", "-") for m in pkgutil.iter_modules([_HERE]) if m.ispkg)


def kind_module(kind: str):
    if kind not in kinds():
        raise KeyError(kind)
    return importlib.import_module(f"{__name__}.{kind.replace('-', '_')}")


def schemas() -> dict:
    return {kind: kind_module(kind).SCHEMA for kind in kinds()}
