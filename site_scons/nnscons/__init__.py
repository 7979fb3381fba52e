"""nnscons: declarative, incremental model-to-firmware builds on SCons.

In a foreign SConstruct: `env = Environment(tools=["default", nnscons.tool])`, then
`lib, header = env.NnsNetwork(folder, manifest=..., model=..., target=...)` (see tool.py).
"""
from __future__ import annotations


def __getattr__(name):          # SCons is imported only when the Tool is asked for
    if name == "tool":
        from .tool import tool
        return tool
    raise AttributeError(name)
