"""The `gap9` kind's manifest keys (targets/__init__.py: schema), apart from the kind's
package so that checking targets.yaml does not import every kind's planning code: this
module imports no module of its package (targets/__init__.py loads it on its own)."""

SCHEMA = {
    "toolchain": {"cc": "str", "cflags": "list[str]", "ldflags": "list[str]"},
    "memory": {"l1": "size", "l1_reserved": "size", "l2": "size", "l2_reserved": "size",
               "l3_device": ["ram", "flash"], "l3_size": "size", "l3_threshold": "size"},
    "cluster": {"cores": "count|auto", "stack_size": "size", "slave_stack_size": "size"},
    "dma": {"max_inflight": "count", "max_transfer": "size"},
    "tiling": {"l1_budget": "size"},
    "kernels": {"xpulp": "bool", "ne16": ["auto", True, False], "fuse_residual": "bool"},
    "run": {"platform": ["auto", "gvsoc", "emul", "qemu", "gvsoc-gap9"], "timeout": "count",
            "layer_by_layer": ["auto", "always"]},
    "layer": {"l1_budget": "size", "on": ["ne16", "cluster"]},
}
