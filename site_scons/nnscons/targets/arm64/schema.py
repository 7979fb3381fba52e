"""The `arm64` kind's manifest keys (targets/__init__.py: schema), apart from the kind's
package so that checking targets.yaml does not import every kind's planning code: this
module imports no module of its package (targets/__init__.py loads it on its own)."""

ISAS = ["auto", "portable", "neon", "dotprod", "i8mm"]
PLATFORMS = ["qemu", "native", "ssh"]
CPUS = ["cortex-a53", "cortex-a72", "cortex-a76", "neoverse-n1", "neoverse-v1", "a64fx", "max"]

SCHEMA = {
    "toolchain": {"cc": "str", "cflags": "list[str]", "ldflags": "list[str]"},
    "memory": {"l1": "size", "l2": "size"},
    "tiling": {"l1_budget": "size"},
    "kernel": {"isa": ISAS, "threads": "count", "mr": "count", "nr": "count",
               "k_unroll": "count", "order": ["panel", "block"], "tuning": "path"},
    "run": {"platform": PLATFORMS, "timeout": "count", "cpu": CPUS, "qemu": "str", "host": "str",
            "dir": "str", "ssh": "str", "scp": "str"},
    "layer": {"l1_budget": "size", "isa": ISAS, "threads": "count", "mr": "count",
              "nr": "count", "k_unroll": "count", "order": ["panel", "block"]},
}
