"""Target plug-ins.

A target kind is a module (targets/<kind>/) exposing:
  SCHEMA     manifest keys it accepts: {section: {key: type}} plus "layer" for per-layer keys;
             SCHEMA["run"]["platform"] lists the platforms (platform= on the command line)
  TOOL       the SCons Tool (site_scons/site_tools/<TOOL>.py): builders and the run step
  options(target_cfg) -> dict            the target's sections with defaults filled in
  resolve_platform(options, target_name, explicit) -> str    optional (e.g. 'auto')
  check_tools(env, session)              raise UserError naming what to install
  plan(graph, cnames, options, overrides, where) -> base.TargetPlan
  declare_nodes(env, session, common) -> {"firmware": nodes, "run": [run.log, output.npy], ...}
             common: build.nodes.CommonNodes (generated files, weights, goldens, input);
             optionally "report_extra": JSON nodes merged into report.json (k210's agreement)
Adding a target = a new package here + its Tool + templates/<kind>/ + an entry in KINDS.
"""
from __future__ import annotations

import importlib

KINDS = {
    "host": "nnscons.targets.host",
    "gap9": "nnscons.targets.gap9",
    "aie2p": "nnscons.targets.aie2p",
    "k210": "nnscons.targets.k210",
}


def kind_module(kind: str):
    return importlib.import_module(KINDS[kind])


def schemas() -> dict:
    return {kind: kind_module(kind).SCHEMA for kind in KINDS}
