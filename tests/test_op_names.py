"""Nothing outside the op registry (site_scons/nnscons/ops/) compares an op's name (issue 27.1).

What a planner needs to know about an op is a field or hook of its registry entry
(ops.OpDef: window, dense, hwc_params, alias, ...) or of its entry in the target's op table
(a dict keyed by op name: a lookup, never a comparison).  Found statically: every comparison
(==, !=, in, not in) between an op name -- `x.op`, a variable `op`, `x["op"]` -- and a string
or a literal tuple/list/set of strings.

PENDING lists the files that still compare, each with how many comparisons and why; a new
comparison fails, and so does a pending file that now has fewer (lower its count).
"""
from __future__ import annotations

import ast
import os

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "site_scons", "nnscons")

# {path under site_scons/nnscons: (comparisons, why they are still there)}
PENDING = {}


def _op_name(node) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "op"
    if isinstance(node, ast.Name):
        return node.id == "op"
    return (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
            and node.slice.value == "op")


def _names(node) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return (isinstance(node, (ast.Tuple, ast.List, ast.Set)) and bool(node.elts)
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts))


def comparisons(source: str, path: str = "<string>") -> list:
    """[(line, text)] of the op-name comparisons in a Python source."""
    out = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            if any(_op_name(p) for p in parts) and any(_names(p) for p in parts):
                out.append((node.lineno, ast.unparse(node)))
    return sorted(out)


def found(pkg: str = PKG) -> dict:
    """{path under pkg: [(line, text)]} outside ops/."""
    out = {}
    for folder, _, files in os.walk(pkg):
        rel = os.path.relpath(folder, pkg).replace(os.sep, "/")
        if rel == "ops" or rel.startswith("ops/"):
            continue
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                with open(path, encoding="utf-8") as src:
                    hits = comparisons(src.read(), path)
                if hits:
                    out[os.path.relpath(path, pkg).replace(os.sep, "/")] = hits
    return out


def test_the_finder_sees_each_form():
    src = ('if layer.op == "conv2d": pass\nif op in ("a", "b"): pass\nif spec["op"] != "x": pass\n'
           'if l.op not in ["a"]: pass\nif layer.op in TABLE: pass\nif ops.get(layer.op).window: pass\n'
           'if kind == "host": pass\n')
    assert [line for line, _ in comparisons(src)] == [1, 2, 3, 4]


def test_no_op_name_comparison_outside_the_registry():
    bad = []
    for path, hits in sorted(found().items()):
        allowed = PENDING.get(path, (0, ""))[0]
        if len(hits) > allowed:
            where = "\n".join(f"    {path}:{line}: {text}" for line, text in hits)
            bad.append(f"{path}: {len(hits)} op-name comparisons, {allowed} allowed:\n{where}")
    assert not bad, ("compare no op names outside ops/: make what the code needs a field or hook of "
                     "the op's registry entry (ops.OpDef) or a lookup in the target's op table\n"
                     + "\n".join(bad))


def test_pending_counts_are_current():
    hits = found()
    stale = {path: (n, len(hits.get(path, ()))) for path, (n, _) in PENDING.items()
             if len(hits.get(path, ())) < n}
    assert not stale, f"fewer op-name comparisons than PENDING says (path: (listed, found)): {stale}; lower them"
