"""Turning a planned model into SCons nodes: session state, actions, node graph, report."""
