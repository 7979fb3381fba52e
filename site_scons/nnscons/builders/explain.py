"""`./nnscons explain target=T model=M`: which steps the next build would run, and why, in
the user's terms, without building.

It reads the same planning and node graph as the build, then replays SCons's decision for
every node in dependency order with the *predicted* content of the nodes that would run
before it: a generated source, weights, golden or input file is rendered or computed in
memory and compared with the file on disk (a rebuild that writes the same bytes stops the
chain, as in the build); an object changes when its source changes beyond comments and
whitespace (or, for the .S of linked-in weights, when the weights change); libraries,
programs and runs change when anything they are made of changes; a run is followed by its
report and check.  tests/test_explain.py checks the prediction against the build for
every row of README's "What rebuilds" table.
"""
from __future__ import annotations

import json
import os
import re

import SCons.Node
import SCons.Node.FS
import SCons.Util

from .. import codegen
from .graph import actions

_UNKNOWN = object()          # a rebuilt node whose new content cannot be known: changed


def _csig(data: bytes) -> str:
    return SCons.Util.hash_signature(data)


_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|[A-Za-z_]\w*|\d[\w.]*|#|\S')


def _normalized_c(text: str) -> list:
    """The C source's tokens, comments dropped: what the compiler sees, layout aside
    (a preprocessor line is one token: it ends at its newline)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    tokens = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            tokens.append(" ".join(line.split()))
        else:
            tokens += _TOKEN.findall(line)
    return tokens


def _function(node):
    acts = node.get_executor().get_action_list()
    return getattr(acts[0], "execfunction", None) if acts else None


_COMSTR = ((".o", ".c", "CCCOMSTR"), (".o", ".S", "ASPPCOMSTR"), (".a", "", "ARCOMSTR"))


def _label(node) -> str:
    ex = node.get_executor()
    env = ex.get_build_env()
    src = str(node.sources[0]) if node.sources else ""
    for suffix, src_suffix, var in _COMSTR:
        if str(node).endswith(suffix) and src.endswith(src_suffix) and env.get(var):
            return env.subst(env[var], target=ex.get_all_targets(), source=ex.get_all_sources()).split(" [")[0]
    if _function(node) is None and env.get("LINKCOMSTR") and not os.path.splitext(str(node))[1]:
        return env.subst(env["LINKCOMSTR"]).split(" [")[0]
    for act in ex.get_action_list():
        if getattr(act, "execfunction", None) is None and not hasattr(act, "cmd_list"):
            continue
        try:
            text = act.strfunction(ex.get_all_targets(), ex.get_all_sources(), env) \
                if getattr(act, "strfunction", None) else None
        except TypeError:
            text = None
        if text:
            return text.split(" [")[0]
    return str(node)


class Predictor:
    def __init__(self, session):
        self.session = session
        self.new = {}            # node -> predicted csig, or _UNKNOWN (changed), or None (unchanged)
        self.why = {}            # node -> reason text
        self.order = []
        self.old_report = self._old_report()

    def _old_report(self) -> dict:
        for dirpath, _, files in os.walk(self.session.build_dir):
            if "report.json" in files:
                try:
                    with open(os.path.join(dirpath, "report.json"), encoding="utf-8") as f:
                        return json.load(f)
                except (OSError, ValueError):
                    return {}
        return {}

    # -- predicted content of nodes nnscons's own Python steps write -----------------------
    def _content(self, node) -> bytes | None:
        fn = _function(node)
        env = node.get_executor().get_build_env()
        src = node.sources
        session = self.session
        try:
            if fn is actions.render_source:
                spec = json.loads(src[0].read())
                return codegen.render(os.path.dirname(src[1].abspath), os.path.basename(str(src[1])),
                                      spec=spec, net=spec).encode()
            if fn is actions.write_weights:
                return session.plan_by_cname[env["NNS_CNAME"]].packed_params(session.graph)
            if fn is actions.write_golden or fn is actions.write_input:
                import numpy as np
                from ..tensor_layout import to_layout
                plan = session.plan
                if fn is actions.write_input:
                    data = session.quantized_input()
                    return to_layout(data.astype(np.int8), plan.layout).tobytes()
                tensor = env["NNS_TENSOR"]
                ref = plan.reference(session) if getattr(plan, "reference", None) else session.reference()
                return to_layout(ref[tensor].astype(np.int8), plan.layout,
                                 plan.tensor_layouts.get(tensor)).tobytes()
        except Exception:               # noqa: BLE001 - a prediction that fails is "changed"
            return None
        return None

    def _child_sig(self, child):
        if child in self.new:
            return self.new[child]
        if not child.exists() and child.has_builder():
            return _UNKNOWN
        try:
            return child.get_csig()
        except Exception:               # noqa: BLE001
            return _UNKNOWN

    # -- the replay ----------------------------------------------------------------------
    def visit(self, node, seen) -> None:
        if node in seen:
            return
        seen.add(node)
        for child in node.children(scan=1):
            self.visit(child, seen)
        if not node.has_builder() or node.is_derived() is False:
            return
        if not isinstance(node, SCons.Node.FS.File) or str(node).endswith("compile_commands.json"):
            return
        reason = self._stale(node)
        if reason is None:
            return
        self.why[node] = reason
        self.order.append(node)
        self.new[node] = self._predict(node)

    def _stale(self, node):
        if not node.exists():
            return "missing"
        info = node.get_stored_info()
        bi = getattr(info, "binfo", None)
        if bi is None or not hasattr(bi, "bsourcesigs"):
            return "never built"
        paths = list(bi.bsources) + list(bi.bdepends) + list(bi.bimplicit)
        sigs = list(bi.bsourcesigs) + list(bi.bdependsigs) + list(bi.bimplicitsigs)
        then = {str(p): ni for p, ni in zip(paths, sigs)}
        children = node.children()
        for child in children:
            prev = then.get(str(child))
            if prev is None:          # a Value is known by its content: a new one changed
                if child.__class__.__name__ == "Value":
                    return self._explain_child(node, child)
                return f"new input {os.path.basename(str(child))}"
            if child not in self.new:
                # not rebuilt: SCons's own decision for this dependency (content, or what
                # SCons keeps for tools such as the compiler)
                if not child.exists() and child.has_builder():
                    return self._explain_child(node, child)
                if SCons.Node._decider_map[child.changed_since_last_build](child, node, prev, node):
                    return self._explain_child(node, child)
                continue
            sig = self.new[child]
            if sig is None:             # rebuilt with the same bytes
                continue
            if sig is _UNKNOWN or getattr(prev, "csig", None) != sig:
                return self._explain_child(node, child)
        # a source or explicit dependency gone (implicit ones are rescanned by SCons only
        # after a regenerated source is rebuilt, so they are not compared here)
        explicit = {str(p) for p in list(bi.bsources) + list(bi.bdepends)}
        gone = explicit - {str(c) for c in children}
        if gone:
            return "input(s) removed: " + ", ".join(sorted(gone))
        contents = node.get_executor().get_contents()
        if bi.bactsig != SCons.Util.hash_signature(contents):
            return "its command line or step code changed"
        return None

    def _predict(self, node):
        fn = _function(node)
        if fn is not None and fn in (actions.render_source, actions.write_weights,
                                     actions.write_golden, actions.write_input):
            data = self._content(node)
            if data is None:
                return _UNKNOWN
            try:
                with open(str(node), "rb") as f:
                    if f.read() == data:
                        return None          # written with the same bytes: stops here
            except OSError:
                pass
            return _csig(data)
        src = node.sources[0] if node.sources else None
        if str(node).endswith(".o") and src is not None and str(src).endswith(".c"):
            if src in self.new and self.new[src] is not None and src.exists():
                predicted = self._content(src)
                if predicted is not None:
                    old = src.get_text_contents()
                    if _normalized_c(old) == _normalized_c(predicted.decode()):
                        return None          # comments only: the object does not change
            return _UNKNOWN
        return _UNKNOWN

    def _explain_child(self, node, child) -> str:
        name = str(child)
        if child in self.why:
            return f"{os.path.basename(name)} changes"
        if name.endswith(".j2"):
            return f"template {os.path.basename(name)} changed"
        if name.endswith(".py"):
            return f"generator code {os.path.basename(name)} changed"
        if child.__class__.__name__ == "Value":
            return self._value_reason(node)
        return f"{os.path.basename(name)} changed"

    def _value_reason(self, node) -> str:
        fn = _function(node)
        env = node.get_executor().get_build_env()
        if fn is actions.write_weights:
            return "weights changed"
        if fn is actions.write_input:
            return "input changed"
        if fn is actions.write_golden:
            return "its numbers changed (input or weights upstream)"
        if fn is actions.render_source:
            return self._spec_reason(env.get("NNS_LABEL", ""))
        return "its plan changed"

    def _spec_reason(self, label: str) -> str:
        name = label.split(" (")[0]
        old = {l["name"]: l for l in self.old_report.get("layers", [])}.get(name)
        lp = next((p for p in self.session.plan.layers if p.layer.name == name), None)
        if lp is None:
            return "the network plan changed"
        if old is None:
            return "new layer"
        new_tile, old_tile = lp.spec.get("tile") or {}, old.get("tile") or {}
        first = ("n_tiles", "tile_oh", "tile_shape", "rows")
        keys = [k for k in first if k in new_tile] + sorted(k for k in new_tile if k not in first)
        diffs = [f"{k} {old_tile.get(k)} -> {new_tile[k]}" for k in keys if old_tile.get(k) != new_tile[k]]
        budget = lp.report.get("l1_budget")
        head = f"l1_budget {old.get('l1_budget')} -> {budget} " if budget is not None and \
            old.get("l1_budget") not in (None, budget) else ""
        if diffs:
            return f"{head}changes its tiling ({', '.join(diffs[:4])})"
        return "its spec changed"


def explain(session, roots) -> list:
    """[(step label, reason)] of the steps the next build of these root nodes would run."""
    p = Predictor(session)
    seen = set()
    for root in roots:
        p.visit(root, seen)
    steps, done = [], set()
    for node in p.order:
        ex = node.get_executor()
        if id(ex) in done:
            continue
        done.add(id(ex))
        steps.append((_label(node), p.why[node]))
    return steps


def print_explanation(session, roots) -> None:
    steps = explain(session, roots)
    t, m = session.target_cfg.name, session.model_cfg.name
    if not steps:
        print(f"explain [{t}] {m}: nothing to rebuild")
        return
    print(f"explain [{t}] {m}: {len(steps)} step(s) would run")
    for label, why in steps:
        print(f"  {label}: {why}")
