"""The `aie2p` kind's manifest keys (targets/__init__.py: schema), apart from the kind's
package so that checking targets.yaml does not import every kind's planning code: this
module imports no module of its package (targets/__init__.py loads it on its own)."""

TILING_KEYS = ("tiles_per_call", "channels_per_call", "cores", "columns")

SCHEMA = {
    "toolchain": {"kernel_compiler": ["peano", "chess"], "python": "str", "cxx": "str",
                  "cxxflags": "list[str]", "cc": "str", "cflags": "list[str]"},
    "kernel": {"variant": ["scalar", "vector"]},
    "memory": {"l1": "size", "memtile": "size"},
    "tiling": {k: "count" for k in TILING_KEYS},
    "run": {"platform": ["auto", "npu", "emul"], "timeout": "count"},
    "mapping": {"fallback": ["none", "host"]},
    "layer": dict({k: "count" for k in TILING_KEYS}, variant=["scalar", "vector"]),
}
