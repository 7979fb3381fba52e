"""The `pulp-open` kind's manifest keys (targets/__init__.py: schema), apart from the kind's
package so that checking targets.yaml does not import every kind's planning code: this
module imports no module of its package but through targets.light_module (targets/__init__.py
loads it on its own)."""

import copy

from .. import light_module

SCHEMA = copy.deepcopy(light_module("gap9", "schema").SCHEMA)
SCHEMA["run"]["platform"] = ["gvsoc-open", "emul", "qemu"]
SCHEMA["kernels"] = {"xpulp": "bool", "fuse_residual": "bool"}      # no NE16 on pulp-open
SCHEMA["layer"] = {"l1_budget": "size"}                            # nor a layer's on: ne16|cluster
