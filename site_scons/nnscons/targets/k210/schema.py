"""The `k210` kind's manifest keys (targets/__init__.py: schema), apart from the kind's
package so that checking targets.yaml does not import every kind's planning code: this
module imports no module of its package (targets/__init__.py loads it on its own)."""

SCHEMA = {
    "toolchain": {"cc": "str", "cflags": "list[str]", "ldflags": "list[str]", "cross_cc": "str",
                  "sdk": "str", "kflash": "str"},
    "memory": {"ai_ram": "size", "sram": "size"},
    "kpu": {"clock": "int"},
    "run": {"platform": ["emul", "qemu", "board"], "timeout": "int", "port": "str", "baud": "int",
            "goldens": ["embedded", "none", "auto"]},
    "layer": {"on": ["kpu", "cpu"]},
}
