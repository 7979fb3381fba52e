"""The no-op fast path of nnscons's own front end.

After a default build (no explicit targets) that succeeded, the front end records the
identity of every file the build read or wrote (path, mtime in ns, size, inode): every File
node of the graph, the manifest, the model sources, the package's own code, templates and
kernels.  The next call with the same arguments, environment and tool versions re-stats
those files first; when not one of them changed, nothing can be out of date, and the call
prints the verdicts from the up-to-date reports without importing the planner or asking
SCons to check each node.  Anything else (a changed file, a missing one, other arguments,
-c, -n, explain, an explicit target) takes the full path, which first deletes the record,
so an interrupted build never leaves one behind to be trusted.  A file outside build/ (a
template, a kernel, the manifest, a model) modified after this process started may have been
read before the change: the build that saw it records nothing, and the next call takes the
full path.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time

RECORD_DIR = os.path.join("build", ".noop")
# when this process began reading the project (this module is among the first the front end
# imports), less the coarse file-system clock's granularity (Linux stamps files from a clock
# that may lag time_ns() by a tick)
STARTED_NS = time.time_ns() - 50_000_000
_ENV_VARS = ("PATH", "CC", "GAP_SDK_HOME", "GAP_RISCV_GCC_TOOLCHAIN", "GVSOC", "GAP9_GVSOC", "MLIR_AIE_DIR",
             "PEANO_INSTALL_DIR", "XILINX_XRT", "KENDRYTE_SDK", "KENDRYTE_TOOLCHAIN", "PYTHONPATH")


def key(arguments: dict) -> str:
    import SCons
    ident = {"args": sorted(arguments.items()), "env": {k: os.environ.get(k) for k in _ENV_VARS},
             "python": sys.version, "scons": SCons.__version__, "cwd": os.getcwd()}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]


def _path(k: str) -> str:
    return os.path.join(RECORD_DIR, k + ".json")


def _identity(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino]


def check(k: str):
    """The recorded verdict lines if nothing changed since the record, else None."""
    try:
        with open(_path(k), encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    for path, ident in record["files"]:
        if _identity(path) != ident:
            return None
    for folder, names in record.get("dirs", {}).items():   # a new file there is to be pruned
        if _listing(folder) != names:
            return None
    lines = []
    for rep in record["reports"]:
        try:
            with open(rep, encoding="utf-8") as f:
                lines.append(json.load(f)["verdict"])
        except (OSError, ValueError, KeyError):
            return None
    return lines + record.get("extra_lines", [])


def _listing(folder: str) -> list:
    out = []
    for dirpath, dirnames, files in os.walk(folder):
        dirnames.sort()
        out += sorted(os.path.relpath(os.path.join(dirpath, f), folder) for f in files)
    return out


def forget(k: str) -> None:
    try:
        os.unlink(_path(k))
    except OSError:
        pass


def _tree(root: str, suffixes=None) -> list:
    out = []
    for dirpath, dirnames, files in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", ".pycache"))
        out += [os.path.join(dirpath, f) for f in sorted(files)
                if suffixes is None or f.endswith(suffixes)]
    return out


def edited_during_build(path: str, ident, build_root: str = "") -> bool:
    """A file outside build/ (the build writes nothing there) modified since this process
    started: what the build read of it may be older than what the record would vouch for.
    build_root: os.path.abspath("build") + os.sep, when the caller has it."""
    inside = os.path.abspath(path).startswith(build_root or os.path.abspath("build") + os.sep)
    return not inside and ident[0] >= STARTED_NS


def record(k: str, roots, sessions, extra_lines=()) -> None:
    """Write the record after a successful default build (called at exit)."""
    from ..resources import DATA_ROOT, PACKAGE_DIR, zoo_dir
    import SCons.Node
    import SCons.Node.FS
    files, seen, stack = set(), set(), list(roots)
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.has_builder() and n.get_state() not in (SCons.Node.up_to_date, SCons.Node.executed):
            return                      # not every step completed (interrupted): no record
        # the other files of its step (output.npy beside run.log: no step reads it)
        stack.extend(getattr(n, "target_peers", None) or ())
        if isinstance(n, SCons.Node.FS.File) and not str(n).endswith("compile_commands.json"):
            files.add(str(n))
        try:
            stack.extend(n.children(scan=0))
        except Exception:               # noqa: BLE001 - an odd node: its files are in the trees
            pass
    files.update(_tree(PACKAGE_DIR, (".py", "SConstruct")))
    files.update(_tree(zoo_dir(), (".py",)))
    for sub in ("templates", "kernels"):
        files.update(_tree(os.path.join(DATA_ROOT, sub)))
    for name in ("SConstruct", os.path.join("site_scons", "site_init.py")):
        files.add(name)
    reports, dirs = [], {}
    for s in sessions:
        for sub in ("bin", os.path.join("src", "layers"), os.path.join("src", "weights")):
            folder = os.path.join(s.build_dir, sub)
            dirs[folder] = _listing(folder)
        files.add(s.manifest.path)
        for f in getattr(s.manifest, "files", []):      # tuning files, sources, inputs ...
            files.update(_tree(f) if os.path.isdir(f) else [f])
        # files the target's plan read (the host's measured-variant cache)
        files.update(getattr(getattr(s, "plan", None), "extra", {}).get("plan_inputs", []))
        m = s.model_cfg
        for src in [m.source, m.input] + list((m.calibration or {}).get("files", [])):
            if src:
                files.update(_tree(src) if os.path.isdir(src) else [src])
        reports += [str(n) for n in s.report_nodes]
    entries, build_root = [], os.path.abspath("build") + os.sep
    for path in sorted(files):
        ident = _identity(path)
        if ident is None:
            return                      # something the build declared is missing: no record
        if edited_during_build(path, ident, build_root):
            return                      # the build may have read it before the edit: no record
        entries.append([path, ident])
    os.makedirs(RECORD_DIR, exist_ok=True)
    tmp = _path(k) + f".{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"files": entries, "dirs": dirs, "reports": sorted(set(reports)),
                   "extra_lines": list(extra_lines)}, f)
    os.replace(tmp, _path(k))
