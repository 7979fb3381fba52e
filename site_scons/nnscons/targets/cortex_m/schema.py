"""The `cortex-m` kind's manifest keys (targets/__init__.py: schema), apart from the kind's
package so that checking targets.yaml does not import every kind's planning code: this
module imports no module of its package but through targets.light_module (targets/__init__.py
loads it on its own)."""

from .. import light_module

PLATFORMS = ["qemu", "board"]
NUMERICS = ["cmsis", "onnx-exact"]        # cmsis_nn.numerics (rules.py)

CPUS = sorted(light_module("cortex-m", "cores").CPUS)       # the core table's names

SCHEMA = {
    "toolchain": {"cc": "str", "cflags": "list[str]", "ldflags": "list[str]", "cpu": CPUS},
    "memory": {"l1": "size", "l2": "size"},
    "tiling": {"l1_budget": "size"},
    "run": {"platform": PLATFORMS, "timeout": "count", "qemu": "str"},
    "cmsis_nn": {"numerics": NUMERICS},
    "board": {"linker_script": "str", "build": ["make", "cmake"], "flasher": ["openocd", "pyocd"],
              "openocd": "str", "openocd_config": "list[str]", "pyocd": "str", "pyocd_target": "str"},
    "layer": {"l1_budget": "size", "numerics": NUMERICS},
}
