"""The arm64 target's nodes: the host target's (library, header, harness, run), without
the host-only bench and tune steps (they time the program on this machine)."""
from __future__ import annotations

import json
import os

import SCons.Action

from ...builders.graph import actions
from ...fileio import write_if_changed
from ..host.nodes import declare_nodes as _host_nodes
from .report import variant_report


def declare_nodes(env, session, common) -> dict:
    nodes = _host_nodes(env, session, common, bench=False)
    b = session.build_dir
    variants = env.Command(os.path.join(b, "variants.json"), nodes["run"][0],
                           SCons.Action.Action(_variants, actions.label),
                           NNS_VERB="VARIANTS", NNS_LABEL=session.model_cfg.name)
    nodes["report_extra"] = variants
    return nodes


def _variants(target, source, env):
    with open(str(source[0]), encoding="utf-8") as f:
        doc = variant_report(env["NNS_SESSION"], f.read())
    write_if_changed(str(target[0]), json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return 0
