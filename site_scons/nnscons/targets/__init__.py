"""Target plug-ins, discovered by folder: every package targets/<kind>/ is a target kind.

A kind's package exposes:
  SCHEMA     manifest keys it accepts: {section: {key: type}} plus "layer" for per-layer keys;
             SCHEMA["run"]["platform"] lists the platforms (platform= on the command line).
             Best kept in the kind's schema.py (which imports nothing of its package but
             through light_module): targets.yaml is checked against every kind's schema on
             every call, and schema() reads a schema.py without importing the kind's package
             (its planning code: about 0.1 s of a cold build per unused kind set)
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
import importlib.machinery
import importlib.util
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


_LIGHT = {}


def light_module(kind: str, name: str):
    """Module `name` of kind's folder run on its own, its package not imported (a kind's
    schema.py and the leaf modules it reads); None when there is no such file. Not entered
    in sys.modules: the package, when imported, runs its own copy (these modules hold data)."""
    path = os.path.join(_HERE, kind.replace("-", "_"))
    if (path, name) not in _LIGHT:
        full = f"{__name__}.{kind.replace('-', '_')}.{name}"
        spec = importlib.machinery.PathFinder.find_spec(full, [path])   # the project's loader
        module = None
        if spec is not None:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        _LIGHT[path, name] = module
    return _LIGHT[path, name]


def schema(kind: str) -> dict:
    """The kind's SCHEMA: from its schema.py alone when it has one, else its package's."""
    if kind not in kinds():
        raise KeyError(kind)
    light = light_module(kind, "schema")
    return (light if light is not None else kind_module(kind)).SCHEMA


def schemas() -> dict:
    return {kind: schema(kind) for kind in kinds()}
