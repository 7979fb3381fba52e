"""Built files changed behind SCons's back are rebuilt, not trusted.

SCons trusts its signature database: a step whose sources did not change is up to date
whatever its output file now holds.  A run.log cut short by a full disk, an output.npy
truncated by hand, a report.json edited to another verdict, an archive `ar` no longer reads
would be kept, and even recorded as the new state of that file at the end of the build.
Bazel and ccache verify their outputs; so does this, before SCons looks at the graph: every
file a step of this build wrote is compared with what SCons stored for it after its last
build (size and whole-second mtime first; only a file whose stat differs is hashed, against
its stored content signature).  A file whose bytes differ was changed by something other
than its step: it is removed, so that SCons runs the step again (and, when the rebuilt bytes
differ, what consumes them).

One rule for every step of every target instead of one validator per kind of file: it
catches any change, a plausible edit as well as a truncation, of steps added later too.  Its
cost is a graph walk and a stat per built file on a build that reaches SCons (resnet18 on host:
170 files, about 40 ms of a 6 s no-op build without the no-op record); a no-op build answered
from the no-op record (noop.py) never gets here, and that record holds every file of every
step, so a damaged one sends the call down this path.
"""
from __future__ import annotations

import os


def built_files(roots) -> list:
    """Every File node with a builder reachable from roots, with the other files its step
    writes (run.log's step also writes output.npy, which no other step reads)."""
    import SCons.Node.FS
    seen, stack, out = set(), list(roots), []
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.has_builder() and isinstance(n, SCons.Node.FS.File):
            out.append(n)
        stack.extend(getattr(n, "target_peers", None) or ())     # set by SCons's Builder
        try:
            stack.extend(n.children(scan=0))
        except Exception:               # noqa: BLE001 - an odd node: nothing built below it
            pass
    return out


def _stored(node):
    """(content signature, size, mtime in s) SCons stored for node, or None (never built)."""
    try:
        ninfo = node.get_stored_info().ninfo
        return ninfo.csig, ninfo.size, ninfo.timestamp
    except AttributeError:
        return None


def changed_since_built(node) -> bool:
    """Whether node's file exists and differs from what SCons stored when it was built."""
    from SCons.Util import hash_file_signature
    stored = _stored(node)
    if stored is None or not stored[0]:
        return False
    try:
        st = os.stat(node.get_abspath())
    except OSError:
        return False                    # missing: SCons builds it anyway
    if st.st_size == stored[1] and int(st.st_mtime) == stored[2]:
        return False
    try:
        return hash_file_signature(node.get_abspath()) != stored[0]
    except OSError:
        return True


def remove_damaged(roots) -> list:
    """Remove the built files under roots that changed since SCons built them (SCons then
    rebuilds them); return their paths."""
    removed = []
    for node in built_files(roots):
        if changed_since_built(node):
            try:
                os.unlink(node.get_abspath())
            except OSError:
                continue
            node.clear_memoized_values()
            removed.append(str(node))
    return sorted(removed)
