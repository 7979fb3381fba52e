"""The `host` kind's manifest keys (targets/__init__.py: schema), apart from the kind's
package so that checking targets.yaml does not import the host's planning code (a host build
imports it while onnxruntime calibrates: builders/graph/session.py warm_up): this module
imports no module of its package (targets/__init__.py loads it on its own)."""

SCHEMA = {
    "toolchain": {"cc": "str", "cflags": "list[str]", "ldflags": "list[str]"},
    "memory": {"l1": "size", "l2": "size"},
    "tiling": {"l1_budget": "size"},
    "kernel": {"isa": ["auto", "portable", "avx2", "avx2u8", "avx512vnni", "avx512vnni512", "avxvnni"], "threads": "count", "mr": "count", "nr": "count",
               "k_unroll": "count", "order": ["panel", "block"], "tuning": "path",
               "min_macs_per_thread": "count", "spin_us": "int", "choose": ["auto", "cpuid", "measure"],
               "winograd": "bool"},
    "run": {"platform": ["native", "qemu"], "timeout": "count", "iterations": "count", "cpu": "str",
            "qemu": "str"},
    "layer": {"l1_budget": "size", "isa": ["auto", "portable", "avx2", "avx2u8", "avx512vnni", "avx512vnni512", "avxvnni"], "threads": "count", "mr": "count",
              "nr": "count", "k_unroll": "count", "order": ["panel", "block"], "min_macs_per_thread": "count",
              "winograd": "bool"},
}
