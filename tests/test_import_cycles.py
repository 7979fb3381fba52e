"""No circles among the Python modules of site_scons/nnscons (issue 27.4), found statically.

Every `import` and `from ... import` of an nnscons module counts, at the top of a file or
inside a function (a lazy import still ties the two modules together); an imported name
that is a submodule is an arrow to that submodule, any other name an arrow to the module
(a package: its __init__).  The strongly connected components of that graph with more than
one module are the circles.  `importlib` calls are not seen by the parser, so the one
dynamic import in the package is added by hand: ops/__init__.py's `_load` imports every
module of ops/ whose name does not start with "_" (DYNAMIC below reads the same rule), and
counts as importing each of them; a circle through the op registry fails like any other.

ALLOWED lists the circles that cannot be cut in this step, each with why; a new circle
fails, and so does an allowed one that is gone (remove it from the list).
"""
from __future__ import annotations

import ast
import os

import pytest

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "site_scons", "nnscons")

# {circle: why it is still here}
ALLOWED = {
}


def modules(pkg: str = PKG) -> dict:
    """{dotted name: (path, is a package)} of every module under site_scons/nnscons (pkg)."""
    out = {}
    root = os.path.dirname(pkg)
    for folder, _, files in os.walk(pkg):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                name = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                package = name.endswith(".__init__")
                out[name[:-len(".__init__")] if package else name] = (path, package)
    return out


def _owner(name: str, mods: dict) -> str:
    """The module that executes for an import of `name` (a name inside a module: that module)."""
    while name not in mods and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def dynamic_edges(mods: dict) -> dict:
    """{module: modules it imports through importlib}: ops._load's rule (every module directly
    in ops/ whose name does not start with an underscore)."""
    loaded = {m for m in mods if m.startswith("nnscons.ops.") and m.count(".") == 2
              and not m.rsplit(".", 1)[1].startswith("_")}
    return {"nnscons.ops": loaded} if "nnscons.ops" in mods else {}


def import_graph(mods: dict) -> dict:
    """{module: modules it imports}, nnscons modules only (static imports plus dynamic_edges)."""
    graph = {}
    dynamic = dynamic_edges(mods)
    for name, (path, package) in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        here = name.split(".") if package else name.split(".")[:-1]
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                edges |= {_owner(a.name, mods) for a in node.names if a.name.split(".")[0] == "nnscons"}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[:len(here) - node.level + 1]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                if src.split(".")[0] != "nnscons":
                    continue
                for a in node.names:
                    sub = f"{src}.{a.name}"
                    edges.add(sub if sub in mods else _owner(src, mods))
        edges |= dynamic.get(name, set())
        edges.discard(name)
        graph[name] = edges
    return graph


def circles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on_stack, out, counter = {}, {}, [], set(), [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(frozenset(comp))
    return out


def _describe(comp, graph) -> str:
    arrows = [f"    {a} -> {b}" for a in sorted(comp) for b in sorted(graph[a] & comp)]
    return "\n".join(arrows)


def test_no_import_cycles_beyond_the_listed_exceptions():
    graph = import_graph(modules())
    found = circles(graph)
    new = [c for c in found if c not in ALLOWED]
    assert not new, "import circles among site_scons/nnscons modules (cut them, e.g. move the shared " \
                    "piece into a lower module):\n" + "\n\n".join(_describe(c, graph) for c in new)
    gone = [sorted(c) for c in ALLOWED if c not in found]
    assert not gone, f"allowed circles no longer there: remove them from ALLOWED: {gone}"


def test_the_finder_sees_lazy_and_relative_imports(tmp_path):
    """The checker itself: a circle through a function-level relative import is found, a
    one-way import is not a circle."""
    pkg = tmp_path / "nnscons"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low.py").write_text("import os\n")
    (pkg / "a.py").write_text("from . import low\nfrom .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..a import g\n")
    graph = import_graph(modules(str(pkg)))
    assert graph["nnscons.a"] == {"nnscons.low", "nnscons.sub.b"}
    assert circles(graph) == [frozenset({"nnscons.a", "nnscons.sub.b"})]
    (pkg / "sub" / "b.py").write_text("from .. import low\n")
    assert circles(import_graph(modules(str(pkg)))) == []


@pytest.mark.parametrize("pair", [("nnscons.codegen", "nnscons.kernelgen"),
                                  ("nnscons.builders.run.hostrun", "nnscons.targets.host.tune")])
def test_the_circles_issue_27_named_are_cut(pair):
    graph = import_graph(modules())
    assert not any(set(pair) <= c for c in circles(graph))


def test_the_op_registry_counts_as_importing_its_op_modules():
    """ops._load's importlib loop is an edge: the registry imports every public op module, and
    an op module importing a frontend or a pass (which import the registry) would be a circle."""
    import re
    with open(os.path.join(PKG, "ops", "__init__.py"), encoding="utf-8") as f:
        src = f.read()
    # the rule dynamic_edges reads: skip names starting with "_", import the rest of ops/
    assert re.search(r'if mod\.startswith\("_"\):\s*continue\s*module = importlib\.import_module', src), \
        "ops._load's import rule changed: update dynamic_edges in this test"
    mods = modules()
    graph = import_graph(mods)
    assert {"nnscons.ops.conv2d", "nnscons.ops.add"} <= graph["nnscons.ops"]
    assert not any(m.rsplit(".", 1)[1].startswith("_") for m in dynamic_edges(mods)["nnscons.ops"])


def test_a_circle_through_the_op_registry_is_found(tmp_path):
    pkg = tmp_path / "nnscons"
    (pkg / "ops").mkdir(parents=True)
    (pkg / "frontends").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ops" / "__init__.py").write_text("import importlib\n")
    (pkg / "ops" / "_common.py").write_text("")
    (pkg / "ops" / "toy.py").write_text("from ..frontends import helpers\n")
    (pkg / "frontends" / "__init__.py").write_text("")
    (pkg / "frontends" / "helpers.py").write_text("from .. import ops\n")
    found = circles(import_graph(modules(str(pkg))))
    assert found == [frozenset({"nnscons.ops", "nnscons.ops.toy", "nnscons.frontends.helpers"})]


def test_every_nnscons_import_names_a_module_that_exists():
    """A module moved (builders/ split into run/, reports/, graph/) leaves no import of its old
    path behind, in a function body either (only run when reached; the graph above would
    quietly count such an import as one of the parent package)."""
    mods = modules()
    stale = []
    for name, (path, package) in mods.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        here = name.split(".") if package else name.split(".")[:-1]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                srcs = [a.name for a in node.names if a.name.split(".")[0] == "nnscons"]
            elif isinstance(node, ast.ImportFrom):
                base = here[:len(here) - node.level + 1] if node.level else []
                src = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module or ""
                if src.split(".")[0] != "nnscons":
                    continue
                srcs = [src]
                if src in mods and mods[src][1]:      # from a package: a submodule or a name of its __init__
                    srcs += [f"{src}.{a.name}" for a in node.names
                             if f"{src}.{a.name}" not in mods and a.name not in _top_level_names(mods[src][0])]
            else:
                continue
            stale += [f"{os.path.relpath(path, PKG)}:{node.lineno}: {s}" for s in srcs if s not in mods]
    assert not stale, "imports of modules that do not exist:\n" + "\n".join(stale)


def _top_level_names(path: str) -> set:
    """The names a module binds at its top level (assignments, defs, classes, imports)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names
