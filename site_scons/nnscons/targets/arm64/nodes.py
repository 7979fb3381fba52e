"""The arm64 target's nodes: the host target's (library, header, harness, run), without
the host-only bench and tune steps (they time the program on this machine)."""
from __future__ import annotations

from ..host.nodes import declare_nodes as _host_nodes


def declare_nodes(env, session, common) -> dict:
    return _host_nodes(env, session, common, bench=False)
